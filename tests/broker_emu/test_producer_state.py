"""Idempotent producer state follows the log (Kafka's ProducerStateManager): truncation by a
leader change rewinds it, retention does not drop it; over the wire in virtual time."""

import trio

from broker_emu.log import PartitionLog
from broker_emu.runtime import open_cluster
from client.errors import ErrorCode
from client.protocol.records import decode_batch, iter_batches, parse_batch_header
from tests.broker_emu.helpers import (
    FETCH,
    INIT_PRODUCER_ID,
    PRODUCE,
    WireClient,
    batch,
    fetch_body,
    follower_of,
    leader_of,
    produce_body,
)

SAFE = {"min.insync.replicas": 2, "replica.lag.time.max.ms": 600_000}
INIT = {"transactional_id": None, "transaction_timeout_ms": 60000}


async def _produce(w: WireClient, values: list[bytes], seq: int, ids: dict, timeout_ms: int = 30_000) -> tuple[int, int]:
    r = await w.call(PRODUCE, 9, produce_body("t", 0, values, timeout_ms=timeout_ms, base_sequence=seq, **ids))
    part = r.responses[0].partition_responses[0]
    return part.error_code, part.base_offset


async def _committed(cluster) -> list[tuple[int, bytes]]:
    """Every committed record of t-0 as (offset, value), read through Fetch from the leader."""
    w = WireClient(cluster.connect(leader_of(cluster, "t")))
    r = await w.call(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=0))
    raw = r.responses[0].partitions[0].records or b""
    return [(rec.offset, rec.value) for pos, _ in iter_batches(raw) for rec in decode_batch(raw, pos)[1]]


async def test_retry_of_a_batch_truncated_by_a_leader_change_is_appended_not_answered_as_a_duplicate(autojump_clock):
    """A lost retry: the batch with sequence 1 reached only the old leader; the new leader truncated
    it (correct: never acknowledged) but still remembered its sequence, answered the retry as a
    duplicate at offset 1 and appended nothing; the next batch then landed at offset 1 too, and
    both were acknowledged — one of them lost."""
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config=SAFE) as cluster:
        old = leader_of(cluster, "t")
        w = WireClient(cluster.connect(old))
        init = await w.call(INIT_PRODUCER_ID, 4, INIT)
        ids = dict(producer_id=init.producer_id, producer_epoch=init.producer_epoch)
        assert await _produce(w, [b"a"], 0, ids) == (0, 0)

        cluster.replication.stall("t")            # the followers stop copying: "b" stays on the leader
        async with trio.open_nursery() as nursery:
            answers = []

            async def first_attempt():
                answers.append(await _produce(w, [b"b"], 1, ids))
            nursery.start_soon(first_attempt)
            await trio.sleep(1)
            assert cluster.partition("t", 0).log_end_offset == 2  # appended on the leader, parked in the purgatory
            new = follower_of(cluster, "t")
            cluster.move_leader("t", 0, new)      # an ISR member without "b" leads: "b" is truncated
        assert answers == [(6, 1)]                # the parked request answers NOT_LEADER_OR_FOLLOWER
        assert cluster.partition("t", 0).log_end_offset == 1
        cluster.replication.normal("t")

        # The retry (same producer id, epoch and sequence) and, 10 ms later, the next batch, on two
        # connections as a pipelining client has them both in flight.
        retry, following = WireClient(cluster.connect(new)), WireClient(cluster.connect(new))
        async with trio.open_nursery() as nursery:
            async def retry_b():
                answers.append(await _produce(retry, [b"b"], 1, ids))
            nursery.start_soon(retry_b)
            await trio.sleep(0.01)
            answers.append(await _produce(following, [b"c"], 2, ids))
        assert answers[1:] == [(0, 1), (0, 2)]    # before the fix: [(0, 1), (0, 1)], "b" acknowledged and absent
        assert await _committed(cluster) == [(0, b"a"), (1, b"b"), (2, b"c")]


# -- the state as a function of the log (no wire) ------------------------------------------------

