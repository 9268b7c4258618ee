"""Apache Kafka's Java client (kafka-clients, through the adapter program of
conformance/adapters/java) against `broker-emu` on 3 brokers: acks=all produce read back by
assign, offsets (earliest, latest, by time), a 900 KB message, group consumption with commits
and a second member taking over, a clean timeout against an unreachable address, and the admin
client (topics listed, created, described and deleted; the cluster and the groups described)."""

from __future__ import annotations

import socket

import pytest

from conformance.adapters.base import RunEnv
from conformance.adapters.java_client import JavaAdapter, JavaConsumerProtocolAdapter
from conformance.model import Operation, Outcome
from tests.realclients.clients import require_adapter

pytestmark = [pytest.mark.realclient, pytest.mark.any_broker]   # passes on Apache Kafka too (--broker kafka)
BIG = b"B" * 900_000
# a 900 KB record: the producer's request and the consumer's fetch must hold it
BIG_PRODUCER = {"max.request.size": 1_000_000}
BIG_CONSUMER = {"max.partition.fetch.bytes": 1_048_576, "fetch.max.bytes": 2_000_000}


@pytest.fixture(scope="module")
def java():
    adapter = JavaAdapter()
    require_adapter(adapter)
    yield adapter
    adapter.shutdown()


def run(adapter: JavaAdapter, bootstrap: str, *steps: Operation, **config) -> list[Outcome]:
    return adapter.run_blocking(steps, RunEnv(bootstrap, "java-test", dict(config), 1.0))


def one(adapter: JavaAdapter, bootstrap: str, kind: str, timeout_s: float | None = None, **args) -> Outcome:
    config = args.pop("config", {})
    (outcome,) = run(adapter, bootstrap, Operation(kind, args, timeout_s), **config)
    assert outcome.ok, f"{kind}: {outcome.error_type}: {outcome.error_message}"
    return outcome


def _log_end(cluster, partition: int) -> int:
    return cluster.call(lambda: cluster.cluster.topics["t"].partitions[partition].log_end_offset)


def test_produce_read_back_and_offsets(java, cluster):
    records: list[dict] = [{"value": f"m{i}", "key": f"k{i}", "timestamp_ms": 1_000 + i, "partition": 0} for i in range(30)]
    records.append({"value": BIG, "partition": 0, "timestamp_ms": 5_000})
    sent = one(java, cluster.bootstrap, "produce_batch", topic="t", records=records,
               config={"acks": "all", "compression.type": "lz4", **BIG_PRODUCER}).value
    assert [r["offset"] for r in sent] == list(range(31)) and _log_end(cluster, 0) == 31

    got = one(java, cluster.bootstrap, "read_partition", topic="t", partition=0, offset="earliest", count=31,
              config=BIG_CONSUMER).value
    assert [r["value"] for r in got[:3]] == [b"m0", b"m1", b"m2"] and got[-1]["value"] == BIG
    assert got[-1]["timestamp"] == 5_000
    assert one(java, cluster.bootstrap, "end_offsets", 5.0, topic="t", partition=0).value == {"0": 31}
    assert one(java, cluster.bootstrap, "beginning_offsets", 5.0, topic="t", partition=0).value == {"0": 0}
    assert one(java, cluster.bootstrap, "offsets_for_times", 5.0, topic="t", partition=0, timestamp_ms=5_000).value == {"0": 30}
    assert one(java, cluster.bootstrap, "offsets_for_times", 5.0, topic="t", partition=0, timestamp_ms=1_010).value == {"0": 10}
    assert one(java, cluster.bootstrap, "partitions_for", 5.0, topic="t").value == [0, 1, 2]
    # one record through the conformance operation, acks=all: its offset comes back
    assert one(java, cluster.bootstrap, "produce", topic="t", partition=0, value=b"x", config={"acks": "all"}).value == 31


def test_group_takeover_and_commits(java, cluster):
    one(java, cluster.bootstrap, "produce_batch", topic="t", records=[{"value": f"m{i}"} for i in range(20)])
    first = one(java, cluster.bootstrap, "group_consume", group="jg", topic="t", count=20, max_s=30).value
    assert first["assignment"] == [0, 1, 2] and len(first["records"]) == 20
    ends = {p: _log_end(cluster, p) for p in range(3)}
    for p in range(3):   # the first member's commitSync(): the log end of each partition it read from
        committed = one(java, cluster.bootstrap, "committed", 5.0, group="jg", topic="t", partition=p).value
        assert committed == ends[p] or (ends[p] == 0 and committed is None), (p, committed, ends)
    one(java, cluster.bootstrap, "produce_batch", topic="t", records=[{"value": f"after{i}"} for i in range(5)])
    second = one(java, cluster.bootstrap, "group_consume", group="jg", topic="t", count=5, max_s=30).value
    assert sorted(r["value"] for r in second["records"]) == [b"after%d" % i for i in range(5)]
    # commit_sync by assign (no membership), read back with and without a deadline
    one(java, cluster.bootstrap, "commit_sync", 5.0, group="jg2", topic="t", partition=1, offset=3)
    assert one(java, cluster.bootstrap, "committed", None, group="jg2", topic="t", partition=1).value == 3
    assert one(java, cluster.bootstrap, "committed", 5.0, group="jg2", topic="t", partition=2).value is None
    groups = one(java, cluster.bootstrap, "admin_list_groups").value
    assert {"jg", "jg2"} <= set(groups)
    described = one(java, cluster.bootstrap, "admin_describe_groups", groups=["jg"]).value
    assert described["jg"]["state"] == "Empty" and described["jg"]["members"] == 0


