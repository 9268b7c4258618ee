"""Two fetches of one partition from the same offset, both answered before the application
polls again: one to the old leader, still in flight when the leader moved, and one to the new
leader. Found by `broker-emu chaos --broker kafka` (its seed 0 on Apache Kafka: a poll returned
one record twice). The later answer is stale and must be dropped, as Java's FetchCollector drops
a completed fetch whose offset is no longer the partition's position ("Discarding stale fetch
response"). Virtual time, in-memory connections."""

import trio

from broker_emu.runtime import open_cluster
from client.consumer.async_consumer import open_consumer
from client.consumer.records import TopicPartition
from tests.broker_emu.wire import WireClient, produce_body

CONFIG = {"bootstrap.servers": "127.0.0.1:0", "auto.offset.reset": "earliest", "fetch.max.wait.ms": 10,
          "request.timeout.ms": 10_000}
TPS = [TopicPartition("t", 0), TopicPartition("t", 1)]


def delay_fetches(cluster, broker: int, ms: int) -> None:
    cluster.faults.add({"match": {"broker": broker, "api": "Fetch"}, "action": {"type": "delay_response", "ms": ms}},
                       cluster.now_ms())


async def test_a_second_answer_from_the_same_offset_is_dropped(autojump_clock):
    async with open_cluster(3, topics=[("t", 2, 3)], listen=False) as cluster:
        old, new = cluster.partition("t", 0).leader, cluster.partition("t", 1).leader
        if old == new:
            new = next(b for b in sorted(cluster.brokers) if b != old)
            cluster.move_leader("t", 1, new)
        answer = await WireClient(cluster.connect(old)).call(0, 9, produce_body("t", 0, [b"v0", b"v1"], acks=-1))
        assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0

        async def connect(node, host, port):
            return cluster.connect(max(node, 0))

        delay_fetches(cluster, old, 2000)   # the old leader's answer is still on its way when the new one is asked
        async with open_consumer(CONFIG, connect=connect) as c:
            c.assign(TPS)
            start = trio.current_time()
            assert await c.poll(0.3) == []      # fetches: t-0 to the old leader (answered at ~2 s), t-1 to the other
            await trio.sleep(0.1)               # the other broker's last fetch answered: it is the least loaded
            delay_fetches(cluster, new, 1500)
            cluster.move_leader("t", 0, new)
            # a metadata refresh, as any failed request asks for one (a disconnect, NOT_LEADER_OR_FOLLOWER)
            await c.updater.refresh(deadline=trio.current_time() + 5)
            await trio.sleep_until(start + 1.0)
            assert await c.poll(0.1) == []      # the metadata names the new leader: t-0 asked there too (~2.5 s)
            await trio.sleep_until(start + 4.0)   # both answers are in, and nobody drained the first
            got = []
            with trio.move_on_after(5):
                while len(got) < 2:
                    got += [(r.partition, r.offset, r.value) for r in await c.poll(0.5)]
            got += [(r.partition, r.offset, r.value) for r in await c.poll(0.5)]
            assert got == [(0, 0, b"v0"), (0, 1, b"v1")]
