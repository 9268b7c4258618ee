"""Rebalances in virtual time through the group handlers (codec both ways): join long polls,
the initial delay, rebalance and session timeouts, SyncGroup expiry — exact times asserted.

Time starts at 0 under the autojump clock, and every deadline here is a whole or binary
fraction of a second, so ``trio.current_time()`` is compared with ``==``."""

import uuid

import pytest
import trio
import trio.lowlevel

from tests.broker_emu.groups_fake import LEAVE, FakeCluster, Member, call


@pytest.fixture
def make(nursery):
    async def make(**config):
        cluster = FakeCluster(**config)
        await nursery.start(cluster.groups.run)
        return cluster
    return make


async def stable_pair(c, *, session_ms=10000, rebalance_ms=5000):
    """A leads, B follows; both synced. Returns (a, b)."""
    a, b = Member(c, "a"), Member(c, "b")
    await a.join(session_ms=session_ms, rebalance_ms=rebalance_ms)
    await a.sync({a.member_id: b"A1"})
    async with trio.open_nursery() as n:
        n.start_soon(lambda: b.join(session_ms=session_ms, rebalance_ms=rebalance_ms))
        await trio.sleep(0.5)
        assert await a.heartbeat() == 27
        await a.join(session_ms=session_ms, rebalance_ms=rebalance_ms)
    async with trio.open_nursery() as n:
        n.start_soon(b.sync)
        await trio.lowlevel.checkpoint()
        await a.sync({a.member_id: b"A2", b.member_id: b"B2"})
    assert c.groups.groups["g"].state == "Stable" and a.generation == b.generation == 2
    return a, b


async def test_initial_rebalance_delay_holds_a_lone_first_member(make, autojump_clock):
    c = await make(group_initial_rebalance_delay_ms=3000)
    a = Member(c, "a")
    r = await a.join(rebalance_ms=10000)
    assert trio.current_time() == 3.0
    assert (r.error_code, r.generation_id, r.leader, r.protocol_name) == (0, 1, a.member_id, "range")
    assert [m.member_id for m in r.members] == [a.member_id]


async def test_a_member_arriving_during_the_initial_delay_extends_it_by_another_delay(make, autojump_clock):
    c = await make(group_initial_rebalance_delay_ms=3000)
    a, b = Member(c, "a"), Member(c, "b")
    async with trio.open_nursery() as n:
        n.start_soon(lambda: a.join(rebalance_ms=10000))
        await trio.sleep(1)
        n.start_soon(lambda: b.join(rebalance_ms=10000))
    # Kafka's InitialDelayedJoin: at 3 s a member had arrived, so wait min(delay, 7 s left) more.
    assert [t for t, _ in a.joins + b.joins] == [6.0, 6.0]
    leader = a.joins[0][1]
    assert leader.leader == a.member_id and len(leader.members) == 2 and b.joins[0][1].members == []


async def test_the_initial_delay_is_capped_by_the_rebalance_timeout(make, autojump_clock):
    c = await make(group_initial_rebalance_delay_ms=3000)
    members = [Member(c, name) for name in "abc"]
    async with trio.open_nursery() as n:
        for m, at in zip(members, (0, 1, 4)):
            await trio.sleep_until(at)
            n.start_soon(lambda m=m: m.join(rebalance_ms=5000))
    # 3 s, then min(3 s, 2 s left) = 2 s; the member at 4 s cannot extend past 5 s.
    assert [m.joins[0][0] for m in members] == [5.0, 5.0, 5.0]
    assert all(m.generation == 1 for m in members)


async def test_two_members_leader_gets_metadata_follower_waits_for_the_assignment(make, autojump_clock):
    c = await make()
    a, b = Member(c, "a"), Member(c, "b")
    first = await a.join(protocols=[("range", b"a-sub")])
    assert (trio.current_time(), first.generation_id, first.leader) == (0.0, 1, a.member_id)
    assert (await a.sync({a.member_id: b"x"})).assignment == b"x"
    synced = {}
    async with trio.open_nursery() as n:
        await trio.sleep_until(1)
        n.start_soon(lambda: b.join(protocols=[("range", b"b-sub")]))   # held: a must rejoin
        await trio.sleep_until(2)
        assert await a.heartbeat() == 27                                # REBALANCE_IN_PROGRESS
        await trio.sleep_until(2.5)
        r = await a.join(protocols=[("range", b"a-sub")])

        async def follower_sync():
            answer = await b.sync()
            synced["b"] = (trio.current_time(), answer)
        n.start_soon(follower_sync)
        await trio.sleep_until(3)
        await a.sync({a.member_id: b"a-part", b.member_id: b"b-part"})
    t_b, rb = b.joins[0]
    assert t_b == 2.5 and r.generation_id == rb.generation_id == 2 and rb.leader == a.member_id
    assert {m.member_id: m.metadata for m in r.members} == {a.member_id: b"a-sub", b.member_id: b"b-sub"}
    assert rb.members == []
    t_sync, rs = synced["b"]
    assert (t_sync, rs.error_code, rs.assignment, rs.protocol_name) == (3.0, 0, b"b-part", "range")