def test_poll_and_position(java, cluster):
    one(java, cluster.bootstrap, "produce_batch", topic="t", records=[{"value": "a", "partition": 2}, {"value": "b", "partition": 2}])
    assert one(java, cluster.bootstrap, "poll", 5.0, topic="t", partition=2, offset="earliest").value == 2
    assert one(java, cluster.bootstrap, "position", 5.0, group="pg", topic="t", partition=2).value == 0
    # KafkaConsumer.listTopics() includes internal topics: Kafka has __consumer_offsets once a
    # group was used, the emulator never lists it (docs/differences.md, difference 9)
    assert [t for t in one(java, cluster.bootstrap, "list_topics", 5.0).value if not t.startswith("__")] == ["t"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_address_times_out_cleanly(java):
    nowhere = f"127.0.0.1:{_closed_port()}"
    (listed,) = run(java, nowhere, Operation("list_topics", {}, 2.0))
    assert not listed.ok and listed.error_type == "TimeoutException"
    assert 1.9 <= listed.elapsed_s <= 3.5, listed.elapsed_s
    (sent,) = run(java, nowhere, Operation("produce", {"topic": "t", "value": b"x", "warm_up": False}),
                  **{"max.block.ms": 2_000})
    assert not sent.ok and sent.error_type == "TimeoutException", sent
    assert 1.9 <= sent.elapsed_s <= 3.5, sent.elapsed_s
    (admin,) = run(java, nowhere, Operation("admin_list_topics", {}, 2.0))
    assert not admin.ok and admin.error_type == "TimeoutException", admin


def test_admin_topics_and_cluster(java, cluster):
    assert one(java, cluster.bootstrap, "admin_list_topics", 10.0).value == ["t"]
    one(java, cluster.bootstrap, "admin_create_topics", topics=[{"name": "jt", "partitions": 2, "replication_factor": 3}])
    assert one(java, cluster.bootstrap, "admin_list_topics", 10.0).value == ["jt", "t"]
    assert one(java, cluster.bootstrap, "admin_describe_topics", names=["jt", "t"]).value == {"jt": 2, "t": 3}
    one(java, cluster.bootstrap, "admin_delete_topics", names=["jt"])
    assert one(java, cluster.bootstrap, "admin_list_topics", 10.0).value == ["t"]
    described = one(java, cluster.bootstrap, "admin_describe_cluster").value
    # three brokers, one of them the controller (their ids are the cluster's: 0-2 here, 1-3 on the Kafka launcher's)
    assert len(described["nodes"]) == 3 and described["controller"] in described["nodes"] and described["cluster_id"]


def test_consumer_protocol_calls_without_membership(cluster):
    """group.protocol=consumer (the AsyncKafkaConsumer): assign, offsets and commits need no
    KIP-848 heartbeat, so they run against the emulator too."""
    adapter = JavaConsumerProtocolAdapter()
    require_adapter(adapter)
    try:
        one(adapter, cluster.bootstrap, "produce_batch", topic="t", records=[{"value": "a", "partition": 1}])
        assert one(adapter, cluster.bootstrap, "poll", 5.0, topic="t", partition=1, offset="earliest").value == 1
        assert one(adapter, cluster.bootstrap, "end_offsets", 5.0, topic="t", partition=1).value == {"1": 1}
        one(adapter, cluster.bootstrap, "commit_sync", 5.0, group="cpg", topic="t", partition=1, offset=1)
        assert one(adapter, cluster.bootstrap, "committed", 5.0, group="cpg", topic="t", partition=1).value == 1
    finally:
        adapter.shutdown()


def test_a_new_jvm_produces_polls_and_commits_once_on_a_cluster_of_its_own_before_its_first_run():
    """A cold JVM loaded the consumer inside the timed call (poll(67 ms) returned 0.5-7 s late), so
    each new adapter program warms up first; its requests go to a throwaway cluster, and each
    warm-up step must succeed, or the JVM is left as cold as before."""
    adapter = JavaAdapter()
    sent: list[tuple[dict, dict]] = []
    call = adapter._call

    def recording(request, timeout_s):
        answer = call(request, timeout_s)
        sent.append((request, answer))
        return answer

    adapter._call = recording   # type: ignore[method-assign]
    try:
        require_adapter(adapter)
        adapter.hello()   # already started: no second warm-up
    finally:
        adapter.shutdown()
    runs = [(q, a) for q, a in sent if q["cmd"] == "run"]
    assert [q["cmd"] for q, _ in sent] == ["hello", "run"]
    (request, answer), = runs
    assert [s["kind"] for s in request["steps"]] == ["produce", "poll", "transaction"]
    assert [o["ok"] for o in answer["outcomes"]] == [True, True, True], answer["outcomes"]
