"""DeleteGroups and OffsetDelete, over the wire in virtual time (GroupCoordinatorShard.deleteGroups,
OffsetMetadataManager.deleteOffsets): only an empty group goes, offsets of a subscribed topic stay,
unknown partitions are refused before the group is asked."""

from broker_emu.runtime import open_cluster
from client.protocol import ApiKey
from tests.broker_emu.groups_fake import COMMIT, FETCH, JOIN, commit_body, join_body
from tests.broker_emu.test_kip848 import FAST, Member
from tests.broker_emu.wire import WireClient

DELETE_GROUPS, OFFSET_DELETE = ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE


async def _committed(w, group, partition):
    r = await w.call(FETCH, 8, {"groups": [{"group_id": group, "topics": [{"name": "t", "partition_indexes": [partition]}]}],
                                "require_stable": False})
    return r.groups[0].topics[0].partitions[0].committed_offset


def _offset_delete(group, parts):
    return {"group_id": group, "topics": [{"name": t, "partitions": [{"partition_index": p} for p in ps]} for t, ps in parts]}


async def test_only_an_empty_group_is_deleted_with_its_offsets(autojump_clock):
    config = FAST | {"group.initial.rebalance.delay.ms": 0}
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=config) as cluster:
        w = WireClient(cluster.connect(0))
        await w.call(COMMIT, 9, commit_body({("t", 0): 5}, group="idle"))
        busy = Member(cluster, group="busy")
        await busy.beat()
        r = await w.call(JOIN, 9, join_body(group="classic"))
        await w.call(JOIN, 9, join_body(group="classic", member_id=r.member_id))
        r = await w.call(DELETE_GROUPS, 2, {"groups_names": ["idle", "busy", "classic", "nope", "idle"]})
        assert [(x.group_id, x.error_code) for x in r.results] == [("idle", 0), ("busy", 68), ("classic", 68), ("nope", 69)]
        assert await _committed(w, "idle", 0) == -1                       # its offsets went with it
        await busy.beat(epoch=-1)
        r = await w.call(DELETE_GROUPS, 2, {"groups_names": ["busy"]})
        assert r.results[0].error_code == 0 and "busy" not in cluster.groups.groups


async def test_offsets_of_a_subscribed_topic_stay(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1), ("u", 1, 1)], listen=False, config=FAST) as cluster:
        w = WireClient(cluster.connect(0))
        m = Member(cluster, topics=("t",))
        await m.beat()
        body = commit_body({("t", 0): 5, ("u", 0): 3}, generation=m.epoch, member_id=m.member_id)
        assert all(p.error_code == 0 for t in (await w.call(COMMIT, 9, body)).topics for p in t.partitions)
        r = await w.call(OFFSET_DELETE, 0, _offset_delete("g", [("t", [0]), ("u", [0, 7]), ("gone", [0])]))
        got = {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}
        assert (r.error_code, got) == (0, {("t", 0): 86, ("u", 0): 0, ("u", 7): 3, ("gone", 0): 3})
        assert sorted(cluster.groups.groups["g"].offsets) == [("t", 0)]    # u's offset gone, t's kept
        r = await w.call(OFFSET_DELETE, 0, _offset_delete("nope", [("t", [0])]))
        assert (r.error_code, list(r.topics)) == (69, [])
