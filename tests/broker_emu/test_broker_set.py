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


async def test_the_front_door_leads_to_broker_0_then_moves_with_the_cluster(autojump_clock):
    from broker_emu.broker_set import connect_front_door, move_cluster_behind_bootstrap, open_front_door

    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        door = open_front_door(cluster, 0)
        assert door.port == 0 and cluster.front_door is door   # in memory: no TCP port
        # a rule for the brokers' own addresses spares the front door, one for the front door spares them
        cluster.faults.add({"match": {"api": "Metadata", "bootstrap": False}, "action": {"type": "no_brokers"}}, 0)
        md = await WireClient(connect_front_door(cluster)).call(METADATA, 13, {"topics": None})
        assert sorted(b.node_id for b in md.brokers) == [0, 1, 2]
        direct = await WireClient(cluster.connect(0)).call(METADATA, 13, {"topics": None})
        assert direct.brokers == []
        opened = [e for e in cluster.trace.events if e.kind == "conn_open"]
        assert [(e.broker, e.details.get("via")) for e in opened] == [(0, "bootstrap"), (0, None)]
        cluster.faults.clear()
        start = trio.current_time()
        mapping = await move_cluster_behind_bootstrap(cluster)
        [moved] = [e for e in cluster.trace.events if e.kind == "bootstrap_moved"]
        stops = [e for e in cluster.trace.events if e.kind == "broker_stop"]
        # moved to broker 0's replacement once the new brokers held every partition, before the old ones stopped
        assert door.target == mapping[0] == 3 and moved.broker == 3 and moved.t_ms <= min(e.t_ms for e in stops)
        assert door.moves == [(moved.t_ms, 3)] and trio.current_time() >= start
        md = await WireClient(connect_front_door(cluster)).call(METADATA, 13, {"topics": None})
        assert sorted(b.node_id for b in md.brokers) == [3, 4, 5]


async def test_a_front_door_to_a_stopped_broker_refuses_and_bad_calls_say_why(autojump_clock):
    from broker_emu.broker_set import connect_front_door, move_front_door, open_front_door

    async with open_cluster(2, listen=False) as cluster:
        with pytest.raises(RuntimeError, match="no front door"):
            connect_front_door(cluster)
        with pytest.raises(ValueError, match="no broker 7"):
            open_front_door(cluster, 7)
        open_front_door(cluster, 1)
        with pytest.raises(ValueError, match="already has a front door"):
            open_front_door(cluster, 0)
        with pytest.raises(ValueError, match="no broker 9"):
            move_front_door(cluster, 9)
        await cluster.stop_broker(1)
        with pytest.raises(OSError, match="leads to broker 1, which is stopped"):
            connect_front_door(cluster)
        move_front_door(cluster, 0)
        md = await WireClient(connect_front_door(cluster)).call(METADATA, 13, {"topics": None})
        assert [b.node_id for b in md.brokers] == [0]


async def test_the_front_door_listens_on_tcp_of_its_own():
    from broker_emu.broker_set import open_front_door

    async with open_cluster(2) as cluster:
        door = open_front_door(cluster, 1)
        assert door.port not in (0, cluster.brokers[0].port, cluster.brokers[1].port)
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream(door.host, door.port)
            md = await WireClient(stream).call(METADATA, 13, {"topics": None})
            await stream.aclose()
        assert sorted(b.node_id for b in md.brokers) == [0, 1]
        [opened] = [e for e in cluster.trace.events if e.kind == "conn_open"]
        assert opened.broker == 1 and opened.details == {"via": "bootstrap"}
