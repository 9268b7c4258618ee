"""Faults on the proxy behave as on the emulator: a delay holds the answer, a black hole makes
the client give up and close the connection (``closed_by`` client in the trace, as the
conformance contracts read it; our client at request.timeout.ms is in test_proxy_contracts), an
injected error reaches the client, a connection fault closes new connections. Real time:
timeouts are short, bounds generous."""

from __future__ import annotations

import time

import pytest

import client
from client.errors import TopicAuthorizationFailedError
from tests.broker_emu.proxy.conftest import add_fault, events

pytestmark = pytest.mark.realclient


def _producer(proxy, **config):
    ck = pytest.importorskip("confluent_kafka")
    return ck.Producer({"bootstrap.servers": proxy.bootstrap, "acks": 1, "linger.ms": 0, **config})


def _produce_one(producer, value: bytes = b"x", timeout: float = 20.0):
    reports: list = []
    start = time.perf_counter()
    producer.produce("t", value, partition=0, on_delivery=lambda err, msg: reports.append(err))
    producer.flush(timeout)
    return reports, time.perf_counter() - start


def test_a_delay_on_produce_holds_the_answer(proxy):
    producer = _producer(proxy)
    assert _produce_one(producer, b"warm-up")[0] == [None]
    add_fault(proxy, {"match": {"api": "Produce"}, "action": {"type": "delay_response", "ms": 600}, "times": 1})
    reports, took = _produce_one(producer)
    assert reports == [None]
    assert 0.55 <= took < 5.0
    applied = [e for e in events(proxy, "fault_applied") if e.api == "Produce"]
    assert len(applied) == 1
    sends = [e for e in events(proxy, "send") if e.api == "Produce" and e.correlation_id == applied[0].correlation_id]
    assert sends and sends[0].t_ms - applied[0].t_ms >= 590


def test_a_black_hole_on_produce_times_out_and_the_client_closes(proxy):
    ck = pytest.importorskip("confluent_kafka")
    producer = _producer(proxy, **{"request.timeout.ms": 1000, "message.timeout.ms": 2500, "retries": 0})
    assert _produce_one(producer, b"warm-up")[0] == [None]
    add_fault(proxy, {"match": {"api": "Produce"}, "action": "black_hole"})
    reports, took = _produce_one(producer, timeout=15)
    assert len(reports) == 1 and reports[0] is not None
    assert reports[0].code() in (ck.KafkaError._MSG_TIMED_OUT, ck.KafkaError._TIMED_OUT, ck.KafkaError.REQUEST_TIMED_OUT)
    time.sleep(0.3)
    held, close = _held_then_closed(events(proxy))
    assert close.details["closed_by"] == "client"
    # librdkafka's request.timeout.ms is the ack timeout it asks the broker for; it gives up on a
    # Produce at message.timeout.ms (checked once a second), exactly as against the emulator
    assert 2400 <= close.t_ms - held.t_ms < 5000


def test_an_injected_error_reaches_confluent_kafka(proxy):
    ck = pytest.importorskip("confluent_kafka")
    producer = _producer(proxy)
    assert _produce_one(producer, b"warm-up")[0] == [None]
    add_fault(proxy, {"match": {"api": "Produce", "topic": "t"}, "action": {"type": "error", "error": "TOPIC_AUTHORIZATION_FAILED"}})
    reports, _ = _produce_one(producer)
    assert len(reports) == 1 and reports[0] is not None
    assert reports[0].code() == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED
    sends = [e for e in events(proxy, "send") if e.api == "Produce" and e.details.get("errors")]
    assert sends and sends[-1].details["errors"] == [29]


def test_an_injected_error_reaches_our_client(proxy):
    add_fault(proxy, {"match": {"api": "Produce"}, "action": {"type": "error", "error": 29}})
    with client.Producer({"bootstrap.servers": proxy.bootstrap}) as p:
        future = p.send("t", b"x", partition=1)
        with pytest.raises(TopicAuthorizationFailedError):
            future.result(10)


def test_refused_connections_close_at_once_and_the_upstream_never_sees_them(upstream, proxy):
    before = len(events(upstream, "conn_open"))
    add_fault(proxy, {"match": {"broker": 1}, "action": "refuse_connections"})
    import socket

    port = int(proxy.bootstrap.split(",")[1].rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.settimeout(5)
        assert s.recv(10) == b""
    time.sleep(0.1)
    assert len(events(upstream, "conn_open")) == before
    close = events(proxy, "conn_close")[-1]
    assert close.broker == 1 and close.details["closed_by"] == "broker" and "refuse_connections" in close.details["reason"]


def _held_then_closed(trace: list) -> tuple:
    held = [e for e in trace if e.kind == "recv" and e.api == "Produce"
            and not any(s.kind == "send" and s.conn == e.conn and s.correlation_id == e.correlation_id for s in trace)]
    assert held, "no Produce was held"
    close = next(e for e in trace if e.kind == "conn_close" and e.conn == held[0].conn)
    return held[0], close


def test_a_black_hole_upstream_the_clients_close_reaches_the_upstream(upstream, proxy):
    """The fault on the upstream, none on the proxy: the proxy keeps reading the client while
    the upstream holds the request, so the client's give-up closes the upstream connection too."""
    producer = _producer(proxy, **{"request.timeout.ms": 1000, "message.timeout.ms": 2500, "retries": 0})
    assert _produce_one(producer, b"warm-up")[0] == [None]
    add_fault(upstream, {"match": {"api": "Produce"}, "action": "black_hole"})
    reports, _ = _produce_one(producer, timeout=15)
    assert len(reports) == 1 and reports[0] is not None
    time.sleep(0.3)
    (_, close_p), (held_u, close_u) = _held_then_closed(events(proxy)), _held_then_closed(events(upstream))
    assert close_p.details["closed_by"] == "client" and close_u.details["closed_by"] == "client"
    assert 2400 <= close_u.t_ms - held_u.t_ms < 5000


def test_a_throttle_is_in_the_answer_and_mutes_the_connection(proxy):
    from client.protocol.codec import decode_response, encode_request
    from tests.broker_emu.proxy.wire import connect, read_frame

    add_fault(proxy, {"match": {"api": "Metadata"}, "action": {"type": "throttle", "ms": 300}, "times": 2})
    with connect(proxy.bootstrap) as s:
        for correlation_id in (1, 2, 3):   # the second answer comes from the proxy's cache of rewritten answers
            start = time.perf_counter()
            s.sendall(encode_request(3, 12, correlation_id, "throttle-test", {"topics": None}))
            answer = read_frame(s)
            assert answer is not None
            cid, body = decode_response(3, 12, answer)
            assert cid == correlation_id
            assert body["throttle_time_ms"] == (300 if correlation_id < 3 else 0)
            if correlation_id == 2:
                assert time.perf_counter() - start >= 0.25   # behind the first answer's mute
