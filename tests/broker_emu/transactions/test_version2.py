"""Transaction version 2 (KIP-890 part 2) over the wire codec, in virtual time: Produce v12 adds
its partition through the leader, EndTxn v5 bumps the epoch and answers it, the markers carry the
bumped epoch, so a Produce or EndTxn of the transaction before is fenced; the leader's retry while
the markers are written; the rotation to a new producer id at epoch exhaustion; TxnOffsetCommit
v5 adding its group. Version 1 requests keep version 1's rules beside them."""

import trio

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from broker_emu.transactions.coordinator import MAX_EPOCH
from tests.broker_emu.transactions.helpers import (
    END,
    OFFSET_FETCH,
    PRODUCE,
    TXN_COMMIT,
    add,
    coordinator,
    fetch,
    init,
    txn_batch,
)
from tests.broker_emu.wire import WireClient

CONCURRENT, FENCED, INVALID_EPOCH, NOT_ENOUGH_REPLICAS, INVALID_MAPPING = 51, 90, 47, 19, 49
LOAD_IN_PROGRESS = 14


async def produce12(w: WireClient, tid: str | None, topic: str, partition: int, batch: bytes):
    r = await w.call(PRODUCE, 12, {"transactional_id": tid, "acks": -1, "timeout_ms": 30000,
                                   "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
    return r.responses[0].partition_responses[0]


async def end5(w: WireClient, tid: str, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
    r = await w.call(END, 5, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": commit})
    return r.error_code, r.producer_id, r.producer_epoch


async def started(cluster, tid: str = "tx"):
    w = await coordinator(cluster, tid)
    r = await init(w, tid)
    assert r.error_code == 0
    return w, WireClient(cluster.connect(0)), r.producer_id, r.producer_epoch


def markers(cluster) -> list[tuple[str, int, int, int, bool]]:
    return [(e.details["topic"], e.details["partition"], e.details["producer_id"], e.details["epoch"], e.details["commit"])
            for e in cluster.trace.query(kind=Kind.TXN_MARKER)]


async def test_produce_v12_adds_its_partition_and_end_txn_v5_bumps_the_epoch(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        w, broker, pid, epoch = await started(cluster)
        for partition in (0, 1):   # no AddPartitionsToTxn: the leader adds each partition
            assert (await produce12(broker, "tx", "t", partition, txn_batch(pid, epoch, 0, [b"a"]))).error_code == 0
        meta = cluster.txn.describe("tx")
        assert (meta.state.value, meta.partitions, meta.tv2) == ("Ongoing", {("t", 0), ("t", 1)}, True)
        # a second batch on an open partition asks the coordinator nothing (hasOngoingTransaction)
        assert (await produce12(broker, "tx", "t", 0, txn_batch(pid, epoch, 1, [b"b"]))).error_code == 0
        assert await end5(w, "tx", pid, epoch, commit=True) == (0, pid, epoch + 1)
        await trio.lowlevel.checkpoint()
        assert markers(cluster) == [("t", 0, pid, epoch + 1, True), ("t", 1, pid, epoch + 1, True)]
        got = await fetch(WireClient(cluster.connect(0)), "t", 0, isolation=1)
        assert (got.last_stable_offset, got.aborted_transactions) == (3, [])
        # the next transaction runs at the answered epoch, its sequences from 0
        assert (await produce12(broker, "tx", "t", 0, txn_batch(pid, epoch + 1, 0, [b"c"]))).error_code == 0
        assert await end5(w, "tx", pid, epoch + 1, commit=False) == (0, pid, epoch + 2)
        await trio.lowlevel.checkpoint()
        aborted = await fetch(WireClient(cluster.connect(0)), "t", 0, isolation=1)
        assert [(a.producer_id, a.first_offset) for a in aborted.aborted_transactions] == [(pid, 3)]


async def test_a_late_produce_or_end_txn_of_the_transaction_before_is_fenced(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        w, broker, pid, epoch = await started(cluster)
        assert (await produce12(broker, "tx", "t", 0, txn_batch(pid, epoch, 0, [b"a"]))).error_code == 0
        assert await end5(w, "tx", pid, epoch, commit=True) == (0, pid, epoch + 1)
        await trio.lowlevel.checkpoint()
        assert (await produce12(broker, "tx", "t", 0, txn_batch(pid, epoch + 1, 0, [b"n+1"]))).error_code == 0
        # transaction N's batches, arriving late, land in neither N+1 nor a transaction of their own
        for partition in (0, 1):
            late = await produce12(broker, "tx", "t", partition, txn_batch(pid, epoch, 1, [b"late"]))
            assert late.error_code == INVALID_EPOCH
        assert cluster.txn.describe("tx").partitions == {("t", 0)}
        # transaction N's EndTxn, arriving late (a retry the client gave up on), ends nothing
        assert await end5(w, "tx", pid, epoch, commit=False) == (FENCED, -1, -1)
        assert cluster.txn.describe("tx").state.value == "Ongoing"
        assert (await fetch(WireClient(cluster.connect(0)), "t", 1, isolation=0)).high_watermark == 0


async def test_an_end_txn_retry_is_told_from_the_next_transactions_end_by_the_epoch(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.txn.marker.delay.ms": 500}) as cluster:
        w, broker, pid, epoch = await started(cluster)
        assert (await produce12(broker, "tx", "t", 0, txn_batch(pid, epoch, 0, [b"a"]))).error_code == 0
        assert await end5(w, "tx", pid, epoch, commit=True) == (0, pid, epoch + 1)
        assert await end5(w, "tx", pid, epoch, commit=True) == (CONCURRENT, -1, -1)     # markers pending
        assert await end5(w, "tx", pid, epoch + 1, commit=True) == (FENCED, -1, -1)     # not a retry, not Ongoing
        await trio.sleep(0.6)
        assert await end5(w, "tx", pid, epoch, commit=True) == (0, pid, epoch + 1)     # the retry, answered again
        # each answer below as Kafka 4.4.0 gave it to the same requests
        assert await end5(w, "tx", pid, epoch, commit=False) == (48, -1, -1)          # INVALID_TXN_STATE
        assert await end5(w, "tx", pid, epoch + 1, commit=True) == (48, -1, -1)       # nothing open to commit
        # an abort with nothing open ends an empty transaction, and bumps the epoch all the same
        assert await end5(w, "tx", pid, epoch + 1, commit=False) == (0, pid, epoch + 2)
        await trio.sleep(0.6)
        assert await end5(w, "tx", pid, epoch + 1, commit=False) == (0, pid, epoch + 2)   # its retry


async def test_after_a_timed_out_abort_the_commit_reads_as_a_retry_of_the_wrong_end(autojump_clock):
    # the coordinator's abort bumped the epoch once, so the client's EndTxn v5 at the epoch before
    # matches a retry of that abort: INVALID_TXN_STATE for a commit, the abort's answer for an
    # abort (as Kafka 4.4.0 answered); the producer's next batch is fenced
    config = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        w = await coordinator(cluster, "tx")
        r = await init(w, "tx", timeout_ms=2000)
        broker, pid, epoch = WireClient(cluster.connect(0)), r.producer_id, r.producer_epoch
        assert (await produce12(broker, "tx", "t", 0, txn_batch(pid, epoch, 0, [b"a"]))).error_code == 0
        await trio.sleep(5)
        assert await end5(w, "tx", pid, epoch, commit=True) == (48, -1, -1)
        assert await end5(w, "tx", pid, epoch, commit=False) == (0, pid, epoch + 1)
        assert (await produce12(broker, "tx", "t", 0, txn_batch(pid, epoch, 1, [b"b"]))).error_code == INVALID_EPOCH


async def test_the_leader_retries_while_the_markers_are_written_then_answers_concurrent(autojump_clock):
    config = {"emu.txn.marker.delay.ms": 60}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        w, broker, pid, epoch = await started(cluster)
        assert (await produce12(broker, "tx", "t", 0, txn_batch(pid, epoch, 0, [b"a"]))).error_code == 0
        assert await end5(w, "tx", pid, epoch, commit=True) == (0, pid, epoch + 1)
        t0 = trio.current_time()
        # markers at 60 ms: the leader's retries every 20 ms (for up to 100 ms) outlast them
        assert (await produce12(broker, "tx", "t", 0, txn_batch(pid, epoch + 1, 0, [b"b"]))).error_code == 0
        assert 0.06 <= trio.current_time() - t0 <= 0.081
        cluster.txn.marker_delay_ms = 1000
        assert await end5(w, "tx", pid, epoch + 1, commit=True) == (0, pid, epoch + 2)
        t0 = trio.current_time()
        slow = await produce12(broker, "tx", "t", 0, txn_batch(pid, epoch + 2, 0, [b"c"]))
        assert slow.error_code == CONCURRENT and 0.099 <= trio.current_time() - t0 <= 0.121   # add.partitions.to.txn.retry.backoff.max.ms


async def test_the_epoch_runs_out_into_a_new_producer_id(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w, broker, pid, _ = await started(cluster)
        meta = cluster.txn.describe("tx")
        meta.epoch = cluster.producer_epochs[pid] = MAX_EPOCH   # 32766: a long-lived producer's last epoch
        assert (await produce12(broker, "tx", "t", 0, txn_batch(pid, MAX_EPOCH, 0, [b"a"]))).error_code == 0
        code, new_pid, new_epoch = await end5(w, "tx", pid, MAX_EPOCH, commit=True)
        assert (code, new_epoch) == (0, 0) and new_pid != pid
        await trio.lowlevel.checkpoint()
        assert markers(cluster) == [("t", 0, pid, MAX_EPOCH + 1, True)]   # the old id at Short.MaxValue
        assert (meta.producer_id, meta.epoch, meta.previous_producer_id) == (new_pid, 0, pid)
        assert await end5(w, "tx", pid, MAX_EPOCH, commit=True) == (0, new_pid, 0)   # a retry after the rotation
        assert (await produce12(broker, "tx", "t", 0, txn_batch(new_pid, 0, 0, [b"b"]))).error_code == 0
        # the leader asks the coordinator before its own epoch check, and the old id is no longer mapped
        late = await produce12(broker, "tx", "t", 0, txn_batch(pid, MAX_EPOCH, 1, [b"late"]))
        assert late.error_code == INVALID_MAPPING


async def test_txn_offset_commit_v5_adds_its_group(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w, broker, pid, epoch = await started(cluster)
        group = WireClient(cluster.connect(0))
        body = {"transactional_id": "tx", "group_id": "g", "producer_id": pid, "producer_epoch": epoch,
                "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
                "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 7,
                                                         "committed_leader_epoch": -1, "committed_metadata": ""}]}]}
        assert (await group.call(TXN_COMMIT, 5, body)).topics[0].partitions[0].error_code == 0   # no AddOffsetsToTxn
        assert cluster.txn.describe("tx").groups == {"g"}
        assert await end5(w, "tx", pid, epoch, commit=True) == (0, pid, epoch + 1)
        await trio.lowlevel.checkpoint()
        got = await group.call(OFFSET_FETCH, 7, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}],
                                                 "require_stable": True})
        assert got.topics[0].partitions[0].committed_offset == 7
        late = await group.call(TXN_COMMIT, 5, body)   # the epoch before the bump
        assert late.topics[0].partitions[0].error_code == FENCED


async def test_coordinator_errors_reach_the_produce_as_kafka_maps_them(autojump_clock):
    # one replica of each internal partition: stopping a coordinator leaves its ids without one
    async with open_cluster(3, topics=[("t", 1, 1)], listen=False, config={"offsets.topic.replication.factor": 1}) as cluster:
        leader = cluster.partition("t", 0).leader
        tid = next(f"tx{i}" for i in range(100) if cluster.txn.coordinator_for(f"tx{i}") != leader)
        w, _, pid, epoch = await started(cluster, tid)
        broker = WireClient(cluster.connect(leader))
        unknown = await produce12(broker, "nobody", "t", 0, txn_batch(pid, epoch, 0, [b"a"]))
        assert unknown.error_code == INVALID_MAPPING
        await cluster.stop_broker(cluster.txn.coordinator_for(tid))
        gone = await produce12(broker, tid, "t", 0, txn_batch(pid, epoch, 0, [b"a"]))
        assert gone.error_code == NOT_ENOUGH_REPLICAS and "COORDINATOR_NOT_AVAILABLE" in gone.error_message


async def test_version_1_requests_keep_version_1_rules_on_a_version_2_cluster(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        assert cluster.config["transaction.version"] == 2
        w, broker, pid, epoch = await started(cluster)
        assert await add(w, "tx", pid, epoch, [("t", 0)]) == [0]
        assert cluster.txn.describe("tx").tv2 is False
        r = await w.call(END, 4, {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch, "committed": True})
        assert r.error_code == 0
        await trio.lowlevel.checkpoint()
        assert cluster.txn.describe("tx").epoch == epoch and markers(cluster) == [("t", 0, pid, epoch, True)]
        assert await add(w, "tx", pid, epoch, [("t", 0)]) == [0]   # the same epoch goes on


async def test_the_transaction_survives_its_coordinator_moving(autojump_clock):
    """The coordinator's state is the cluster's, not a broker's: stopping the broker that leads
    the id's __transaction_state partition moves the coordinator (as an election would) and the
    next one answers from the same state, markers still on their way (Kafka reloads it from the
    replicated log and resends pending markers; the load itself takes emu.txn.load.ms, 0 by
    default: test_the_new_coordinator_answers_load_in_progress_while_it_loads)."""
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config={"emu.txn.marker.delay.ms": 500}) as cluster:
        first = cluster.txn.coordinator_for("tx")
        w, _, pid, epoch = await started(cluster)
        leader = WireClient(cluster.connect(cluster.partition("t", 0).leader))
        assert (await produce12(leader, "tx", "t", 0, txn_batch(pid, epoch, 0, [b"a"]))).error_code == 0
        assert await end5(w, "tx", pid, epoch, commit=True) == (0, pid, epoch + 1)
        await cluster.stop_broker(first)
        moved = await coordinator(cluster, "tx")
        assert cluster.txn.coordinator_for("tx") != first
        assert await end5(moved, "tx", pid, epoch, commit=True) == (CONCURRENT, -1, -1)
        await trio.sleep(0.6)
        assert await end5(moved, "tx", pid, epoch, commit=True) == (0, pid, epoch + 1)
        assert markers(cluster) == [("t", 0, pid, epoch + 1, True)]


async def test_version_1_verification_when_enabled_answers_as_kafka_4_4(autojump_clock):
    """transaction.partition.verification.enable (Kafka's default true, the emulator's false): a
    v11-and-below batch of a partition the client never added is refused, TRANSACTION_ABORTABLE
    to v11 (measured on Kafka 4.4.0: 120) and INVALID_TXN_STATE below; once added it goes in."""
    config = {"transaction.partition.verification.enable": True}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        w, broker, pid, epoch = await started(cluster)
        for version, code in ((11, 120), (9, 48)):
            r = await broker.call(PRODUCE, version, {"transactional_id": "tx", "acks": -1, "timeout_ms": 30000, "topic_data": [
                {"name": "t", "partition_data": [{"index": 0, "records": txn_batch(pid, epoch, 0, [b"a"])}]}]})
            assert r.responses[0].partition_responses[0].error_code == code, version
        assert await add(w, "tx", pid, epoch, [("t", 0)]) == [0]
        r = await broker.call(PRODUCE, 11, {"transactional_id": "tx", "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": txn_batch(pid, epoch, 0, [b"a"])}]}]})
        assert r.responses[0].partition_responses[0].error_code == 0
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:   # off: appended as always
        w, broker, pid, epoch = await started(cluster)
        r = await broker.call(PRODUCE, 11, {"transactional_id": "tx", "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": txn_batch(pid, epoch, 0, [b"a"])}]}]})
        assert r.responses[0].partition_responses[0].error_code == 0


