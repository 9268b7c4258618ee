"""Replacing the whole broker set (broker_emu.broker_set): new brokers at new addresses take every
partition with its data, the old ones stop; the cluster's Metadata names only the new ones."""

import pytest
import trio

from broker_emu.broker_set import add_broker, replace_brokers
from broker_emu.runtime import open_cluster
from client.consumer.async_consumer import open_consumer
from client.producer.async_producer import open_producer
from tests.broker_emu.wire import WireClient, produce_body

METADATA = 3


async def test_replace_brokers_moves_every_partition_and_stops_the_old_ones(autojump_clock):
    async with open_cluster(3, topics=[("t", 2, 3)], listen=False,
                            config={"emu.replication.delay.ms": 200}) as cluster:
        start = trio.current_time()
        mapping = await replace_brokers(cluster)
        assert mapping == {0: 3, 1: 4, 2: 5}
        assert trio.current_time() - start >= 0.2   # the new replicas copied the logs at the replication's pace
        assert [b.id for b in cluster.live_brokers()] == [3, 4, 5]
        for p in cluster.all_partitions():
            assert sorted(p.replicas) == [3, 4, 5] and sorted(p.isr) == [3, 4, 5] and p.leader in (3, 4, 5)
        md = await WireClient(cluster.connect(4)).call(METADATA, 13, {"topics": None})
        assert sorted(b.node_id for b in md.brokers) == [3, 4, 5] and md.controller_id == 3
        with pytest.raises(OSError):
            cluster.connect(0)   # the old addresses refuse


async def test_add_broker_refuses_an_existing_id(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        with pytest.raises(ValueError, match="broker 0 already exists"):
            await add_broker(cluster, 0)


async def test_our_clients_keep_the_data_through_bootstrap_servers_after_the_replacement(autojump_clock):
    async with open_cluster(2, topics=[("t", 1, 2)], listen=False) as cluster:
        behind_bootstrap = [0]    # what bootstrap.servers (node -1) leads to: a DNS name, moved below

        async def connect(node, host, port):
            return cluster.connect(behind_bootstrap[0] if node < 0 else node)

        config = {"bootstrap.servers": "kafka.example:9092", "linger.ms": 0}
        async with open_producer(config, connect=connect) as p:
            assert (await (await p.send("t", b"old")).get()).offset == 0
            mapping = await replace_brokers(cluster)
            behind_bootstrap[0] = mapping[0]
            assert (await (await p.send("t", b"new")).get()).offset == 1
            assert {2, 3} <= set(p.net.broker_nodes())   # (the old ones are not forgotten: they refuse)
        async with open_consumer({"bootstrap.servers": "kafka.example:9092"}, connect=connect) as c:
            c.assign([("t", 0)])
            c.seek(("t", 0), 0)
            got = []
            with trio.move_on_after(5):
                while len(got) < 2:
                    got += [r.value for r in await c.poll(1.0)]
            assert got == [b"old", b"new"]


async def test_a_replacement_that_cannot_complete_says_so_and_leaves_the_old_brokers(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        await WireClient(cluster.connect(0)).call(0, 9, produce_body("t", 0, [b"a"], acks=1))
        cluster.set_replication(None, None, None, "stall")   # no follower ever copies anything
        with pytest.raises(TimeoutError, match="every reassignment complete; last seen 1 in progress .*t-0.*left running"):
            await replace_brokers(cluster, timeout_s=1.0)
        assert cluster.is_alive(0) and cluster.partition("t", 0).leader == 0
