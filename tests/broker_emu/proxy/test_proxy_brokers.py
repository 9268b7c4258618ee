"""The proxy's brokers follow the upstream's: a broker named later gets a listener of its own,
an upstream broker that stops closes the connections through the proxy to it (``closed_by``
broker), and a client keeps producing through the proxy while leadership moves upstream."""

from __future__ import annotations

import time

import pytest

from broker_emu.proxy.upstream import Node
from client.protocol.codec import decode_response, encode_request
from tests.broker_emu.proxy.conftest import events, ports
from tests.broker_emu.proxy.wire import connect, read_frame, roundtrip

pytestmark = pytest.mark.realclient


def _metadata(s) -> dict:
    s.sendall(encode_request(3, 12, 1, "brokers-test", {"topics": None}))
    answer = read_frame(s)
    assert answer is not None
    return decode_response(3, 12, answer)[1]


def test_a_broker_learnt_later_gets_its_own_listener(upstream, proxy):
    host, port = upstream.bootstrap.split(",")[0].rsplit(":", 1)
    proxy.acall(proxy.cluster.learn, [Node(7, host, int(port))])
    assert len(ports(proxy.bootstrap)) == 4
    answer = roundtrip(proxy.bootstrap, encode_request(3, 12, 5, "late", {"topics": None}), index=3)
    assert answer is not None and decode_response(3, 12, answer)[0] == 5
    assert {e.broker for e in events(proxy, "recv")} == {7}
    assert 7 in proxy.call(proxy.cluster.broker_ids)


def test_an_upstream_broker_that_stops_closes_the_connections_through_the_proxy(upstream, proxy):
    with connect(proxy.bootstrap, 1) as s:
        assert len(_metadata(s)["brokers"]) == 3
        upstream.acall(upstream.cluster.stop_broker, 1)
        assert read_frame(s) is None
    time.sleep(0.1)
    close = [e for e in events(proxy, "conn_close") if e.broker == 1][-1]
    assert close.details["closed_by"] == "broker" and "upstream" in close.details["reason"]
    with connect(proxy.bootstrap, 1) as s:      # accepted, then closed: the upstream refuses
        assert read_frame(s) is None
    close = [e for e in events(proxy, "conn_close") if e.broker == 1][-1]
    assert "cannot connect to upstream" in close.details["reason"]
    with connect(proxy.bootstrap, 0) as s:
        assert sorted(b["node_id"] for b in _metadata(s)["brokers"]) == [0, 2]


def test_producing_through_the_proxy_survives_an_upstream_leader_stop(upstream, proxy):
    ck = pytest.importorskip("confluent_kafka")
    producer = ck.Producer({"bootstrap.servers": proxy.bootstrap, "acks": "all", "linger.ms": 1,
                            "request.timeout.ms": 2000, "message.timeout.ms": 20000, "retry.backoff.ms": 50})
    reports: list = []
    leader = upstream.call(lambda: upstream.cluster.partition("t", 0).leader)
    for i in range(20):
        if i == 10:
            producer.flush(10)
            upstream.acall(upstream.cluster.stop_broker, leader)
        producer.produce("t", b"m%d" % i, partition=0, on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(30) == 0
    assert reports == [None] * 20
    assert upstream.call(lambda: upstream.cluster.partition("t", 0).leader) != leader
    produced_on = {e.broker for e in events(proxy, "send") if e.api == "Produce" and not e.details.get("errors")}
    assert len(produced_on) == 2


def test_the_stop_broker_fault_stops_the_proxys_listener_not_the_upstream_broker(upstream, proxy):
    import socket

    from tests.broker_emu.proxy.conftest import add_fault

    add_fault(proxy, {"match": {"broker": 2, "api": "Metadata"}, "action": {"type": "stop_broker", "ms": 0}})
    with connect(proxy.bootstrap, 2) as s:
        s.sendall(encode_request(3, 12, 1, "stop-test", {"topics": None}))
        assert read_frame(s) is None
    port = int(proxy.bootstrap.split(",")[2].rsplit(":", 1)[1])
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    assert [b["alive"] for b in proxy.call(proxy.cluster.describe)["brokers"]] == [True, True, False]
    assert upstream.call(lambda: upstream.cluster.is_alive(2))
    assert [e.broker for e in events(proxy, "broker_stop")] == [2]
    proxy.call(proxy.cluster.faults.clear)
    proxy.acall(proxy.cluster.start_broker, 2)
    with connect(proxy.bootstrap, 2) as s:     # the same port again
        assert len(_metadata(s)["brokers"]) == 3


def test_a_delayed_stop_broker_fault_stops_the_proxys_listener_after_its_delay(upstream, proxy):
    """``stop_broker`` with ``ms`` > 0: the request goes on and the broker stops under it later
    (``Proxy.stop_broker_later``, as the cluster does); before, the proxy had no such method."""
    from tests.broker_emu.proxy.conftest import add_fault

    add_fault(proxy, {"match": {"broker": 1, "api": "Metadata"}, "action": {"type": "stop_broker", "ms": 200}})
    with connect(proxy.bootstrap, 1) as s:
        assert len(_metadata(s)["brokers"]) == 3      # answered: the stop comes after
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not events(proxy, "broker_stop"):
            time.sleep(0.05)
    assert [e.broker for e in events(proxy, "broker_stop")] == [1]
    assert [b["alive"] for b in proxy.call(proxy.cluster.describe)["brokers"]] == [True, False, True]
    assert upstream.call(lambda: upstream.cluster.is_alive(1))
    proxy.call(proxy.cluster.faults.clear)
    proxy.acall(proxy.cluster.start_broker, 1)
