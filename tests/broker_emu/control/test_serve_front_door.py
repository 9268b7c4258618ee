"""What `broker-emu serve` tells a newcomer when the control API is on: where the web console is,
a line to paste so that `broker-emu fault` finds the API without `--control`, and a control API
whose `/` leads to the console. `fault` takes `--control` before or after its action."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from broker_emu import cli as emulator_cli

from .serve import ROOT, Served, next_lines, raw_http


@pytest.fixture(scope="module")
def served():
    with Served() as s:
        s.more = next_lines(s.proc, 2)
        yield s


def fault(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "BROKER_EMU_CONTROL"} | (env or {})
    return subprocess.run([sys.executable, "-m", "conformance.main", "fault", *args], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=60)


def test_serve_prints_the_console_url_and_an_export_line(served):
    assert served.more == [f"console={served.control}/console", f"export BROKER_EMU_CONTROL={served.control}"]


def test_the_control_api_root_redirects_to_the_console(served):
    answer = raw_http(served.port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").decode()
    head = answer.partition("\r\n\r\n")[0].split("\r\n")
    assert head[0] == "HTTP/1.1 302 Found" and "Location: /console" in head[1:]


def test_the_redirect_needs_no_token_the_data_still_does():
    with Served("--token", "s3cret") as s:
        root = raw_http(s.port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").decode()
        faults = raw_http(s.port, b"GET /faults HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").decode()
    assert root.startswith("HTTP/1.1 302 ") and "\r\nLocation: /console\r\n" in root
    assert faults.startswith("HTTP/1.1 401 ")


def test_fault_reads_the_control_url_from_the_environment(served):
    out = fault("list", env={"BROKER_EMU_CONTROL": served.control})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"faults": []}


def test_named_faults_and_waits_read_the_control_url_from_the_environment(served):
    out = fault("latency", "--api", "Produce", "--ms", "5", "--count", "1", env={"BROKER_EMU_CONTROL": served.control})
    assert out.returncode == 0, out.stderr
    rule = json.loads(out.stdout)["id"]
    waited = fault("wait", "connections", "--count", "0", "--timeout-ms", "1000", env={"BROKER_EMU_CONTROL": served.control})
    assert waited.returncode == 0, waited.stderr
    assert fault("clear", "--id", str(rule), env={"BROKER_EMU_CONTROL": served.control}).returncode == 0


def test_fault_takes_control_after_the_action(served):
    out = fault("list", "--control", served.control)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"faults": []}


@pytest.mark.parametrize("argv, env, expected", [
    (["fault", "list"], None, "http://127.0.0.1:9080"),
    (["fault", "list"], "http://127.0.0.1:1234", "http://127.0.0.1:1234"),
    (["fault", "--control", "http://a:1", "list"], "http://127.0.0.1:1234", "http://a:1"),
    (["fault", "list", "--control", "http://b:2"], "http://127.0.0.1:1234", "http://b:2"),
    (["fault", "--control", "http://a:1", "broker", "stop", "0", "--control", "http://b:2"], None, "http://b:2"),
])
def test_which_control_url_fault_uses(monkeypatch, argv, env, expected):
    monkeypatch.delenv("BROKER_EMU_CONTROL", raising=False)
    if env:
        monkeypatch.setenv("BROKER_EMU_CONTROL", env)
    from broker_emu.control.client import control_url

    assert control_url(emulator_cli.build_parser().parse_args(argv).control) == expected


def test_fault_without_a_control_url_says_how_to_give_one(monkeypatch, capsys):
    import socket

    from broker_emu.control import client
    from conformance.main import main

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{free.getsockname()[1]}"   # nothing listens once closed
    monkeypatch.delenv("BROKER_EMU_CONTROL", raising=False)
    monkeypatch.setattr(client, "DEFAULT_CONTROL", url)
    assert main(["fault", "list"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot reach the control API at {url} (the default: pass --control URL or set "
                          "BROKER_EMU_CONTROL, as serve prints): ") and err.count("\n") == 1
    monkeypatch.setenv("BROKER_EMU_CONTROL", url)
    assert main(["fault", "list"]) == 1
    assert capsys.readouterr().err.startswith(f"error: cannot reach the control API at {url}: ")
