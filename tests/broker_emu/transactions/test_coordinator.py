"""The transaction coordinator in virtual time: markers after EndTxn (asynchronous, so
CONCURRENT_TRANSACTIONS while they are pending), the last stable offset and read_committed
reads, the timeout check at its own interval (not at the timeout), fencing, and the coordinator's
validations."""

import trio
import trio.lowlevel

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from tests.broker_emu.transactions.helpers import (
    ADD,
    ADD_OFFSETS,
    DESCRIBE_PRODUCERS,
    DESCRIBE_TXNS,
    LIST_OFFSETS,
    LIST_TXNS,
    OFFSET_FETCH,
    TXN_COMMIT,
    add,
    coordinator,
    end,
    fetch,
    init,
    produce,
    txn_batch,
)
from tests.broker_emu.wire import WireClient

CONCURRENT, FENCED, INVALID_EPOCH, INVALID_TIMEOUT, NOT_COORDINATOR = 51, 90, 47, 50, 16


async def open_txn(cluster, tid: str, timeout_ms: int = 60000, values=(b"a", b"b")):
    w = await coordinator(cluster, tid)
    r = await init(w, tid, timeout_ms)
    assert r.error_code == 0
    assert await add(w, tid, r.producer_id, r.producer_epoch, [("t", 0)]) == [0]
    got = await produce(WireClient(cluster.connect(0)), "t", 0, txn_batch(r.producer_id, r.producer_epoch, 0, list(values)))
    assert got.error_code == 0
    return w, r.producer_id, r.producer_epoch


