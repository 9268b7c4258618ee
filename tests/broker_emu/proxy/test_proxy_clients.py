"""Real clients through the proxy: confluent-kafka and our own client produce and consume, and
every connection they make goes to a proxy port (the upstream only ever sees the proxy's
connections: one per client connection, plus the proxy's discovery at start)."""

from __future__ import annotations

import time

import pytest

import client
from client.consumer.blocking import Consumer
from tests.broker_emu.proxy.conftest import events

pytestmark = pytest.mark.realclient


def _only_proxy_connections_reached_the_upstream(upstream, proxy) -> None:
    time.sleep(0.2)   # let both sides trace the closes
    proxied = len(events(proxy, "conn_open"))
    reached = len(events(upstream, "conn_open"))
    assert proxied > 0
    assert reached == proxied + 1, f"{reached} connections reached the upstream, {proxied} went through the proxy"


def test_confluent_kafka_produces_and_consumes_through_the_proxy(upstream, proxy):
    ck = pytest.importorskip("confluent_kafka")
    producer = ck.Producer({"bootstrap.servers": proxy.bootstrap, "acks": "all", "linger.ms": 1})
    reports = []
    for i in range(30):
        producer.produce("t", b"v%d" % i, partition=i % 3, on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(20) == 0
    assert reports == [None] * 30
    consumer = ck.Consumer({"bootstrap.servers": proxy.bootstrap, "group.id": "g", "auto.offset.reset": "earliest",
                            "enable.auto.commit": False})
    consumer.subscribe(["t"])
    got: list[bytes] = []
    deadline = time.time() + 30
    while len(got) < 30 and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    del producer
    assert sorted(got) == sorted(b"v%d" % i for i in range(30))
    apis = {e.api for e in events(proxy, "recv")}
    assert {"Produce", "Fetch", "JoinGroup", "SyncGroup", "FindCoordinator", "Metadata"} <= apis
    assert {e.broker for e in events(proxy, "recv")} == {0, 1, 2}
    _only_proxy_connections_reached_the_upstream(upstream, proxy)


def test_our_client_produces_and_consumes_through_the_proxy(upstream, proxy):
    with client.Producer({"bootstrap.servers": proxy.bootstrap, "linger.ms": 1}) as p:
        futures = [p.send("t", b"ours-%d" % i, partition=i % 3) for i in range(9)]
        assert p.flush(10) == 0
        assert sorted(f.result().partition for f in futures) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    with Consumer({"bootstrap.servers": proxy.bootstrap, "group.id": "ours", "auto.offset.reset": "earliest"}) as c:
        c.assign([("t", 0), ("t", 1), ("t", 2)])
        got: list[bytes] = []
        deadline = time.time() + 15
        while len(got) < 9 and time.time() < deadline:
            got += [r.value for r in c.poll(0.5)]
    assert sorted(got) == sorted(b"ours-%d" % i for i in range(9))
    _only_proxy_connections_reached_the_upstream(upstream, proxy)
