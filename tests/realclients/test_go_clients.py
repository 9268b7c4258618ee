"""The Go clients franz-go and IBM sarama (through the adapter programs of conformance/adapters/go)
against `broker-emu` on 3 brokers: acks=all produce read back by assign, offsets (earliest,
latest, by time), a 900 KB message, group consumption with commits and a second member taking
over, commits by the coordinator listed back, and a clean failure against an unreachable address.

Each test runs once per client; a client whose program is not built is skipped, or fails under
CI=true (dev/install-clients builds them: dev/build-adapters/go)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from conformance.adapters.base import RunEnv
from conformance.adapters.go_clients import FranzGoAdapter, GoAdapter, SaramaAdapter
from conformance.model import Operation, Outcome
from tests.realclients.clients import require_adapter

pytestmark = [pytest.mark.realclient, pytest.mark.any_broker]   # passes on kfake too (--broker kfake)
BIG = b"B" * 900_000


@pytest.fixture(scope="module", params=["franz-go", "sarama"])
def go(request):
    adapter: GoAdapter = FranzGoAdapter() if request.param == "franz-go" else SaramaAdapter()
    require_adapter(adapter)
    yield adapter
    adapter.shutdown()


def run(adapter: GoAdapter, bootstrap: str, *steps: Operation, **config: Any) -> list[Outcome]:
    return adapter.run_blocking(steps, RunEnv(bootstrap, f"{adapter.name}-test", dict(config), 1.0))


def one(adapter: GoAdapter, bootstrap: str, kind: str, timeout_s: float | None = None, **args: Any) -> Outcome:
    config = args.pop("config", {})
    (outcome,) = run(adapter, bootstrap, Operation(kind, args, timeout_s), **config)
    assert outcome.ok, f"{adapter.name} {kind}: {outcome.error_type}: {outcome.error_message}"
    return outcome


def deadline(adapter: GoAdapter, seconds: float) -> float | None:
    """A call's deadline: sarama's calls take none (the program ignores it, as the adapter says)."""
    return None if adapter.name == "sarama" else seconds


def _log_end(cluster, partition: int) -> int:
    return cluster.call(lambda: cluster.cluster.topics["t"].partitions[partition].log_end_offset)


def test_produce_read_back_and_offsets(go, cluster):
    records: list[dict] = [{"value": f"m{i}", "key": f"k{i}", "timestamp_ms": 1_000 + i, "partition": 0} for i in range(30)]
    records.append({"value": BIG, "partition": 0, "timestamp_ms": 5_000})
    sent = one(go, cluster.bootstrap, "produce_batch", topic="t", records=records,
               config={"acks": "all", "compression.type": "lz4", "max.request.size": 1_000_000}).value
    assert [r["offset"] for r in sent] == list(range(31)) and _log_end(cluster, 0) == 31

    got = one(go, cluster.bootstrap, "read_partition", topic="t", partition=0, offset="earliest", count=31,
              config={"max.partition.fetch.bytes": 1_048_576, "fetch.max.bytes": 2_000_000}).value
    assert [r["value"] for r in got[:3]] == [b"m0", b"m1", b"m2"] and got[-1]["value"] == BIG
    assert got[0]["key"] == b"k0" and got[-1]["timestamp"] == 5_000
    api = deadline(go, 5.0)
    assert one(go, cluster.bootstrap, "end_offsets", api, topic="t", partition=0).value == {"0": 31}
    assert one(go, cluster.bootstrap, "beginning_offsets", api, topic="t", partition=0).value == {"0": 0}
    assert one(go, cluster.bootstrap, "offsets_for_times", api, topic="t", partition=0, timestamp_ms=5_000).value == {"0": 30}
    assert one(go, cluster.bootstrap, "offsets_for_times", api, topic="t", partition=0, timestamp_ms=1_010).value == {"0": 10}
    assert one(go, cluster.bootstrap, "partitions_for", api, topic="t").value == [0, 1, 2]
    # Kafka lists its internal __consumer_offsets once a group was used (the emulator does not:
    # docs/differences.md); Sarama's Topics() includes it, as the Java consumer's listTopics() does
    assert [t for t in one(go, cluster.bootstrap, "list_topics", api).value if not t.startswith("__")] == ["t"]
    # one record through the conformance operation, acks=all: its offset comes back
    assert one(go, cluster.bootstrap, "produce", topic="t", partition=0, value=b"x", config={"acks": "all"}).value == 31
    one(go, cluster.bootstrap, "produce_batch", topic="t", records=[{"value": "a", "partition": 2}, {"value": "b", "partition": 2}])
    assert one(go, cluster.bootstrap, "poll", 2.0, topic="t", partition=2, offset="earliest").value == 2


def test_group_takeover_and_commits(go, cluster):
    one(go, cluster.bootstrap, "produce_batch", topic="t", records=[{"value": f"m{i}"} for i in range(20)])
    after = [f"after{i}" for i in range(6)]
    took = one(go, cluster.bootstrap, "group_takeover", group="gg", topic="t", first=20, then_produce=after,
               max_s=60).value
    first, second = took["first"], took["second"]
    assert first["assignment"] == [0, 1, 2] and len(first["records"]) == 20
    assert second["assignment_shared"] and len(second["assignment_shared"]) < 3   # the group split the partitions
    assert second["assignment"] == [0, 1, 2]                                     # then the second took them all
    assert sorted(r["value"] for r in second["records"]) == [v.encode() for v in after]   # from the commits: no re-read
    api = deadline(go, 5.0)
    for p in range(3):   # every message was committed after it was consumed: the log end of each partition
        assert one(go, cluster.bootstrap, "committed", api, group="gg", topic="t", partition=p).value == _log_end(cluster, p)
    # commit by the coordinator (no membership), listed back
    one(go, cluster.bootstrap, "commit_sync", api, group="g2", topic="t", partition=1, offset=3)
    assert one(go, cluster.bootstrap, "committed", None, group="g2", topic="t", partition=1).value == 3
    assert one(go, cluster.bootstrap, "committed", api, group="g2", topic="t", partition=2).value is None


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_refused_address_fails_cleanly(go):
    """Nothing listens (every dial refused). franz-go: a kadm call fails at once with the refused
    dial (kgo does not retry it); a produce waits for metadata until its context (max.block.ms)
    ends. sarama: sarama.NewClient gives up once its bootstrap dials are refused
    (Metadata.Retry.Max x Metadata.Retry.Backoff), with ErrOutOfBrokers."""
    nowhere = f"127.0.0.1:{_closed_port()}"
    (listed,) = run(go, nowhere, Operation("list_topics", {}, deadline(go, 2.0)))
    (sent,) = run(go, nowhere, Operation("produce", {"topic": "t", "value": b"x", "warm_up": False}), **{"max.block.ms": 2_000})
    (admin,) = run(go, nowhere, Operation("admin_list_topics", {}, 2.0))
    for outcome in (listed, sent, admin):
        assert not outcome.ok, outcome
    if go.name == "franz-go":
        for outcome in (listed, admin):
            assert outcome.error_type == "*net.OpError" and "connection refused" in (outcome.error_message or ""), outcome
            assert outcome.elapsed_s < 1.0, outcome
        assert sent.error_type == "TimeoutException" and 1.9 <= sent.elapsed_s <= 3.5, sent
    else:
        for outcome in (listed, sent, admin):
            assert "ErrOutOfBrokers" in (outcome.error_message or "") and outcome.elapsed_s <= 5.0, outcome


def test_silent_broker_times_out_cleanly(go, silent):
    """The broker accepts and never answers: franz-go gives up at the call's context deadline;
    sarama.NewClient after its bootstrap attempts (Metadata.Retry.Max + 1), each ending at a
    Net.ReadTimeout (request.timeout.ms): about 13 s here, with ErrOutOfBrokers and the i/o timeout."""
    config = {"request.timeout.ms": 1_000, "max.block.ms": 2_000}
    (listed,) = run(go, silent, Operation("list_topics", {}, deadline(go, 2.0)), **config)
    (sent,) = run(go, silent, Operation("produce", {"topic": "t", "value": b"x", "warm_up": False}), **config)
    for outcome in (listed, sent):
        assert not outcome.ok, outcome
        assert outcome.elapsed_s <= 20.0, outcome
    if go.name == "franz-go":
        for outcome in (listed, sent):
            assert outcome.error_type == "TimeoutException" and 1.9 <= outcome.elapsed_s <= 3.5, outcome
    else:
        for outcome in (listed, sent):
            assert outcome.error_type == "TimeoutException" and "ErrOutOfBrokers" in (outcome.error_message or ""), outcome
            assert outcome.elapsed_s >= 0.9, outcome


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_login_and_a_refused_password(go, mechanism):
    """SASL_PLAINTEXT: each Go client logs in with the mechanism and writes; a wrong password is
    refused with the broker's words in the trace (sarama's SCRAM is franz-go's, behind sarama's
    SCRAMClient)."""
    from broker_emu.runtime import run_cluster_in_thread

    config = {"emu.security.protocol": "SASL_PLAINTEXT", "emu.sasl.users": "alice:alice-secret",
              "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"}
    login = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism, "sasl.username": "alice"}
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)], config=config) as tc:
        one(go, tc.bootstrap, "produce", topic="t", partition=0, value=b"signed-in",
            config={**login, "sasl.password": "alice-secret"})
        (refused,) = run(go, tc.bootstrap, Operation("produce", {"topic": "t", "partition": 0, "value": b"x"}, None),
                         **login, **{"sasl.password": "wrong", "request.timeout.ms": 3000,
                                     "socket.connection.setup.timeout.ms": 3000, "retries": 1})
        events = tc.call(lambda: [e.details for e in tc.cluster.trace.events if e.kind == "sasl"])
        assert _log_end(tc, 0) == 1
    assert not refused.ok
    steps = [(d.get("mechanism"), d.get("step")) for d in events]
    assert (mechanism, "authenticated") in steps and (mechanism, "failed") in steps, steps


def test_transactions_commit_and_a_zombie_is_fenced(go, cluster):
    """Two transactions of one record each committed back to back; a second instance with the
    same transactional id fences the first, whose commit is refused as Java names it."""
    (done,) = run(go, cluster.bootstrap, Operation("transaction", {"topic": "t", "partition": 1, "count": 2}))
    assert done.ok, f"{done.error_type}: {done.error_message}"
    (zombie,) = run(go, cluster.bootstrap, Operation("txn_zombie", {"topic": "t", "partition": 1}))
    assert not zombie.ok and zombie.error_type == "ProducerFencedException", zombie
    # 2 committed records with their markers, the zombie's aborted record and its marker, the
    # fresh instance's committed record and its marker
    assert _log_end(cluster, 1) == 8


def test_admin_create_topics_and_delete_records(go, cluster):
    """create_topics and delete_records with a deadline the broker meets: the topic exists, the
    records before the log end are gone (franz-go reports the new low watermark)."""
    one(go, cluster.bootstrap, "create_topics", 10.0, topic="made-by-" + go.name, partitions=2, replication_factor=3)
    assert one(go, cluster.bootstrap, "partitions_for", deadline(go, 5.0), topic="made-by-" + go.name).value == [0, 1]
    one(go, cluster.bootstrap, "produce_batch", topic="t", records=[{"value": f"d{i}", "partition": 2} for i in range(4)])
    end = _log_end(cluster, 2)
    deleted = one(go, cluster.bootstrap, "delete_records", 10.0, topic="t", partition=2, offset=-1)
    if go.name == "franz-go":
        assert deleted.value == end
    assert one(go, cluster.bootstrap, "beginning_offsets", deadline(go, 5.0), topic="t", partition=2).value == {"2": end}
