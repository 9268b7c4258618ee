"""The pure model: partition log, scheduler, purgatory and cluster bookkeeping (no wire)."""

import tracemalloc
import uuid

import pytest
import trio

from broker_emu.cluster import Cluster
from broker_emu.config import DEFAULTS, ConfigError, broker_config
from broker_emu.coordinator_placement import java_string_hash
from broker_emu.log import PartitionLog
from broker_emu.purgatory import PURGE_INTERVAL, DelayedOperation, Purgatory
from broker_emu.scheduler import Scheduler
from client.protocol.records import parse_batch_header, verify_crc
from tests.broker_emu.helpers import batch


def appended(log: PartitionLog, values: list[bytes], epoch: int = 0, **kw) -> tuple[int, int]:
    raw = batch(values, **kw)
    return log.append(raw, parse_batch_header(raw), epoch)


# -- partition log ---------------------------------------------------------------------------------

def test_append_rewrites_only_base_offset_and_leader_epoch():
    log = PartitionLog()
    appended(log, [b"a", b"b", b"c"])
    raw = batch([b"d", b"e"])
    assert log.append(raw, parse_batch_header(raw), 7) == (3, 4)
    stored = log.batches[-1].data
    assert stored[:8] == (3).to_bytes(8, "big") and stored[12:16] == (7).to_bytes(4, "big")
    assert stored[8:12] == raw[8:12] and stored[16:] == raw[16:]  # everything else as the client sent it
    assert verify_crc(stored) and log.log_end_offset == 5


def test_read_returns_whole_batches_below_the_limit_and_min_one_first_batch():
    log = PartitionLog()
    for _ in range(4):
        appended(log, [b"x" * 100, b"y" * 100])  # offsets 0-1, 2-3, 4-5, 6-7
    size = len(log.batches[0].data)
    assert parse_batch_header(log.read(3, 10_000, upto=8)).base_offset == 2  # the batch holding offset 3
    assert len(log.read(0, 2 * size, upto=8)) == 2 * size
    assert len(log.read(0, 2 * size - 1, upto=8)) == size  # a batch that does not fit is left out
    assert len(log.read(0, 1, upto=8)) == size  # KIP-74: the first batch even if larger
    assert log.read(0, 1, upto=8, min_one=False) == b""
    assert len(log.read(0, 10_000, upto=6)) == 3 * size  # nothing at or above the high watermark
    assert log.bytes_between(3, 6) == 2 * size and log.bytes_between(6, 6) == 0 and log.bytes_between(0, 8) == 4 * size


def test_size_retention_moves_the_log_start_and_keeps_the_byte_index_right():
    size = len(batch([b"v" * 50]))
    log = PartitionLog(retention_bytes=2 * size)
    for _ in range(5):
        appended(log, [b"v" * 50])
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (3, 5, 2 * size)
    assert log.bytes_between(3, 5) == 2 * size and log.bytes_between(4, 5) == size
    assert parse_batch_header(log.read(0, 10_000, upto=5)).base_offset == 3


def test_truncate_keeps_whole_batches():
    log = PartitionLog()
    appended(log, [b"a", b"b"])
    appended(log, [b"c", b"d"])
    log.truncate_to(3)
    assert log.log_end_offset == 4  # the batch straddling 3 stays whole
    log.truncate_to(2)
    assert log.log_end_offset == 2 and len(log.batches) == 1


def test_timestamp_lookups_by_batch():
    log = PartitionLog()
    appended(log, [b"a", b"b"], timestamps=[100, 300])
    appended(log, [b"c"], timestamps=[200])
    assert log.offset_for_timestamp(250).base_offset == 0  # first batch whose max timestamp reaches it
    assert log.offset_for_timestamp(301) is None
    assert log.max_timestamp_batch().base_offset == 0 and log.max_timestamp_batch(upto=0) is None


# -- scheduler and purgatory -----------------------------------------------------------------------

class Op(DelayedOperation):
    def __init__(self, timeout_s: float, ready=lambda: False):
        super().__init__(timeout_s)
        self.ready, self.checks, self.completions, self.expiries = ready, 0, 0, 0

    def try_complete(self) -> bool:
        self.checks += 1
        return self.ready()

    def on_complete(self) -> None:
        self.completions += 1

    def on_expire(self) -> None:
        self.expiries += 1


@pytest.fixture
async def scheduler(nursery):
    s = Scheduler()
    await nursery.start(s.run)
    return s


async def test_expiry_is_exact_and_happens_once(autojump_clock, scheduler):
    purgatory = Purgatory("Produce", scheduler)
    await trio.sleep(0.25)
    op = Op(1.234)
    assert not purgatory.try_complete_else_watch(op, [("t", 0)])
    await op.done.wait()
    assert trio.current_time() == 0.25 + 1.234
    assert (op.expired, op.expiries, op.completions) == (True, 1, 1)
    assert purgatory.check_and_complete(("t", 0)) == 0 and op.completions == 1
    assert len(purgatory) == 0 and purgatory.statistics()["watch_entries"] == 0


async def test_completion_by_any_key_cancels_the_timer(autojump_clock, scheduler):
    purgatory = Purgatory("Fetch", scheduler)
    state = {"ready": False}
    op = Op(5, lambda: state["ready"])
    purgatory.try_complete_else_watch(op, [("t", 0), ("t", 1)])
    assert purgatory.check_and_complete(("t", 1)) == 0
    state["ready"] = True
    assert purgatory.check_and_complete(("t", 1)) == 1
    assert len(scheduler) == 0  # the expiry timer is gone
    await trio.sleep(10)
    assert (op.expired, op.completions, purgatory.expired_count) == (False, 1, 0)
    assert purgatory.check_and_complete(("t", 0)) == 0 and "t" not in str(purgatory.watchers)


