"""Bad input is contained: while confluent-kafka keeps producing, other connections send garbage,
absurd length prefixes and truncated frames. The server stays up, the good client is unaffected,
each bad connection is closed, and memory stays bounded."""

import os
import socket
import threading
import time
import tracemalloc

import pytest

from tests.realclients.conftest import require_client

pytestmark = pytest.mark.realclient


def attack(host: str, port: int, stop: threading.Event, closed: list) -> None:
    payloads = [
        # garbage whose length prefix is out of range (a random one is a plausible size 2.4 % of the
        # time, for which Kafka too waits for the rest of the frame: that made this test flaky)
        b"\x80" + os.urandom(63),
        (2**31 - 1).to_bytes(4, "big") + b"x" * 100,              # 2 GiB claimed
        (50_000_000).to_bytes(4, "big") + b"y" * 1000,            # 50 MB claimed, then the sender vanishes
        b"\x00\x00\x00\x20" + b"\x00\x03\x00\x0c" + b"\x00" * 6,  # truncated Metadata frame
        b"\x00\x00\x00\x0a" + b"\x00\x63\x00\x00\x00\x00\x00\x01\xff\xff",  # unknown API key 99
    ]
    i = 0
    while not stop.is_set():
        with socket.create_connection((host, port)) as s:
            s.settimeout(2)
            s.sendall(payloads[i % len(payloads)])
            if i % len(payloads) in (0, 1, 4):
                try:
                    closed.append(s.recv(10) == b"")  # the broker closes the connection
                except (socket.timeout, ConnectionResetError):
                    closed.append(False)
        i += 1


# alone: the attacker gives the broker 2 s (real time) to close each bad connection; beside four
# test workers on two cores one close once took longer (CI, 2026-11-28: 11 closed, one timed out)
@pytest.mark.alone
def test_garbage_on_other_connections_does_not_disturb_a_producer(cluster):
    require_client("confluent-kafka")
    from confluent_kafka import Producer

    tracemalloc.start()
    host, port = cluster.bootstrap.split(",")[0].rsplit(":", 1)
    stop, closed = threading.Event(), []
    attacker = threading.Thread(target=attack, args=(host, int(port), stop, closed), daemon=True)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 1})
    delivered = []
    p.produce("t", b"warm-up", partition=0, on_delivery=lambda e, m: delivered.append(e))
    p.flush(10)
    baseline = tracemalloc.get_traced_memory()[0]
    attacker.start()
    # at least 4 s, and until ten bad connections were closed under it (how many fit in 4 s is
    # the machine's load: 8 on a busy CI machine)
    start = time.time()
    sent = 0
    while time.time() < start + 4 or (len(closed) < 10 and time.time() < start + 60):
        p.produce("t", b"v" * 100, partition=sent % 3, on_delivery=lambda e, m: delivered.append(e))
        sent += 1
        p.poll(0.001)
    assert p.flush(20) == 0
    stop.set()
    attacker.join(10)
    grown = tracemalloc.get_traced_memory()[0] - baseline
    tracemalloc.stop()
    print(f"delivered {len(delivered)} records during the attack; {len(closed)} bad connections closed; traced memory grew {grown / 1e6:.1f} MB")
    assert len(delivered) == sent + 1 and all(e is None for e in delivered)
    assert len(closed) >= 10 and all(closed)
    reasons = cluster.call(lambda: [e.details.get("reason", "") for e in cluster.cluster.trace.events
                                    if e.kind == "conn_close" and e.details.get("closed_by") == "broker"])
    assert any("socket.request.max.bytes" in r for r in reasons) and any("unsupported API key 99" in r for r in reasons)
    assert grown < 64 * 1024 * 1024, f"memory grew by {grown / 1e6:.1f} MB"  # no allocation by claimed sizes
