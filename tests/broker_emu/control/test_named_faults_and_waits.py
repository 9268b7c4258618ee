"""`broker-emu fault latency|...` against a real `broker-emu serve`, and the control API's waits
(GET /wait/...): the named faults make the rules the engine already knows, usage errors are one
line and exit 2, a wait answers 200 when the state is reached and 408 with what it last saw."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from .serve import ROOT, Served, http_call, kafka_produce


@pytest.fixture(scope="module")
def served():
    with Served() as s:
        yield s


def fault_cli(served: Served | None, *args: str) -> subprocess.CompletedProcess:
    control = ["--control", served.control] if served else []
    return subprocess.run([sys.executable, "-m", "broker_emu.cli", "fault", *control, *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.fixture(autouse=True)
def no_rules(served):
    yield
    assert http_call(served.port, "DELETE", "/faults")[0] == 200


def rules(served: Served) -> list[dict]:
    return http_call(served.port, "GET", "/faults")[1]["faults"]


def test_each_named_fault_adds_its_rule(served):
    cases = [
        (["latency", "--api", "Produce", "--ms", "500", "--jitter-ms", "100"],
         {"type": "delay_request", "ms": 500.0, "jitter_ms": 100.0}, {"api": "Produce"}),
        (["jitter", "--jitter-ms", "40", "--topic", "t"], {"type": "delay_request", "ms": 0.0, "jitter_ms": 40.0}, {"topic": "t"}),
        (["bandwidth", "--bytes-per-s", "1000", "--client-id", "app"], {"type": "bandwidth", "bytes_per_s": 1000},
         {"client_id": "app"}),
        (["timeout", "--ms", "300", "--broker", "1"], {"type": "black_hole", "close_ms": 300.0}, {"broker": 1}),
        (["timeout"], {"type": "black_hole"}, {}),
        (["reset", "--api", "Fetch"], {"type": "reset"}, {"api": "Fetch"}),
        (["slow-close", "--ms", "200"], {"type": "slow_close", "ms": 200.0}, {}),
        (["error", "--error", "NOT_LEADER_OR_FOLLOWER", "--api", "Produce"],
         {"type": "error", "error": "NOT_LEADER_OR_FOLLOWER"}, {"api": "Produce"}),
        (["error", "--error", "7"], {"type": "error", "error": "REQUEST_TIMED_OUT"}, {}),
        (["late", "--until", "next_end_txn", "--api", "Produce", "--transactional-id", "tx"],
         {"type": "hold", "until": "next_end_txn"}, {"api": "Produce", "transactional_id": "tx"}),
        (["black-hole", "--api", "Metadata", "--count", "2", "--probability", "0.5"], {"type": "black_hole"}, {"api": "Metadata"}),
    ]
    for args, action, match in cases:
        out = fault_cli(served, *args)
        assert out.returncode == 0, (args, out.stderr)
        listed = rules(served)[-1]
        assert (listed["action"], listed["match"], listed["name"]) == (action, match, args[0]), args
    assert rules(served)[-1]["times"] == 2 and rules(served)[-1]["probability"] == 0.5


def test_a_latency_from_the_cli_delays_kafka_and_counts_its_hits(served):
    out = fault_cli(served, "latency", "--api", "Produce", "--ms", "400", "--count", "1")
    assert out.returncode == 0, out.stderr
    rule_id = int(__import__("json").loads(out.stdout)["id"])
    start = time.perf_counter()
    assert kafka_produce(served, acks=1) == 0
    assert time.perf_counter() - start >= 0.39
    status, body = http_call(served.port, "GET", f"/wait/fault/{rule_id}?hits=1&timeout_ms=1000")
    assert status == 200 and body["seen"]["hits"] == 1
    assert kafka_produce(served, acks=1) == 0   # count 1: spent


@pytest.mark.parametrize("args, message", [
    (["latncy", "--ms", "3"], "unknown command 'latncy' (did you mean 'latency'?)"),
    (["latency", "--ms", "3", "--jiter-ms", "4"], "unknown argument --jiter-ms (did you mean '--jitter-ms'?)"),
    (["latency"], "the following arguments are required: --ms"),
    (["error", "--error", "NOT_LEADER"], "unknown Kafka error 'NOT_LEADER' (did you mean 'NOT_LEADER_OR_FOLLOWER'?)"),
    (["reset", "--api", "Produc"], "unknown API 'Produc' (did you mean 'Produce'?)"),
    (["slow-close", "--ms", "5", "--api", "Produce"], "unknown argument --api"),
    (["latency", "--ms", "-5"], "action.ms: must not be negative"),
])
def test_usage_errors_are_one_line_with_a_suggestion_and_exit_2(args, message):
    out = fault_cli(None, *args)
    assert out.returncode == 2 and message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_a_wait_answers_when_the_state_is_reached(served):
    before = http_call(served.port, "GET", "/wait/partition/t/1?high_watermark=0&timeout_ms=0")[1]["seen"]["high_watermark"]
    threading.Timer(0.3, kafka_produce, args=(served,), kwargs={"partition": 1, "acks": -1}).start()
    status, body = http_call(served.port, "GET", f"/wait/partition/t/1?high_watermark={before + 1}&timeout_ms=10000")
    assert status == 200, body
    assert body["seen"]["high_watermark"] == before + 1 and 250 <= body["waited_ms"] < 10000
    status, body = http_call(served.port, "GET", "/wait/partition/t/1?isr_size=3&leader=" f"{body['seen']['leader']}&timeout_ms=100")
    assert status == 200 and body["waited_ms"] < 50   # already so: answered at once


def test_a_wait_that_times_out_answers_408_with_what_it_saw(served):
    status, body = http_call(served.port, "GET", "/wait/group/g?state=Stable&members=3&timeout_ms=200")
    assert status == 408
    assert body["error"] == "group g: waited 0.2 s for state Stable with 3 members; last seen no such group yet"
    assert body["seen"] == {"group": "g", "state": None, "members": 0} and body["waited_ms"] >= 200
    status, body = http_call(served.port, "GET", "/wait/trace?kind=broker_stop&timeout_ms=100")
    assert status == 408 and body["seen"]["count"] == 0


def test_the_cli_waits_exit_0_when_the_state_holds_and_1_with_what_was_seen_when_not(served):
    out = fault_cli(served, "wait", "partition", "t", "0", "--isr-size", "3", "--timeout-ms", "2000")
    assert out.returncode == 0 and '"isr_size": 3' in out.stdout, out.stderr
    out = fault_cli(served, "wait", "group", "nobody", "--members", "1", "--timeout-ms", "100")
    assert out.returncode == 1
    assert out.stderr.strip() == "broker-emu fault wait group: group nobody: waited 0.1 s for 1 members; last seen no such group yet"
    out = fault_cli(served, "wait", "group", "g", "--state", "Stabel", "--timeout-ms", "100")
    assert out.returncode == 2 and "did you mean 'Stable'?" in out.stderr
    out = fault_cli(served, "wait", "trace", "--kind", "send", "--timeout-ms", "100", "--cuont", "3")
    assert out.returncode == 2 and "unknown argument --cuont (did you mean '--count'?)" in out.stderr


@pytest.mark.parametrize("path, field", [
    ("/wait/connections?count=1", "timeout_ms"),
    ("/wait/connections?count=1&timeout_ms=60001", "timeout_ms"),
    ("/wait/connections?count=1&timeout_ms=nan", "timeout_ms"),
    ("/wait/connections?timeout_ms=5", "count"),
    ("/wait/connections?count=1&broker=9&timeout_ms=5", "broker"),
    ("/wait/group/g?state=Stabel&timeout_ms=5", "state"),
    ("/wait/group/g?timeout_ms=5", "state"),
    ("/wait/partition/t/x?isr_size=1&timeout_ms=5", "partition"),
    ("/wait/fault/1?hits=-1&timeout_ms=5", "hits"),
    ("/wait/trace?kind=nope&timeout_ms=5", "kind"),
    ("/wait/transaction/tx?state=&timeout_ms=5", "state"),
    ("/wait/connections?count=1&timeout_ms=5&colour=red", "colour"),
])
def test_bad_waits_are_400_naming_the_field(served, path, field):
    status, body = http_call(served.port, "GET", path)
    assert status == 400 and body["field"] == field, body
