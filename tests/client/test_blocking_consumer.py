"""The blocking consumer over real loopback TCP (real time, short timeouts)."""

import threading
import time

import pytest
import trio

from broker_emu.runtime import run_cluster_in_thread
from client.consumer.blocking import Consumer
from client.errors import TimeoutException
from client.exceptions import NetworkThreadDied


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
    """The reaper polled every 10 ms; now it wakes only for an event that is due."""
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


K848_BROKER = {"group.consumer.heartbeat.interval.ms": 200, "group.consumer.min.heartbeat.interval.ms": 100,
               "group.consumer.session.timeout.ms": 3000, "group.consumer.min.session.timeout.ms": 1000,
               "group.consumer.assignment.interval.ms": 0}
K848_MEMBER = {"group.id": "k", "group.protocol": "consumer", "auto.offset.reset": "earliest",
               "max.poll.interval.ms": 10_000}


class _App:
    """Which thread ran each callback, and in which of the application's calls."""

    def __init__(self):
        self.inside, self.seen = None, []

    def call(self, name, fn, *args):
        self.inside = name
        try:
            return fn(*args)
        finally:
            self.inside = None

    def callback(self, kind, slow_s=0.0):
        def run(tps):
            self.seen.append((kind, sorted(tps), threading.get_ident(), self.inside))
            if tps and slow_s:
                time.sleep(slow_s)
        return run


@pytest.mark.parametrize("protocol", ["consumer", "classic"])
def test_rebalance_callbacks_run_on_the_application_thread_inside_poll_and_close(protocol):
    """As Java's consumers: the callbacks run on the thread that polls, inside poll (and the last
    revocation inside close), never on the network thread — KIP-848 and classic alike."""
    member = K848_MEMBER if protocol == "consumer" else {**FAST_GROUP, "group.id": "k"}
    with run_cluster_in_thread(brokers=1, topics=[("t", 2, 1)],
                               config={**K848_BROKER, "group.initial.rebalance.delay.ms": 0}) as tc:
        app = _App()
        a = Consumer({"bootstrap.servers": tc.bootstrap, **member, "client.id": "a"})
        a.subscribe(["t"], on_assign=app.callback("assign"), on_revoke=app.callback("revoke"))
        with Consumer({"bootstrap.servers": tc.bootstrap, **member, "client.id": "b"}) as b:
            deadline = time.time() + 20
            while len(a.assignment()) != 2 and time.time() < deadline:
                app.call("poll", a.poll, 0.1)
            b.subscribe(["t"])
            while not (len(a.assignment()) == 1 and len(b.assignment()) == 1) and time.time() < deadline:
                app.call("poll", a.poll, 0.1)
                b.poll(0.1)
        while len(a.assignment()) != 2 and time.time() < deadline:   # b left: a takes its partition back
            app.call("poll", a.poll, 0.1)
        app.call("close", a.close, 5)
    me = threading.get_ident()
    incremental = [("assign", 2), ("revoke", 1), ("assign", 1), ("revoke", 2)]
    eager = [("assign", 2), ("revoke", 2), ("assign", 1), ("revoke", 1), ("assign", 2), ("revoke", 2)]
    assert [(kind, len(tps)) for kind, tps, _, _ in app.seen if tps] == \
        (incremental if protocol == "consumer" else eager), app.seen
    assert {(thread, inside) for _, tps, thread, inside in app.seen[:-1]} == {(me, "poll")}, app.seen
    assert app.seen[-1][0] == "revoke" and app.seen[-1][2:] == (me, "close")


def test_a_slow_kip848_callback_keeps_the_heartbeats_and_an_error_in_one_is_raised_from_poll():
    """a's on_revoke takes 1.5 s on the application thread, inside poll; the network thread
    heartbeats meanwhile at the broker's 200 ms. An exception from a callback comes out of the
    poll that ran it, and the group carries on."""
    with run_cluster_in_thread(brokers=1, topics=[("t", 2, 1)], config=K848_BROKER) as tc:
        app = _App()
        a = Consumer({"bootstrap.servers": tc.bootstrap, **K848_MEMBER, "client.id": "a"})
        a.subscribe(["t"], on_revoke=app.callback("revoke", slow_s=1.5))
        with Consumer({"bootstrap.servers": tc.bootstrap, **K848_MEMBER, "client.id": "b"}) as b:
            poll_until([a], lambda: len(a.assignment()) == 2)
            b.subscribe(["t"], on_assign=_raise)
            with pytest.raises(RuntimeError, match="the application's own error"):
                poll_until([a, b], lambda: False, seconds=10)
            poll_until([a, b], lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1)
        a.close(5)
        trace = tc.call(lambda: list(tc.cluster.trace.events))
    assert [(kind, len(tps), thread) for kind, tps, thread, _ in app.seen if tps][:1] == \
        [("revoke", 1, threading.get_ident())]   # on this thread, inside a poll
    started = next(e.t_ms for e in trace if e.kind == "group_member_epoch" and e.details["state"] == "unrevoked_partitions")
    beats = [e.t_ms for e in trace if e.kind == "recv" and e.api == "ConsumerGroupHeartbeat" and e.client_id == "a"
             and started <= e.t_ms <= started + 1500]
    assert len(beats) >= 5 and max(b - a for a, b in zip(beats, beats[1:])) < 400, beats
    assert not [e for e in trace if e.kind == "group_member_fenced" and e.details["reason"] != "left"]


def _raise(tps):
    if tps:
        raise RuntimeError("the application's own error")


def test_an_error_in_the_last_revocation_comes_out_of_close_once_closed():
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)], config=K848_BROKER) as tc:
        c = Consumer({"bootstrap.servers": tc.bootstrap, **K848_MEMBER})
        c.subscribe(["t"], on_revoke=_raise)
        poll_until([c], lambda: bool(c.assignment()))
        with pytest.raises(RuntimeError, match="the application's own error"):
            c.close(5)
        with pytest.raises(NetworkThreadDied):
            c.poll(0)
        left = tc.call(lambda: [e.details["reason"] for e in tc.cluster.trace.events if e.kind == "group_member_fenced"])
        assert left == ["left"]   # the group carried on as if the callback had returned
