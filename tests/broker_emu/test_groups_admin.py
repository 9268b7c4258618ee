"""FindCoordinator, ListGroups, DescribeGroups, and every group API at every version it is
served, through encode/decode both ways."""

import pytest
import trio

from broker_emu.registry import REGISTRY
from tests.broker_emu.groups_fake import (
    COMMIT,
    DESCRIBE,
    FETCH,
    FIND,
    HEARTBEAT,
    JOIN,
    LEAVE,
    LIST,
    SYNC,
    FakeCluster,
    Member,
    call,
    commit_body,
    heartbeat_body,
    join_body,
    sync_body,
)


@pytest.fixture
async def c(nursery):
    cluster = FakeCluster()
    await nursery.start(cluster.groups.run)
    return cluster


async def test_find_coordinator_single_key_and_batched(c):
    c.owner["g2"] = 2
    old = await call(c, FIND, 0, {"key": "g2"})
    assert (old.error_code, old.node_id, old.host, old.port) == (0, 2, "127.0.0.1", 9094)
    v3 = await call(c, FIND, 3, {"key": "txn-1", "key_type": 1})
    assert (v3.error_code, v3.error_message, v3.node_id) == (0, "NONE", 0)
    batched = await call(c, FIND, 4, {"key_type": 0, "coordinator_keys": ["g", "g2"]})
    assert [(x.key, x.node_id, x.port, x.error_code) for x in batched.coordinators] == [("g", 0, 9092, 0), ("g2", 2, 9094, 0)]
    bad = await call(c, FIND, 6, {"key_type": 7, "coordinator_keys": ["g"]})
    assert bad.coordinators[0].error_code == 42                         # INVALID_REQUEST


async def test_find_coordinator_when_the_coordinator_is_down(c):
    c.brokers[0].alive = False
    r = await call(c, FIND, 2, {"key": "g", "key_type": 0})
    assert (r.error_code, r.node_id, r.host, r.port) == (15, -1, "", -1)   # COORDINATOR_NOT_AVAILABLE


async def test_list_groups_of_this_broker_with_state_and_type_filters(c):
    await Member(c, "a").join()                                          # g: CompletingRebalance
    await call(c, COMMIT, 8, commit_body({("t", 0): 1}, group="simple"))  # simple: Empty, no protocol type
    c.owner["far"] = 1
    await call(c, COMMIT, 8, commit_body({("t", 0): 1}, group="far"), broker=1)
    everything = await call(c, LIST, 5, {"states_filter": [], "types_filter": []})
    assert {(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in everything.groups} == {
        ("g", "consumer", "CompletingRebalance", "classic"), ("simple", "", "Empty", "classic")}
    empty_only = await call(c, LIST, 4, {"states_filter": ["empty"]})
    assert [g.group_id for g in empty_only.groups] == ["simple"]
    assert (await call(c, LIST, 5, {"states_filter": [], "types_filter": ["consumer"]})).groups == []
    assert {g.group_id for g in (await call(c, LIST, 0, {})).groups} == {"g", "simple"}
    assert [g.group_id for g in (await call(c, LIST, 3, {}, broker=1)).groups] == ["far"]


async def test_describe_groups_shows_metadata_and_assignment_only_when_stable(c):
    a = Member(c, "a")
    await a.join(protocols=[("range", b"sub")])
    during = (await call(c, DESCRIBE, 5, {"groups": ["g"], "include_authorized_operations": False})).groups[0]
    assert (during.group_state, during.protocol_data, during.members[0].member_metadata) == ("CompletingRebalance", "", b"")
    assert during.authorized_operations == -2147483648
    await a.sync({a.member_id: b"assigned"})
    r = await call(c, DESCRIBE, 5, {"groups": ["g", "unknown"], "include_authorized_operations": True}, broker=0)
    g, unknown = r.groups
    assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data) == (0, "Stable", "consumer", "range")
    m = g.members[0]
    assert (m.member_id, m.client_id, m.client_host, m.member_metadata, m.member_assignment) == (
        a.member_id, "a", "/127.0.0.1", b"sub", b"assigned")
    assert g.authorized_operations == 3400  # READ | DELETE | DESCRIBE | DESCRIBE_CONFIGS | ALTER_CONFIGS (Kafka 4.0)
    assert (unknown.error_code, unknown.group_state, unknown.members) == (0, "Dead", [])
    elsewhere = (await call(c, DESCRIBE, 0, {"groups": ["g"]}, broker=1)).groups[0]
    assert (elsewhere.error_code, elsewhere.group_state) == (16, "")