async def test_member_that_does_not_rejoin_is_removed_at_exactly_the_rebalance_timeout(make, autojump_clock):
    c = await make()
    a, b = await stable_pair(c, session_ms=30000, rebalance_ms=5000)
    await trio.sleep_until(10)
    r = await b.join(session_ms=30000, rebalance_ms=5000, protocols=[("range", b"changed")])
    assert trio.current_time() == 15.0
    assert (r.generation_id, r.leader, [m.member_id for m in r.members]) == (3, b.member_id, [b.member_id])
    assert await a.heartbeat() == 25   # UNKNOWN_MEMBER_ID: a was dropped


async def test_session_expiry_at_exactly_session_timeout_removes_the_member_and_rebalances(make, autojump_clock):
    c = await make()
    a, b = await stable_pair(c, session_ms=6000, rebalance_ms=5000)
    start = trio.current_time()          # b's session restarted at its sync, a's at its heartbeat below
    assert await a.heartbeat() == 0
    codes = []
    for k in range(1, 6):                # b heartbeats every 1.25 s; a stays silent
        await trio.sleep_until(start + 1.25 * k)
        codes.append(await b.heartbeat())
    expired = c.trace.of("group_member_expired")
    assert [(e.time, e.details["member"]) for e in expired] == [(start + 6.0, a.member_id)]
    assert codes == [0, 0, 0, 0, 27]     # the heartbeat after the expiry says "rejoin"
    r = await b.join(session_ms=6000, rebalance_ms=5000)
    assert (trio.current_time(), r.generation_id, r.leader) == (start + 6.25, 3, b.member_id)


async def test_member_id_required_then_rejoin_with_the_generated_id(make, autojump_clock):
    c = await make()
    first = await call(c, 11, 4, {"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 5000,
                                   "member_id": "", "protocol_type": "consumer",
                                   "protocols": [{"name": "range", "metadata": b""}]}, client_id="my-client")
    assert (first.error_code, first.generation_id, first.leader) == (79, -1, "")
    prefix, _, rest = first.member_id.partition("-")
    assert prefix == "my" and uuid.UUID(first.member_id[len("my-client-"):]).version == 4 and rest
    assert c.groups.groups["g"].pending_join == {first.member_id}
    m = Member(c, "my-client", member_id=first.member_id)
    r = await m.join(version=4)
    assert (r.error_code, r.member_id, r.leader) == (0, first.member_id, first.member_id)


async def test_before_v4_an_empty_member_id_joins_directly(make, autojump_clock):
    c = await make()
    r = await Member(c, "old").join(version=3)
    assert r.error_code == 0 and r.member_id.startswith("old-") and r.generation_id == 1


async def test_a_pending_member_id_holds_the_join_phase_until_its_session_timeout(make, autojump_clock):
    c = await make()
    a = Member(c, "a")
    await a.join(session_ms=30000, rebalance_ms=20000)
    await a.sync({})
    await trio.sleep_until(1)
    r = await call(c, 11, 9, {"group_id": "g", "session_timeout_ms": 6000, "member_id": "", "protocol_type": "consumer",
                              "rebalance_timeout_ms": 20000, "protocols": [{"name": "range", "metadata": b""}]})
    assert r.error_code == 79           # and this member never comes back
    await trio.sleep_until(2)
    again = await a.join(session_ms=30000, rebalance_ms=20000)   # the leader rejoins: a rebalance
    assert (trio.current_time(), again.generation_id) == (7.0, 2)  # held until the pending id expired
    assert c.groups.groups["g"].pending_join == set()


async def test_follower_missing_syncgroup_is_removed_at_the_rebalance_timeout(make, autojump_clock):
    c = await make(group_initial_rebalance_delay_ms=500)   # both join within the delay: join ends at 1 s
    a, b = Member(c, "a"), Member(c, "b")
    async with trio.open_nursery() as n:
        n.start_soon(a.join)
        n.start_soon(b.join)
    assert a.generation == b.generation == 1 and a.joins[0][0] == 1.0
    leader, follower = (a, b) if a.joins[0][1].leader == a.member_id else (b, a)
    await trio.sleep_until(2)
    assert (await leader.sync({leader.member_id: b"L", follower.member_id: b"F"})).assignment == b"L"
    await trio.sleep_until(7)           # the follower never sent SyncGroup
    removed = c.trace.of("group_member_removed")
    assert [(e.time, e.details["member"]) for e in removed] == [(6.0, follower.member_id)]
    assert c.groups.groups["g"].state == "PreparingRebalance"
    assert await leader.heartbeat() == 27


