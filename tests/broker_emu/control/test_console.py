"""The console's routes without a browser: its files, the snapshot (what each view reads), the
event stream, and the token rule (the files are public, the data is not)."""

from __future__ import annotations

import http.client
import json
import socket

from .serve import Served, http_call, kafka_produce


def _events(port: int, n: int, path: str = "/console/events?interval_ms=100", headers=None) -> list[tuple[str, dict]]:
    """The first ``n`` server-sent events of the stream."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request("GET", path, headers=headers or {})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type") == "text/event-stream"
    out, block = [], []
    while len(out) < n:
        line = resp.fp.readline().decode()
        if line.strip():
            block.append(line.strip())
            continue
        fields = dict(b.split(": ", 1) for b in block)
        out.append((fields["event"], json.loads(fields["data"])))
        block = []
    conn.close()
    return out


def test_the_page_and_its_files_are_served_and_unknown_files_are_404():
    with Served() as s:
        status, page = http_call(s.port, "GET", "/console")
        assert status == 200 and '<script src="/console/console.js">' in page
        status, script = http_call(s.port, "GET", "/console/console.js")
        assert status == 200 and "/console/events" in script
        assert http_call(s.port, "GET", "/console/console.css")[0] == 200
        status, body = http_call(s.port, "GET", "/console/secrets.txt")
        assert status == 404 and body["field"] == "name"


def test_the_snapshot_has_each_views_data():
    with Served(topic="t:2:3") as s:
        assert kafka_produce(s, "t", 0) == 0
        status, state = http_call(s.port, "GET", "/console/state")
    assert status == 200
    assert [b["id"] for b in state["brokers"]] == [0, 1, 2] and all(b["alive"] for b in state["brokers"])
    assert [(p["partition"], len(p["isr"])) for p in state["topics"][0]["partitions"]] == [(0, 3), (1, 3)]
    assert state["purgatory_ops"] == [] and state["faults"] == [] and state["groups"] == []
    assert isinstance(state["connections"], list) and state["now_ms"] > 0


def test_the_stream_starts_with_a_snapshot_then_carries_trace_events_as_they_happen():
    with Served() as s:
        # a Kafka request after the stream is open must arrive as a trace event
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=20)
        conn.request("GET", "/console/events?interval_ms=5000")
        resp = conn.getresponse()
        first = resp.fp.readline().decode()
        assert first == "event: state\n"
        resp.fp.readline(), resp.fp.readline()
        assert kafka_produce(s, "t", 0) == 0
        kinds = []
        while "send" not in kinds:
            line = resp.fp.readline().decode()
            if line.startswith("data: ") and '"events"' in line:
                kinds += [e["kind"] for e in json.loads(line[6:])["events"]]
        conn.close()
        assert "conn_open" in kinds and "recv" in kinds
        assert http_call(s.port, "GET", "/cluster")[0] == 200      # the server is fine after the client left
        assert http_call(s.port, "GET", "/console/events?interval_ms=5")[0] == 400


def test_with_a_token_the_files_are_public_and_the_data_is_not():
    with Served("--token", "s3cret") as s:
        assert http_call(s.port, "GET", "/console")[0] == 200
        assert http_call(s.port, "GET", "/console/console.js")[0] == 200
        assert http_call(s.port, "GET", "/console/state")[0] == 401
        assert http_call(s.port, "GET", "/console/state", headers={"Authorization": "Bearer s3cret"})[0] == 200
        raw = socket.create_connection(("127.0.0.1", s.port))
        raw.sendall(b"GET /console/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert raw.recv(100).startswith(b"HTTP/1.1 401")
        raw.close()
        (kind, state), = _events(s.port, 1, headers={"Authorization": "Bearer s3cret"})
        assert kind == "state" and len(state["brokers"]) == 3


def test_an_open_transaction_shows_with_the_time_left_before_its_timeout():
    import client
    from broker_emu.control.console_state import console_state
    from broker_emu.runtime import run_cluster_in_thread

    with run_cluster_in_thread(brokers=3, topics=[("t", 1, 3)]) as tc:
        with client.Producer({"bootstrap.servers": tc.bootstrap, "transactional.id": "tx-1",
                              "transaction.timeout.ms": 60000}) as p:
            p.init_transactions(20)
            p.begin_transaction()
            p.send("t", b"in the transaction", partition=0).result(20)
            (txn,) = tc.call(lambda: console_state(tc.cluster))["transactions"]
            p.abort_transaction(20)
    assert (txn["transactional_id"], txn["state"], txn["partitions"]) == ("tx-1", "Ongoing", ["t-0"])
    assert 50_000 < txn["left_ms"] <= 60_000


def test_a_throttled_connection_shows_how_long_it_stays_muted():
    import time

    from client.protocol.codec import encode_request
    from client.protocol.records import Record, encode_batch

    with Served() as s:
        assert http_call(s.port, "POST", "/faults", {"match": {"api": "Produce"},
                                                     "action": {"type": "throttle", "ms": 30000}})[0] == 201
        kafka = socket.create_connection(s.bootstrap[0])   # stays open: the mute is this connection's
        kafka.sendall(encode_request(0, 9, 1, "throttled", {"acks": 1, "timeout_ms": 1000, "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": encode_batch([Record(b"x")])}]}]}))
        assert kafka.recv(4)                               # answered (with throttle_time_ms), then muted
        muted: list = []
        for _ in range(100):
            _, state = http_call(s.port, "GET", "/console/state")
            muted = [c["throttled_ms_left"] for c in state["connections"] if c["client_id"] == "throttled"]
            if muted and muted[0] > 0:
                break
            time.sleep(0.1)
        kafka.close()
        assert muted and 20_000 < muted[0] <= 30_000
