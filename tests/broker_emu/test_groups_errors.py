"""Fencing and validation errors of the membership APIs, and static membership (KIP-345)."""

import pytest
import trio

from tests.broker_emu.groups_fake import (
    HEARTBEAT,
    JOIN,
    LEAVE,
    SYNC,
    FakeCluster,
    Member,
    call,
    heartbeat_body,
    join_body,
    sync_body,
)


@pytest.fixture
async def c(nursery):
    cluster = FakeCluster()
    await nursery.start(cluster.groups.run)
    return cluster


async def stable_member(c, name="a", **kw):
    m = Member(c, name)
    await m.join(**kw)
    await m.sync({m.member_id: b"x"})
    return m


async def test_heartbeat_fencing_errors(c):
    a = await stable_member(c)
    hb = lambda **kw: call(c, HEARTBEAT, 4, heartbeat_body(**kw))
    assert (await hb(member_id=a.member_id, generation=1)).error_code == 0
    assert (await hb(member_id=a.member_id, generation=0)).error_code == 22          # ILLEGAL_GENERATION
    assert (await hb(member_id="ghost", generation=1)).error_code == 25              # UNKNOWN_MEMBER_ID
    assert (await hb(member_id="ghost", generation=1, group="nothing")).error_code == 25
    assert (await call(c, HEARTBEAT, 0, heartbeat_body(a.member_id, 1), broker=1)).error_code == 16  # NOT_COORDINATOR
    assert (await hb(member_id=a.member_id, generation=1, group="")).error_code == 24  # INVALID_GROUP_ID


async def test_sync_group_fencing_errors(c):
    a = await stable_member(c)
    assert (await call(c, SYNC, 5, sync_body(a.member_id, 7))).error_code == 22
    assert (await call(c, SYNC, 5, sync_body("ghost", 1))).error_code == 25
    wrong = sync_body(a.member_id, 1) | {"protocol_name": "roundrobin"}
    assert (await call(c, SYNC, 5, wrong)).error_code == 23                            # INCONSISTENT_GROUP_PROTOCOL
    missing = sync_body(a.member_id, 1) | {"protocol_type": None}
    assert (await call(c, SYNC, 5, missing)).error_code == 23                          # v5+ must name both
    again = await call(c, SYNC, 3, sync_body(a.member_id, 1))                          # Stable: the current assignment
    assert (again.error_code, again.assignment) == (0, b"x")


async def test_join_validation_errors(c):
    assert (await call(c, JOIN, 5, join_body(session_ms=5999))).error_code == 26     # INVALID_SESSION_TIMEOUT
    assert (await call(c, JOIN, 5, join_body(session_ms=1800001))).error_code == 26
    assert (await call(c, JOIN, 5, join_body(member_id="who"))).error_code == 25      # member id, no such group
    assert (await call(c, JOIN, 5, join_body(group=""))).error_code == 24
    assert (await call(c, JOIN, 5, join_body(), broker=2)).error_code == 16
    assert (await call(c, JOIN, 5, join_body(protocols=[]))).error_code == 23         # nothing to choose from
    assert "g" in c.groups.groups and not c.groups.groups["g"].members


async def test_join_with_a_protocol_the_group_cannot_use(c):
    await stable_member(c, protocols=[("range", b"")])
    other_type = await call(c, JOIN, 9, join_body(protocol_type="connect", protocols=[("range", b"")]))
    assert (other_type.error_code, other_type.member_id) == (23, "")
    no_common = await call(c, JOIN, 9, join_body(protocols=[("sticky", b"")]))
    assert no_common.error_code == 23


async def test_protocol_error_answers_are_well_formed_at_old_versions(c):
    r = await call(c, JOIN, 0, join_body(session_ms=1))
    assert (r.error_code, r.generation_id, r.protocol_name, r.leader, r.members) == (26, -1, "", "", [])


