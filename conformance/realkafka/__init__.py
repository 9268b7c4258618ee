"""Apache Kafka itself as a reference broker: the jars that ``dev/install-kafka`` caches, started as
1 or 3 KRaft nodes (each a combined broker+controller) on loopback. ``broker-emu kafka start``
is its command; docs/real-kafka.md has examples and figures.

    from conformance.realkafka.cluster import apache_kafka_cluster

The launcher is ``cluster.apache_kafka_cluster`` (``KafkaCluster``), one node ``node.KafkaNode``,
the installation check ``install.check_installed``. This ``__init__`` imports nothing, so the
CLI that lists this command loads nothing (and no module here depends on it)."""
