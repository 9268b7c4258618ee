"""Partitions assigned while the application waits inside poll: their positions are looked up in
that poll (auto.offset.reset where nothing is committed) and their records returned by it, as
Java's poll loop does (each pass runs updateAssignmentMetadataIfNeeded, then fetches), not only
at the next call. In virtual time."""

import trio

from broker_emu.runtime import open_cluster
from client.consumer.async_consumer import open_consumer
from tests.client.test_consumer_groups import GROUP, connect_to, fill, poll_until
from tests.client.test_consumer_kip848 import BROKER, K848


async def _hand_over(cluster, config):
    """``stays`` and ``leaves`` share t's two partitions, one record each; ``stays`` reads its own
    and commits, ``leaves`` reads nothing and closes, committing nothing; then ``stays`` waits in one long poll,
    during which the group gives it the other partition."""
    async with open_consumer({**config, "client.id": "stays"}, connect=connect_to(cluster)) as stays:
        stays.subscribe(["t"])
        async with open_consumer({**config, "client.id": "leaves", "enable.auto.commit": False},
                                 connect=connect_to(cluster)) as leaves:
            leaves.subscribe(["t"])
            await poll_until([stays, leaves], lambda: len(stays.assignment()) == 1 == len(leaves.assignment()))
            (theirs,) = leaves.assignment()
            await fill(cluster, "t", 2)
            mine = (await poll_until([stays], lambda: True, each=5))[id(stays)]
            await stays.commit_sync()   # an eager rebalance takes its own partition back too
        t0 = trio.current_time()
        later = await stays.poll(60)
        return mine, later, trio.current_time() - t0, theirs


async def test_a_classic_member_reads_a_partition_assigned_during_its_poll(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        mine, later, waited, theirs = await _hand_over(cluster, GROUP)
        assert [r.partition for r in mine] == [1 - theirs.partition]
        assert [r.partition for r in later] == [theirs.partition], later
        assert waited < 10, waited   # the rebalance's time, not the poll's 60 s


async def test_a_kip848_member_reads_a_partition_assigned_during_its_poll(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=BROKER) as cluster:
        mine, later, waited, theirs = await _hand_over(cluster, K848)
        assert [r.partition for r in mine] == [1 - theirs.partition]
        assert [r.partition for r in later] == [theirs.partition], later
        assert waited < 10, waited
