"""The blocking consumer over real loopback TCP (real time, short timeouts)."""

import time

import pytest
import trio

from broker_emu import run_cluster_in_thread
from client.blocking import NetworkThreadDied
from client.blocking_consumer import Consumer
from client.errors import TimeoutException


def test_poll_committed_and_deadlines():
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        import client

        with client.Producer({"bootstrap.servers": tc.bootstrap}) as p:
            p.send("t", b"hello", partition=0).result(10)
        with Consumer({"bootstrap.servers": tc.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"}) as c:
            c.assign([("t", 0)])
            records = []
            deadline = time.time() + 10
            while not records and time.time() < deadline:
                records = c.poll(0.5)
            assert [r.value for r in records] == [b"hello"]
            c.commit_sync({("t", 0): 1}, timeout=5)
            assert c.committed([("t", 0)], timeout=5) == {("t", 0): 1}
            start = time.perf_counter()
            assert c.poll(0.3) == []
            assert 0.25 <= time.perf_counter() - start < 1.5
            tc.call(lambda: tc.cluster.faults.add({"match": {"api": "OffsetFetch"}, "action": "black_hole"}, 0))
            start = time.perf_counter()
            with pytest.raises(TimeoutException, match="committed\\(\\) gave up after"):
                c.committed([("t", 0)], timeout=0.5)
            assert 0.45 <= time.perf_counter() - start < 2.0


def test_a_dead_network_thread_fails_calls_promptly():
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        c = Consumer({"bootstrap.servers": tc.bootstrap, "group.id": "g"})
        tc.call(lambda: tc.cluster.faults.add({"match": {"api": "OffsetFetch"}, "action": "black_hole"}, 0))

        trio.from_thread.run_sync(lambda: c._nursery.start_soon(_crash), trio_token=c._token)
        start = time.perf_counter()
        with pytest.raises(NetworkThreadDied):
            c.committed([("t", 0)], timeout=30)       # would wait 30 s without the watchdog
        assert time.perf_counter() - start < 2.0
        c.close()


async def _crash():
    raise RuntimeError("simulated crash of the network thread")


def test_the_reaper_completes_an_event_that_outlives_its_deadline():
    with run_cluster_in_thread(brokers=1) as tc:
        with Consumer({"bootstrap.servers": tc.bootstrap}) as c:
            start = time.perf_counter()
            with pytest.raises(TimeoutException, match="expired in the reaper"):
                c._call("stuck()", 0.3, lambda consumer, budget: trio.sleep_forever())  # ignores its deadline
            assert 0.3 <= time.perf_counter() - start < 1.5
