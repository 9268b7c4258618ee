"""Every consumer operation the Python clients' adapters map, against a fault-free cluster: each
call works, and reports its value in the shape our own adapter does (conformance/adapters/py_common.py)."""

import pytest

from broker_emu.runtime import run_cluster_in_thread
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


REFUSED = {"confluent-kafka": (True, None),                  # librdkafka: only message.timeout.ms > linger.ms
           "kafka-python": (False, "ConfigException"),       # KafkaConfigurationError, by Kafka's name
           "aiokafka": (False, "TypeError")}                 # it has no delivery.timeout.ms at all


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_refused_producer_config_is_an_outcome_and_leaves_nothing_open(client):
    """delivery.timeout.ms below linger.ms + request.timeout.ms (kip91.config-validation, scaled):
    each client's own answer; a refusing kafka-python constructor's network client is closed
    (an unclosed socket would fail this test: warnings are errors)."""
    require_client(client)
    import gc
    import importlib

    module, name = CLIENTS[client]
    adapter = getattr(importlib.import_module(module), name)()
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        env = RunEnv(tc.bootstrap, f"config-{client}", {"delivery.timeout.ms": 667, "linger.ms": 1, "request.timeout.ms": 1000})
        [outcome] = adapter.run_blocking((Operation("configure_producer", {}),), env)
    gc.collect()
    assert (outcome.ok, outcome.error_type) == REFUSED[client], outcome.error_message


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_warm_up_makes_the_same_call_first_on_the_same_consumer(client):
    """``warm_up: true`` on committed: one untimed committed() on the consumer before the timed
    one, so the broker sees the warm-up's OffsetFetch answered, then the timed call's, on the
    same connection."""
    require_client(client)
    import importlib

    from broker_emu.trace import Kind

    module, name = CLIENTS[client]
    adapter = getattr(importlib.import_module(module), name)()
    assert "committed" in adapter.warm_up_calls
    step = Operation("committed", {**WHERE, "warm_up": True}, timeout_s=5.0)
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        outcomes = adapter.run_blocking((step,), RunEnv(tc.bootstrap, f"warm-{client}", {"default.api.timeout.ms": 5000}))
        events = tc.call(lambda: [e for e in tc.cluster.trace.events if e.api == "OffsetFetch"])
    assert outcomes[0].ok, outcomes[0]
    assert [e.kind for e in events] == [Kind.RECV, Kind.SEND, Kind.RECV, Kind.SEND]
    assert len({e.conn for e in events}) == 1   # one consumer, one coordinator connection


def test_confluent_produce_is_timed_after_the_producer_id():
    """librdkafka holds an idempotent producer's first record until InitProducerId is answered
    (and may wait 500 ms on its PID timer before even asking): the produce step's warm-up waits
    for the producer id, so the timed send starts with it. With InitProducerId's answer held
    400 ms, the record is acknowledged well within that from the timed call."""
    require_client("confluent-kafka")
    from conformance.adapters.confluent import ConfluentAdapter

    step = Operation("produce", {"topic": "t", "partition": 0, "value": b"v", "count": 1})
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        tc.call(lambda: tc.cluster.faults.add({"match": {"api": "InitProducerId"},
                                               "action": {"type": "delay_response", "ms": 400}}, tc.cluster.now_ms()))
        [outcome] = ConfluentAdapter().run_blocking((step,), RunEnv(tc.bootstrap, "pid-warm-up", {"acks": "all"}))
        answered = [e for e in tc.call(lambda: list(tc.cluster.trace.events)) if e.api == "InitProducerId" and e.kind == "send"]
    assert outcome.ok, outcome
    assert len(answered) == 1
    assert outcome.elapsed_s < 0.3
