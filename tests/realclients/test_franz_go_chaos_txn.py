"""franz-go's transactional chaos commands (conformance/adapters/go/cmd/franzgo-adapter/chaostxn.go)
against the emulator, one fault at a time: what each failed call answers (``kind``: call again,
abort, or give up) is what kgo's own rules say to do next, and the read_committed consumer's
position passes the markers so a reader finds the end of a partition."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.adapters.go_clients import FranzGoAdapter
from conformance.adapters.line_protocol import decode_value
from tests.realclients.clients import require_adapter

pytestmark = pytest.mark.realclient
TOPIC = "t"
PRODUCER = {"acks": "all", "enable.idempotence": True, "linger.ms": 0, "request.timeout.ms": 3000,
            "retry.backoff.ms": 50, "transaction.timeout.ms": 30_000, "max.block.ms": 2000}


@pytest.fixture
def franz():
    adapters: list[FranzGoAdapter] = []

    def make() -> FranzGoAdapter:
        adapter = FranzGoAdapter()
        require_adapter(adapter)
        adapters.append(adapter)
        return adapter
    yield make
    for adapter in adapters:
        adapter.shutdown()


def call(adapter: FranzGoAdapter, cmd: str, **fields: Any) -> dict[str, Any]:
    return adapter.request({"cmd": cmd, **fields}, 30.0)


def ok(adapter: FranzGoAdapter, cmd: str, **fields: Any) -> dict[str, Any]:
    answer = call(adapter, cmd, **fields)
    assert answer.get("ok") is True, (cmd, answer)
    return answer


def _high_watermark(cluster: Any) -> int:
    partition = cluster.catalog.partition(TOPIC, 0)
    assert partition is not None
    return partition.high_watermark


def test_a_commit_of_unknown_outcome_is_aborted_not_retried_and_the_reader_reaches_the_end(franz):
    """The EndTxn of the first commit is swallowed: kgo's context (max.block.ms) runs out with
    the commit's outcome unknown, and kgo refuses to commit it again, so the answer is
    ``abortable``, not ``retriable`` as Java's TimeoutException. The abort then succeeds by
    reloading the producer id (its epoch bump aborts the open transaction), and the next
    transaction commits. A read_committed consumer reads the second record only, and its
    position ends past the commit marker, at the partition's end."""
    from broker_emu.runtime import run_cluster_in_thread

    producer = franz()
    with run_cluster_in_thread(brokers=3, topics=[(TOPIC, 1, 3)]) as tc:
        tc.call(lambda: tc.cluster.faults.add({"match": {"api": "EndTxn"}, "action": {"type": "black_hole"},
                                               "times": 1}, tc.cluster.now_ms()))
        ok(producer, "chaos_txn_producer", bootstrap=tc.bootstrap, client_id="fg-txn",
           config={**PRODUCER, "transactional.id": "fg-txn"})
        ok(producer, "chaos_txn_init")
        ok(producer, "chaos_txn_begin")
        ok(producer, "chaos_txn_send", n=1, topic=TOPIC, partition=0, value=b"first")
        failed = call(producer, "chaos_txn_commit")
        assert failed["ok"] is False and failed["kind"] == "abortable", failed
        assert [n for n, _, _ in failed["outcomes"]] == [1]          # flushed before the EndTxn
        ok(producer, "chaos_txn_abort")
        asked = tc.call(lambda: [e.api for e in tc.cluster.trace.events if e.kind == "recv"
                                 and e.api in ("InitProducerId", "EndTxn")])
        # the abort is a reload of the producer id, no EndTxn (the first InitProducerId may wait on the
        # connection behind the swallowed EndTxn, as Kafka answers a connection's requests in order)
        assert asked[:2] == ["InitProducerId", "EndTxn"] and set(asked[2:]) == {"InitProducerId"}, asked
        ok(producer, "chaos_txn_begin")
        ok(producer, "chaos_txn_send", n=2, topic=TOPIC, partition=0, value=b"second")
        committed = ok(producer, "chaos_txn_commit")
        [(n, offset, error)] = committed["outcomes"]
        assert n == 2 and error is None and offset >= 1, committed
        ok(producer, "chaos_txn_close")

        reader = franz()
        ok(reader, "chaos_txn_consumer", bootstrap=tc.bootstrap, client_id="fg-reader", topics=[TOPIC], partitions=1,
           config={"group.id": "fg-readers", "isolation.level": "read_committed", "fetch.max.wait.ms": 200})
        read: list[tuple[str, int, int, bytes | None]] = []
        position = 0
        for _ in range(50):
            read += [(t, p, o, decode_value(v)) for t, p, o, v in ok(reader, "chaos_txn_poll", timeout_ms=200)["records"]]
            [[_, _, position]] = ok(reader, "chaos_txn_positions")["positions"]
            if position >= offset + 2:
                break
        end = tc.call(lambda: _high_watermark(tc.cluster))
        ok(reader, "chaos_txn_commit_offsets", offsets=[[TOPIC, 0, position]])
        ok(reader, "chaos_txn_consumer_close")
    assert read == [(TOPIC, 0, offset, b"second")]
    assert position == end == offset + 2        # the commit marker after it counted, the end reached
