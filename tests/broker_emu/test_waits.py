"""Waiting for a state of the cluster (``cluster.wait_for``) in virtual time: each wait returns at
the instant the state is reached, on the cluster's clock, and a wait that times out says what it
waited for and what it saw last, after exactly its timeout."""

import pytest
import trio

from broker_emu.runtime import open_cluster, run_cluster_in_thread
from broker_emu.waits import WaitArgumentError, WaitTimeout
from client.consumer.async_consumer import open_consumer
from client.producer.async_producer import open_producer
from tests.broker_emu.wire import WireClient, produce_body
from tests.client.test_consumer_groups import GROUP, connect_to

PRODUCE = 0


async def produce_at(cluster, delay: float, broker: int = 0, values=(b"a",), acks: int = 1) -> None:
    await trio.sleep(delay)
    await WireClient(cluster.connect(broker)).call(PRODUCE, 9, produce_body("t", 0, list(values), acks=acks))


async def test_a_high_watermark_wait_returns_when_the_produce_lands(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster, trio.open_nursery() as nursery:
        start = trio.current_time()
        nursery.start_soon(produce_at, cluster, 2.0, 0, (b"a", b"b", b"c"))
        seen = await cluster.wait_for("partition", topic="t", partition=0, high_watermark=3, timeout=10)
        assert trio.current_time() - start == 2.0
        assert seen["high_watermark"] == 3 and seen["log_end_offset"] == 3 and seen["leader"] == 0


async def test_a_wait_that_times_out_says_what_it_saw_last_after_exactly_its_timeout(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        await produce_at(cluster, 0)
        start = trio.current_time()
        with pytest.raises(WaitTimeout) as caught:
            await cluster.wait_for("partition", topic="t", partition=0, high_watermark=5, timeout=3)
        assert trio.current_time() - start == 3.0
        assert str(caught.value) == "partition t-0: waited 3 s for high watermark >= 5; last seen high watermark 1"
        assert caught.value.seen["high_watermark"] == 1 and caught.value.waited_s == 3.0


async def test_isr_size_and_leader_waits_follow_a_stopped_broker(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster, trio.open_nursery() as nursery:
        p = cluster.partition("t", 0)
        old = p.leader
        start = trio.current_time()

        async def stop_later():
            await trio.sleep(1.5)
            await cluster.stop_broker(old)
        nursery.start_soon(stop_later)
        seen = await cluster.wait_for("partition", topic="t", partition=0, isr_size=2, timeout=10)
        assert trio.current_time() - start == 1.5 and old not in seen["isr"]
        new = seen["leader"]
        assert new != old and (await cluster.wait_for("partition", topic="t", partition=0, leader=new, timeout=0))["leader"] == new


async def test_group_state_and_member_count(autojump_clock):
    async with open_cluster(1, topics=[("t", 4, 1)], listen=False, config={"group.initial.rebalance.delay.ms": 0}) as cluster:
        async with open_consumer(GROUP, connect=connect_to(cluster)) as c1, open_consumer(GROUP, connect=connect_to(cluster)) as c2:
            c1.subscribe(["t"])
            c2.subscribe(["t"])
            async with trio.open_nursery() as nursery:
                for c in (c1, c2):
                    nursery.start_soon(poll_forever, c)
                seen = await cluster.wait_for("group", group="g", state="Stable", members=2, timeout=30)
                assert seen == {"group": "g", "state": "Stable", "members": 2}
                assert cluster.groups.groups["g"].state == "Stable"
                start = trio.current_time()
                with pytest.raises(WaitTimeout, match="^group g: waited 5 s for state Stable with 3 members; "
                                                      "last seen Stable with 2$"):
                    await cluster.wait_for("group", group="g", state="stable", members=3, timeout=5)
                assert trio.current_time() - start == 5.0
                nursery.cancel_scope.cancel()


async def poll_forever(consumer):
    while True:
        await consumer.poll(0.5)


async def test_no_such_group_yet_is_what_a_wait_reports(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        with pytest.raises(WaitTimeout, match="group nobody: waited 0.5 s for 1 members; last seen no such group yet"):
            await cluster.wait_for("group", group="nobody", members=1, timeout=0.5)


async def test_fault_hits_and_trace_events(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster, trio.open_nursery() as nursery:
        handle = cluster.faults.latency(api="Produce", ms=400)
        start = trio.current_time()
        nursery.start_soon(produce_at, cluster, 1.0)
        nursery.start_soon(produce_at, cluster, 2.0)
        seen = await cluster.wait_for("fault", id=handle.id, hits=2, timeout=10)
        assert trio.current_time() - start == 2.0 and seen["hits"] == 2   # decided on arrival, before the delay
        seen = await cluster.wait_for("trace", kind="send", api="Produce", count=2, timeout=10)
        assert trio.current_time() - start == 2.4 and seen["count"] == 2 and seen["last"]["api"] == "Produce"


async def test_open_connections(autojump_clock):
    async with open_cluster(2, listen=False) as cluster:
        assert (await cluster.wait_for("connections", count=0, timeout=0))["count"] == 0
        a, b = cluster.connect(0), cluster.connect(1)
        assert (await cluster.wait_for("connections", count=2, timeout=1))["count"] == 2
        assert (await cluster.wait_for("connections", count=1, broker=1, timeout=1))["count"] == 1
        await a.aclose()
        await cluster.wait_for("connections", count=1, timeout=1)
        await b.aclose()
        assert (await cluster.wait_for("connections", count=0, timeout=1)) == {"count": 0, "broker": None}


async def test_transaction_state(autojump_clock):
    boot = {"bootstrap.servers": "127.0.0.1:0", "transactional.id": "tx", "linger.ms": 5}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster, trio.open_nursery() as nursery:
        async def transact():
            async with open_producer(boot, connect=connect_to(cluster)) as p:
                await p.init_transactions()
                p.begin_transaction()
                await (await p.send("t", b"x", partition=0)).get()
                await trio.sleep(3)
                await p.commit_transaction()
        nursery.start_soon(transact)
        await cluster.wait_for("transaction", transactional_id="tx", state="Ongoing", timeout=10)
        started = trio.current_time()
        seen = await cluster.wait_for("transaction", transactional_id="tx", state="CompleteCommit", timeout=10)
        assert seen == {"transactional_id": "tx", "state": "CompleteCommit"}
        assert trio.current_time() - started >= 3.0


async def test_bad_waits_name_the_argument_and_suggest(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        with pytest.raises(WaitArgumentError, match="cannot wait for 'grup' \\(did you mean 'group'\\?\\)"):
            await cluster.wait_for("grup", group="g")
        with pytest.raises(WaitArgumentError, match="^state: unknown state 'Stabel' \\(did you mean 'Stable'\\?\\)"):
            await cluster.wait_for("group", group="g", state="Stabel")
        with pytest.raises(WaitArgumentError, match="high_watermak: not an argument .* \\(did you mean 'high_watermark'\\?\\)"):
            await cluster.wait_for("partition", topic="t", partition=0, high_watermak=1)
        with pytest.raises(WaitArgumentError, match="^timeout: "):
            await cluster.wait_for("connections", count=0, timeout=-1)
        with pytest.raises(WaitArgumentError, match="^kind: unknown kind 'conn_closed' \\(did you mean 'conn_close'\\?\\)"):
            await cluster.wait_for("trace", kind="conn_closed")


def test_the_blocking_twin_on_a_threaded_cluster():
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        handle = tc.faults.error("NOT_LEADER_OR_FOLLOWER", api="Metadata", count=1)
        assert tc.wait_for("connections", count=0, timeout=1) == {"count": 0, "broker": None}
        with pytest.raises(WaitTimeout, match=f"fault {handle.id}: waited 0.2 s for 1 hits; last seen 0 hits"):
            tc.wait_for("fault", id=handle.id, timeout=0.2)
        assert handle.hits == 0 and handle.clear() and not handle.active


async def test_the_http_wait_runs_on_the_cluster_clock_and_is_capped(autojump_clock):
    from broker_emu.control.http import HttpError, HttpRequest
    from broker_emu.control.routes import Routes

    def get(path: str, **query: str) -> HttpRequest:
        return HttpRequest("GET", path, query, {}, b"")

    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.control.wait.max.ms": 2000}) as cluster:
        routes = Routes(cluster)
        with pytest.raises(HttpError) as refused:
            await routes(get("/wait/connections", count="0", timeout_ms="2001"))
        assert refused.value.status == 400 and refused.value.field == "timeout_ms"
        start = trio.current_time()
        answer = await routes(get("/wait/partition/t/0", high_watermark="1", timeout_ms="2000"))
        assert answer.status == 408 and trio.current_time() - start == 2.0
        assert answer.body["seen"]["high_watermark"] == 0 and answer.body["waited_ms"] == 2000
        async with trio.open_nursery() as nursery:
            nursery.start_soon(produce_at, cluster, 0.75)
            start = trio.current_time()
            answer = await routes(get("/wait/partition/t/0", high_watermark="1", timeout_ms="2000"))
        assert answer.status == 200 and answer.body["waited_ms"] == 750 and trio.current_time() - start == 0.75
