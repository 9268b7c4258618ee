"""Our share consumer against the emulator in virtual time: records delivered with their
delivery count and the broker's lock, acknowledged implicitly by the next poll, explicitly with
ACCEPT / RELEASE / REJECT, share session epochs as Java keeps them, and Java's refusals."""

import pytest
import trio

from broker_emu.runtime import open_cluster
from client.share.acknowledgements import AcknowledgeType, IllegalStateError
from client.share.consumer import open_share_consumer
from tests.client.share.helpers import BOOT, BROKER, Kind, connect_to, earliest, events, poll_until_records, produce


async def test_records_come_with_their_delivery_count_and_are_accepted_by_the_next_poll(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a", b"b", b"c"])
        async with open_share_consumer({**BOOT, "client.id": "c1"}, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            got = await poll_until_records(c)
            assert [(r.offset, r.value, r.delivery_count) for r in got] == [(0, b"a", 1), (1, b"b", 1), (2, b"c", 1)]
            assert c.acquisition_lock_timeout_ms() == 30000 and got[0].acquisition_lock_timeout_ms == 30000
            # the session's epoch moved on with each answer, as the broker's did
            [(broker_epoch, ours)] = [(s["epoch"], c.fetcher.sessions[0].epoch) for s in cluster.share.sessions.describe()]
            assert broker_epoch == ours >= 1
            assert await c.poll(1.0) == []          # accepts the three, with the next ShareFetch
        accepted = events(cluster, Kind.SHARE_ACKNOWLEDGE)
        assert [(e.details["offsets"], e.details["type"]) for e in accepted] == [([[0, 2]], "accept")]
        sp = cluster.share.partitions[("sg", "t", 0)]
        assert (sp.start_offset, sp.records) == (3, {})
        # close: a final ShareAcknowledge closed the session on the broker, then the member left
        apis = [e.api for e in cluster.trace.query(kind=Kind.RECV) if (e.api or "").startswith("Share")]
        assert apis[-2:] == ["ShareAcknowledge", "ShareGroupHeartbeat"], apis
        assert cluster.share.sessions.describe() == [] and cluster.share.groups["sg"].members == {}


async def test_explicit_accept_release_reject(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a", b"b", b"c"])
        async with open_share_consumer({**BOOT, "share.acknowledgement.mode": "explicit"},
                                       connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            got = await poll_until_records(c)
            c.acknowledge(got[0], AcknowledgeType.ACCEPT)
            c.acknowledge(got[1], AcknowledgeType.RELEASE)
            c.acknowledge(got[2], AcknowledgeType.REJECT)
            results = await c.commit_sync(5.0)
            assert list(results.values()) == [None]
            t0 = trio.current_time()
            again = await poll_until_records(c)            # RELEASE: available at once, delivery count 2
            assert [(r.offset, r.delivery_count) for r in again] == [(1, 2)] and trio.current_time() - t0 < 1.0
            c.acknowledge(again[0])
        assert [(e.details["offsets"], e.details["reason"]) for e in events(cluster, Kind.SHARE_ARCHIVE)] == [
            ([[2, 2]], "rejected")]
        assert [e.details["offsets"] for e in events(cluster, Kind.SHARE_RELEASE)] == [[[1, 1]]]
        assert cluster.share.partitions[("sg", "t", 0)].start_offset == 3


async def test_bad_use_gets_java_s_errors(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a", b"b"])
        async with open_share_consumer(BOOT, connect=connect_to(cluster)) as c:
            with pytest.raises(IllegalStateError, match="Consumer is not subscribed to any topics"):
                await c.poll(0)
            c.subscribe(["t"])
            got = await poll_until_records(c)
            with pytest.raises(IllegalStateError, match="Implicit acknowledgement of delivery is being used"):
                c.acknowledge(got[0])
        async with open_share_consumer({**BOOT, "share.acknowledgement.mode": "explicit"},
                                       connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            await produce(cluster, [b"c", b"d"])
            got = await poll_until_records(c)
            c.acknowledge(got[0])
            with pytest.raises(IllegalStateError, match="All records must be acknowledged in explicit acknowledgement mode"):
                await c.poll(0)
            with pytest.raises(IllegalStateError, match="The record cannot be acknowledged"):
                c.acknowledge(got[0]._replace(offset=99))
            for r in got[1:]:
                c.acknowledge(r)
            await c.poll(0)
            with pytest.raises(IllegalStateError, match="The record cannot be acknowledged"):
                c.acknowledge(got[0])                           # not from the last poll any more
        with pytest.raises(IllegalStateError, match="already been closed"):
            c.subscribe(["t"])


async def test_one_member_reads_every_partition_from_three_leaders_with_a_session_each(autojump_clock):
    async with open_cluster(3, topics=[("t", 3, 3)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        leaders = {p: cluster.partition("t", p).leader for p in range(3)}
        assert sorted(leaders.values()) == [0, 1, 2]
        for p in range(3):
            await produce(cluster, [b"p%d" % p], partition=p)
        async with open_share_consumer(BOOT, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            seen = []
            for _ in range(20):
                seen += [(r.partition, r.value) for r in await c.poll(1.0)]
                if len(seen) == 3:
                    break
            assert sorted(seen) == [(p, b"p%d" % p) for p in range(3)]
            assert sorted(s["broker"] for s in cluster.share.sessions.describe()) == [0, 1, 2]
            # the last poll's records (those of earlier polls were accepted with the fetches that followed)
            results = await c.commit_sync(5.0)
            assert results and set(results.values()) == {None}
        for p in range(3):
            assert cluster.share.partitions[("sg", "t", p)].start_offset == 1
        assert cluster.share.sessions.describe() == []


async def test_with_records_still_buffered_acknowledgements_go_in_a_share_acknowledge_of_their_own(autojump_clock):
    """Two leaders answer (max_records is max.poll.records per ShareFetch, as Java sends it), so
    the buffer outlasts a poll: the next poll's acceptances cannot wait for a fetch there."""
    async with open_cluster(2, topics=[("t", 2, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        for p in range(2):
            await produce(cluster, [b"p%d" % p], partition=p)
        async with open_share_consumer({**BOOT, "max.poll.records": 1}, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            [first] = await poll_until_records(c)
            await trio.sleep(0.1)                # the other leader's answer lands in the buffer
            assert len(c.fetcher.buffer) == 1
            fetches = len([e for e in cluster.trace.query(kind=Kind.RECV) if e.api == "ShareFetch"])
            [second] = await c.poll(1.0)                  # from the buffer: no fetch
            assert second.partition != first.partition
            await trio.sleep(0.01)
            sent = [(e.api, e.broker) for e in cluster.trace.query(kind=Kind.RECV) if (e.api or "").startswith("Share")]
            assert [a for a, _ in sent].count("ShareFetch") == fetches, sent
            assert sent[-1] == ("ShareAcknowledge", cluster.partition("t", first.partition).leader), sent
        accepted = sorted((e.details["partition"], e.details["offsets"]) for e in events(cluster, Kind.SHARE_ACKNOWLEDGE))
        assert accepted == [(0, [[0, 0]]), (1, [[0, 0]])]


async def test_after_an_empty_poll_the_member_keeps_fetching_until_records_are_acquired(autojump_clock):
    """As Java's ShareConsumeRequestManager (fetchMoreRecords): the ShareFetches go on in the
    background after a poll that came back empty, until one acquires records; then they stop,
    whether or not the application polls."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        async with open_share_consumer(BOOT, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            assert await c.poll(2.0) == []
            await trio.sleep(10)                         # the application is away
            produced_at = cluster.now_ms()
            await produce(cluster, [b"late"])
            await trio.sleep(10)
            [acquired] = events(cluster, Kind.SHARE_ACQUIRE)
            assert acquired.t_ms == produced_at          # a waiting ShareFetch took it at once
            fetches = len([e for e in cluster.trace.query(kind=Kind.RECV) if e.api == "ShareFetch"])
            await trio.sleep(10)
            assert len([e for e in cluster.trace.query(kind=Kind.RECV) if e.api == "ShareFetch"]) == fetches
            t0 = trio.current_time()
            assert [(r.value, r.delivery_count) for r in await c.poll(5.0)] == [(b"late", 1)]
            assert trio.current_time() == t0
