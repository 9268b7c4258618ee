"""Share groups' record locks in virtual time (KIP-932, Kafka's SharePartition): a record a member
acquires is locked for share.record.lock.duration.ms on the cluster clock and goes to another
member exactly at the deadline with its delivery count kept; RELEASE frees it at once, REJECT
archives it, the delivery count limit archives a record that keeps coming back, RENEW (KIP-1222)
pushes the deadline; ShareFetch long-polls to max_wait_ms or the first new record."""

import trio

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from tests.broker_emu.share.member import (
    ACCEPT,
    REJECT,
    RELEASE,
    RENEW,
    ShareMember,
    acquired,
    partition_of,
    produce,
    values,
)
from tests.broker_emu.wire import WireClient

LONG_SESSIONS = {"group.share.session.timeout.ms": 600_000}   # the members here do not heartbeat while they wait


def events(cluster, kind):
    return cluster.trace.query(kind=kind)


async def two_members_with_records(cluster, n=3):
    """a and b share partition 0 of t; a's session is open; ``n`` records wait."""
    a, b = ShareMember(cluster), ShareMember(cluster)
    assert (await a.beat()).error_code == 0 and (await b.beat()).error_code == 0
    await a.beat()
    assert a.assignment == {a.topic_id(): [0]}
    r = await a.fetch(max_wait_ms=0)          # opens the session; latest: the share partition starts at 0
    assert r.error_code == 0 and acquired(r) == []
    await produce(cluster, [b"r%d" % i for i in range(n)])
    return a, b