async def test_check_register_recheck_closes_the_race(autojump_clock, scheduler):
    events = []
    purgatory = Purgatory("Produce", scheduler, lambda kind, op: events.append(kind))
    op = Op(30, lambda: op.checks >= 2)  # the event lands between the first check and the watch
    assert purgatory.try_complete_else_watch(op, [("t", 0)])
    assert (op.checks, op.completions, len(scheduler), len(purgatory)) == (2, 1, 0, 0)
    assert events == ["purgatory_complete"]  # never entered: no timer was started


async def test_ten_thousand_delayed_operations_on_one_key(autojump_clock, scheduler):
    purgatory = Purgatory("Produce", scheduler)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    ops = [Op(30) for _ in range(10_000)]
    for op in ops:
        purgatory.try_complete_else_watch(op, [("t", 0)])
    per_op = (tracemalloc.get_traced_memory()[0] - before) / len(ops)
    tracemalloc.stop()
    print(f"{per_op:.0f} bytes per delayed operation")
    assert len(purgatory) == 10_000 and per_op < 2048, per_op
    await ops[-1].done.wait()
    assert trio.current_time() == 30 and all(op.expired and op.completions == 1 for op in ops)
    stats = purgatory.statistics()
    assert (stats["waiting"], stats["completed"], stats["expired"]) == (0, 0, 10_000)
    assert stats["watch_entries"] <= PURGE_INTERVAL  # purged lazily, like Kafka's reaper
    purgatory.check_and_complete(("t", 0))
    assert purgatory.statistics()["watch_entries"] == 0 and not purgatory.watchers


async def test_scheduler_runs_in_deadline_order_and_drops_cancelled_timers(autojump_clock, scheduler):
    ran = []
    for delay in (3, 1, 2):
        scheduler.call_later(delay, lambda d=delay: ran.append((d, trio.current_time())))
    cancelled = [scheduler.call_later(5, lambda: ran.append("cancelled")) for _ in range(3000)]
    for timer in cancelled:
        timer.cancel()
    assert scheduler.statistics()["heap"] < 3000  # compacted, not kept until t=5
    await trio.sleep(6)
    assert ran == [(1, 1.0), (2, 2.0), (3, 3.0)]


# -- cluster bookkeeping ---------------------------------------------------------------------------

def test_java_string_hash_matches_java():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE
    assert java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00  # UTF-16 surrogate pair


async def test_coordinator_follows_the_offsets_partition_leader():
    cluster = Cluster(3)
    assert cluster.coordinator_for("hello") == (99162322 % 50) % 3 == 1
    assert cluster.coordinator_for("polygenelubricants") == 0  # Utils.abs(MIN_VALUE) is 0, not negative
    cluster.brokers[1].alive = False
    # partition 22's replicas are brokers 1, 2, 0: with 1 stopped its leadership (and the group) moves to 2,
    # while groups on other brokers stay put
    assert cluster.coordinator_for("hello") == 2
    assert cluster.coordinator_for("polygenelubricants") == 0


async def test_topic_ids_are_version_4_and_reproducible_per_seed():
    def ids(seed):
        c = Cluster(3, {"emu.seed": seed})
        return [c.create_topic(n).topic_id for n in ("a", "b")]

    first = ids(1)
    assert first == ids(1) and first != ids(2) and first[0] != first[1]
    assert all(isinstance(i, uuid.UUID) and i.version == 4 for i in first)


async def test_placement_defaults_and_round_robin_leaders():
    assert len(Cluster(1).create_topic("t").partitions[0].replicas) == 1  # RF min(3, N)
    five = Cluster(5).create_topic("t", 10)
    assert {len(p.replicas) for p in five.partitions} == {3} and len(five.partitions) == 10
    three = Cluster(3).create_topic("t", 6, 2)
    assert sorted(p.leader for p in three.partitions) == [0, 0, 1, 1, 2, 2]
    assert all(p.isr == sorted(p.replicas) and p.leader == p.replicas[0] for p in three.partitions)
    assigned = Cluster(3).create_topic("t", assignments=[[2, 0], [1, 2]])
    assert [p.replicas for p in assigned.partitions] == [[2, 0], [1, 2]] and assigned.partitions[0].leader == 2
    with pytest.raises(ValueError, match="replication factor 4"):
        Cluster(3).create_topic("t", 1, 4)
    with pytest.raises(ValueError, match="Topic name is invalid"):
        Cluster(3).create_topic("bad/name")


def test_broker_config_uses_kafka_names_and_defaults():
    c = broker_config({"min.insync.replicas": "2", "auto.create.topics.enable": "false"})
    assert c["min.insync.replicas"] == 2 and c["auto.create.topics.enable"] is False
    assert (DEFAULTS["message.max.bytes"], DEFAULTS["socket.request.max.bytes"]) == (1048588, 104857600)
    assert (DEFAULTS["replica.lag.time.max.ms"], DEFAULTS["group.initial.rebalance.delay.ms"]) == (30000, 3000)
    assert DEFAULTS["offsets.topic.num.partitions"] == 50
    with pytest.raises(ConfigError, match="unknown broker config 'replica.lag.max'"):
        broker_config({"replica.lag.max": 1})
    with pytest.raises(ConfigError, match="must be an integer"):
        broker_config({"num.partitions": "many"})