def test_every_group_api_is_registered_with_its_version_range():
    ranges = {api: (REGISTRY[api].min_version, REGISTRY[api].max_version)
              for api in (FIND, JOIN, SYNC, HEARTBEAT, LEAVE, COMMIT, FETCH, LIST, DESCRIBE)}
    assert ranges == {FIND: (0, 6), JOIN: (0, 9), SYNC: (0, 5), HEARTBEAT: (0, 4), LEAVE: (0, 5), COMMIT: (2, 9),
                      FETCH: (1, 9), LIST: (0, 5), DESCRIBE: (0, 5)}


@pytest.mark.parametrize("version", range(10))
async def test_a_whole_group_lifecycle_at_every_version(version, autojump_clock, nursery):
    """Join (with the KIP-394 round from v4), sync, heartbeat, commit, fetch, leave: each API at
    ``version`` or its nearest served version, so every version is encoded and decoded once."""
    c = FakeCluster()
    await nursery.start(c.groups.run)
    v = lambda api: max(REGISTRY[api].min_version, min(version, REGISTRY[api].max_version))
    r = await call(c, JOIN, v(JOIN), join_body())
    if v(JOIN) >= 4:
        assert r.error_code == 79
        r = await call(c, JOIN, v(JOIN), join_body(member_id=r.member_id))
    assert (r.error_code, r.generation_id, r.leader == r.member_id) == (0, 1, True)
    mid = r.member_id
    s = await call(c, SYNC, v(SYNC), sync_body(mid, 1, {mid: b"part"}))
    assert (s.error_code, s.assignment) == (0, b"part")
    assert (await call(c, HEARTBEAT, v(HEARTBEAT), heartbeat_body(mid, 1))).error_code == 0
    commit = await call(c, COMMIT, v(COMMIT), commit_body({("t", 0): 42}, generation=1, member_id=mid))
    assert commit.topics[0].partitions[0].error_code == 0
    fv = v(FETCH)
    topics = [{"name": "t", "partition_indexes": [0]}]
    body = {"groups": [{"group_id": "g", "topics": topics}]} if fv >= 8 else {"group_id": "g", "topics": topics}
    got = await call(c, FETCH, fv, body)
    parts = (got.groups[0] if fv >= 8 else got).topics[0].partitions
    assert parts[0].committed_offset == 42
    lv = v(LEAVE)
    leave = await call(c, LEAVE, lv, {"group_id": "g", "member_id": mid} if lv <= 2 else
                       {"group_id": "g", "members": [{"member_id": mid}]})
    assert leave.error_code == 0 and c.groups.groups["g"].state == "Empty"
    assert trio.current_time() == 0.0    # nothing waited: the group had a single member and no delay


async def test_statistics_and_describe_show_states_members_and_deadlines(c, autojump_clock):
    a = Member(c, "a")
    await a.join(session_ms=6000, rebalance_ms=4000)
    await trio.sleep(1)
    stats = c.groups.statistics()
    assert (stats["groups"], stats["states"], stats["members"]) == (1, {"CompletingRebalance": 1}, 1)
    assert stats["next_deadline"] == 4.0                      # the SyncGroup deadline (rebalance timeout)
    d = c.groups.describe("g")
    assert (d["state"], d["generation_id"], d["leader"], d["pending_sync"]) == (
        "CompletingRebalance", 1, a.member_id, [a.member_id])
    assert (d["sync_deadline"], d["members"][0]["session_deadline"], d["members"][0]["waiting_in"]) == (4.0, 6.0, None)
    await a.sync({})
    d = c.groups.describe()[0]
    assert (d["state"], d["sync_deadline"], d["members"][0]["session_deadline"]) == ("Stable", None, 7.0)
