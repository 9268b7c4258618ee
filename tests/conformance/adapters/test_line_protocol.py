"""The line protocol that drives adapter programs in other languages: a well-behaved program's
outcomes arrive as Outcomes; a program that dies, hangs or answers garbage is an error cell
with the reason, never a pass, and never a hung suite."""

from __future__ import annotations

import sys
import textwrap

import pytest

from conformance.adapters import line_protocol as lp
from conformance.adapters.base import RunEnv
from conformance.model import Operation, Status
from conformance.runner import Plan, run_plan
from conformance.scenarios import CATALOGUE

PROGRAM = textwrap.dedent('''
    import base64, json, sys
    mode = sys.argv[1]
    for line in sys.stdin:
        req = json.loads(line)
        if req["cmd"] == "quit":
            break
        if req["cmd"] == "hello":
            print(json.dumps({"client": "fake", "version": "1", "operations": ["produce"]}), flush=True)
            continue
        if mode == "garbage":
            print("not json", flush=True)
        elif mode == "die":
            sys.exit(3)
        elif mode == "hang":
            import time; time.sleep(60)
        elif mode == "restart":   # a client left behind: answer, ask for a restart, exit
            outs = [{"operation": s["kind"], "ok": False, "elapsed_ms": 1.0, "error_type": "NoReturn"} for s in req["steps"]]
            print(json.dumps({"outcomes": outs, "restart": True}), flush=True)
            sys.exit(0)
        else:
            outs = []
            for step in req["steps"]:
                value = base64.b64decode(step["args"]["value"]["$bytes"])
                outs.append({"operation": step["kind"], "ok": False, "elapsed_ms": 12.5, "error_type": "TimeoutException",
                             "error_message": f"{len(value)} bytes, deadline {step['timeout_ms']}",
                             "value": {"$bytes": base64.b64encode(value[::-1]).decode()}})
            print(json.dumps({"outcomes": outs}), flush=True)
''')


class Fake(lp.LineProtocolAdapter):
    name = "fake"
    operations = frozenset({"produce"})

    def __init__(self, path, mode: str):
        super().__init__()
        self.path, self.mode = path, mode

    def command(self):
        return [sys.executable, str(self.path), self.mode]


@pytest.fixture
def program(tmp_path, monkeypatch):
    monkeypatch.setattr(lp, "LOG_DIR", tmp_path / "logs")
    path = tmp_path / "fake.py"
    path.write_text(PROGRAM)
    return path


def test_outcomes_cross_the_pipe_with_bytes_deadlines_and_elapsed(program):
    adapter = Fake(program, "ok")
    try:
        assert adapter.available() == (True, "")
        [out] = adapter.run_blocking((Operation("produce", {"value": b"abc", "topic": "t"}, timeout_s=1.5),),
                                     RunEnv("127.0.0.1:1", "c", {}))
        first_pid = adapter._proc.pid if adapter._proc else None
        adapter.run_blocking((Operation("produce", {"value": b"x"}),), RunEnv("127.0.0.1:1", "c", {}))
        assert adapter._proc is not None and adapter._proc.pid == first_pid   # started once, not per run
    finally:
        adapter.shutdown()
    assert (out.ok, out.error_type, out.elapsed_s, out.value) == (False, "TimeoutException", 0.0125, b"cba")
    assert out.error_message == "3 bytes, deadline 1500"
    assert adapter._proc is None


@pytest.mark.parametrize("mode, words", [("garbage", "not JSON"), ("die", "exited with 3")])
def test_a_broken_program_is_an_error_with_the_reason(program, mode, words):
    adapter = Fake(program, mode)
    with pytest.raises(lp.AdapterProcessError, match=words):
        adapter.run_blocking((Operation("produce", {"value": b"a"}),), RunEnv("127.0.0.1:1", "c", {}))
    adapter.shutdown()


def test_a_hung_program_is_killed_at_its_budget(program, monkeypatch):
    monkeypatch.setattr(lp, "ANSWER_SLACK_S", 0.3)
    adapter = Fake(program, "hang")
    with pytest.raises(lp.AdapterProcessError, match="no answer"):
        adapter.run_blocking((Operation("produce", {"value": b"a"}, timeout_s=0.1),), RunEnv("127.0.0.1:1", "c", {}))
    assert adapter._proc is None   # killed, not left behind


def test_the_runner_turns_a_broken_program_into_error_cells_and_stops_it(program):
    adapter = Fake(program, "die")
    scenario = next(s for s in CATALOGUE if {op.kind for op in s.steps} == {"produce"})
    [result] = run_plan(Plan([scenario], [adapter]))
    assert result.status is Status.ERROR and "exited with 3" in result.message
    assert adapter._proc is None


def test_a_program_that_asks_for_a_restart_is_ended_and_the_next_run_gets_a_fresh_one(program):
    """A program that left a client behind (kafkajs: a call it cannot cancel) says "restart" in
    its answer: the adapter ends it, and the next run starts a new program, so nothing left behind
    reaches the next scenario."""
    adapter = Fake(program, "restart")
    env = RunEnv("127.0.0.1:1", "c", {})
    try:
        [first] = adapter.run_blocking((Operation("produce", {"value": b"a"}),), env)
        assert adapter._proc is None and first.error_type == "NoReturn"
        [second] = adapter.run_blocking((Operation("produce", {"value": b"b"}),), env)
        assert second.error_type == "NoReturn"
    finally:
        adapter.shutdown()