async def test_a_lock_expires_exactly_at_the_duration_and_the_record_goes_to_another_member(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a, b = await two_members_with_records(cluster)
        r = await a.fetch()
        t0 = trio.current_time()
        assert r.acquisition_lock_timeout_ms == 30000
        assert acquired(r) == [(0, 2, 1)] and values(r) == {0: b"r0", 1: b"r1", 2: b"r2"}
        r = await b.fetch()                    # nothing available: waits for a's lock to expire
        assert trio.current_time() - t0 == 30.0
        assert acquired(r) == [(0, 2, 2)] and values(r) == {0: b"r0", 1: b"r1", 2: b"r2"}
        expired = events(cluster, Kind.SHARE_LOCK_EXPIRED)
        assert [(e.details["member"], e.details["offsets"], e.details["lock_deadline_ms"]) for e in expired] == [
            (a.member_id, [[0, 2]], expired[0].t_ms)]
        assert events(cluster, Kind.SHARE_ACQUIRE)[-1].details["member"] == b.member_id
        # a's acknowledgement comes too late: the records are b's now
        r = await a.acknowledge({0: [(0, 2, [ACCEPT])]})
        assert r.error_code == 0 and r.responses[0].partitions[0].error_code == 86 + 35   # INVALID_RECORD_STATE


async def test_release_makes_the_record_available_at_once(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a, b = await two_members_with_records(cluster)
        assert acquired(await a.fetch()) == [(0, 2, 1)]
        t0 = trio.current_time()
        r = await a.acknowledge({0: [(0, 2, [ACCEPT, RELEASE, ACCEPT])]})
        assert r.responses[0].partitions[0].error_code == 0 and r.acquisition_lock_timeout_ms == 30000
        r = await b.fetch()
        assert trio.current_time() == t0 and acquired(r) == [(1, 1, 2)]
        released = events(cluster, Kind.SHARE_RELEASE)
        assert [(e.details["offsets"], e.details["reason"]) for e in released] == [([[1, 1]], "released")]
        assert cluster.share.partitions[("sg", "t", 0)].start_offset == 1    # 0 accepted, 1 in flight


async def test_reject_archives_and_the_start_offset_moves_past_it(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a, b = await two_members_with_records(cluster)
        assert acquired(await a.fetch()) == [(0, 2, 1)]
        r = await a.fetch(acks={0: [(0, 2, [ACCEPT, REJECT, ACCEPT])]}, max_wait_ms=1000)
        assert partition_of(r).acknowledge_error_code == 0 and acquired(r) == []
        t0 = trio.current_time()
        r = await b.fetch(max_wait_ms=5000)          # nothing comes back: REJECT is final
        assert acquired(r) == [] and trio.current_time() - t0 == 5.0
        archived = events(cluster, Kind.SHARE_ARCHIVE)
        assert [(e.details["offsets"], e.details["reason"]) for e in archived] == [([[1, 1]], "rejected")]
        sp = cluster.share.partitions[("sg", "t", 0)]
        assert (sp.start_offset, sp.end_offset, sp.records) == (3, 3, {})


async def test_the_delivery_count_limit_archives_a_poison_record(autojump_clock):
    config = LONG_SESSIONS | {"group.share.delivery.count.limit": 3}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        a, b = await two_members_with_records(cluster, n=1)
        counts = []
        t0 = trio.current_time()
        for member in (a, b, a):                 # each takes it and lets the lock run out
            r = await member.fetch()
            counts += [c for _, _, c in acquired(r)]
        assert counts == [1, 2, 3] and trio.current_time() - t0 == 60.0
        r = await b.fetch(max_wait_ms=40000)     # the third lock expires at 90 s: archived, not redelivered
        assert acquired(r) == [] and trio.current_time() - t0 == 100.0
        archived = events(cluster, Kind.SHARE_ARCHIVE)
        assert [(e.details["offsets"], e.details["reason"], e.details["delivery_counts"], e.t_ms - archived[0].t_ms)
                for e in archived] == [([[0, 0]], "delivery_count_limit", [3], 0)]
        assert events(cluster, Kind.SHARE_LOCK_EXPIRED)[-1].t_ms == archived[0].t_ms
        assert cluster.share.partitions[("sg", "t", 0)].start_offset == 1


async def test_renew_pushes_the_lock_deadline(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a, b = await two_members_with_records(cluster)
        assert acquired(await a.fetch()) == [(0, 2, 1)]
        t0 = trio.current_time()
        async with trio.open_nursery() as nursery:
            got = {}

            async def b_waits():
                got["r"] = await b.fetch()
                got["at"] = trio.current_time() - t0
            nursery.start_soon(b_waits)
            await trio.sleep(20)
            r = await a.acknowledge({0: [(0, 2, [RENEW])]}, renew=True)
            assert r.responses[0].partitions[0].error_code == 0
        assert got["at"] == 50.0 and acquired(got["r"]) == [(0, 2, 2)]
        renewed = events(cluster, Kind.SHARE_RENEW)
        assert [(e.details["offsets"], e.details["lock_duration_ms"]) for e in renewed] == [([[0, 2]], 30000)]
        assert renewed[0].details["lock_deadline_ms"] - renewed[0].t_ms == 30000 == renewed[0].details["lock_deadline_ms"] - renewed[0].details["locked_at_ms"]


async def test_renew_needs_version_2(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a, _ = await two_members_with_records(cluster)
        assert acquired(await a.fetch()) == [(0, 2, 1)]
        r = await a.acknowledge({0: [(0, 2, [RENEW])]}, version=1)
        assert r.responses[0].partitions[0].error_code == 42    # INVALID_REQUEST


async def test_a_share_fetch_long_polls_to_max_wait_or_the_first_new_record(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a = ShareMember(cluster)
        await a.beat()
        t0 = trio.current_time()
        r = await a.fetch(max_wait_ms=5000)
        assert acquired(r) == [] and trio.current_time() - t0 == 5.0
        t1 = trio.current_time()
        async with trio.open_nursery() as nursery:
            async def produce_later():
                await trio.sleep(1.25)
                await produce(cluster, [b"late"])
            nursery.start_soon(produce_later)
            r = await a.fetch(max_wait_ms=5000)
        assert trio.current_time() - t1 == 1.25 and values(r) == {0: b"late"}


async def test_latest_is_the_default_and_earliest_is_a_group_config(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        await produce(cluster, [b"before"])
        a = ShareMember(cluster)
        await a.beat()
        assert acquired(await a.fetch(max_wait_ms=100)) == []
        cluster.group_configs.overrides["other"] = {"share.auto.offset.reset": "earliest"}
        b = ShareMember(cluster, group="other")
        await b.beat()
        assert values(await b.fetch(max_wait_ms=100)) == {0: b"before"}


async def test_the_timeline_shows_each_expired_lock_as_a_server_side_timeout(autojump_clock):
    from conformance.explain import build

    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a, b = await two_members_with_records(cluster)
        await a.fetch()
        await b.fetch()
        spans, _ = build(cluster.trace.query())
        (lock,) = [s for s in spans if s.lane == "share partitions"]
        acquired_at = cluster.trace.query(kind=Kind.SHARE_ACQUIRE)[0].t_ms
        assert (lock.start, lock.end - lock.start, lock.kind) == (acquired_at, 30000, "timeout-server")
        assert lock.clock == "share.record.lock.duration.ms = 30000 ms"


async def test_a_renewing_share_fetch_pushes_the_lock_and_acquires_nothing(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a, b = await two_members_with_records(cluster)
        assert acquired(await a.fetch()) == [(0, 2, 1)]
        t0 = trio.current_time()
        await trio.sleep(25)
        await produce(cluster, [b"new"])     # there is something to acquire: a renewing fetch leaves it
        r = await a.fetch(acks={0: [(0, 2, [RENEW])]}, renew=True, max_wait_ms=0, min_bytes=0, max_records=0,
                          keep_epoch=True)
        assert (r.error_code, r.error_message) == (42, None)   # Kafka logs why; the answer has the code alone
        r = await a.fetch(acks={0: [(0, 2, [RENEW])]}, renew=True, max_wait_ms=0, min_bytes=0, max_records=0,
                          max_bytes=0)
        assert r.error_code == 0 and partition_of(r).acknowledge_error_code == 0 and acquired(r) == []
        r = await b.fetch(max_records=1)          # b takes the new record at once ...
        assert acquired(r) == [(3, 3, 1)]
        r = await b.fetch(acks={0: [(3, 3, [ACCEPT])]})   # ... and a's renewed records 30 s after the renewal
        assert acquired(r) == [(0, 2, 2)] and trio.current_time() - t0 == 55.0


async def test_the_groups_own_lock_duration_and_delivery_limit_set_on_the_wire(autojump_clock):
    from tests.broker_emu.test_group_configs import INCREMENTAL_ALTER_CONFIGS, set_group

    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a, b = await two_members_with_records(cluster, n=1)
        r = await a.coordinator.call(INCREMENTAL_ALTER_CONFIGS, 1, set_group(
            "sg", share_record_lock_duration_ms="15000", share_delivery_count_limit="2"))
        assert r.responses[0].error_code == 0
        t0 = trio.current_time()
        r = await a.fetch()
        assert r.acquisition_lock_timeout_ms == 15000 and acquired(r) == [(0, 0, 1)]
        assert acquired(await b.fetch()) == [(0, 0, 2)] and trio.current_time() - t0 == 15.0
        r = await a.fetch(max_wait_ms=20000)      # the second lock runs out at 30 s: the limit of 2 archives it
        assert acquired(r) == [] and trio.current_time() - t0 == 35.0
        assert [e.details["reason"] for e in events(cluster, Kind.SHARE_ARCHIVE)] == ["delivery_count_limit"]


async def test_a_closed_connection_gives_its_share_sessions_records_back_at_once(autojump_clock):
    """The connection that opened a member's share session ends the session when it closes, and
    the member's acquired records go back then, not at their locks' deadline (Kafka's
    ShareSessionCache.ClientConnectionDisconnectListener; measured on Kafka 4.4). A session the
    member opened again on another connection is not the closed one's: nothing is released."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a, b = await two_members_with_records(cluster)
        assert acquired(await a.fetch()) == [(0, 2, 1)]
        t0 = trio.current_time()
        await trio.sleep(5)
        await a.leader.stream.aclose()
        waiting = await b.fetch()             # the records are free as a's connection goes
        assert trio.current_time() - t0 == 5.0 and acquired(waiting) == [(0, 2, 2)]
        [released] = events(cluster, Kind.SHARE_RELEASE)
        assert (released.details["member"], released.details["reason"], released.details["offsets"]) == (
            a.member_id, "disconnect", [[0, 2]])
        assert events(cluster, Kind.SHARE_LOCK_EXPIRED) == []


async def test_a_session_opened_again_elsewhere_outlives_the_first_connection(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a, _ = await two_members_with_records(cluster)
        first = a.leader
        a.leader = WireClient(cluster.connect(0), client_id="share")
        a.session_epoch = 0
        assert acquired(await a.fetch()) == [(0, 2, 1)]    # the session opened again, on the new connection
        await first.stream.aclose()
        await trio.sleep(1)
        assert events(cluster, Kind.SHARE_RELEASE) == [] and cluster.share.sessions.describe() != []
