"""KIP-932 with a real client: Apache Kafka's KafkaShareConsumer (kafka-clients 4.4.0, through the
Java adapter program's ``share_consume`` step) against the emulator, in real time with the record
lock scaled down to 2 s. Two members of one share group: the first receives the records and stops
polling; when its locks run out on the broker the second receives them again, delivery count 2,
and accepts them; the first's late acknowledgement is refused (InvalidRecordStateException)."""

from __future__ import annotations

import pytest

from broker_emu.runtime import run_cluster_in_thread
from broker_emu.trace import Kind
from tests.realclients.test_java_client import _require_java, one

pytestmark = [pytest.mark.realclient]
LOCK_MS = 2000
SCALED = {"group.share.record.lock.duration.ms": LOCK_MS, "group.share.min.record.lock.duration.ms": 1000}


@pytest.fixture(scope="module")
def java():
    from conformance.adapters.java_client import JavaAdapter

    adapter = JavaAdapter()
    _require_java(adapter)
    yield adapter
    adapter.shutdown()


def test_a_record_not_acknowledged_before_its_lock_expires_is_delivered_again(java):
    with run_cluster_in_thread(brokers=3, topics=[("shared", 1, 3)], config=SCALED) as tc:
        # the group reads from the start (share.auto.offset.reset is latest by default)
        tc.call(lambda: tc.cluster.group_configs.overrides.setdefault("sg", {}).update(
            {"share.auto.offset.reset": "earliest"}))
        one(java, tc.bootstrap, "produce_batch", topic="shared", records=[{"value": f"m{i}"} for i in range(3)])
        out = one(java, tc.bootstrap, "share_consume", group="sg", topic="shared", count=3, max_ms=60_000).value
        assert [(r["offset"], r["delivery_count"], r["value"]) for r in out["first"]] == [
            (i, 1, f"m{i}".encode()) for i in range(3)]
        assert out["lock_ms"] == LOCK_MS
        assert [(r["offset"], r["delivery_count"]) for r in out["second"]] == [(i, 2) for i in range(3)]
        # the second delivery came after the lock ran out, not long after (the exact order is the trace's, below)
        assert out["redelivered_after_ms"] <= LOCK_MS + 15_000
        assert out["second_commit"] == {"shared-0": ""}
        assert out["first_commit"] == {"shared-0": "InvalidRecordStateException"}
        trace = tc.call(lambda: [(e.kind, e.t_ms, e.details) for e in tc.cluster.trace.query(
            kind=(Kind.SHARE_ACQUIRE, Kind.SHARE_LOCK_EXPIRED, Kind.SHARE_ACKNOWLEDGE))])
        acquires = [t for t in trace if t[0] == Kind.SHARE_ACQUIRE]
        acquire, expired = acquires[0], next(t for t in trace if t[0] == Kind.SHARE_LOCK_EXPIRED)
        again = next(t for t in acquires if t[2]["delivery_counts"] == [2])
        assert again[2]["member"] != acquire[2]["member"] and again[1] >= expired[1]
        # the deadline is the acquisition's clock reading plus the lock, to the microsecond
        assert round(acquire[2]["lock_deadline_ms"] - acquire[2]["locked_at_ms"], 3) == LOCK_MS
        assert acquire[2]["locked_at_ms"] <= acquire[1]
        assert expired[2]["lock_deadline_ms"] == acquire[2]["lock_deadline_ms"] <= expired[1]
        assert [t[2]["offsets"] for t in trace if t[0] == Kind.SHARE_ACKNOWLEDGE] == [[[0, 2]]]
        state = tc.call(lambda: tc.cluster.share.partitions[("sg", "shared", 0)].describe())
        assert (state["start_offset"], state["records"]) == (3, {})



def test_one_member_reads_every_partition_from_three_leaders_and_accepts_them(java):
    with run_cluster_in_thread(brokers=3, topics=[("t", 3, 3)], config=SCALED) as tc:
        assert len({tc.call(lambda i=i: tc.cluster.partition("t", i).leader) for i in range(3)}) == 3
        tc.call(lambda: tc.cluster.group_configs.overrides.setdefault("sg3", {}).update(
            {"share.auto.offset.reset": "earliest"}))
        one(java, tc.bootstrap, "produce_batch", topic="t",
            records=[{"value": f"m{i}", "partition": i % 3} for i in range(9)])
        out = one(java, tc.bootstrap, "share_consume", group="sg3", topic="t", count=9, redeliver=False,
                  max_ms=60_000).value
        assert sorted((r["partition"], r["offset"], r["delivery_count"]) for r in out["first"]) == [
            (p, o, 1) for p in range(3) for o in range(3)]
        # commitSync covers what the last poll returned (earlier polls' acknowledgements rode on ShareFetch)
        assert out["first_commit"] and set(out["first_commit"].values()) == {""}
        # a session with each leader, all accepted: every share partition has moved past its records
        starts = tc.call(lambda: {k[2]: sp.start_offset for k, sp in tc.cluster.share.partitions.items()})
        assert starts == {0: 3, 1: 3, 2: 3}
        assert not tc.call(lambda: tc.cluster.trace.query(kind=Kind.SHARE_LOCK_EXPIRED))
