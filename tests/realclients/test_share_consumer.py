"""KIP-932 with a real client: Apache Kafka's KafkaShareConsumer (kafka-clients 4.4.0, through the
Java adapter program's ``share_consume`` and ``share_explicit`` steps) against the emulator, in
real time with the record lock scaled down to 2 s. Two members of one share group: the first
receives the records and stops polling; when its locks run out on the broker the second receives
them again and accepts them; the first's late acknowledgement changes nothing (taken silently, as
Kafka takes an acknowledgement of records behind the share partition's start offset). One member reads a topic from three leaders. Explicit
acknowledgements: ACCEPT, RELEASE (the record comes back at once, delivery count 2), REJECT."""

from __future__ import annotations

import pytest

from broker_emu.runtime import run_cluster_in_thread
from broker_emu.trace import Kind
from tests.realclients.clients import require_adapter
from tests.realclients.test_java_client import one

pytestmark = [pytest.mark.realclient]
LOCK_MS = 2000
SCALED = {"group.share.record.lock.duration.ms": LOCK_MS, "group.share.min.record.lock.duration.ms": 1000}


@pytest.fixture(scope="module")
def java():
    from conformance.adapters.java_client import JavaAdapter

    adapter = JavaAdapter()
    require_adapter(adapter)
    yield adapter
    adapter.shutdown()


def _story(tc) -> str:
    """The share events and requests, for a failure's message."""
    def line(e) -> str:
        return f"{e.t_ms:.0f} {e.kind} {e.client_id or ''} {e.api or ''} {e.details}"
    return "\n".join(line(e) for e in tc.call(lambda: tc.cluster.trace.query())
                     if e.kind.startswith("share_") or (e.kind == Kind.RECV and (e.api or "").startswith("Share")))


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
        # KafkaShareConsumer keeps fetching in the background while its application does not poll,
        # so the stalled first member may win the records back at the first expiry (its
        # ShareFetch waited longer) and hold them to a second expiry: the second member then gets
        # them with delivery count 3. Either way every redelivery is a lock running out.
        counts = [r["delivery_count"] for r in out["second"]]
        assert [r["offset"] for r in out["second"]] == [0, 1, 2] and counts[0] in (2, 3), _story(tc)
        assert len(set(counts)) == 1
        # the client saw the redelivery no sooner than the lock, and not long after (generous bound)
        assert out["redelivered_after_ms"] <= (counts[0] - 1) * LOCK_MS + 15_000
        assert out["second_commit"] == {"shared-0": ""}
        # the second member accepted them first: the start offset is past them, and Kafka 4.4's
        # SharePartition.acknowledge skips a batch wholly behind it, without an error (checked against
        # Kafka through the share family's differential, docs/differences.md 20)
        assert out["first_commit"] == {"shared-0": ""}
        events = tc.call(lambda: [(e.kind, e.t_ms, e.details) for e in tc.cluster.trace.query(
            kind=(Kind.SHARE_ACQUIRE, Kind.SHARE_LOCK_EXPIRED, Kind.SHARE_ACKNOWLEDGE))])
        acquires = [e for e in events if e[0] == Kind.SHARE_ACQUIRE]
        expiries = [e for e in events if e[0] == Kind.SHARE_LOCK_EXPIRED]
        assert [a[2]["delivery_counts"] for a in acquires] == [[n] for n in range(1, counts[0] + 1)], _story(tc)
        assert len(expiries) == counts[0] - 1
        for lock, expiry, again in zip(acquires, expiries, acquires[1:]):
            # each lock's deadline is its acquisition's clock reading plus the lock, to the microsecond;
            # it runs out at that deadline, and only then are the records handed out again
            assert round(lock[2]["lock_deadline_ms"] - lock[2]["locked_at_ms"], 3) == LOCK_MS
            assert lock[2]["locked_at_ms"] <= lock[1]
            assert lock[2]["lock_deadline_ms"] == expiry[2]["lock_deadline_ms"] <= expiry[1] <= again[1]
        assert acquires[-1][2]["member"] != acquires[0][2]["member"]
        assert [e[2]["offsets"] for e in events if e[0] == Kind.SHARE_ACKNOWLEDGE] == [[[0, 2]]]
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


def test_explicit_acknowledgements_accept_release_and_reject(java):
    with run_cluster_in_thread(brokers=3, topics=[("shared", 1, 3)], config=SCALED) as tc:
        tc.call(lambda: tc.cluster.group_configs.overrides.setdefault("sgx", {}).update(
            {"share.auto.offset.reset": "earliest"}))
        one(java, tc.bootstrap, "produce_batch", topic="shared",
            records=[{"value": v} for v in ("accept-0", "release-1", "reject-2", "accept-3")])
        out = one(java, tc.bootstrap, "share_explicit", group="sgx", topic="shared", count=4, again=1,
                  max_ms=60_000).value
        assert [(r["offset"], r["delivery_count"]) for r in out["first"]] == [(0, 1), (1, 1), (2, 1), (3, 1)]
        # RELEASE hands the record back at once: the same member gets it again, delivery count 2
        assert [(r["offset"], r["delivery_count"], r["value"]) for r in out["again"]] == [(1, 2, b"release-1")]
        assert set(out["first_commit"].values()) <= {""} and set(out["again_commit"].values()) <= {""}
        events = tc.call(lambda: [(e.kind, e.details) for e in tc.cluster.trace.query(
            kind=(Kind.SHARE_RELEASE, Kind.SHARE_ARCHIVE, Kind.SHARE_LOCK_EXPIRED))])
        assert sorted((k, d["offsets"], d["reason"]) for k, d in events if k != Kind.SHARE_LOCK_EXPIRED) == [
            (Kind.SHARE_ARCHIVE, [[2, 2]], "rejected"), (Kind.SHARE_RELEASE, [[1, 1]], "released")]
        assert not [k for k, _ in events if k == Kind.SHARE_LOCK_EXPIRED]
        state = tc.call(lambda: tc.cluster.share.partitions[("sgx", "shared", 0)].describe())
        assert (state["start_offset"], state["records"]) == (4, {})