def _write(log: PartitionLog, pid: int, seq: int, n: int = 1, epoch: int = 0):
    """Check then append a batch of ``n`` records, as the produce handler does: (error, offset)."""
    raw = batch([b"v"] * n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    header = parse_batch_header(raw)
    error, duplicate = log.producers.check(header)
    if error or duplicate is not None:
        return error, duplicate.first_offset if duplicate is not None else -1
    return ErrorCode.NONE, log.append(raw, header, 0)[0]


def test_truncation_rewinds_the_window_to_the_last_five_batches_left():
    log = PartitionLog()
    assert [_write(log, 7, 2 * i, 2) for i in range(8)] == [(0, 2 * i) for i in range(8)]  # seq 0-15 at 0-15
    log.truncate_to(10)                                # batches at 10, 12, 14 (seq 10-15) are gone
    entry = log.producers.entry(7)
    assert [(b.first_seq, b.first_offset) for b in entry.batches] == [(2 * i, 2 * i) for i in range(5)]
    assert _write(log, 7, 4, 2) == (0, 4)             # a remembered batch is still a duplicate
    assert _write(log, 7, 12, 2)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # 10-11 must come first
    assert _write(log, 7, 10, 2) == (0, 10)           # the retry of a truncated batch is appended
    assert log.log_end_offset == 12


def test_truncation_forgets_a_producer_with_nothing_left_and_keeps_the_others():
    log = PartitionLog()
    _write(log, 1, 0, 3)                              # producer 1: seq 0-2 at 0-2
    _write(log, 2, 0, 1)                              # producer 2: seq 0 at 3
    _write(log, 2, 1, 1)                              # producer 2: seq 1 at 4
    log.truncate_to(3)
    assert log.producers.entry(2) is None             # KIP-360: any sequence may start it again
    assert _write(log, 2, 1, 1) == (0, 3)
    assert log.producers.statistics()[1] == {"epoch": 0, "last_sequence": 2, "last_offset": 2, "batches": 1}


def test_truncation_back_into_an_older_epoch_restores_that_epoch():
    log = PartitionLog()
    _write(log, 5, 0, 1)
    _write(log, 5, 1, 1)
    _write(log, 5, 0, 1, epoch=1)                     # a new epoch starts at 0 and empties the window
    assert [b.first_seq for b in log.producers.entry(5).batches] == [0]
    log.truncate_to(2)
    entry = log.producers.entry(5)
    assert entry.epoch == 0 and [b.first_seq for b in entry.batches] == [0, 1]
    assert _write(log, 5, 1, 1) == (0, 1)             # a duplicate again, in epoch 0
    assert _write(log, 5, 0, 1, epoch=1) == (0, 2)    # the bumped epoch's first batch, again


def test_retention_keeps_producer_state_as_kafka_does():
    """Kafka's onLogStartOffsetIncremented keeps in-memory producer entries: a late retry of a
    batch retention already deleted is still answered with its offset, never written twice."""
    size = len(batch([b"v"], producer_id=9, producer_epoch=0, base_sequence=0))
    log = PartitionLog(retention_bytes=2 * size)
    for seq in range(4):
        _write(log, 9, seq)
    assert log.log_start_offset == 2
    assert _write(log, 9, 1) == (0, 1) and log.log_end_offset == 4
    assert log.producers.entry(9).last_seq == 3


async def test_a_leader_stopping_mid_write_does_not_leave_a_stale_sequence(autojump_clock):
    """The same lost-retry sequence when leadership moves because the leader broker stops."""
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config=SAFE) as cluster:
        old = leader_of(cluster, "t")
        w = WireClient(cluster.connect(old))
        init = await w.call(INIT_PRODUCER_ID, 4, INIT)
        ids = dict(producer_id=init.producer_id, producer_epoch=init.producer_epoch)
        assert await _produce(w, [b"a"], 0, ids) == (0, 0)
        cluster.replication.stall("t")
        await w.send(PRODUCE, 9, produce_body("t", 0, [b"b"], base_sequence=1, **ids))
        await trio.sleep(1)
        assert cluster.partition("t", 0).log_end_offset == 2
        await cluster.stop_broker(old)              # the controller elects an ISR member without "b"
        cluster.replication.normal("t")
        w = WireClient(cluster.connect(leader_of(cluster, "t")))
        assert await _produce(w, [b"b"], 1, ids) == (0, 1)
        assert await _produce(w, [b"c"], 2, ids) == (0, 2)
        assert await _committed(cluster) == [(0, b"a"), (1, b"b"), (2, b"c")]
