"""The console's share-lock view (``share_locks`` in its snapshot): each locked run of records
with its member, delivery counts and time left on the cluster clock, counting down; a lock-late
fault's extra shown beside it; nothing once the records are settled."""

import trio

from broker_emu.control.console_state import console_state
from broker_emu.faults import named
from broker_emu.runtime import open_cluster
from tests.broker_emu.share.member import ACCEPT, acquired
from tests.broker_emu.share.test_record_locks import LONG_SESSIONS, two_members_with_records


async def test_locked_records_count_down_and_leave_the_view_when_accepted(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a, _ = await two_members_with_records(cluster)
        cluster.faults.add(named.lock_late(2_000, count=1), cluster.now_ms())
        assert acquired(await a.fetch()) == [(0, 2, 1)]
        await trio.sleep(12)
        [sp] = console_state(cluster)["share_locks"]
        assert (sp["group"], sp["topic"], sp["partition"], sp["start_offset"], sp["end_offset"]) == ("sg", "t", 0, 0, 3)
        assert sp["locks"] == [{"member": a.member_id, "offsets": [0, 1, 2], "delivery_counts": [1, 1, 1],
                                "lock_ms": 30000.0, "left_ms": 18000.0, "late_ms": 2000}]
        r = await a.acknowledge({0: [(0, 2, [ACCEPT])]})
        assert r.responses[0].partitions[0].error_code == 0
        assert console_state(cluster)["share_locks"] == []