async def test_the_coordinator_elects_the_protocol_most_members_prefer(c, autojump_clock):
    c.config["group.initial.rebalance.delay.ms"] = 100
    prefs = {"a": [("range", b"a"), ("roundrobin", b"a")], "b": [("roundrobin", b"b"), ("range", b"b")],
             "c": [("roundrobin", b"c"), ("range", b"c"), ("sticky", b"c")]}
    members = {name: Member(c, name) for name in prefs}
    async with trio.open_nursery() as n:
        for name, m in members.items():
            n.start_soon(lambda m=m, p=prefs[name]: m.join(protocols=p))
    answers = [m.joins[0][1] for m in members.values()]
    assert {r.protocol_name for r in answers} == {"roundrobin"}
    leader = next(r for r in answers if r.members)
    assert sorted(m.metadata for m in leader.members) == [b"a", b"b", b"c"]   # metadata for roundrobin


async def test_static_member_restart_keeps_its_assignment_without_a_rebalance(c):
    a = Member(c, "a")
    await a.join(version=9, instance="i-a")
    await a.sync({a.member_id: b"mine"})
    old_id = a.member_id
    restarted = Member(c, "a")
    r = await restarted.join(version=9, instance="i-a")   # a static member: no MEMBER_ID_REQUIRED round
    g = c.groups.groups["g"]
    assert r.error_code == 0 and r.member_id != old_id and r.generation_id == 1 and g.state == "Stable"
    assert (r.leader, r.skip_assignment, len(r.members)) == (r.member_id, True, 1)  # v9: leader skips assigning
    assert (await restarted.sync()).assignment == b"mine"
    fenced = await call(c, HEARTBEAT, 4, heartbeat_body(old_id, 1, instance="i-a"))
    assert fenced.error_code == 82                                                # FENCED_INSTANCE_ID


async def test_static_member_rejoining_before_v9_is_told_the_old_leader(c):
    a = Member(c, "a")
    await a.join(version=8, instance="i-a")
    await a.sync({a.member_id: b"mine"})
    r = await Member(c, "a").join(version=8, instance="i-a")
    assert (r.error_code, r.leader, r.members) == (0, a.member_id, [])


async def test_admin_removes_a_static_member_by_instance_id(c):
    a = Member(c, "a")
    await a.join(version=9, instance="i-a")
    await a.sync({})
    r = await call(c, LEAVE, 4, {"group_id": "g", "members": [{"member_id": "", "group_instance_id": "i-a"},
                                                               {"member_id": "", "group_instance_id": "i-zz"}]})
    assert [(m.group_instance_id, m.error_code) for m in r.members] == [("i-a", 0), ("i-zz", 25)]
    assert c.groups.groups["g"].state == "Empty"


async def test_a_coordinator_move_answers_parked_joins_and_reloads_the_stored_group(c, autojump_clock):
    a = await stable_member(c, session_ms=6000, rebalance_ms=20000)
    b = Member(c, "b")
    async with trio.open_nursery() as n:
        n.start_soon(lambda: b.join(session_ms=6000, rebalance_ms=20000))
        await trio.sleep(1)
        assert c.groups.groups["g"].state == "PreparingRebalance"
        c.owner["g"] = 1                       # the group's offsets partition got a new leader
        c.groups.broker_stopped(0)
    assert [(t, r.error_code) for t, r in b.joins] == [(1.0, 16)]     # NOT_COORDINATOR: find it again
    assert (await call(c, JOIN, 9, join_body(member_id="x"), broker=0)).error_code == 16
    g = c.groups.groups["g"]
    assert (g.coordinator, g.state, g.generation_id, list(g.members)) == (1, "Stable", 1, [a.member_id])
    assert (await call(c, HEARTBEAT, 4, heartbeat_body(a.member_id, 1), broker=1)).error_code == 0
    await trio.sleep(6.5)                      # sessions restarted at the move; a keeps quiet
    assert c.groups.groups["g"].state == "Empty"
