"""The share consumer's API deadlines with black-holed ShareFetch and ShareAcknowledge (the
emulator's faults), in virtual time: poll returns at its deadline and never raises; commit_sync
raises TimeoutException at its deadline naming the broker and what was pending, and nothing it
sent outlives it; close sends pending acknowledgements and leaves within its timeout, or says what
it could not do, and never raises."""

import pytest
import trio

from broker_emu.runtime import open_cluster
from client.errors import TimeoutException
from client.share.consumer import open_share_consumer
from tests.client.share.helpers import BOOT, BROKER, Kind, connect_to, earliest, events, poll_until_records, produce

EXPLICIT = {**BOOT, "share.acknowledgement.mode": "explicit"}


def black_hole(cluster, api):
    cluster.faults.add({"match": {"api": api}, "action": "black_hole"}, cluster.now_ms())


async def test_poll_returns_at_its_deadline_with_a_black_holed_share_fetch(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a"])
        black_hole(cluster, "ShareFetch")
        async with open_share_consumer(BOOT, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            for timeout in (5.0, 0.0, 2.5):
                t0 = trio.current_time()
                assert await c.poll(timeout) == []
                assert trio.current_time() - t0 == timeout
            cluster.faults.clear()
            # the black-holed fetch is abandoned at request.timeout.ms (30 s), then the records come
            got = await poll_until_records(c, rounds=40)
            assert [r.value for r in got] == [b"a"] and cluster.now_ms() >= 30000


async def test_commit_sync_gives_up_at_its_deadline_and_its_records_go_back_with_the_connection(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a", b"b", b"c"])
        async with open_share_consumer(EXPLICIT, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            got = await poll_until_records(c)
            for r in got:
                c.acknowledge(r)
            black_hole(cluster, "ShareAcknowledge")
            t0 = trio.current_time()
            with pytest.raises(TimeoutException) as caught:
                await c.commit_sync(3.0)
            assert trio.current_time() - t0 == 3.0
            message = str(caught.value)
            assert "commit_sync() gave up after 3000 ms" in message and "broker 0 did not answer ShareAcknowledge" in message
            assert "t-0 offsets 0..2" in message, message
            # nothing it sent outlives it: the connection the request was on closed at the deadline
            await trio.sleep(0.001)
            closed = [(e.t_ms, e.details.get("closed_by")) for e in cluster.trace.events if e.kind == Kind.CONN_CLOSE]
            assert closed == [(t0 * 1000 + 3000, "client")], closed
            cluster.faults.clear()
            # the acknowledgements never arrived, and the connection that opened the member's share
            # session closed with the commit: the records went back then, not when their locks ran
            # out (Kafka's ShareSessionCache disconnect listener), and come again with count 2
            again = await poll_until_records(c, rounds=60)
            assert [(r.offset, r.delivery_count) for r in again] == [(0, 2), (1, 2), (2, 2)]
            [released] = events(cluster, Kind.SHARE_RELEASE)
            assert (released.t_ms, released.details["reason"]) == (t0 * 1000 + 3000, "disconnect")
            assert events(cluster, Kind.SHARE_LOCK_EXPIRED) == []
            for r in again:
                c.acknowledge(r)


async def test_commit_sync_with_timeout_zero_still_sends_once(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a"])
        async with open_share_consumer(BOOT, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            await poll_until_records(c)
            # attempt then check: the request goes out, and the emulator answers at once
            assert await c.commit_sync(0) == {("t", 0): None}
        assert [e.details["offsets"] for e in events(cluster, Kind.SHARE_ACKNOWLEDGE)] == [[[0, 0]]]


async def test_close_sends_pending_acknowledgements_and_leaves(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a", b"b"])
        async with open_share_consumer(BOOT, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            await poll_until_records(c)
            t0 = trio.current_time()
            assert await c.aclose(5.0) == []
            assert trio.current_time() == t0
        assert [(e.details["offsets"], e.details["type"]) for e in events(cluster, Kind.SHARE_ACKNOWLEDGE)] == [
            ([[0, 1]], "accept")]
        assert cluster.share.sessions.describe() == [] and cluster.share.groups["sg"].members == {}


async def test_close_with_a_black_holed_acknowledgement_returns_at_its_timeout_and_says_what_was_pending(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a", b"b"])
        async with open_share_consumer(BOOT, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            await poll_until_records(c)
            black_hole(cluster, "ShareAcknowledge")
            t0 = trio.current_time()
            missed = await c.aclose(4.0)
            assert trio.current_time() - t0 == 4.0
        assert len(missed) == 2, missed
        assert "close() gave up after 4000 ms" in missed[0] and "t-0 offsets 0..1" in missed[0]
        assert "did not leave the share group 'sg'" in missed[1]
        assert events(cluster, Kind.SHARE_ACKNOWLEDGE) == []


async def test_close_waits_for_the_share_fetch_in_flight_at_most_its_timeout(autojump_clock):
    """The last poll's acceptances ride a ShareFetch that is black-holed; close cannot send its
    final ShareAcknowledge before that fetch comes back (one request at a time in a session), and
    says so at its deadline."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a"])
        async with open_share_consumer(BOOT, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            await poll_until_records(c)
            black_hole(cluster, "ShareFetch")
            assert await c.poll(1.0) == []
            t0 = trio.current_time()
            missed = await c.aclose(3.0)
            assert trio.current_time() - t0 == 3.0
        assert "the ShareFetch in flight to broker 0 had not come back" in missed[0]
        assert "that ShareFetch carries t-0 offsets 0" in missed[0], missed


async def test_unsubscribe_leaves_and_subscribe_joins_again_as_a_new_member(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a"])
        async with open_share_consumer(BOOT, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            await poll_until_records(c)
            first_id = c.member_id
            assert await c.unsubscribe(5.0) == []
            assert cluster.share.groups["sg"].members == {} and cluster.share.sessions.describe() == []
            assert [e.details["type"] for e in events(cluster, Kind.SHARE_ACKNOWLEDGE)] == ["accept"]
            with pytest.raises(Exception, match="Consumer is not subscribed to any topics"):
                await c.poll(0)
            c.subscribe(["t"])
            await produce(cluster, [b"b"])
            got = await poll_until_records(c)
            assert [r.value for r in got] == [b"b"] and c.member_id != first_id
            assert list(cluster.share.groups["sg"].members) == [c.member_id]
