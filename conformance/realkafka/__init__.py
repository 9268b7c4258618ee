"""Apache Kafka itself as a reference broker: the jars that ``dev/install-kafka`` caches, started as
1 or 3 KRaft nodes (each a combined broker+controller) on loopback. ``broker-emu kafka start``
is its command; docs/real-kafka.md has examples and figures."""

from __future__ import annotations

from conformance.realkafka.cluster import KafkaCluster, KafkaStartError, kafka_cluster
from conformance.realkafka.install import KafkaNotInstalled, check_installed, kafka_version
from conformance.realkafka.node import KafkaNode

__all__ = ["KafkaCluster", "KafkaNode", "KafkaNotInstalled", "KafkaStartError", "check_installed",
           "kafka_cluster", "kafka_version"]
