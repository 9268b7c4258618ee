"""Each of these requests used to take the whole `broker-emu serve` process down
(or, for the throttle, break every matching Kafka request, and GET /faults then answered
`Infinity`, which is not JSON). Each now gets a 4xx naming the field, and the same process still
answers the control API and still serves Kafka afterwards."""

import pytest

from .serve import Served, http_call, kafka_produce, raw_http

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def served():
    with Served() as s:
        yield s


def after_each(served: Served) -> None:
    assert served.alive(), served.stop()
    status, listed = http_call(served.port, "GET", "/faults")  # strict JSON: no NaN, no Infinity
    assert status == 200 and listed == {"faults": []}
    assert kafka_produce(served) == 0


@pytest.mark.parametrize("path, body, field", [
    # TypeError: unhashable list in `kind not in ACTIONS`
    ("/faults", '{"action": {"type": []}}', "action.type"),
    # ValueError from int("--1"): "--1".lstrip("-").isdigit() was True
    ("/faults", '{"action": {"type": "error", "error": "--1"}}', "action.error"),
    # KeyError: raw["error"] was read before the check that it is there
    ("/faults", '{"action": {"type": "error"}}', "action.error"),
    # RecursionError out of json.loads
    ("/faults", DEEP, "body"),
    # ValueError: an integer over Python's 4300-digit conversion limit
    ("/faults", '{"action": "black_hole", "times": ' + "9" * 5000 + "}", "body"),
    # accepted, then throttle_time_ms = int(inf) raised OverflowError on every matching request
    ("/faults", '{"action": {"type": "throttle", "ms": 1e309}}', "action.ms"),
], ids=["type-list", "error--1", "error-missing", "nested-100k", "int-5000-digits", "throttle-1e309"])
def test_killer_fault_bodies_are_400_naming_the_field(served, path, body, field):
    status, answer = http_call(served.port, "POST", path, body)
    assert status == 400, answer
    assert answer["field"] == field and answer["error"]
    after_each(served)


def test_nan_lag_then_a_produce_no_longer_kills_the_process(served):
    # accepted (NaN < 0 is False), then the next produce scheduled a copy at now + NaN
    status, answer = http_call(served.port, "POST", "/replication", '{"topic": "t", "mode": "lag", "lag_ms": NaN}')
    assert status == 400 and answer["field"] == "lag_ms"
    after_each(served)


@pytest.mark.parametrize("request_bytes", [
    b"DELETE /faults/" + b"1" * 5000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",   # int() over 4300 digits
    b"GET http://[oops/faults HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",              # urlsplit ValueError
    # not a killer: int("1_0") == 10, so the connection waited for 8 more bytes until timed out
    b"POST /faults HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 1_0\r\n\r\n{}",
], ids=["path-int-5000-digits", "bad-ipv6-target", "content-length-underscore"])
def test_killer_request_heads_are_400(served, request_bytes):
    answer = raw_http(served.port, request_bytes)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    after_each(served)


DURATIONS = [
    ({"action": {"type": "delay_request", "ms": "X"}}, "action.ms"),
    ({"action": {"type": "delay_response", "ms": "X"}}, "action.ms"),
    ({"action": {"type": "throttle", "ms": "X"}}, "action.ms"),
    ({"action": {"type": "slow_accept", "ms": "X"}}, "action.ms"),
    ({"action": "black_hole", "duration_ms": "X"}, "duration_ms"),
    ({"action": "black_hole", "at_ms": "X"}, "at_ms"),
    ({"action": "black_hole", "probability": "X"}, "probability"),
]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e309", "-1e309"])
@pytest.mark.parametrize("rule, field", DURATIONS, ids=[f for _, f in DURATIONS[:4]] + ["duration_ms", "at_ms", "probability"])
def test_non_finite_numbers_are_400_naming_the_field(served, literal, rule, field):
    import json
    body = json.dumps(rule).replace('"X"', literal)
    status, answer = http_call(served.port, "POST", "/faults", body)
    assert status == 400 and answer["field"] == field, answer
    assert served.alive()


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "1e309"])
def test_non_finite_lag_is_400_naming_the_field(served, literal):
    status, answer = http_call(served.port, "POST", "/replication", '{"mode": "lag", "lag_ms": %s}' % literal)
    assert status == 400 and answer["field"] == "lag_ms", answer


def test_non_finite_number_anywhere_is_named_by_its_path(served):
    status, answer = http_call(served.port, "POST", "/faults", '[{"action": "black_hole"}, {"action": "black_hole", "name": NaN}]')
    assert status == 400 and answer["field"] == "[1].name", answer
    status, answer = http_call(served.port, "GET", "/trace?since_ms=nan")
    assert status == 400 and answer["field"] == "since_ms"


def test_get_faults_is_always_strict_json(served):
    for rule in ({"action": {"type": "throttle", "ms": 2**31 - 1}, "duration_ms": 0.5, "at_ms": 1e9, "probability": 1e-300},
                 {"action": {"type": "error", "error": -32768}, "name": "\ud800 lone surrogate"}):
        status, _ = http_call(served.port, "POST", "/faults", rule)
        assert status == 201
    status, listed = http_call(served.port, "GET", "/faults")   # strict_json inside
    assert status == 200 and len(listed["faults"]) == 2
    status, described = http_call(served.port, "GET", "/cluster")
    assert status == 200 and len(described["faults"]) == 2
    assert http_call(served.port, "DELETE", "/faults")[0] == 200
    after_each(served)


def test_one_over_int32_ms_is_refused(served):
    status, answer = http_call(served.port, "POST", "/faults", {"action": {"type": "throttle", "ms": 2**31}})
    assert status == 400 and answer["field"] == "action.ms" and "int32" in answer["error"]


def test_body_over_the_limit_is_413(served):
    status, answer = http_call(served.port, "POST", "/faults", b"[" + b"0," * 600_000 + b"0]")
    assert status == 413 and answer["field"] == "body"
    after_each(served)


def test_the_largest_throttle_accepted_still_answers_kafka(served):
    # the bound is what the wire can carry: throttle_time_ms is an int32
    rule = {"match": {"api": "Produce"}, "action": {"type": "throttle", "ms": 2**31 - 1}, "times": 1}
    assert http_call(served.port, "POST", "/faults", rule)[0] == 201
    assert kafka_produce(served) == 0          # answered (then the connection is muted), not broken
    listed = http_call(served.port, "GET", "/faults")[1]["faults"]
    assert listed[0]["applied"] == 1
    assert http_call(served.port, "DELETE", "/faults")[0] == 200
    after_each(served)


def test_rules_are_capped_all_or_nothing(served):
    batch = [{"match": {"api": "Produce", "client_id": "nobody"}, "action": "black_hole"}] * 1000
    for _ in range(10):
        assert http_call(served.port, "POST", "/faults", batch)[0] == 201
    status, answer = http_call(served.port, "POST", "/faults", batch[:1])
    assert status == 409 and answer["field"] == "body"
    assert http_call(served.port, "POST", "/faults", batch + batch[:1])[1]["field"] == "body"   # 1001 in one
    assert http_call(served.port, "DELETE", "/faults")[1] == {"removed": 10_000}
    after_each(served)
