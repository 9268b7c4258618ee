"""The blocking share consumer over real loopback TCP (real time, short timeouts, generous
bounds): records and their acknowledgement, the deadlines of poll, commit_sync and close with a
black-holed ShareAcknowledge, wakeup, and the application's mistakes raised on its own thread."""

import threading
import time

import pytest

from broker_emu.runtime import run_cluster_in_thread
from client.errors import TimeoutException
from client.exceptions import WakeupException
from client.share.acknowledgements import AcknowledgeType, IllegalStateError
from client.share.blocking import ShareConsumer


def _prepare(tc, values):
    import client

    tc.call(lambda: tc.cluster.group_configs.overrides.setdefault("sg", {}).update({"share.auto.offset.reset": "earliest"}))
    with client.Producer({"bootstrap.servers": tc.bootstrap}) as p:
        for v in values:
            p.send("t", v, partition=0).result(10)


def _poll_until(c, seconds=10.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got = c.poll(0.5)
        if got:
            return got
    raise AssertionError("no records")


def test_records_acknowledgements_and_deadlines():
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        _prepare(tc, [b"a", b"b"])
        config = {"bootstrap.servers": tc.bootstrap, "group.id": "sg", "share.acknowledgement.mode": "explicit"}
        with ShareConsumer(config) as c:
            c.subscribe(["t"])
            got = _poll_until(c)
            assert [(r.value, r.delivery_count) for r in got] == [(b"a", 1), (b"b", 1)]
            assert c.acquisition_lock_timeout_ms() == 30000
            with pytest.raises(IllegalStateError, match="All records must be acknowledged"):
                c.poll(0)
            c.acknowledge(got[0], AcknowledgeType.ACCEPT)
            c.acknowledge(got[1], AcknowledgeType.RELEASE)
            assert c.commit_sync(5.0) == {("t", 0): None}
            again = _poll_until(c)
            assert [(r.value, r.delivery_count) for r in again] == [(b"b", 2)]
            c.acknowledge(again[0])
            tc.call(lambda: tc.cluster.faults.add({"match": {"api": "ShareAcknowledge"}, "action": "black_hole"}, 0))
            start = time.perf_counter()
            with pytest.raises(TimeoutException, match="commit_sync\\(\\) gave up after"):
                c.commit_sync(0.5)
            assert 0.45 <= time.perf_counter() - start < 2.5
            # the give-up closed the connection that opened the member's share session: the broker
            # released "b" then (Kafka's ShareSessionCache disconnect listener), so it is back at once
            start = time.perf_counter()
            assert [(r.value, r.delivery_count) for r in _poll_until(c)] == [(b"b", 3)]
            assert time.perf_counter() - start < 2.0



def test_close_with_a_black_holed_acknowledgement_keeps_its_timeout_and_says_what_was_pending():
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        _prepare(tc, [b"a", b"b"])
        c = ShareConsumer({"bootstrap.servers": tc.bootstrap, "group.id": "sg"})
        c.subscribe(["t"])
        _poll_until(c)
        tc.call(lambda: tc.cluster.faults.add({"match": {"api": "ShareAcknowledge"}, "action": "black_hole"}, 0))
        start = time.perf_counter()
        c.close(0.5)
        assert 0.45 <= time.perf_counter() - start < 2.5
        assert len(c.close_report) == 2, c.close_report
        assert "close() gave up after" in c.close_report[0] and "t-0 offsets 0..1" in c.close_report[0]
        assert "did not leave the share group 'sg'" in c.close_report[1]


def test_commit_async_and_commit_callbacks_run_on_the_application_thread():
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        _prepare(tc, [b"a"])
        with ShareConsumer({"bootstrap.servers": tc.bootstrap, "group.id": "sg"}) as c:
            heard = []
            c.set_acknowledgement_commit_callback(lambda offsets, error: heard.append(
                (threading.current_thread(), offsets, error)))
            c.subscribe(["t"])
            _poll_until(c)
            done = []
            c.commit_async(lambda results, error: done.append((threading.current_thread(), results, error)))
            end = time.monotonic() + 5
            while not done and time.monotonic() < end:
                c.poll(0.1)                          # the callback runs in a call of this thread
            assert done == [(threading.current_thread(), {("t", 0): None}, None)]
            c.poll(0)                                # the commit callback hears of it in the next call
            assert heard == [(threading.current_thread(), {("t", 0): {0}}, None)]


def test_wakeup_interrupts_a_poll_from_another_thread():
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        with ShareConsumer({"bootstrap.servers": tc.bootstrap, "group.id": "sg"}) as c:
            c.subscribe(["t"])
            threading.Timer(0.3, c.wakeup).start()
            start = time.perf_counter()
            with pytest.raises(WakeupException):
                c.poll(10.0)
            assert time.perf_counter() - start < 3.0


def test_share_only_settings_and_refusals():
    from client.config import ConfigException
    with pytest.raises(ConfigException, match="not supported for share consumer: enable.auto.commit"):
        ShareConsumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "sg", "enable.auto.commit": True})
    with pytest.raises(ConfigException, match="share.acknowledgement.mode"):
        ShareConsumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "sg", "share.acknowledgement.mode": "later"})
    with pytest.raises(ConfigException, match="valid group.id"):
        ShareConsumer({"bootstrap.servers": "127.0.0.1:1"})
