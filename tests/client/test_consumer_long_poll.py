"""A poll longer than max.poll.interval.ms, in virtual time: the application is waiting inside
poll, not stuck, so the member stays (each pass of Java's poll loop restarts the poll timer:
ClassicKafkaConsumer through ConsumerCoordinator.poll -> Heartbeat.poll, AsyncKafkaConsumer with a
PollEvent)."""


from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from client.consumer.async_consumer import open_consumer
from tests.client.test_consumer_groups import GROUP, connect_to, events, poll_until
from tests.client.test_consumer_kip848 import BROKER, K848

SHORT = {"max.poll.interval.ms": 5000}


async def test_a_classic_member_waiting_in_a_long_poll_stays_in_the_group(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        async with open_consumer({**GROUP, **SHORT, "client.id": "patient"}, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            await poll_until([c], lambda: len(c.assignment()) == 2)
            assert await c.poll(30) == []                  # six max.poll.interval.ms of waiting
            assert events(cluster, "recv", "LeaveGroup", "patient") == []
            assert len(c.assignment()) == 2
            assert len(events(cluster, "recv", "JoinGroup", "patient")) <= 2   # the first join only (KIP-394's two)


async def test_a_kip848_member_waiting_in_a_long_poll_stays_in_the_group(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=BROKER) as cluster:
        async with open_consumer({**K848, **SHORT, "client.id": "patient"}, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            await poll_until([c], lambda: len(c.assignment()) == 2)
            assert await c.poll(30) == []
            assert [e for e in events(cluster, Kind.GROUP_MEMBER_FENCED) if e.details["reason"] == "left"] == []
            assert len(c.assignment()) == 2
