"""Helpers for the control-plane tests: a real ``broker-emu serve`` process, raw HTTP to its
control API, and a Kafka probe over TCP (the process must still serve Kafka after abuse)."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
from collections import Counter
from typing import Any

from client.protocol.codec import decode_response, encode_request
from client.protocol.framing import FrameSplitter
from client.protocol.records import Record, encode_batch
from tests import ROOT as CHECKOUT

ROOT = str(CHECKOUT)


class Served:
    """``broker-emu serve --control-port 0`` as a child process: the emulator's own command
    (``broker_emu.cli``) unless ``module`` names another, e.g. ``conformance.main`` (the full
    ``broker-emu`` command, which adds the playground's scenarios)."""

    def __init__(self, *args: str, topic: str = "t:3:3", module: str = "broker_emu.cli"):
        self.proc = subprocess.Popen([sys.executable, "-m", module, "serve", "--brokers", "3", "--port", "0",
                                      "--topic", topic, "--control-port", "0", *args],
                                     cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        boot = self.proc.stdout.readline().strip()
        control = self.proc.stdout.readline().strip()
        if not boot.startswith("bootstrap=") or not control.startswith("control="):
            self.stop()
            raise RuntimeError(f"serve did not start: {boot!r} {control!r} {self.proc.stderr.read()}")
        self.bootstrap = [(h, int(p)) for h, p in (a.rsplit(":", 1) for a in boot.removeprefix("bootstrap=").split(","))]
        self.control = control.removeprefix("control=")
        self.port = int(self.control.rsplit(":", 1)[1])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> str:
        """Stop the process; return its stderr."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            _, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err

    def __enter__(self) -> "Served":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def next_lines(proc: subprocess.Popen, n: int, timeout: float = 10) -> list[str]:
    """The next ``n`` lines a child process prints (fewer if it prints no more within ``timeout``)."""
    lines: list[str] = []

    def read() -> None:
        for _ in range(n):
            lines.append(proc.stdout.readline().strip())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    return list(lines)


def strict_json(text: str) -> Any:
    """json.loads that refuses NaN and Infinity: what a browser or jq would accept."""
    def refuse(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


def http_call(port: int, method: str, path: str, body: bytes | str | Any = None, *,
              headers: dict[str, str] | None = None, json_body: bool = True) -> tuple[int, Any]:
    """One request; answers (status, parsed JSON body or text). ``body`` that is not bytes/str is
    encoded with json.dumps (which writes NaN and Infinity as Python does)."""
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode()
    hdrs = {"Content-Type": "application/json"} if body is not None and json_body else {}
    hdrs.update(headers or {})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        text = resp.read().decode()
        if resp.getheader("Content-Type", "").startswith("application/json"):
            return resp.status, strict_json(text)
        return resp.status, text
    finally:
        conn.close()


def raw_http(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out


def _kafka_call(addr: tuple[str, int], api: int, version: int, body: dict, timeout: float = 20) -> Any:
    with socket.create_connection(addr, timeout=timeout) as s:
        s.sendall(encode_request(api, version, 1, "control-tests", body))
        splitter, frames = FrameSplitter(), []
        while not frames:
            data = s.recv(1 << 20)
            if not data:
                raise EOFError(f"broker {addr} closed the connection")
            frames = splitter.feed(data)
        return decode_response(api, version, frames[0])[1]


def kafka_produce(served: Served, topic: str = "t", partition: int = 0, acks: int = -1) -> int:
    """Metadata from the first broker, then one record to the partition leader; the error code."""
    meta = _kafka_call(served.bootstrap[0], 3, 9, {"topics": [{"name": topic}], "allow_auto_topic_creation": False,
                                                   "include_topic_authorized_operations": False})
    brokers = {b.node_id: (b.host, b.port) for b in meta.brokers}
    leader = next(p.leader_id for t in meta.topics if t.name == topic for p in t.partitions if p.partition_index == partition)
    records = encode_batch([Record(b"still here", timestamp=1000)])
    answer = _kafka_call(brokers[leader], 0, 9, {"acks": acks, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": records}]}]})
    return answer.responses[0].partition_responses[0].error_code


def kafka_poke(served: Served, timeout: float = 1.0) -> Counter:
    """ApiVersions, Metadata and an acks=1 Produce to every broker, tolerating whatever faults
    are in force (black holes, closes, refused connections, long delays); how each one ended."""
    outcomes: Counter = Counter()
    records = encode_batch([Record(b"poke", timestamp=1000)])
    calls = [(18, 3, {"client_software_name": "t", "client_software_version": "1"}),
             (3, 9, {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}),
             (0, 9, {"acks": 1, "timeout_ms": 500, "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": records}]}]})]
    for addr in served.bootstrap:
        for api, version, body in calls:
            try:
                _kafka_call(addr, api, version, body, timeout)
                outcomes["answered"] += 1
            except (OSError, EOFError) as exc:
                outcomes[type(exc).__name__] += 1
    return outcomes
