"""The broker's record locks against our share consumer, in virtual time: a record held past
group.share.record.lock.duration.ms goes to another member with delivery count 2 exactly at the
lock's expiry on the cluster clock, and the first member's late acknowledgement is refused; RENEW
keeps it; the delivery count limit archives a poison record."""

import trio

from broker_emu.runtime import open_cluster
from client.errors import InvalidRecordStateError
from client.share.acknowledgements import AcknowledgeType
from client.share.consumer import open_share_consumer
from tests.client.share.helpers import BOOT, BROKER, Kind, connect_to, earliest, events, poll_until_records, produce

EXPLICIT = {**BOOT, "share.acknowledgement.mode": "explicit"}


async def test_a_record_held_past_its_lock_goes_to_another_member_at_the_lock_s_expiry(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a", b"b"])
        async with open_share_consumer({**BOOT, "client.id": "slow"}, connect=connect_to(cluster)) as slow, \
                open_share_consumer({**BOOT, "client.id": "other"}, connect=connect_to(cluster)) as other:
            slow.subscribe(["t"])
            first = await poll_until_records(slow)
            [acquired] = events(cluster, Kind.SHARE_ACQUIRE)
            assert [(r.offset, r.delivery_count) for r in first] == [(0, 1), (1, 1)]
            other.subscribe(["t"])          # slow now processes for longer than the lock
            again = await poll_until_records(other, rounds=60)
            [expired] = events(cluster, Kind.SHARE_LOCK_EXPIRED)
            assert [(r.offset, r.value, r.delivery_count) for r in again] == [(0, b"a", 2), (1, b"b", 2)]
            # exactly at the lock's deadline on the cluster clock, and the records were handed out then
            assert expired.t_ms == acquired.details["lock_deadline_ms"] == acquired.t_ms + 30000
            assert cluster.now_ms() == expired.t_ms
            assert events(cluster, Kind.SHARE_ACQUIRE)[-1].t_ms == expired.t_ms
            # slow's acknowledgement comes too late: the records are other's now
            results = await slow.commit_sync(5.0)
            assert list(results) == [("t", 0)] and isinstance(results[("t", 0)], InvalidRecordStateError)
            assert await other.commit_sync(5.0) == {("t", 0): None}


async def test_renew_keeps_the_record_and_its_lock_starts_over(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a"])
        async with open_share_consumer(EXPLICIT, connect=connect_to(cluster)) as keeper, \
                open_share_consumer({**BOOT, "client.id": "other"}, connect=connect_to(cluster)) as other:
            keeper.subscribe(["t"])
            [record] = await poll_until_records(keeper)
            t0 = cluster.now_ms()
            other.subscribe(["t"])
            async with trio.open_nursery() as nursery:
                got = []

                async def other_polls():
                    for _ in range(70):
                        got.extend(await other.poll(1.0))
                nursery.start_soon(other_polls)
                await trio.sleep(20)
                keeper.acknowledge(record, AcknowledgeType.RENEW)
                renewed = await keeper.poll(5.0)          # the same record again, its lock renewed
                assert [(r.offset, r.delivery_count) for r in renewed] == [(0, 1)]
                await trio.sleep(25)                      # past the first lock's 30 s, before the renewed one's
                keeper.acknowledge(renewed[0], AcknowledgeType.ACCEPT)
                assert await keeper.commit_sync(5.0) == {("t", 0): None}
            assert got == []                              # never redelivered
        [renew] = events(cluster, Kind.SHARE_RENEW)
        assert renew.t_ms == t0 + 20000 and renew.details["lock_deadline_ms"] == t0 + 50000
        assert events(cluster, Kind.SHARE_LOCK_EXPIRED) == []
        assert [e.details["offsets"] for e in events(cluster, Kind.SHARE_ACKNOWLEDGE)] == [[[0, 0]]]


async def test_commit_sync_sends_a_renew_at_once_without_waiting_for_the_next_poll(autojump_clock):
    """As Java's commitSync (ShareInFlightBatch.takeAcknowledgedRecords takes RENEW with the
    others): the renewal leaves with the commit, whose result names the partition; a member that
    goes on processing without polling keeps the record; the next poll hands it out again."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a"])
        async with open_share_consumer(EXPLICIT, connect=connect_to(cluster)) as keeper, \
                open_share_consumer({**BOOT, "client.id": "other"}, connect=connect_to(cluster)) as other:
            keeper.subscribe(["t"])
            [record] = await poll_until_records(keeper)
            t0 = cluster.now_ms()
            other.subscribe(["t"])
            got = []
            async with trio.open_nursery() as nursery:
                async def other_polls():
                    for _ in range(60):
                        got.extend(await other.poll(1.0))
                nursery.start_soon(other_polls)
                await trio.sleep(20)
                keeper.acknowledge(record, AcknowledgeType.RENEW)
                assert await keeper.commit_sync(5.0) == {("t", 0): None}
                [renew] = events(cluster, Kind.SHARE_RENEW)
                assert renew.t_ms == t0 + 20000 and renew.details["lock_deadline_ms"] == t0 + 50000
                await trio.sleep(25)                      # processing on, no poll: past the first lock's 30 s
                [again] = await keeper.poll(0.0)          # the renewed record, handed out again
                assert (again.offset, again.delivery_count) == (0, 1)
                keeper.acknowledge(again, AcknowledgeType.ACCEPT)
                assert await keeper.commit_sync(5.0) == {("t", 0): None}
            assert got == []                              # never redelivered
        assert events(cluster, Kind.SHARE_LOCK_EXPIRED) == []
        assert [e.details["offsets"] for e in events(cluster, Kind.SHARE_ACKNOWLEDGE)] == [[[0, 0]]]


async def test_the_delivery_count_limit_archives_a_poison_record(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False,
                            config={**BROKER, "group.share.delivery.count.limit": 3}) as cluster:
        earliest(cluster)
        await produce(cluster, [b"poison", b"fine"])
        async with open_share_consumer(EXPLICIT, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            counts = []
            for _ in range(3):
                got = await poll_until_records(c)
                for r in got:
                    counts.append((r.offset, r.delivery_count))
                    c.acknowledge(r, AcknowledgeType.RELEASE if r.value == b"poison" else AcknowledgeType.ACCEPT)
            assert await c.poll(2.0) == []                # the third release archived it
        assert counts == [(0, 1), (1, 1), (0, 2), (0, 3)]
        [archived] = events(cluster, Kind.SHARE_ARCHIVE)
        assert (archived.details["offsets"], archived.details["reason"]) == ([[0, 0]], "delivery_count_limit")
        assert cluster.share.partitions[("sg", "t", 0)].start_offset == 2


async def test_a_member_that_stops_polling_leaves_at_max_poll_interval_and_its_records_go_at_their_lock(autojump_clock):
    """The member leaves the group at max.poll.interval.ms (20 s); the partition leader does not
    hear of a leave at the group coordinator (Kafka 4.4: only the share session's final epoch or
    its connection releases), so its record goes to the other member when its lock runs out (30 s)."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a"])
        async with open_share_consumer({**BOOT, "client.id": "slow", "max.poll.interval.ms": 20000},
                                       connect=connect_to(cluster)) as slow, \
                open_share_consumer({**BOOT, "client.id": "other"}, connect=connect_to(cluster)) as other:
            slow.subscribe(["t"])
            await poll_until_records(slow)
            other.subscribe(["t"])
            again = await poll_until_records(other, rounds=40)
            assert [(r.value, r.delivery_count) for r in again] == [(b"a", 2)]
            assert events(cluster, Kind.SHARE_RELEASE) == []
            [expired] = events(cluster, Kind.SHARE_LOCK_EXPIRED)
            assert expired.t_ms == events(cluster, Kind.SHARE_ACQUIRE)[0].t_ms + 30000
            assert "consumer poll timeout has expired" in slow.member.left_reason
            assert list(cluster.share.groups["sg"].members) == [other.member_id]
            assert await slow.poll(3.0) == []              # joins again
            assert sorted(cluster.share.groups["sg"].members) == sorted([other.member_id, slow.member_id])


async def test_the_acknowledgement_commit_callback_hears_of_every_outcome(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=BROKER) as cluster:
        earliest(cluster)
        await produce(cluster, [b"a", b"b"])
        heard = []
        async with open_share_consumer({**BOOT, "client.id": "slow"}, connect=connect_to(cluster)) as slow, \
                open_share_consumer({**BOOT, "client.id": "other"}, connect=connect_to(cluster)) as other:
            slow.set_acknowledgement_commit_callback(lambda offsets, error: heard.append((offsets, error)))
            slow.subscribe(["t"])
            await poll_until_records(slow)
            other.subscribe(["t"])
            await poll_until_records(other, rounds=60)        # slow's locks ran out
            await slow.poll(0)                                # accepts slow's records: too late
            assert heard == []                                # not heard until a later call
            await trio.sleep(1)
            await slow.poll(0)
            [(offsets, error)] = heard
            assert offsets == {("t", 0): {0, 1}} and isinstance(error, InvalidRecordStateError)
            await produce(cluster, [b"c"])
            await poll_until_records(slow)
            assert await slow.commit_sync(5.0) == {("t", 0): None}
            assert heard[1:] == [({("t", 0): {2}}, None)]     # commit_sync's outcome, heard on return
