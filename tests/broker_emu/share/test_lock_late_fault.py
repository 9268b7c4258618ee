"""The ``lock-late`` fault (docs/faults.md): the records a matching ShareFetch acquires stay locked
past their deadline by the fault's ms, on the cluster clock, while the answer still gives the
group's lock; a ShareFetch it does not match locks as usual."""

import trio

from broker_emu.faults import named
from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from tests.broker_emu.share.member import acquired
from tests.broker_emu.share.test_record_locks import LONG_SESSIONS, two_members_with_records


async def test_a_late_lock_goes_to_the_other_member_the_faults_ms_after_its_deadline(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a, b = await two_members_with_records(cluster)
        cluster.faults.add(named.lock_late(7_000, count=1), cluster.now_ms())   # a's next ShareFetch only
        r = await a.fetch()
        t0 = trio.current_time()
        assert r.acquisition_lock_timeout_ms == 30000 and acquired(r) == [(0, 2, 1)]   # what a is told
        r = await b.fetch()
        assert trio.current_time() - t0 == 37.0 and acquired(r) == [(0, 2, 2)]
        expired = cluster.trace.query(kind=Kind.SHARE_LOCK_EXPIRED)
        assert len(expired) == 1 and expired[0].details["late_ms"] == 7000
        assert expired[0].t_ms - expired[0].details["lock_deadline_ms"] == 7000
        applied = cluster.trace.query(kind=Kind.FAULT_APPLIED)
        assert [e.api for e in applied] == ["ShareFetch"]
        # b's own lock was not matched: it expires at its deadline
        r = await a.fetch()
        assert trio.current_time() - t0 == 67.0 and acquired(r) == [(0, 2, 3)]


def test_the_named_fault_is_an_ordinary_rule_on_share_fetch():
    assert named.lock_late(500) == {"match": {"api": "ShareFetch"}, "action": {"type": "lock_late", "ms": 500},
                                    "name": "lock-late"}
