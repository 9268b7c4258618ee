"""A metadata round that asked no broker at all — its time was up before the first, as a poll's
last millisecond leaves it under load — fails with a retriable error, so the position reset a
poll runs ends in the timeout poll() swallows (Java's poll returns what it has when its timer
runs out). A plain KafkaError escaped poll() instead: found by `broker-emu chaos --broker kafka`
(its consumer's poll raised "no broker to ask for metadata" in seed 0 on a loaded machine)."""

import pytest
import trio

from broker_emu.runtime import open_cluster
from client.consumer.async_consumer import open_consumer
from client.consumer.deadlines import attempt_then_check
from client.consumer.records import TopicPartition
from client.errors import KafkaError, TimeoutException

BOOT = {"bootstrap.servers": "127.0.0.1:0", "auto.offset.reset": "earliest"}


async def test_a_round_out_of_time_is_retriable_and_a_poll_outlives_it(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async def connect(node, host, port):
            return cluster.connect(max(node, 0))

        async with open_consumer(BOOT, connect=connect) as c:
            c.assign([TopicPartition("t", 0)])
            with pytest.raises(KafkaError) as raised:
                await c.updater.refresh(deadline=trio.current_time())
            assert raised.value.retriable, raised.value
            # what a position reset in poll() makes of it: retried until its deadline, then the timeout poll swallows
            with pytest.raises(TimeoutException):
                await attempt_then_check(c.config, "position()", trio.current_time() + 0.2,
                                         lambda request_timeout: c.updater.refresh(deadline=trio.current_time()),
                                         lambda: "the partitions' leaders")
            assert await c.poll(1.0) == []
