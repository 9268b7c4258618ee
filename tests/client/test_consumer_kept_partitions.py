"""A partition a member keeps through a rebalance keeps its position and goes on being fetched. A
KIP-848 reconciliation revokes and adds partitions one step at a time; a step that only revoked
once wiped the positions of every partition kept, and the member never fetched them again.
In virtual time."""

from broker_emu.runtime import open_cluster
from client.consumer.async_consumer import open_consumer
from tests.client.test_consumer_groups import connect_to, fill, poll_until
from tests.client.test_consumer_kip848 import BROKER, K848


async def test_a_kip848_member_reads_the_partition_it_kept_after_giving_one_up(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=BROKER) as cluster:
        async with open_consumer({**K848, "client.id": "first"}, connect=connect_to(cluster)) as first:
            first.subscribe(["t"])
            await poll_until([first], lambda: len(first.assignment()) == 2)
            async with open_consumer({**K848, "client.id": "second"}, connect=connect_to(cluster)) as second:
                second.subscribe(["t"])
                await poll_until([first, second], lambda: len(first.assignment()) == 1 == len(second.assignment()))
                (kept,) = first.assignment()
                await fill(cluster, "t", 2)
                got = await poll_until([first], lambda: True, each=5)
                assert [(r.partition, r.offset) for r in got[id(first)]] == [(kept.partition, 0)]
                assert await first.position(kept) == 1
