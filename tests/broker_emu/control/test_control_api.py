"""The control API over real loopback HTTP, against a recording fake cluster."""

import functools
import socket

import pytest
import trio

from broker_emu.control.client import ControlError, call
from broker_emu.control.http import serve_http
from broker_emu.control.routes import Routes
from broker_emu.faults.engine import FaultEngine
from broker_emu.trace import Trace


class FakeCluster:
    def __init__(self):
        self.faults = FaultEngine(seed=3, brokers=[0, 1, 2])
        self.trace = Trace(trio.current_time)
        self.calls = []

    def now_ms(self):
        return self.trace.now_ms()

    def broker_ids(self):
        return {0, 1, 2}

    async def stop_broker(self, b):
        self.calls.append(("stop", b))

    async def start_broker(self, b):
        self.calls.append(("start", b))

    def move_leader(self, topic, partition, broker):
        if topic != "t":
            raise KeyError(f"no topic {topic!r}")
        self.calls.append(("leader", topic, partition, broker))

    def set_replication(self, topic, partition, follower, mode, lag_ms):
        self.calls.append(("replication", topic, partition, follower, mode, lag_ms))

    def describe(self):
        return {"brokers": [0, 1, 2]}


async def with_server(fn, token=None, prepare=None):
    cluster = FakeCluster()
    if prepare:
        prepare(cluster)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(functools.partial(serve_http, Routes(cluster), port=0, token=token))
        base = f"http://127.0.0.1:{port}"
        result = await trio.to_thread.run_sync(fn, base, cluster)
        nursery.cancel_scope.cancel()
    return result


async def test_fault_lifecycle():
    def script(base, cluster):
        added = call(base, "POST", "/faults", {"match": {"broker": 1, "api": "Produce", "topic": "t", "client_id": "x"},
                                              "action": {"type": "black_hole"}, "times": 3, "after": 2,
                                              "probability": 0.5, "duration_ms": 1000})
        second = call(base, "POST", "/faults", {"action": {"type": "delay_response", "ms": 20}})
        listed = call(base, "GET", "/faults")["faults"]
        call(base, "DELETE", f"/faults/{added['id']}")
        after_delete = call(base, "GET", "/faults")["faults"]
        cleared = call(base, "DELETE", "/faults")
        return added, second, listed, after_delete, cleared

    added, second, listed, after_delete, cleared = await with_server(script)
    assert added["id"] == 1 and second["id"] == 2
    assert [f["id"] for f in listed] == [1, 2] and listed[0]["action"] == {"type": "black_hole"}
    assert [f["id"] for f in after_delete] == [2]
    assert cleared == {"removed": 1}


@pytest.mark.parametrize("method, path, body, status, field", [
    ("POST", "/faults", {"action": {"type": "delay_request", "ms": -1}}, 400, "action.ms"),
    ("POST", "/faults", {"action": {"type": "black_hole"}, "probability": 2}, 400, "probability"),
    ("POST", "/faults", {"action": "black_hole", "match": {"api": "Nope"}}, 400, "match.api"),
    ("POST", "/faults", [{"action": "black_hole"}, {"action": {"type": "x"}}], 400, "[1].action.type"),
    ("POST", "/brokers/7/stop", None, 404, None),
    ("POST", "/partitions/t/0/leader", {"broker": 9}, 404, "broker"),
    ("POST", "/partitions/nope/0/leader", {"broker": 1}, 404, None),
    ("POST", "/replication", {"topic": "t", "mode": "sideways"}, 400, "mode"),
    ("POST", "/replication", {"topic": "t", "mode": "lag"}, 400, "lag_ms"),
    ("DELETE", "/faults/99", None, 404, None),
    ("GET", "/nowhere", None, 404, None),
    ("PUT", "/faults", None, 405, None),
])
async def test_bad_requests_get_4xx_naming_the_field_and_change_nothing(method, path, body, status, field):
    def script(base, cluster):
        with pytest.raises(ControlError) as info:
            call(base, method, path, body)
        return info.value, cluster

    err, cluster = await with_server(script)
    assert err.status == status
    if field:
        assert err.body["field"] == field
    assert cluster.faults.rules == {} and cluster.calls == []


async def test_malformed_json_is_400():
    def script(base, cluster):
        with socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1]))) as s:
            s.sendall(b"POST /faults HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n{oops")
            return s.recv(4096).decode()

    answer = await with_server(script)
    assert answer.startswith("HTTP/1.1 400") and "malformed JSON" in answer


async def test_cluster_commands_reach_the_cluster():
    def script(base, cluster):
        call(base, "POST", "/brokers/1/stop")
        call(base, "POST", "/brokers/1/start")
        call(base, "POST", "/partitions/t/0/leader", {"broker": 2})
        call(base, "POST", "/replication", {"topic": "t", "partition": 0, "follower": 2, "mode": "lag", "lag_ms": 50})
        return cluster.calls, call(base, "GET", "/cluster")

    calls, described = await with_server(script)
    assert calls == [("stop", 1), ("start", 1), ("leader", "t", 0, 2), ("replication", "t", 0, 2, "lag", 50.0)]
    assert described == {"brokers": [0, 1, 2]}


async def test_trace_endpoint_filters():
    def prepare(cluster):
        cluster.trace.emit("recv", api="Produce", client_id="a")
        cluster.trace.emit("recv", api="Fetch", client_id="b")
        cluster.trace.emit("send", api="Produce", client_id="a")

    def script(base, cluster):
        return (call(base, "GET", "/trace?client_id=a"), call(base, "GET", "/trace?kind=recv&api=Fetch"))

    by_client, fetches = await with_server(script, prepare=prepare)
    assert [e["kind"] for e in by_client] == ["recv", "send"]
    assert [(e["kind"], e["api"]) for e in fetches] == [("recv", "Fetch")]


async def test_token_required_when_configured():
    def script(base, cluster):
        with pytest.raises(ControlError) as info:
            call(base, "GET", "/faults")
        return info.value.status, call(base, "GET", "/faults", token="s3cret")

    status, ok = await with_server(script, token="s3cret")
    assert status == 401 and ok == {"faults": []}


async def test_refuses_non_loopback_bind():
    with pytest.raises(ValueError, match="not loopback"):
        await serve_http(Routes(FakeCluster()), host="0.0.0.0", port=0)
