"""A fault rule's ``acknowledgements`` match: the requests that carry a share group's
acknowledgements, whichever API carries them. KIP-932 lets a client acknowledge in a ShareFetch as
well as in a ShareAcknowledge (franz-go's FlushAcks rides on a due fetch), so "the acknowledgements
never arrive" must catch both, and a ShareFetch without acknowledgements must pass."""

import pytest
import trio

from broker_emu.faults.rules import FaultConfigError, parse_match
from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from tests.broker_emu.share.member import ACCEPT, acquired
from tests.broker_emu.share.test_record_locks import LONG_SESSIONS, two_members_with_records

LOST_ACKS = {"match": {"acknowledgements": True}, "action": {"type": "black_hole"}}


async def test_acknowledgements_in_a_share_fetch_are_black_holed_and_a_plain_fetch_is_not(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a, b = await two_members_with_records(cluster, n=1)
        r = await a.fetch()
        assert acquired(r) == [(0, 0, 1)]   # a plain ShareFetch is answered
        cluster.faults.add(LOST_ACKS, cluster.now_ms())
        t0 = trio.current_time()
        with trio.move_on_after(5):          # the piggybacked acceptance: never answered
            await a.fetch(acks={0: [(0, 0, [ACCEPT])]}, max_wait_ms=0)
        assert trio.current_time() - t0 == 5
        # the acceptance never arrived: the lock runs out and b receives the record again
        r = await b.fetch(max_wait_ms=60_000)
        assert acquired(r) == [(0, 0, 2)]
        assert trio.current_time() - t0 == pytest.approx(30, abs=0.01)
        applied = cluster.trace.query(kind=Kind.FAULT_APPLIED)
        assert [e.api for e in applied] == ["ShareFetch"]   # b's fetch, without acknowledgements, was not matched


async def test_false_matches_only_the_requests_without_acknowledgements(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=LONG_SESSIONS) as cluster:
        a, _ = await two_members_with_records(cluster, n=1)
        assert acquired(await a.fetch()) == [(0, 0, 1)]
        cluster.faults.add({**LOST_ACKS, "match": {"acknowledgements": False}}, cluster.now_ms())
        assert (await a.acknowledge({0: [(0, 0, [ACCEPT])]})).error_code == 0   # a ShareAcknowledge: not matched
        assert cluster.trace.query(kind=Kind.FAULT_APPLIED) == []
        with trio.move_on_after(5) as waited:   # a plain ShareFetch: matched, never answered
            await a.fetch(max_wait_ms=0)
        assert waited.cancelled_caught
        assert [e.api for e in cluster.trace.query(kind=Kind.FAULT_APPLIED)] == ["ShareFetch"]


def test_the_match_takes_only_a_boolean():
    assert parse_match({"acknowledgements": True}).acknowledgements is True
    with pytest.raises(FaultConfigError, match="match.acknowledgements"):
        parse_match({"acknowledgements": "yes"})
