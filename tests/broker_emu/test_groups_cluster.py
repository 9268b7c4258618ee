"""The group coordinator inside the real emulator: requests over in-memory connections through
the whole pipeline (virtual time), coordinator placement, and a coordinator moving away."""

import trio

from broker_emu.runtime import open_cluster
from tests.broker_emu.groups_fake import (
    COMMIT,
    FETCH,
    FIND,
    HEARTBEAT,
    JOIN,
    SYNC,
    commit_body,
    heartbeat_body,
    join_body,
    sync_body,
)
from tests.broker_emu.wire import WireClient


async def join_and_sync(w: WireClient, **kw):
    r = await w.call(JOIN, 9, join_body(**kw))
    assert r.error_code == 79
    r = await w.call(JOIN, 9, join_body(member_id=r.member_id, **kw))
    s = await w.call(SYNC, 5, sync_body(r.member_id, r.generation_id, {r.member_id: b"p"}))
    assert (r.error_code, s.error_code) == (0, 0)
    return r.member_id, r.generation_id


async def test_find_the_coordinator_then_join_there_and_not_elsewhere(autojump_clock):
    async with open_cluster(3, topics=[("t", 2, 3)], listen=False) as cluster:
        coord = cluster.coordinator_for("g")
        found = await WireClient(cluster.connect((coord + 1) % 3)).call(FIND, 4, {"key_type": 0, "coordinator_keys": ["g"]})
        assert [(x.node_id, x.error_code) for x in found.coordinators] == [(coord, 0)]
        other = WireClient(cluster.connect((coord + 1) % 3))
        assert (await other.call(JOIN, 9, join_body())).error_code == 16          # NOT_COORDINATOR
        w = WireClient(cluster.connect(coord), client_id="consumer-1")
        start = trio.current_time()
        member_id, generation = await join_and_sync(w)
        assert trio.current_time() - start == 3.0     # the default group.initial.rebalance.delay.ms
        assert member_id.startswith("consumer-1-") and generation == 1
        r = await w.call(COMMIT, 9, commit_body({("t", 1): 5, ("t", 7): 1}, generation=1, member_id=member_id))
        assert {p.partition_index: p.error_code for p in r.topics[0].partitions} == {1: 0, 7: 3}
        rebalances = cluster.trace.query(kind="group_rebalance")
        assert [(e.broker, e.details["group"]) for e in rebalances] == [(coord, "g")]


async def test_a_session_expiry_in_the_trace_at_the_exact_time(autojump_clock):
    async with open_cluster(1, listen=False, config={"group.initial.rebalance.delay.ms": 0}) as cluster:
        w = WireClient(cluster.connect(0))
        member_id, _ = await join_and_sync(w, session_ms=6000)
        t0 = cluster.trace.now_ms()
        await trio.sleep(7)
        expired = cluster.trace.query(kind="group_member_expired")
        assert [(e.t_ms - t0, e.details["member"]) for e in expired] == [(6000.0, member_id)]
        assert cluster.groups.groups["g"].state == "Empty"


async def test_stopping_the_coordinator_moves_the_group_with_its_last_stored_generation(autojump_clock):
    config = {"group.initial.rebalance.delay.ms": 0}
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config=config) as cluster:
        old = cluster.coordinator_for("g")
        w = WireClient(cluster.connect(old))
        member_id, generation = await join_and_sync(w, session_ms=20000)
        assert (await w.call(COMMIT, 8, commit_body({("t", 0): 9}, generation=1, member_id=member_id))).topics
        await cluster.stop_broker(old)
        new = cluster.coordinator_for("g")
        assert new not in (old, -1)
        w2 = WireClient(cluster.connect(new))
        found = await w2.call(FIND, 3, {"key": "g", "key_type": 0})
        assert found.node_id == new
        # The new coordinator loaded the group as stored at the last SyncGroup: Stable, same generation.
        assert (await w2.call(HEARTBEAT, 4, heartbeat_body(member_id, generation))).error_code == 0
        got = await w2.call(FETCH, 8, {"groups": [{"group_id": "g", "topics": None}]})
        assert got.groups[0].topics[0].partitions[0].committed_offset == 9
        g = cluster.groups.groups["g"]
        assert (g.coordinator, g.state, g.generation_id) == (new, "Stable", 1)
