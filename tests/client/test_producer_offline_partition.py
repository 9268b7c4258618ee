"""Our producer and a partition with no leader for a while (its only in-sync replica stopped,
so nobody may be elected; it leads again when it restarts, with the same leader epoch). Found by
``broker-emu chaos`` (seed 36): the sender asked for metadata but nothing woke it when the
answer named the leader again, so the batches waited for delivery.timeout.ms and failed."""

import trio

import client
from broker_emu.runtime import open_cluster

RETRY_BACKOFF_MAX_S = 1.0   # retry.backoff.max.ms: the metadata refresh backoff's ceiling


async def test_a_batch_for_an_offline_partition_goes_out_when_its_leader_restarts(autojump_clock):
    config = {"replica.lag.time.max.ms": 1000}
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config=config) as cluster:
        async def connect(node, host, port):
            return await cluster.open_connection(node if node >= 0 else -1 - node)

        p = cluster.partition("t", 0)
        producer_config = {"bootstrap.servers": "b0:1,b1:1,b2:1", "acks": "all", "request.timeout.ms": 5000}
        async with client.open_producer(producer_config, connect=connect) as producer:
            cluster.replication.stall("t")
            first = await (await producer.send("t", b"alone", partition=0)).get()
            assert first.offset == 0 and p.isr == [p.leader]      # the followers left the ISR after 1 s
            leader = p.leader
            await cluster.stop_broker(leader)                     # no in-sync replica to elect: offline
            future = await producer.send("t", b"waiting", partition=0)
            await trio.sleep(10)
            assert not future.done()
            cluster.replication.normal("t")
            await cluster.start_broker(leader)
            restarted = trio.current_time()
            meta = await future.get()
            assert meta.offset == 1 and p.leader == leader
            # one metadata refresh (at most its backoff) and one retry backoff, not delivery.timeout.ms
            assert trio.current_time() - restarted <= RETRY_BACKOFF_MAX_S + 0.2