async def test_the_new_coordinator_answers_load_in_progress_while_it_loads(autojump_clock):
    """emu.txn.load.ms: the broker that takes over an id's __transaction_state partition answers
    COORDINATOR_LOAD_IN_PROGRESS until its load is done (Kafka's TransactionStateManager while it
    loads), then from the state it loaded: the open transaction is still open, its commit works.
    Ids of other partitions, and the first coordinator of a partition, have nothing to wait for."""
    load = 2000
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config={"emu.txn.load.ms": load}) as cluster:
        first = cluster.txn.coordinator_for("tx")
        w, _, pid, epoch = await started(cluster)      # the first coordinator loads nothing
        leader = WireClient(cluster.connect(cluster.partition("t", 0).leader))
        assert (await produce12(leader, "tx", "t", 0, txn_batch(pid, epoch, 0, [b"a"]))).error_code == 0
        await cluster.stop_broker(first)
        stopped_at = trio.current_time()
        moved = await coordinator(cluster, "tx")
        assert await end5(moved, "tx", pid, epoch, commit=True) == (LOAD_IN_PROGRESS, -1, -1)
        await trio.sleep(load / 1000 - 0.01 - (trio.current_time() - stopped_at))
        assert await end5(moved, "tx", pid, epoch, commit=True) == (LOAD_IN_PROGRESS, -1, -1)
        await trio.sleep(0.02)
        assert cluster.txn.describe("tx").state.value == "Ongoing"
        assert await end5(moved, "tx", pid, epoch, commit=True) == (0, pid, epoch + 1)
        await trio.lowlevel.checkpoint()
        assert markers(cluster) == [("t", 0, pid, epoch + 1, True)]
        (loaded,) = cluster.trace.query(kind=Kind.TXN_LOG_LOAD)
        assert loaded.details["from"] == first and loaded.details["transactional_ids"] == ["tx"]
        assert loaded.details["until_ms"] - loaded.t_ms == load
