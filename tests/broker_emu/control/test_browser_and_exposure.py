"""What a web page could make a browser send is refused (CSRF without preflight,
DNS rebinding), remote exposure needs an explicit opt-in, and a route's own bug is a 500 for that
request, never the end of the process. The CLI front still works (it sends application/json)."""

import functools
import json
import subprocess
import sys

import pytest
import trio

from broker_emu.control.http import serve_http
from broker_emu.control.routes import Routes

from .serve import ROOT, Served, http_call, kafka_produce, raw_http


@pytest.fixture(scope="module")
def served():
    with Served() as s:
        yield s


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                                   "application/json; charset=latin-1", "application/jsonx", None])
def test_a_body_that_is_not_declared_json_is_415(served, ctype):
    headers = {"Content-Type": ctype} if ctype else {}
    status, answer = http_call(served.port, "POST", "/brokers/0/stop", b'{"x": 1}', headers=headers, json_body=False)
    assert status == 415 and answer["field"] == "Content-Type"
    assert http_call(served.port, "GET", "/cluster")[1]["brokers"][0]["alive"] is True


def test_a_simple_cross_origin_form_post_without_body_is_refused(served):
    # what <form method=post action=http://127.0.0.1:PORT/brokers/0/stop> sends
    status, answer = http_call(served.port, "POST", "/brokers/0/stop", b"",
                               headers={"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example"},
                               json_body=False)
    assert status == 403 and answer["field"] == "Origin"
    assert http_call(served.port, "GET", "/cluster")[1]["brokers"][0]["alive"] is True


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://127.0.0.1:1", "http://localhost",
                                    "http://127.0.0.1.evil.example:{port}"])
def test_foreign_origins_are_403(served, origin):
    status, answer = http_call(served.port, "POST", "/faults", {"action": "black_hole"},
                               headers={"Origin": origin.format(port=served.port)})
    assert status == 403 and answer["field"] == "Origin"
    assert http_call(served.port, "GET", "/faults")[1] == {"faults": []}


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]"])
def test_the_listeners_own_loopback_origin_is_accepted(served, host):
    status, _ = http_call(served.port, "GET", "/faults", headers={"Origin": f"http://{host}:{served.port}"})
    assert status == 200


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_no_cors_browser_reads_are_403(served, site):
    # <img src=.../trace> sends no Origin, but a browser marks it with Sec-Fetch-Site
    status, answer = http_call(served.port, "GET", "/trace", headers={"Sec-Fetch-Site": site})
    assert status == 403 and answer["field"] == "Sec-Fetch-Site"


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "10.0.0.1:{port}", "127.0.0.1.nip.io:{port}"])
def test_non_loopback_host_headers_are_403(served, host):
    # DNS rebinding: the page's own name now resolves to 127.0.0.1, the Host header still says it
    status, answer = http_call(served.port, "POST", "/brokers/0/stop", headers={"Host": host.format(port=served.port)})
    assert status == 403 and answer["field"] == "Host"
    assert http_call(served.port, "GET", "/cluster")[1]["brokers"][0]["alive"] is True


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "127.0.0.1"])
def test_loopback_host_headers_pass(served, host):
    assert http_call(served.port, "GET", "/faults", headers={"Host": host.format(port=served.port)})[0] == 200


def test_duplicate_security_headers_are_400(served):
    answer = raw_http(served.port, b"GET /faults HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 ")


def test_the_cli_front_still_works(served):
    def fault(*args):
        out = subprocess.run([sys.executable, "-m", "broker_emu.cli", "fault", "--control", served.control, *args],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
        return out.returncode, out.stdout, out.stderr

    code, out, _ = fault("add", '{"match": {"api": "Fetch"}, "action": {"type": "delay_response", "ms": 5}}')
    assert code == 0 and json.loads(out)["rule"]["action"] == {"type": "delay_response", "ms": 5.0}
    assert fault("list")[0] == 0
    assert fault("replication", "lag", "--topic", "t", "--lag-ms", "5")[0] == 0
    assert fault("replication", "normal", "--topic", "t")[0] == 0
    assert fault("leader", "t", "0", "1")[0] == 0
    assert fault("broker", "stop", "2")[0] == 0 and fault("broker", "start", "2")[0] == 0
    code, _, err = fault("add", '{"action": {"type": "throttle", "ms": 1e309}}')
    assert code == 1 and "action.ms" in err
    assert fault("clear")[0] == 0
    assert kafka_produce(served) == 0


def run_serve(*args):
    return subprocess.run([sys.executable, "-m", "broker_emu.cli", "serve", "--control-port", "0", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_remote_control_without_a_token_fails_with_one_line():
    out = run_serve("--allow-remote-control")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "--allow-remote-control needs --token" in out.stderr


def test_a_non_loopback_kafka_listener_needs_the_opt_in():
    out = run_serve("--host", "0.0.0.0")
    assert out.returncode == 2 and "bootstrap=" not in out.stdout
    assert out.stderr.count("\n") == 1 and "--allow-remote" in out.stderr


def test_with_the_opt_in_kafka_is_remote_and_control_stays_on_loopback():
    with Served("--host", "0.0.0.0", "--allow-remote") as s:
        assert s.control.startswith("http://127.0.0.1:")
        assert http_call(s.port, "GET", "/faults")[0] == 200


def test_remote_control_with_a_token_accepts_other_hosts_but_wants_the_token():
    with Served("--host", "0.0.0.0", "--allow-remote", "--allow-remote-control", "--token", "s3cret") as s:
        assert s.control.startswith("http://0.0.0.0:")
        status, answer = http_call(s.port, "GET", "/faults", headers={"Host": "emu.example:9080"})
        assert status == 401 and answer["field"] == "Authorization"
        assert http_call(s.port, "GET", "/faults", headers={"Host": "emu.example:9080",
                                                            "Authorization": "Bearer s3cret"})[0] == 200
        status, answer = http_call(s.port, "GET", "/faults", headers={"Authorization": "Bearer s3cret",
                                                                      "Origin": "https://evil.example"})
        assert status == 403


async def test_serve_http_refuses_remote_without_a_token():
    with pytest.raises(ValueError, match="needs a token"):
        await serve_http(Routes(None), host="0.0.0.0", port=0, allow_remote=True)


class Broken:
    """A target whose describe() has a bug."""
    faults = trace = None

    def describe(self):
        raise ZeroDivisionError("a bug in describe")


async def test_a_bug_in_a_route_is_a_500_for_that_request_only(caplog):
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(serve_http, Routes(Broken()), port=0))
        first = await trio.to_thread.run_sync(http_call, port, "GET", "/cluster")
        again = await trio.to_thread.run_sync(http_call, port, "GET", "/openapi.json")
        nursery.cancel_scope.cancel()
    assert first[0] == 500 and "ZeroDivisionError" in first[1]["error"]
    assert again[0] == 200 and again[1]["openapi"].startswith("3.")
    assert any("GET /cluster failed" in r.getMessage() for r in caplog.records)
