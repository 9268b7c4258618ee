"""pytest plugin (auto-registered): a running emulated cluster for your own tests.

    def test_my_app_survives_a_black_hole(kafka_cluster):          # plain sync test
        hole = kafka_cluster.faults.black_hole(api="Produce", count=1)
        run_my_app(bootstrap=kafka_cluster.bootstrap)
        kafka_cluster.wait_for("trace", kind="conn_close", timeout=10)
        assert hole.hits == 1

    async def test_with_trio(trio_kafka_cluster):                   # pytest-trio tests (the pytest extra)
        cluster = trio_kafka_cluster                                 # the Cluster itself
        cluster.faults.latency(api="Produce", ms=500)
        await cluster.wait_for("group", group="g", state="Stable", members=2)

Asyncio tests (e.g. aiokafka) use ``kafka_cluster`` too: the cluster runs on its own thread.
Customise with ``@pytest.mark.kafka_cluster(brokers=1, topics=[("t", 3, 1)], config={...})``;
``kafka_version="2.8"`` makes it advertise what that release's broker did (docs/version-profiles.md).
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from conformance.extras import PYTEST_TRIO

DEFAULTS: dict[str, Any] = {"brokers": 3, "topics": (), "config": {"group.initial.rebalance.delay.ms": 0}}


def pytest_configure(config):
    config.addinivalue_line("markers", "kafka_cluster(brokers=3, topics=(), config=None, kafka_version=None): set up the emulated cluster fixture")


def _options(request) -> dict[str, Any]:
    marker = request.node.get_closest_marker("kafka_cluster")
    options = dict(DEFAULTS)
    if marker is not None:
        options.update(marker.kwargs)
        options["config"] = {**DEFAULTS["config"], **(marker.kwargs.get("config") or {})}
        version = options.pop("kafka_version", None)
        if version is not None:
            options["config"]["emu.kafka.version"] = version
    return options


class KafkaClusterHandle:
    """Thread-safe controls over a cluster running on its own thread."""

    def __init__(self, threaded):
        self._tc = threaded

    @property
    def bootstrap(self) -> str:
        return self._tc.bootstrap

    @property
    def cluster(self):
        return self._tc.cluster

    @property
    def faults(self):
        """Named faults: ``kafka_cluster.faults.latency(api="Produce", ms=500)`` returns a handle
        (``.id``, ``.hits``, ``.clear()``); docs/faults.md."""
        return self._tc.faults

    def wait_for(self, what: str, timeout: float = 5.0, **params) -> dict:
        """Block until the cluster reaches a state (``Cluster.wait_for``; docs/faults.md), or raise
        ``broker_emu.waits.WaitTimeout`` naming what was last seen."""
        return self._tc.wait_for(what, timeout, **params)

    def add_fault(self, rule: dict) -> int:
        return self._tc.call(lambda: self.cluster.faults.add(rule, self.cluster.now_ms()).id)

    def remove_fault(self, rule_id: int) -> bool:
        return self._tc.call(self.cluster.faults.remove, rule_id)

    def clear_faults(self) -> int:
        return self._tc.call(self.cluster.faults.clear)

    def set_replication(self, topic=None, partition=None, follower=None, mode="normal", lag_ms=0.0) -> None:
        self._tc.call(self.cluster.set_replication, topic, partition, follower, mode, lag_ms)

    def move_leader(self, topic: str, partition: int, broker: int) -> None:
        self._tc.call(self.cluster.move_leader, topic, partition, broker)

    def stop_broker(self, broker: int) -> None:
        self._tc.acall(self.cluster.stop_broker, broker)

    def start_broker(self, broker: int) -> None:
        self._tc.acall(self.cluster.start_broker, broker)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None) -> None:
        self._tc.call(self.cluster.create_topic, name, partitions, replication_factor)

    def trace(self, **filters):
        """Trace events (copies), filtered like ``Trace.query`` (kind, api, client_id, since_ms...)."""
        return self._tc.call(lambda: list(self.cluster.trace.query(**filters)))

    def describe(self) -> dict:
        return self._tc.call(self.cluster.describe)


@pytest.fixture
def kafka_cluster(request):
    from broker_emu import run_cluster_in_thread

    with run_cluster_in_thread(**_options(request)) as tc:
        yield KafkaClusterHandle(tc)


if importlib.util.find_spec("pytest_trio") is not None:
    @pytest.fixture
    async def trio_kafka_cluster(request):
        from broker_emu import open_cluster

        async with open_cluster(**_options(request)) as cluster:
            yield cluster
else:
    @pytest.fixture
    def trio_kafka_cluster():
        """Without pytest-trio nothing would run an async fixture: say which extra brings it."""
        pytest.fail(PYTEST_TRIO, pytrace=False)
