"""Every consumer operation the Python clients' adapters map, against a fault-free cluster: each
call works, and reports its value in the shape our own adapter does (conformance/adapters/py_common.py)."""

import pytest

from broker_emu import run_cluster_in_thread
from conformance.adapters.base import RunEnv
from conformance.model import Operation
from tests.realclients.conftest import require_client

pytestmark = pytest.mark.realclient

TP = "TopicPartition(topic='t', partition=0)"
WHERE = {"group": "ops", "topic": "t", "partition": 0}
STEPS = (
    Operation("produce", {"topic": "t", "partition": 0, "value": b"v", "count": 3}),
    Operation("commit_sync", {**WHERE, "offset": 2}, timeout_s=5.0),
    Operation("committed", WHERE, timeout_s=5.0),
    Operation("end_offsets", {**WHERE, "partitions": [0]}, timeout_s=5.0),
    Operation("beginning_offsets", {**WHERE, "partitions": [0]}, timeout_s=5.0),
    Operation("offsets_for_times", {**WHERE, "timestamp_ms": 0}, timeout_s=5.0),
    Operation("list_topics", {}, timeout_s=5.0),
    Operation("partitions_for", {"topic": "t"}, timeout_s=5.0),
    Operation("position", WHERE, timeout_s=5.0),
    Operation("close", {"topic": "t", "partition": 0}, timeout_s=2.0),
)
CLIENTS = {
    "confluent-kafka": ("conformance.adapters.confluent", "ConfluentAdapter"),
    "kafka-python": ("conformance.adapters.kafka_python", "KafkaPythonAdapter"),
    "aiokafka": ("conformance.adapters.aiokafka", "AiokafkaAdapter"),
}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_every_consumer_operation_in_ours_shapes(client):
    require_client(client)
    import importlib

    module, name = CLIENTS[client]
    adapter = getattr(importlib.import_module(module), name)()
    assert not {s.kind for s in STEPS} - adapter.operations
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)], config={"group.initial.rebalance.delay.ms": 0}) as tc:
        outcomes = adapter.run_blocking(STEPS, RunEnv(tc.bootstrap, f"ops-{client}", {}))
    failed = [(o.operation, o.error_type, o.error_message) for o in outcomes if not o.ok]
    assert not failed
    got = {o.operation: o.value for o in outcomes}
    assert got["commit_sync"] == "None"
    assert {(tp.topic, tp.partition): offset for tp, offset in got["committed"].items()} == {("t", 0): 2}
    assert got["end_offsets"] == f"{{{TP}: 3}}"
    assert got["beginning_offsets"] == f"{{{TP}: 0}}"
    assert got["offsets_for_times"].startswith(f"{{{TP}: (0, ")   # librdkafka reports no timestamp: -1
    # aiokafka's topics() gives names only: the partitions are what its cache knows (none here)
    assert ("'t': []" if client == "aiokafka" else "'t': [0]") in got["list_topics"]
    # aiokafka's partitions_for_topic() reads its cache and sends nothing: a fresh consumer knows none
    assert got["partitions_for"] == ("[]" if client == "aiokafka" else "[0]")
    # the group's committed offset, or (librdkafka: a local lookup, no fetch yet) OFFSET_INVALID
    assert got["position"] in ("2", "-1001")
    assert got["close"] is None
