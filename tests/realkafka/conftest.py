"""Apache Kafka itself (conformance/realkafka): a 1-node cluster shared by the session, and the
rule for a missing Java or missing jars: fail under CI=true, skip elsewhere."""

from __future__ import annotations

import os
import shutil

import pytest


def require_kafka() -> None:
    """Skip (or, under ``CI=true``, fail) when java, mvn's jars or the broker are missing. CI must
    run these tests: a green run that skipped them would prove nothing."""
    from conformance.realkafka.install import KafkaNotInstalled, check_installed

    try:
        check_installed()
    except KafkaNotInstalled as exc:
        reason = f"{exc}" + ("" if shutil.which("mvn") else " (mvn not found)")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def kafka1():
    """One Apache Kafka node (broker+controller) for the whole session, stopped at its end even
    when tests failed."""
    require_kafka()
    from conformance.realkafka.cluster import apache_kafka_cluster
    from conformance.realkafka.config import HARNESS

    with apache_kafka_cluster(brokers=1, config=HARNESS) as k:
        yield k


@pytest.fixture
def kafka_factory():
    """Start clusters inside a test: ``kafka_factory(brokers=3, config={...})``; every cluster it
    started is stopped when the test ends, passed or failed."""
    require_kafka()
    from conformance.realkafka.cluster import KafkaCluster

    started: list[KafkaCluster] = []

    def start(brokers: int = 1, config: dict | None = None, timeout: float = 120.0,
              client_protocol: str = "", features: dict | None = None) -> KafkaCluster:
        from conformance.realkafka.config import HARNESS

        cluster = KafkaCluster(brokers, {**HARNESS, **(config or {})}, client_protocol=client_protocol, features=features)
        started.append(cluster)
        return cluster.start(timeout)

    yield start
    for cluster in started:
        cluster.stop()
