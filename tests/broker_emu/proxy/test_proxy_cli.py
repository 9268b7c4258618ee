"""``broker-emu proxy`` as a process in front of ``broker-emu serve``: the faults file, the
control API (faults, trace, stopping and starting a proxied broker, what a proxy refuses) and
the JSONL trace."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

from broker_emu.control.client import ControlError, call
from client.protocol.codec import decode_response, encode_request
from tests.broker_emu.control.serve import ROOT, Served, next_lines
from tests.broker_emu.proxy.wire import read_frame

pytestmark = pytest.mark.realclient

FAULTS = """
seed: 7
topics: [{name: ignored, partitions: 1}]
faults:
  - name: slow-metadata
    match: {api: Metadata, broker: 0}
    action: {type: delay_response, ms: 300}
"""


def _start_proxy(upstream: str, *args: str) -> tuple[subprocess.Popen, dict[str, str]]:
    proc = subprocess.Popen([sys.executable, "-m", "broker_emu.cli", "proxy", "--upstream", upstream, *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: dict[str, str] = {}
    assert proc.stdout is not None
    while "control" not in lines:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the proxy did not start: {proc.stderr.read() if proc.stderr else ''}")
        key, sep, value = line.strip().partition("=")
        if sep:
            lines[key] = value
    return proc, lines


def _stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        return proc.communicate(timeout=15)[1]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[1]


def _metadata(port: int) -> float:
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.settimeout(10)
        s.sendall(encode_request(3, 12, 1, "cli-test", {"topics": None}))
        answer = read_frame(s)
    assert answer is not None and decode_response(3, 12, answer)[0] == 1
    return time.perf_counter() - start


def test_the_proxy_command_with_a_faults_file_control_api_and_trace(tmp_path):
    faults, trace = tmp_path / "faults.yaml", tmp_path / "trace.jsonl"
    faults.write_text(FAULTS)
    with Served() as upstream:
        boot = ",".join(f"{h}:{p}" for h, p in upstream.bootstrap)
        proc, out = _start_proxy(boot, "--control-port", "0", "--faults", str(faults), "--trace", str(trace))
        try:
            control = out["control"]
            assert next_lines(proc, 2) == [
                f"console={control}/console", f"export BROKER_EMU_CONTROL={control}"]
            ports = [int(a.rsplit(":", 1)[1]) for a in out["bootstrap"].split(",")]
            described = call(control, "GET", "/cluster")
            assert described["mode"] == "proxy" and [b["id"] for b in described["brokers"]] == [0, 1, 2]
            assert [f["name"] for f in call(control, "GET", "/faults")["faults"]] == ["slow-metadata"]
            assert _metadata(ports[0]) >= 0.28 and _metadata(ports[1]) < 0.28
            with pytest.raises(ControlError, match="cannot move the leaders"):
                call(control, "POST", "/partitions/t/0/leader", {"broker": 1})
            with pytest.raises(ControlError, match="no broker 9"):
                call(control, "POST", "/faults", {"match": {"broker": 9}, "action": "black_hole"})
            call(control, "POST", "/brokers/1/stop")
            with pytest.raises(OSError):
                _metadata(ports[1])
            call(control, "POST", "/brokers/1/start")
            assert _metadata(ports[1]) < 5
            assert call(control, "DELETE", "/faults") == {"removed": 1}
            recvs = call(control, "GET", "/trace?kind=recv")
            assert {e["broker"] for e in recvs} >= {0, 1}
        finally:
            err = _stop(proc)
    assert "ignoring topics" in err
    kinds = [json.loads(line)["kind"] for line in trace.read_text().splitlines()]
    assert {"conn_open", "recv", "fault_applied", "send", "conn_close", "broker_stop", "broker_start"} <= set(kinds)


def test_a_bad_faults_file_or_upstream_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("faults:\n  - {match: {broker: 7}, action: black_hole}\n")
    with Served() as upstream:
        boot = ",".join(f"{h}:{p}" for h, p in upstream.bootstrap)
        run = subprocess.run([sys.executable, "-m", "broker_emu.cli", "proxy", "--upstream", boot, "--faults", str(bad)],
                             cwd=ROOT, capture_output=True, text=True, timeout=30)
        assert run.returncode == 2 and "faults[0].match.broker: no broker 7" in run.stderr
        bad.write_text("events:\n  - {at_ms: 5, move_leader: {topic: t, partition: 0, broker: 1}}\n")
        run = subprocess.run([sys.executable, "-m", "broker_emu.cli", "proxy", "--upstream", boot, "--faults", str(bad)],
                             cwd=ROOT, capture_output=True, text=True, timeout=30)
        assert run.returncode == 2 and "events[0].move_leader" in run.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    run = subprocess.run([sys.executable, "-m", "broker_emu.cli", "proxy", "--upstream", f"127.0.0.1:{free}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert run.returncode == 1 and "no upstream bootstrap server answered" in run.stderr
    run = subprocess.run([sys.executable, "-m", "broker_emu.cli", "proxy", "--upstream", "nonsense"],
                         cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and "--upstream wants HOST:PORT" in run.stderr
