"""Named faults and waits on the proxy: it runs the emulator's fault engine, so
``proxy.faults.latency(...)`` makes the same rule, with the same trace and counters, in front
of a cluster. Our client, real time: bounds are generous."""

from __future__ import annotations

import time

import pytest

import client
from broker_emu.waits import WaitTimeout
from client.errors import KafkaError
from tests.broker_emu.proxy.conftest import events


def test_a_named_latency_on_the_proxy_holds_a_produce_and_counts_it(proxy):
    with client.Producer({"bootstrap.servers": proxy.bootstrap, "acks": 1, "linger.ms": 0}) as p:
        p.send("t", b"warm-up", partition=0).result(10)
        latency = proxy.faults.latency(api="Produce", ms=500, count=1)
        start = time.perf_counter()
        p.send("t", b"held", partition=0).result(10)
        took = time.perf_counter() - start
        p.send("t", b"not held", partition=0).result(10)
    assert 0.49 <= took < 5.0
    assert latency.hits == 1
    assert proxy.wait_for("fault", id=latency.id, hits=1, timeout=0)["hits"] == 1
    applied = [e for e in events(proxy, "fault_applied")]
    assert [(e.api, e.details) for e in applied] == [
        ("Produce", {"rule": latency.id, "action": {"type": "delay_request", "ms": 500.0}})]
    rule = proxy.call(lambda: proxy.cluster.faults.rules[latency.id].to_dict())
    assert rule["name"] == "latency" and rule["times"] == 1 and rule["applied"] == 1


def test_a_named_timeout_on_the_proxy_closes_the_connection_after_its_ms(proxy):
    timeout = proxy.faults.timeout(api="Produce", ms=300)
    with client.Producer({"bootstrap.servers": proxy.bootstrap, "acks": 1, "linger.ms": 0, "retries": 0,
                          "request.timeout.ms": 5000, "delivery.timeout.ms": 8000}) as p:
        with pytest.raises(KafkaError):
            p.send("t", b"x", partition=0).result(15)
    proxy.wait_for("trace", kind="conn_close", timeout=5)
    applied = [e for e in events(proxy, "fault_applied") if e.details["rule"] == timeout.id][0]
    close = [e for e in events(proxy, "conn_close") if e.conn == applied.conn][0]
    assert close.details["closed_by"] == "broker" and "black_hole" in close.details["reason"]
    assert 300 <= close.t_ms - applied.t_ms < 2000
    assert timeout.hits >= 1 and timeout.clear()
    with pytest.raises(WaitTimeout, match="^group g: "):   # the proxy has no groups of its own
        proxy.wait_for("group", group="g", members=1, timeout=0.1)
