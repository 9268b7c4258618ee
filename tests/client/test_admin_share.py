"""Our admin client's share-group offset calls (client/admin_share.py) against the emulator in
virtual time: list / alter / delete with per-item outcomes, a coordinator error retried within
the call's deadline, a black-holed call ending exactly at it, and the blocking face."""

import pytest
import trio

from broker_emu.runtime import open_cluster, run_cluster_in_thread
from client import Admin, ShareOffset
from client.admin import open_admin
from client.errors import GroupIdNotFoundError, NonEmptyGroupError, TimeoutException, UnknownTopicOrPartitionError
from tests.broker_emu.share.member import ACCEPT, ShareMember, acquired, produce

BOOT = {"bootstrap.servers": "127.0.0.1:0"}


def connect_to(cluster):
    async def connect(node, host, port):
        return cluster.connect(max(node, 0))
    return connect


async def test_list_alter_and_delete_share_group_offsets(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster, \
            open_admin(BOOT, connect_to(cluster)) as admin:
        cluster.group_configs.overrides["sg"] = {"share.auto.offset.reset": "earliest"}
        await produce(cluster, [b"a", b"b", b"c"])
        m = ShareMember(cluster)
        await m.beat()
        got = await m.fetch(partitions=(0, 1), max_wait_ms=0)
        await m.acknowledge({0: [(0, 0, [ACCEPT])]})
        assert acquired(got) == [(0, 2, 1)]
        # the state as last written: the start offset before the acknowledgement moved it, offset 0
        # counted as delivered; partition 1, fetched but never written, has no start offset yet
        listed = await admin.list_share_group_offsets("sg")
        assert listed == {("t", 0): ShareOffset(0, 0, 2), ("t", 1): None}
        assert await admin.list_share_group_offsets("sg", [("t", 0), ("nope", 0)]) == {
            ("t", 0): ShareOffset(0, 0, 2), ("nope", 0): None}
        refused = await admin.alter_share_group_offsets("sg", {("t", 0): 3, ("t", 1): 0})
        assert set(refused) == {("t", 0), ("t", 1)} and all(isinstance(e, NonEmptyGroupError) for e in refused.values())
        await m.beat(epoch=-1)
        altered = await admin.alter_share_group_offsets("sg", {("t", 0): 3, ("t", 9): 0})
        assert altered[("t", 0)] is None and isinstance(altered[("t", 9)], UnknownTopicOrPartitionError)
        assert (await admin.list_share_group_offsets("sg", [("t", 0)]))[("t", 0)] == ShareOffset(3, 0, 0)
        deleted = await admin.delete_share_group_offsets("sg", ["t", "nope"])
        assert deleted["t"] is None and isinstance(deleted["nope"], UnknownTopicOrPartitionError)
        assert await admin.list_share_group_offsets("sg") == {}
        assert isinstance((await admin.delete_share_group_offsets("never", ["t"]))["t"], GroupIdNotFoundError)


async def test_a_coordinator_error_is_retried_and_a_black_hole_ends_at_the_deadline(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster, \
            open_admin(BOOT, connect_to(cluster)) as admin:
        cluster.faults.add({"match": {"api": "AlterShareGroupOffsets"},
                            "action": {"type": "error", "error": "NOT_COORDINATOR"}, "times": 2}, 0)
        cluster.faults.add({"match": {"api": "DescribeShareGroupOffsets"},
                            "action": {"type": "error", "error": "COORDINATOR_LOAD_IN_PROGRESS"}, "times": 1}, 0)
        assert await admin.alter_share_group_offsets("sg", {("t", 0): 0}, timeout=5) == {("t", 0): None}
        assert await admin.list_share_group_offsets("sg", timeout=5) == {("t", 0): ShareOffset(0, 0, 0)}
        assert len(cluster.trace.query(kind="recv", api="AlterShareGroupOffsets")) == 3
        cluster.faults.add({"match": {"api": "DeleteShareGroupOffsets"}, "action": "black_hole"}, cluster.now_ms())
        start = trio.current_time()
        with pytest.raises(TimeoutException, match="delete_share_group_offsets gave up after 2000 ms"):
            await admin.delete_share_group_offsets("sg", ["t"], timeout=2)
        assert trio.current_time() - start == pytest.approx(2.0)


def test_the_blocking_face():
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc, \
            Admin({"bootstrap.servers": tc.bootstrap}) as admin:
        assert admin.alter_share_group_offsets("sg", {("t", 0): 0}, timeout=10) == {("t", 0): None}
        assert admin.list_share_group_offsets("sg", timeout=10) == {("t", 0): ShareOffset(0, 0, 0)}
        assert admin.delete_share_group_offsets("sg", ["t"], timeout=10) == {"t": None}
