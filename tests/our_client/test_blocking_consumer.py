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

        c._runner.run_sync(lambda: c._nursery.start_soon(_crash))
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
                # ignores its deadline (the lambda returns the coroutine _call awaits)
                c._call("stuck()", 0.3, lambda consumer, budget: trio.sleep_forever())  # noqa: ASYNC105
            assert 0.3 <= time.perf_counter() - start < 1.5


def test_the_reaper_sleeps_until_its_next_deadline():
    """Issue 14.3: the reaper polled every 10 ms; now it wakes only for an event that is due."""
    with run_cluster_in_thread(brokers=1) as tc, Consumer({"bootstrap.servers": tc.bootstrap}) as c:
        before = c._poll_counter
        time.sleep(0.3)
        assert c._poll_counter - before <= 1


FAST_GROUP = {"group.id": "bg", "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
              "heartbeat.interval.ms": 200, "client.id": "blocking"}


def poll_until(consumers, condition, seconds=20.0):
    records, deadline = [], time.time() + seconds
    while time.time() < deadline:
        for c in consumers:
            records += c.poll(0.2)
        if condition():
            return records
    raise AssertionError("not reached: " + ", ".join(str(c.assignment()) for c in consumers))


def test_blocking_consumers_share_a_group_and_take_over_on_close():
    with run_cluster_in_thread(brokers=1, topics=[("t", 2, 1)], config={"group.initial.rebalance.delay.ms": 0}) as tc:
        import client

        with client.Producer({"bootstrap.servers": tc.bootstrap}) as p:
            for i in range(4):
                p.send("t", b"v%d" % i, partition=i % 2).result(10)
        revoked = []
        a = Consumer({"bootstrap.servers": tc.bootstrap, **FAST_GROUP})
        a.subscribe(["t"], on_revoke=revoked.append)
        with Consumer({"bootstrap.servers": tc.bootstrap, **FAST_GROUP}) as b:
            b.subscribe(["t"])
            got = poll_until([a, b], lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1)
            assert sorted(a.assignment() + b.assignment()) == [("t", 0), ("t", 1)]
            got += poll_until([a, b], lambda: True)
            a.commit_sync(timeout=5)
            b.commit_sync(timeout=5)
        poll_until([a], lambda: len(a.assignment()) == 2)
        assert revoked  # the first assignment was taken back before the take-over
        a.close()
        assert {r.value for r in got} <= {b"v0", b"v1", b"v2", b"v3"}


def test_wakeup_from_another_thread_interrupts_poll():
    import threading

    from client.exceptions import WakeupException

    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc, \
            Consumer({"bootstrap.servers": tc.bootstrap, "auto.offset.reset": "earliest"}) as c:
        c.assign([("t", 0)])
        threading.Timer(0.3, c.wakeup).start()
        start = time.perf_counter()
        with pytest.raises(WakeupException):
            c.poll(20)
        assert time.perf_counter() - start < 5.0