async def test_a_parked_follower_sync_learns_of_the_rebalance_when_the_leader_never_syncs(make, autojump_clock):
    c = await make(group_initial_rebalance_delay_ms=500)
    a, b = Member(c, "a"), Member(c, "b")
    async with trio.open_nursery() as n:
        n.start_soon(a.join)
        n.start_soon(b.join)
    leader, follower = (a, b) if a.joins[0][1].leader == a.member_id else (b, a)
    await trio.sleep_until(2)
    r = await follower.sync()
    assert (trio.current_time(), r.error_code) == (6.0, 27)
    assert leader.member_id not in c.groups.groups["g"].members


async def test_leave_group_triggers_a_rebalance_for_the_others(make, autojump_clock):
    c = await make()
    a, b = await stable_pair(c)
    r = await call(c, LEAVE, 5, {"group_id": "g", "members": [{"member_id": b.member_id}, {"member_id": "ghost"}]})
    assert r.error_code == 0 and [(m.member_id, m.error_code) for m in r.members] == [(b.member_id, 0), ("ghost", 25)]
    assert await a.heartbeat() == 27
    t = trio.current_time()
    again = await a.join()
    assert (trio.current_time(), again.generation_id, [m.member_id for m in again.members]) == (t, 3, [a.member_id])
    assert (await call(c, LEAVE, 0, {"group_id": "g", "member_id": "ghost"})).error_code == 25


async def test_last_member_leaving_empties_the_group_and_bumps_the_generation(make, autojump_clock):
    c = await make()
    a = Member(c, "a")
    await a.join()
    await a.sync({})
    await call(c, LEAVE, 1, {"group_id": "g", "member_id": a.member_id})
    g = c.groups.groups["g"]
    assert (g.state, g.generation_id, g.members) == ("Empty", 2, {})


async def test_a_new_member_parked_longer_than_five_minutes_is_dropped(make, autojump_clock):
    """Kafka bounds a new member's JoinGroup by its new-member join timeout (5 min), even when the
    rebalance timeout is longer, and answers UNKNOWN_MEMBER_ID so a live client rejoins."""
    c = await make()
    a = Member(c, "a")
    await a.join(session_ms=600000, rebalance_ms=600000)
    await a.sync({})
    await trio.sleep_until(1)
    r = await Member(c, "b").join(session_ms=600000, rebalance_ms=600000)   # a never rejoins
    assert (trio.current_time(), r.error_code, r.member_id) == (301.0, 25, "")


async def test_a_member_parked_in_joingroup_outlives_its_session(make, autojump_clock):
    c = await make()
    a, b = await stable_pair(c, session_ms=6000, rebalance_ms=20000)   # stable at 0.5 s
    async with trio.open_nursery() as n:
        n.start_soon(lambda: b.join(session_ms=6000, rebalance_ms=20000, protocols=[("range", b"new")]))
        for t in (3, 6, 9, 12):          # a keeps its session but takes 12 s to rejoin
            await trio.sleep_until(t)
            assert await a.heartbeat() == 27
        await a.join(session_ms=6000, rebalance_ms=20000)
    assert b.joins[-1][0] == 12.0 and b.generation == 3      # b waited 11.5 s with a 6 s session
    assert c.trace.of("group_member_expired") == []


async def test_a_follower_parked_in_syncgroup_outlives_its_session_and_restarts_it_when_answered(make, autojump_clock):
    c = await make(group_initial_rebalance_delay_ms=500)
    a, b = Member(c, "a"), Member(c, "b")
    async with trio.open_nursery() as n:
        n.start_soon(lambda: a.join(session_ms=6000, rebalance_ms=20000))
        n.start_soon(lambda: b.join(session_ms=6000, rebalance_ms=20000))
    leader, follower = (a, b) if a.joins[0][1].leader == a.member_id else (b, a)
    async with trio.open_nursery() as n:
        n.start_soon(follower.sync)                        # parked from 1 s
        for t in (4, 8, 12):
            await trio.sleep_until(t)
            assert await leader.heartbeat() == 0
        await leader.sync({})                              # at 12 s: the follower is answered
    await trio.sleep_until(15)
    assert await leader.heartbeat() == 0
    await trio.sleep_until(17.75)
    assert follower.member_id in c.groups.groups["g"].members   # its session restarted at 12 s
    await trio.sleep_until(18.25)
    assert [(e.time, e.details["member"]) for e in c.trace.of("group_member_expired")] == [(18.0, follower.member_id)]
