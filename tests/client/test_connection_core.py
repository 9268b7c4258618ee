"""The sans-io connection core and the backoff: pure state, no trio, no clock."""

import random

import pytest

from client.backoff import ExponentialBackoff
from client.connection import ConnectionCore, CorrelationIdMismatch
from client.protocol import ApiKey
from client.protocol.codec import decode_request, encode_response
from client.protocol.framing import FrameTooLargeError

HB = {"group_id": "g", "generation_id": 1, "member_id": "m"}


def answer(req, error=0):
    return encode_response(ApiKey.HEARTBEAT, req.api_version, req.correlation_id, {"error_code": error})


def test_requests_are_framed_with_increasing_correlation_ids():
    core = ConnectionCore("me")
    a = core.send(ApiKey.HEARTBEAT, 0, HB, now=0.0, timeout=5.0)
    b = core.send(ApiKey.HEARTBEAT, 0, HB, now=1.0, timeout=5.0)
    wire = core.data_to_send()
    assert core.data_to_send() == b""
    first_len = int.from_bytes(wire[:4], "big")
    header, body = decode_request(wire[4:4 + first_len])
    assert (header.correlation_id, header.client_id, body.group_id) == (a.correlation_id, "me", "g")
    assert decode_request(wire[8 + first_len:])[0].correlation_id == b.correlation_id == a.correlation_id + 1
    assert core.in_flight == 2


def test_responses_split_anywhere_are_matched_in_order():
    core = ConnectionCore("c")
    a = core.send(ApiKey.HEARTBEAT, 0, HB, now=0.0, timeout=5.0)
    b = core.send(ApiKey.HEARTBEAT, 0, HB, now=1.0, timeout=5.0)
    data = answer(a, 27) + answer(b, 0)
    for cut in range(len(data) + 1):
        core2 = ConnectionCore("c")
        x, y = (core2.send(ApiKey.HEARTBEAT, 0, HB, now=0.0, timeout=5.0) for _ in range(2))
        done = core2.receive(data[:cut]) + core2.receive(data[cut:])
        assert [(r is x or r is y, body.error_code) for r, body in done] == [(True, 27), (True, 0)]
        assert core2.in_flight == 0
    done = core.receive(data)
    assert [r for r, _ in done] == [a, b]


def test_deadlines_are_per_request_and_exact():
    core = ConnectionCore("c")
    assert core.next_deadline() is None and core.handle_timeouts(1e9) == []
    long = core.send(ApiKey.JOIN_GROUP, 5, {}, now=0.0, timeout=305.0, setting="rebalance_timeout_ms + 5000")
    short = core.send(ApiKey.HEARTBEAT, 0, HB, now=2.0, timeout=0.5)
    assert core.next_deadline() == 2.5
    assert core.handle_timeouts(2.4999) == []
    assert core.handle_timeouts(2.5) == [short]
    assert core.handle_timeouts(305.0) == [long, short] and long.setting.startswith("rebalance")


def test_late_answer_to_an_abandoned_request_is_dropped_undecoded():
    core = ConnectionCore("c")
    a = core.send(ApiKey.HEARTBEAT, 0, HB, now=0.0, timeout=5.0)
    b = core.send(ApiKey.HEARTBEAT, 0, HB, now=0.0, timeout=5.0)
    core.abandon(a)
    assert core.next_deadline() == 5.0  # still on the wire: still timed
    garbage_body = a.correlation_id.to_bytes(4, "big") + b"\xff"  # would not decode as a Heartbeat
    frame = len(garbage_body).to_bytes(4, "big") + garbage_body
    done = core.receive(frame + answer(b))
    assert [r for r, _ in done] == [b] and core.in_flight == 0


def test_answers_after_close_are_never_delivered():
    core = ConnectionCore("c")
    a = core.send(ApiKey.HEARTBEAT, 0, HB, now=0.0, timeout=5.0)
    assert core.handle_timeouts(5.0) == [a]
    assert core.close() == [a] and core.in_flight == 0
    with pytest.raises(CorrelationIdMismatch):   # a closed core has nobody to match: out of step
        core.receive(answer(a))


def test_out_of_order_correlation_id_breaks_the_connection():
    core = ConnectionCore("c")
    a = core.send(ApiKey.HEARTBEAT, 0, HB, now=0.0, timeout=5.0)
    b = core.send(ApiKey.HEARTBEAT, 0, HB, now=0.0, timeout=5.0)
    with pytest.raises(CorrelationIdMismatch, match=f"correlation id {b.correlation_id}.*{a.correlation_id}"):
        core.receive(answer(b))


def test_oversized_frame_is_refused_before_allocation():
    core = ConnectionCore("c", max_frame=100)
    core.send(ApiKey.HEARTBEAT, 0, HB, now=0.0, timeout=5.0)
    with pytest.raises(FrameTooLargeError):
        core.receive((10_000).to_bytes(4, "big"))


def test_acks_zero_requests_are_not_tracked():
    core = ConnectionCore("c")
    core.send(ApiKey.PRODUCE, 9, {"acks": 0, "timeout_ms": 1, "topic_data": []}, now=0.0, timeout=30.0,
              expects_response=False)
    assert core.in_flight == 0 and core.next_deadline() is None and core.data_to_send()


def test_correlation_ids_wrap_at_int32():
    core = ConnectionCore("c")
    core._next_corr = 0x7FFFFFFF
    assert core.send(ApiKey.HEARTBEAT, 0, HB, now=0, timeout=1).correlation_id == 0x7FFFFFFF
    assert core.send(ApiKey.HEARTBEAT, 0, HB, now=0, timeout=1).correlation_id == 0


def test_backoff_grows_with_jitter_and_caps():
    b = ExponentialBackoff(100, 1000, random.Random(1))
    values = [b.backoff_ms(n) for n in range(8)]
    for n, v in enumerate(values[:4]):
        assert 0.8 * 100 * 2 ** n <= v <= 1.2 * 100 * 2 ** n
    assert all(v <= 1000 for v in values) and values[-1] >= 800
    b2 = ExponentialBackoff(50, 1000, random.Random(2))
    assert len({b2.backoff_ms(0) for _ in range(20)}) > 1   # jittered each time


def test_backoff_is_constant_when_max_is_below_initial():
    b = ExponentialBackoff(500, 200, random.Random(0))
    assert [b.backoff_ms(n) for n in range(4)] == [200, 200, 200, 200]
