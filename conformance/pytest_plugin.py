"""pytest plugin (auto-registered by ``pip install broker-emu``): an emulated Kafka cluster for
your own tests. docs/pytest.md has copy-paste examples; in short:

    def test_my_app_survives_a_black_hole(kafka_cluster):          # plain sync test
        hole = kafka_cluster.faults.black_hole(api="Produce", count=1)
        run_my_app(bootstrap=kafka_cluster.bootstrap)
        kafka_cluster.wait_for("trace", kind="conn_close", timeout=10)
        assert hole.hits == 1

    async def test_with_trio(trio_kafka_cluster):                   # pytest-trio tests (the pytest extra)
        await trio_kafka_cluster.wait_for("group", group="g", state="Stable", members=2)

Fixtures: ``kafka_cluster`` (a cluster of the test's own, about 0.4 s to start; or a shared one
with ``--broker-emu-shared`` / ini ``broker_emu_shared = true``), ``shared_kafka_cluster`` (one
cluster per shape per pytest process, so one per pytest-xdist worker, isolated per test:
pytest_cluster.py), ``kafka_cluster_factory`` (more clusters inside a test) and
``trio_kafka_cluster`` (the Cluster itself, in the test's trio run). Shape a cluster with
``@pytest.mark.kafka_cluster(brokers=1, topics=[("t", 3, 1)], config={...}, kafka_version="2.8",
listener="SASL_SSL", users={"alice": "secret"}, transaction_version=1)``. Apache Kafka itself is another helper,
``conformance.realkafka.cluster.apache_kafka_cluster``.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from conformance.extras import PYTEST_TRIO
from conformance.pytest_cluster import ClusterOptionError, KafkaClusterHandle, SharedClusterHandle, cluster_options, shape_key

MARKER = ("kafka_cluster(brokers=3, topics=(), config=None, kafka_version=None, listener=None, users=None, "
          "client_certs=None, transaction_version=None): the shape of the emulated cluster the test's fixtures start or share")


def pytest_addoption(parser):
    group = parser.getgroup("broker-emu")
    group.addoption("--broker-emu-shared", action="store_true", default=None,
                    help="kafka_cluster shares one cluster per shape among tests (isolated per test), as "
                         "shared_kafka_cluster does")
    parser.addini("broker_emu_shared", type="bool", default=False,
                  help="kafka_cluster shares one cluster per shape among tests (as --broker-emu-shared)")


def pytest_configure(config):
    config.addinivalue_line("markers", MARKER)


def _options(request) -> dict[str, Any]:
    marker = request.node.get_closest_marker("kafka_cluster")
    try:
        return cluster_options(**(marker.kwargs if marker is not None else {}))
    except ClusterOptionError as exc:
        pytest.fail(str(exc), pytrace=False)


def _shared(config) -> bool:
    flag = config.getoption("broker_emu_shared")
    return bool(flag) if flag is not None else bool(config.getini("broker_emu_shared"))


class _Pool:
    """The clusters shared in this pytest process, one per shape, stopped when the session ends."""

    def __init__(self) -> None:
        self.clusters: dict[str, Any] = {}

    def get(self, options: dict[str, Any]) -> Any:
        key = shape_key(options)
        if key not in self.clusters:
            from broker_emu.runtime import ThreadedCluster

            self.clusters[key] = ThreadedCluster(**options).start()
        return self.clusters[key]

    def stop(self) -> None:
        for tc in self.clusters.values():
            tc.stop()
        self.clusters.clear()


@pytest.fixture(scope="session")
def _broker_emu_pool():
    pool = _Pool()
    yield pool
    pool.stop()


def _shared_handle(request, pool: _Pool):
    handle = SharedClusterHandle(pool.get(_options(request)), request.node.nodeid)
    yield handle
    handle.reset()


@pytest.fixture
def shared_kafka_cluster(request, _broker_emu_pool):
    """A cluster shared by every test of its shape in this process, isolated per test."""
    yield from _shared_handle(request, _broker_emu_pool)


@pytest.fixture
def kafka_cluster(request, _broker_emu_pool):
    """A cluster of the test's own (shared and isolated with --broker-emu-shared)."""
    if _shared(request.config):
        yield from _shared_handle(request, _broker_emu_pool)
        return
    from broker_emu.runtime import run_cluster_in_thread

    with run_cluster_in_thread(**_options(request)) as tc:
        yield KafkaClusterHandle(tc)


@pytest.fixture
def kafka_cluster_factory():
    """``kafka_cluster_factory(brokers=1, topics=[...], ...)`` (the marker's options) starts a
    cluster inside the test and returns its handle; every one is stopped when the test ends."""
    from broker_emu.runtime import ThreadedCluster

    started: list[Any] = []

    def start(**options: Any) -> KafkaClusterHandle:
        try:
            shaped = cluster_options(**options)
        except ClusterOptionError as exc:
            raise TypeError(str(exc)) from None
        tc = ThreadedCluster(**shaped).start()
        started.append(tc)
        return KafkaClusterHandle(tc)

    yield start
    for tc in started:
        tc.stop()


if importlib.util.find_spec("pytest_trio") is not None:
    @pytest.fixture
    async def trio_kafka_cluster(request):
        from broker_emu.runtime import open_cluster

        async with open_cluster(**_options(request)) as cluster:
            yield cluster
else:
    @pytest.fixture
    def trio_kafka_cluster():
        """Without pytest-trio nothing would run an async fixture: say which extra brings it."""
        pytest.fail(PYTEST_TRIO, pytrace=False)
