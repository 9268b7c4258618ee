"""A transaction marker the new leader does not have: a leader that wrote a marker its followers
had not copied loses it when one of them becomes leader (the log is truncated to the new
leader's). Kafka's coordinator appends markers with acks=all and retries WriteTxnMarkers until a
leader has it replicated (``TransactionMarkerChannelManager``), so the marker is written again on
the new leader; the partition's transaction state follows the truncation (``UnifiedLog.truncateTo``
rebuilds the ongoing transactions and truncates the ``TransactionIndex``). Found by the chaos
campaign's transactional seeds 615 and 648 (a committed record read by nobody, an aborted one
read by read_committed)."""

import pytest

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from tests.broker_emu.transactions.helpers import add, coordinator, end, fetch, init, produce, txn_batch
from tests.broker_emu.wire import WireClient


@pytest.mark.parametrize("commit", [True, False])
async def test_a_marker_truncated_by_a_leader_change_is_written_again_on_the_new_leader(autojump_clock, commit):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config={"transaction.version": 1}) as cluster:
        p = cluster.partition("t", 0)
        old = p.leader
        w = await coordinator(cluster, "tx")
        r = await init(w, "tx")
        pid, epoch = r.producer_id, r.producer_epoch
        assert await add(w, "tx", pid, epoch, [("t", 0)]) == [0]
        leader = WireClient(cluster.connect(old))
        assert (await produce(leader, "t", 0, txn_batch(pid, epoch, 0, [b"in-txn"]))).error_code == 0
        assert p.high_watermark == 1                             # the record is on every replica
        cluster.set_replication("t", 0, None, "stall")           # nothing after it is copied
        assert await end(w, "tx", pid, epoch, commit=commit) == 0
        assert p.log.log_end_offset == 2 and p.high_watermark == 1   # the marker, on the old leader only
        new = next(b for b in p.replicas if b != old)
        cluster.move_leader("t", 0, new)
        cluster.set_replication("t", 0, None, "normal")
        rewritten = [e.details for e in cluster.trace.query(kind=Kind.TXN_MARKER) if e.details.get("rewritten")]
        assert [(d["offset"], d["commit"]) for d in rewritten] == [(1, commit)]
        assert p.log.log_end_offset == 2 and p.txns.ongoing == {}
        got = await fetch(WireClient(cluster.connect(new)), "t", 0, isolation=1)
        assert got.last_stable_offset == got.high_watermark == 2
        aborted = [(a.producer_id, a.first_offset) for a in got.aborted_transactions or []]
        assert aborted == ([] if commit else [(pid, 0)])


def test_truncating_the_transaction_state_reopens_what_lost_its_marker():
    from broker_emu.partition_txns import PartitionTxns

    t = PartitionTxns()
    t.batch_appended(1, 0)
    t.marker_appended(1, 2, commit=True)     # 1: offsets 0..1, committed at 2
    t.batch_appended(2, 3)
    t.marker_appended(2, 4, commit=False)    # 2: offset 3, aborted at 4
    t.batch_appended(3, 5)                   # 3: open from 5
    t.truncate_to(4)                         # 2's abort marker and 3's batch are gone
    assert t.ongoing == {2: 3} and [a.producer_id for a in t.aborted] == [] and [e[2] for e in t.ended] == [1]
    t.truncate_to(2)                         # 1's commit marker too
    assert t.ongoing == {1: 0} and t.ended == []