async def test_markers_follow_end_txn_and_only_then_read_committed_sees_the_records(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.txn.marker.delay.ms": 500}) as cluster:
        w, pid, epoch = await open_txn(cluster, "tx")
        reader = WireClient(cluster.connect(0))
        committed, everything = await fetch(reader, "t", 0, 1), await fetch(reader, "t", 0, 0)
        assert (committed.high_watermark, committed.last_stable_offset, bytes(committed.records or b"")) == (2, 0, b"")
        assert everything.records and everything.aborted_transactions is None
        assert await end(w, "tx", pid, epoch, commit=True) == 0
        # the markers are not written yet: the transaction is PrepareCommit
        assert await end(w, "tx", pid, epoch, commit=True) == CONCURRENT
        assert (await init(w, "tx")).error_code == CONCURRENT
        assert await add(w, "tx", pid, epoch, [("t", 0)]) == [CONCURRENT]
        await trio.sleep(0.6)
        marker = cluster.trace.query(kind=Kind.TXN_MARKER)[0]
        assert (marker.t_ms, marker.details["offset"], marker.details["commit"]) == (500.0, 2, True)
        after = await fetch(reader, "t", 0, 1)
        assert (after.high_watermark, after.last_stable_offset, after.aborted_transactions) == (3, 3, [])
        assert after.records
        assert await end(w, "tx", pid, epoch, commit=True) == 0   # a retry of a completed commit
        latest = await reader.call(LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": 1, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
        assert latest.topics[0].partitions[0].offset == 3


async def test_an_aborted_transaction_is_listed_for_read_committed_readers(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w, pid, epoch = await open_txn(cluster, "tx")
        reader = WireClient(cluster.connect(0))
        open_now = await reader.call(LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": 1, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
        assert open_now.topics[0].partitions[0].offset == 0          # the last stable offset, not the HW (2)
        assert await end(w, "tx", pid, epoch, commit=False) == 0
        await trio.lowlevel.checkpoint()
        got = await fetch(reader, "t", 0, 1)
        assert (got.last_stable_offset, [(a.producer_id, a.first_offset) for a in got.aborted_transactions]) == (3, [(pid, 0)])
        assert (await fetch(reader, "t", 0, 1, offset=3)).aborted_transactions == []   # nothing aborted past offset 3


async def test_the_coordinator_aborts_at_its_check_interval_after_the_timeout_and_fences_the_producer(autojump_clock):
    config = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 10000}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        await trio.sleep(0.5)
        w, pid, epoch = await open_txn(cluster, "tx", timeout_ms=3000)
        await trio.sleep(5)   # past the 3 s timeout, before the check at 10 s: still open
        state = (await w.call(DESCRIBE_TXNS, 0, {"transactional_ids": ["tx"]})).transaction_states[0]
        assert (state.transaction_state, state.producer_epoch) == ("Ongoing", epoch)
        await trio.sleep(5)
        aborted = [e for e in cluster.trace.query(kind=Kind.TXN_STATE) if e.details["to"] == "PrepareAbort"]
        assert [(e.t_ms, e.details["epoch"]) for e in aborted] == [(10000.0, epoch + 1)]
        assert "timed out" in aborted[0].details["reason"]
        assert await end(w, "tx", pid, epoch, commit=True) == FENCED          # v2+: PRODUCER_FENCED
        assert await end(w, "tx", pid, epoch, commit=True, version=1) == INVALID_EPOCH
        late = await produce(WireClient(cluster.connect(0)), "t", 0, txn_batch(pid, epoch, 2, [b"late"]))
        assert late.error_code == INVALID_EPOCH
        got = await fetch(WireClient(cluster.connect(0)), "t", 0, 1)
        assert [(a.producer_id, a.first_offset) for a in got.aborted_transactions] == [(pid, 0)]


async def test_init_producer_id_validates_bumps_and_fences(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 1)], listen=False) as cluster:
        w = await coordinator(cluster, "tx")
        assert (await init(w, "tx", timeout_ms=900001)).error_code == INVALID_TIMEOUT
        other = next(b for b in cluster.brokers if b != cluster.txn.coordinator_for("tx"))
        assert (await init(WireClient(cluster.connect(other)), "tx")).error_code == NOT_COORDINATOR
        first = await init(w, "tx")
        second = await init(w, "tx")
        assert (second.producer_id, second.producer_epoch) == (first.producer_id, first.producer_epoch + 1)
        assert await add(w, "tx", first.producer_id, first.producer_epoch, [("t", 0)]) == [FENCED]
        assert await add(w, "tx", first.producer_id, first.producer_epoch, [("t", 0)], version=1) == [INVALID_EPOCH]
        assert await add(w, "tx", second.producer_id, second.producer_epoch, [("t", 0), ("nope", 0)]) == [55, 3]
        assert await add(w, "tx", second.producer_id, second.producer_epoch, [("t", 0)]) == [0]
        # a new session while a transaction is open: it is aborted with a new epoch, then the retry succeeds
        assert (await init(w, "tx")).error_code == CONCURRENT
        await trio.lowlevel.checkpoint()
        third = await init(w, "tx")
        assert (third.error_code, third.producer_epoch) == (0, second.producer_epoch + 2)


async def test_listings_show_the_transaction_and_its_producer(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w, pid, epoch = await open_txn(cluster, "tx")
        listed = await w.call(LIST_TXNS, 1, {"state_filters": ["Ongoing", "Bogus"], "producer_id_filters": [], "duration_filter": -1})
        assert [(s.transactional_id, s.producer_id, s.transaction_state) for s in listed.transaction_states] == [("tx", pid, "Ongoing")]
        assert listed.unknown_state_filters == ["Bogus"]
        described = (await w.call(DESCRIBE_TXNS, 0, {"transactional_ids": ["tx", "nobody"]})).transaction_states
        assert [(d.error_code, d.topics[0].partitions if d.topics else None) for d in described] == [(0, [0]), (105, None)]
        producers = await w.call(DESCRIBE_PRODUCERS, 0, {"topics": [{"name": "t", "partition_indexes": [0]}]})
        active = producers.topics[0].partitions[0].active_producers
        assert [(a.producer_id, a.producer_epoch, a.last_sequence, a.current_txn_start_offset) for a in active] == [(pid, epoch, 1, 0)]
        assert ADD  # the helpers' names are the API keys


async def _offset_fetch(w: WireClient, require_stable: bool):
    r = await w.call(OFFSET_FETCH, 7, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}],
                                       "require_stable": require_stable})
    p = r.topics[0].partitions[0]
    return p.error_code, p.committed_offset


