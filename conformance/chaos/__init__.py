"""Failover chaos with accounting: producers and a consumer driven through leader
moves, broker stops, black holes, lost answers and replication stalls on a seed; then every
record is read back and counted per partition — lost, misplaced, duplicated within a producer
epoch, reordered. ``broker-emu chaos`` runs it (docs/chaos.md).

- ``plan``: the seeded fault schedule, applied through the cluster's Python controls;
- ``accounting``: the pure bookkeeping;
- ``readback``: the broker-side truth and the per-seed result;
- ``ours``: our client in virtual time (the CI test);
- ``realtime`` and ``kits``: every third-party client in real time (confluent-kafka, kafka-python,
  aiokafka, and the Java, franz-go and sarama programs of the line protocol);
- ``history`` (and ``history_blocking``, ``history_parquet``): our client's operations, recorded;
- ``checker`` and ``checker_spark``: Jepsen's Kafka anomalies named in histories, per seed or over
  many in Spark SQL;
- ``txn_load``: the transactional producer and read_committed consumer of ``--txn``;
- ``mutation``: the planted bugs (broker_emu/plants.py) measured against the checker.
"""
