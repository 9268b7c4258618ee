"""The rest of the consumer API (async face, virtual time): seeks to the ends, pause/resume,
metadata calls, wakeup, client_instance_id, commit_async."""

import pytest
import trio

from broker_emu.runtime import open_cluster
from client.consumer.async_consumer import open_consumer
from client.consumer.records import TopicPartition
from client.errors import TimeoutException
from client.exceptions import WakeupException
from tests.broker_emu.wire import WireClient, produce_body

BOOT = {"bootstrap.servers": "127.0.0.1:0", "auto.offset.reset": "earliest"}
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def connect_to(cluster):
    async def connect(node, host, port):
        return cluster.connect(max(node, 0))
    return connect


async def produce(cluster, partition, values):
    await WireClient(cluster.connect(0)).call(0, 9, produce_body("t", partition, values, acks=1))


async def drain(c, want, rounds=20):
    got = []
    for _ in range(rounds):
        got += await c.poll(0.5)
        if len(got) >= want:
            break
    return got


async def test_seek_to_beginning_and_end_are_resolved_at_the_next_poll(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        await produce(cluster, 0, [b"a", b"b", b"c"])
        async with open_consumer(BOOT, connect=connect_to(cluster)) as c:
            c.assign([T0])
            assert [r.value for r in await drain(c, 3)] == [b"a", b"b", b"c"]
            c.seek_to_beginning([T0])
            assert [r.offset for r in await drain(c, 3)] == [0, 1, 2]
            c.seek_to_end()
            assert await c.position(T0, timeout=5) == 3
            await produce(cluster, 0, [b"d"])
            assert [r.value for r in await drain(c, 1)] == [b"d"]
            with pytest.raises(Exception, match="not assigned"):
                c.seek_to_end([TopicPartition("t", 9)])


async def test_paused_partitions_are_neither_fetched_nor_returned_until_resumed(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        await produce(cluster, 0, [b"p0"])
        await produce(cluster, 1, [b"p1"])
        async with open_consumer(BOOT, connect=connect_to(cluster)) as c:
            c.assign([T0, T1])
            c.pause([T1])
            got = await drain(c, 2, rounds=4)
            assert [(r.partition, r.value) for r in got] == [(0, b"p0")]
            c.resume([T1])
            assert [(r.partition, r.value) for r in await drain(c, 1)] == [(1, b"p1")]


async def test_list_topics_and_partitions_for(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1), ("u", 3, 1)], listen=False) as cluster:
        async with open_consumer(BOOT, connect=connect_to(cluster)) as c:
            topics = await c.list_topics(timeout=5)
            assert (topics["t"], topics["u"]) == ([0, 1], [0, 1, 2])
            assert await c.partitions_for("u", timeout=5) == [0, 1, 2]
            cluster.faults.add({"match": {"api": "Metadata"}, "action": "black_hole"}, cluster.now_ms())
            start = trio.current_time()
            with pytest.raises(TimeoutException, match="partitions_for"):
                await c.partitions_for("u", timeout=2)
            assert trio.current_time() - start == 2.0


async def test_wakeup_interrupts_a_waiting_poll_at_once(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_consumer(BOOT, connect=connect_to(cluster)) as c:
            c.assign([T0])

            async def wake_later():
                await trio.sleep(1.5)
                c.wakeup()

            start = trio.current_time()
            async with trio.open_nursery() as n:
                n.start_soon(wake_later)
                with pytest.raises(WakeupException):
                    await c.poll(30)
            assert trio.current_time() - start == 1.5
            assert await c.poll(0.5) == []   # the wakeup is consumed: the next poll is normal


async def test_client_instance_id_comes_from_the_cluster(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.telemetry": True}) as cluster:
        async with open_consumer(BOOT, connect=connect_to(cluster)) as c:
            first = await c.client_instance_id(timeout=5)
            assert first.int != 0


async def test_commit_async_reports_through_its_callback(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_consumer({**BOOT, "group.id": "g"}, connect=connect_to(cluster)) as c:
            c.assign([T0])
            done = trio.Event()
            seen = []
            c.commit_async({T0: 7}, lambda err, offsets: (seen.append((err, offsets)), done.set()))
            await done.wait()
            assert seen == [(None, {T0: 7})]
            assert await c.committed([T0], timeout=5) == {T0: 7}