async def _txn_commit_offset(w: WireClient, pid: int, epoch: int, offset: int) -> int:
    r = await w.call(TXN_COMMIT, 3, {"transactional_id": "tx", "group_id": "g", "producer_id": pid, "producer_epoch": epoch,
                                     "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
                                     "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                                            "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
    return r.topics[0].partitions[0].error_code


async def test_transactional_offsets_count_only_once_the_transaction_commits(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        for commit, want in ((False, -1), (True, 5)):
            w, pid, epoch = await open_txn(cluster, "tx")
            add_offsets = await w.call(ADD_OFFSETS, 3, {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch,
                                                        "group_id": "g"})
            assert add_offsets.error_code == 0
            assert await _txn_commit_offset(w, pid, epoch, 5) == 0
            assert await _offset_fetch(w, require_stable=True) == (88, -1)   # UNSTABLE_OFFSET_COMMIT: retry later
            assert await _offset_fetch(w, require_stable=False) == (0, -1)
            assert await end(w, "tx", pid, epoch, commit=commit) == 0
            await trio.lowlevel.checkpoint()
            assert await _offset_fetch(w, require_stable=True) == (0, want)


async def test_the_control_delays_the_markers(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.set_marker_delay(3000)   # POST /transactions/marker-delay {"ms": 3000}
        w, pid, epoch = await open_txn(cluster, "tx")
        assert await end(w, "tx", pid, epoch, commit=True) == 0
        await trio.sleep(2.9)
        assert not cluster.trace.query(kind=Kind.TXN_MARKER)
        assert (await init(w, "tx")).error_code == CONCURRENT
        await trio.sleep(0.2)
        assert [e.t_ms for e in cluster.trace.query(kind=Kind.TXN_MARKER)] == [3000.0]


async def _producer_bumps_its_own_open_transaction(version: int) -> tuple[int, int, list]:
    """A producer at epoch E with a transaction open sends InitProducerId naming (its id, E) — what
    franz-go does to abort after an error (KIP-360) — then retries it with the same epoch once the
    abort's markers are written. Returns E, and each answer as (error, epoch)."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"transaction.version": version}) as cluster:
        w, pid, epoch = await open_txn(cluster, "tx")
        answers = []
        for _ in range(3):
            r = await init(w, "tx", pid=pid, epoch=epoch)
            answers.append((r.error_code, r.producer_epoch))
            await trio.sleep(0.1)   # the abort's markers
        return epoch, pid, answers


async def test_a_producer_retrying_the_init_that_aborted_its_transaction_is_fenced_under_version_1(autojump_clock):
    # Kafka 4.4, endTransactionWithTV1: the fence takes the bumped epoch and clears the last
    # epoch, so the retry naming the old one is fenced (measured through the proxy on a Kafka
    # formatted with transaction.version=1: franz-go's next transaction meets PRODUCER_FENCED)
    epoch, _, answers = await _producer_bumps_its_own_open_transaction(1)
    assert answers == [(CONCURRENT, -1), (FENCED, -1), (FENCED, -1)]


async def test_a_producer_retrying_the_init_that_aborted_its_transaction_goes_on_under_version_2(autojump_clock):
    # Kafka 4.4, endTransaction: prepareAbortOrCommit bumps once and keeps the old epoch as the
    # last, which prepareIncrementProducerEpoch takes for a retry (measured through the proxy on
    # Kafka 4.4: franz-go's NOT_COORDINATOR case aborts and its next transaction commits)
    epoch, _, answers = await _producer_bumps_its_own_open_transaction(2)
    assert answers == [(CONCURRENT, -1), (0, epoch + 1), (0, epoch + 1)]


async def test_a_retried_init_whose_answer_was_lost_gets_the_same_epoch_and_a_stale_one_is_fenced(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = await coordinator(cluster, "tx")
        first = await init(w, "tx")
        pid, e = first.producer_id, first.producer_epoch
        bumped = await init(w, "tx", pid=pid, epoch=e)        # going on after an error: E+1, last E
        again = await init(w, "tx", pid=pid, epoch=e)         # its answer lost: the same E+1, no bump
        assert [(r.error_code, r.producer_epoch) for r in (bumped, again)] == [(0, e + 1), (0, e + 1)]
        assert (await init(w, "tx", pid=pid, epoch=e + 1)).producer_epoch == e + 2
        assert (await init(w, "tx", pid=pid, epoch=e)).error_code == FENCED             # neither current nor last
        assert (await init(w, "tx", pid=pid + 7, epoch=e + 2)).error_code == FENCED     # another producer id
        fresh = await init(w, "tx")                            # a new producer: bump, and the last epoch cleared
        assert (fresh.error_code, fresh.producer_epoch) == (0, e + 3)
        assert (await init(w, "tx", pid=pid, epoch=e + 2)).error_code == FENCED
