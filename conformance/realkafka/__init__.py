"""Apache Kafka itself as a reference broker: the jars that ``dev/install-kafka`` caches, started as
1 or 3 KRaft nodes (each a combined broker+controller) on loopback. ``broker-emu kafka start``
is its command; docs/real-kafka.md has examples and figures.

Names are imported on first use (PEP 562), so the CLI that lists this command loads nothing."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "KafkaCluster": "conformance.realkafka.cluster", "KafkaStartError": "conformance.realkafka.cluster",
    "apache_kafka_cluster": "conformance.realkafka.cluster",
    "KafkaNotInstalled": "conformance.realkafka.install", "check_installed": "conformance.realkafka.install",
    "kafka_version": "conformance.realkafka.install",
    "KafkaNode": "conformance.realkafka.node",
}
__all__ = ["KafkaCluster", "KafkaNode", "KafkaNotInstalled", "KafkaStartError", "check_installed",
           "apache_kafka_cluster", "kafka_version"]

if TYPE_CHECKING:
    from conformance.realkafka.cluster import KafkaCluster, KafkaStartError, apache_kafka_cluster
    from conformance.realkafka.install import KafkaNotInstalled, check_installed, kafka_version
    from conformance.realkafka.node import KafkaNode


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
