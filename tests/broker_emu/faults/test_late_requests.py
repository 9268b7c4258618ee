"""The ``hold`` fault in virtual time: a request the broker has read waits unhandled until a
condition of its producer (or a fallback delay), then is handled even though its client has gone;
under transaction version 1 that tears a transaction (a late EndTxn of one transaction commits the
next one's records, a late Produce of an aborted transaction lands in the next)."""

from __future__ import annotations

import pytest
import trio

from broker_emu.faults.rules import FaultConfigError
from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from client.protocol.records import decode_batch, iter_batches
from tests.broker_emu.transactions.helpers import PRODUCE, add, end, fetch, init, txn_batch
from tests.broker_emu.wire import WireClient

TID = "tx"
CONCURRENT = 51


async def produce(cluster, values: list[bytes], pid: int, epoch: int, seq: int) -> int:
    w = WireClient(cluster.connect(0))
    r = await w.call(PRODUCE, 9, {"transactional_id": TID, "acks": -1, "timeout_ms": 30000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": txn_batch(pid, epoch, seq, values)}]}]})
    return r.responses[0].partition_responses[0].error_code


async def gives_up(call, after_s: float = 1.0) -> bool:
    """A client's request.timeout.ms: no answer within ``after_s``, then it closes the connection."""
    with trio.move_on_after(after_s):
        await call
        return False
    return True


async def until_added(w: WireClient, pid: int, epoch: int) -> None:
    """AddPartitionsToTxn retried through CONCURRENT_TRANSACTIONS (the last markers pending)."""
    for _ in range(50):   # a client's retry backoff
        if (errors := await add(w, TID, pid, epoch, [("t", 0)])) != [CONCURRENT]:
            break
        await trio.sleep(0.1)
    assert errors == [0]


async def until_ended(w: WireClient, pid: int, epoch: int) -> int:
    for _ in range(50):
        if (code := await end(w, TID, pid, epoch, commit=True)) != CONCURRENT:
            break
        await trio.sleep(0.1)
    return code


def committed_values(part) -> list[bytes]:
    """What a read_committed consumer reads of a Fetch answer: below the last stable offset, no
    control batch, no batch of an aborted transaction (from its first offset to its marker)."""
    buf, values = bytes(part.records or b""), []
    aborted = {(a.producer_id, a.first_offset) for a in part.aborted_transactions or ()}
    open_abort: set[int] = set()
    for pos, header in iter_batches(buf):
        if header.base_offset >= part.last_stable_offset:
            break
        starts = {pid for pid, first in aborted if pid == header.producer_id and first <= header.base_offset}
        if header.is_control:
            open_abort.discard(header.producer_id)
            aborted = {(pid, first) for pid, first in aborted if not (pid == header.producer_id and first <= header.base_offset)}
            continue
        open_abort |= starts
        if header.producer_id not in open_abort:
            values += [r.value for r in decode_batch(buf, pos)[1]]
    return values


async def test_a_late_end_txn_commits_the_next_transaction_so_far(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.txn.marker.delay.ms": 100}) as cluster:
        cluster.faults.add({"match": {"api": "EndTxn", "transactional_id": TID},
                            "action": {"type": "hold", "until": "next_txn_produce"}, "times": 1}, cluster.now_ms())
        w = WireClient(cluster.connect(0))
        r = await init(w, TID)
        pid, epoch = r.producer_id, r.producer_epoch
        await until_added(w, pid, epoch)
        assert await produce(cluster, [b"n-1"], pid, epoch, 0) == 0
        stuck = WireClient(cluster.connect(0))
        assert await gives_up(end(stuck, TID, pid, epoch, commit=True))
        await stuck.stream.aclose()                     # the client closes on its timeout ...
        assert await end(w, TID, pid, epoch, commit=True) == 0   # ... and retries: N commits
        await until_added(w, pid, epoch)               # N+1 begins (same epoch: version 1)
        assert await produce(cluster, [b"n+1 first"], pid, epoch, 1) == 0
        await trio.sleep(0.5)                           # the late EndTxn(commit) of N lands, its markers follow
        assert await produce(cluster, [b"n+1 second"], pid, epoch, 2) == 0
        assert await until_ended(w, pid, epoch) == 0   # the client's commit "succeeds" (retried through the markers)
        await trio.sleep(1)

        hold, release = cluster.trace.query(kind=Kind.LATE_HOLD)[0], cluster.trace.query(kind=Kind.LATE_RELEASE)[0]
        assert (hold.api, hold.details["until"], hold.details["transactional_id"]) == ("EndTxn", "next_txn_produce", TID)
        assert release.details["connection_open"] is False and "Produce" in release.details["reason"]
        assert cluster.trace.query(kind=Kind.LATE_ANSWER)[0].details == {"held": 1, "dropped": True}
        commits = [e for e in cluster.trace.query(kind=Kind.TXN_STATE) if e.details["to"] == "PrepareCommit"]
        assert len(commits) == 2 and release.t_ms <= commits[1].t_ms   # N+1's commit decided by N's request
        part = await fetch(WireClient(cluster.connect(0)), "t", 0, 1)
        # the tear: N+1's first record committed, its second left hanging behind the last stable offset
        assert committed_values(part) == [b"n-1", b"n+1 first"]
        assert (part.last_stable_offset, part.high_watermark) == (4, 5)   # no marker ever ends it


async def test_a_late_produce_of_an_aborted_transaction_lands_in_the_next(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.txn.marker.delay.ms": 100}) as cluster:
        cluster.faults.add({"match": {"api": "Produce", "transactional_id": TID},
                            "action": {"type": "hold", "until": "next_add_partitions"}, "times": 1}, cluster.now_ms())
        w = WireClient(cluster.connect(0))
        r = await init(w, TID)
        pid, epoch = r.producer_id, r.producer_epoch
        await until_added(w, pid, epoch)
        assert await gives_up(produce(cluster, [b"aborted"], pid, epoch, 0))
        assert await end(w, TID, pid, epoch, commit=False) == 0   # N aborted, with no epoch bump
        await until_added(w, pid, epoch)                           # N+1 begins: the late Produce lands
        await trio.sleep(0.01)
        assert await produce(cluster, [b"committed"], pid, epoch, 1) == 0
        assert await end(w, TID, pid, epoch, commit=True) == 0
        await trio.sleep(1)
        part = await fetch(WireClient(cluster.connect(0)), "t", 0, 1)
        assert committed_values(part) == [b"aborted", b"committed"]   # a record of N inside N+1
        # the connection stayed open in this test (the client never closed it): the answer went back on it
        assert cluster.trace.query(kind=Kind.LATE_RELEASE)[0].details["connection_open"] is True


async def test_the_fallback_releases_a_held_request_on_its_still_open_connection(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.faults.add({"match": {"api": "InitProducerId"}, "action": {"type": "hold", "until": "delay", "ms": 700}},
                           cluster.now_ms())
        w = WireClient(cluster.connect(0))
        start = trio.current_time()
        assert (await init(w, TID)).error_code == 0
        assert trio.current_time() - start == pytest.approx(0.7)
        release = cluster.trace.query(kind=Kind.LATE_RELEASE)[0]
        assert release.details["connection_open"] is True and release.details["reason"].startswith("fallback: 700")
        assert not cluster.faults.held_requests.held and not cluster.trace.query(kind=Kind.LATE_ANSWER)


async def test_a_held_request_dies_with_a_stopped_broker(autojump_clock):
    async with open_cluster(2, topics=[("t", 1, 2)], listen=False) as cluster:
        cluster.faults.add({"match": {"api": "InitProducerId", "broker": 1},
                            "action": {"type": "hold", "until": "delay", "ms": 5000}}, cluster.now_ms())
        w = WireClient(cluster.connect(1))
        assert await gives_up(init(w, TID), 1.0)
        await cluster.stop_broker(1)
        await trio.sleep(6)
        release = cluster.trace.query(kind=Kind.LATE_RELEASE)[0]
        assert release.details.get("dropped") is True and not cluster.trace.query(kind=Kind.LATE_ANSWER)
        assert not cluster.faults.held_requests.held


@pytest.mark.parametrize(("action", "field"), [
    ({"type": "hold"}, "action.until"),
    ({"type": "hold", "until": "next_commit"}, "action.until"),
    ({"type": "hold", "until": "delay"}, "action.ms"),
    ({"type": "hold", "until": "next_end_txn", "ms": -1}, "action.ms"),
])
async def test_a_bad_hold_rule_is_refused_naming_its_field(action, field):
    async with open_cluster(1, listen=False) as cluster:
        with pytest.raises(FaultConfigError) as info:
            cluster.faults.add({"action": action}, 0.0)
        assert info.value.field == field


async def test_past_the_bound_a_request_is_not_held(autojump_clock, monkeypatch):
    from broker_emu.faults import late

    monkeypatch.setattr(late, "MAX_HELD", 1)
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.faults.add({"match": {"api": "InitProducerId"}, "action": {"type": "hold", "until": "next_end_txn"}},
                           cluster.now_ms())
        assert await gives_up(init(WireClient(cluster.connect(0)), TID))     # held: its EndTxn never comes
        assert (await init(WireClient(cluster.connect(0)), TID)).error_code == 0   # past the bound: answered
        release = cluster.trace.query(kind=Kind.LATE_RELEASE)[0]
        assert release.details["reason"] == "not held: 1 requests are held already"
        assert len(cluster.faults.held_requests.held) == 1


def test_the_named_fault_late_is_the_hold_rule():
    from broker_emu.faults import named

    assert named.late("next_end_txn", api="Produce", transactional_id="tx", count=1) == {
        "action": {"type": "hold", "until": "next_end_txn"}, "name": "late",
        "match": {"api": "Produce", "transactional_id": "tx"}, "times": 1}
    assert named.late("delay", ms=500)["action"] == {"type": "hold", "until": "delay", "ms": 500}


async def test_the_engine_adds_the_named_fault_late(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        handle = cluster.faults.late("delay", ms=300, api="InitProducerId")
        start = trio.current_time()
        assert (await init(WireClient(cluster.connect(0)), TID)).error_code == 0
        assert trio.current_time() - start == pytest.approx(0.3) and handle.hits == 1


@pytest.mark.parametrize(("first", "released_by"), [("add_partitions", "AddPartitionsToTxn"), ("produce", "Produce")])
def test_next_txn_start_is_whichever_way_the_next_transaction_begins(first, released_by):
    """A producer of transaction version 1 begins its next transaction with AddPartitionsToTxn, one
    of version 2 with the Produce that adds the partition: ``next_txn_start`` waits for either, a
    Produce counting only after the producer's EndTxn (the held request's own transaction may
    still write before it ends)."""
    from broker_emu.faults.late import ADD_PARTITIONS, END_TXN, PRODUCE, LateRequests

    late = LateRequests()
    held = late.hold(1, PRODUCE, TID, "next_txn_start", now_ms=0, fallback_ms=60_000)
    assert late.observe(PRODUCE, TID, True, 10) == []           # still the held request's transaction
    assert late.observe(ADD_PARTITIONS, "other", True, 20) == []  # another producer's
    assert late.observe(END_TXN, TID, True, 30) == []
    trigger = ADD_PARTITIONS if first == "add_partitions" else PRODUCE
    assert late.observe(trigger, TID, False, 40) == []           # an error answer releases nothing
    assert late.observe(trigger, TID, True, 50) == [held]
    assert f"began with {released_by}, 50 ms after it was held" in held.reason
