"""An empty partition's Fetch waits max_wait_ms, no more, on Apache Kafka and on the emulator alike
(docs/differences.md, difference 7: the 208-271 ms waits once seen on Kafka are not a floor on short
waits). Real time, one connection, a fetch session as our client and the Java client use."""

from __future__ import annotations

import socket
import statistics
import struct
import time

import pytest

from broker_emu.runtime import run_cluster_in_thread
from client.protocol import ApiKey
from client.protocol.codec import decode_response, encode_request
from conformance.realkafka.wire import metadata

pytestmark = pytest.mark.realkafka
WAITS_MS = [17] * 5 + [100] * 3 + [5] * 3


def _read(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "the broker closed the connection"
        data += chunk
    return bytes(data)


def fetch_times(bootstrap: str, topic: str, version: int) -> dict[int, list[float]]:
    """Each max_wait_ms of WAITS_MS → the answer times (ms) of empty Fetches of partition 0."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    topic_id = metadata(host, int(port), [topic]).topics[0].topic_id
    times: dict[int, list[float]] = {}
    session_id, epoch = 0, 0
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        for corr, wait in enumerate(WAITS_MS, 1):
            body = {"replica_id": -1, "max_wait_ms": wait, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                    "session_id": session_id, "session_epoch": epoch, "forgotten_topics_data": [], "rack_id": "",
                    "topics": [{"topic": topic, "topic_id": topic_id, "partitions": [
                        {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                         "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}
            t0 = time.perf_counter()
            sock.sendall(encode_request(ApiKey.FETCH, version, corr, "fetch-wait", body))
            _, answer = decode_response(ApiKey.FETCH, version, _read(sock, struct.unpack(">i", _read(sock, 4))[0]))
            times.setdefault(wait, []).append((time.perf_counter() - t0) * 1000)
            assert answer.error_code == 0
            # an incremental session's answer leaves out partitions with nothing new
            assert all(p.records in (None, b"") for t in answer.responses for p in t.partitions)
            session_id, epoch = answer.session_id, epoch + 1
    return times


def assert_waits(times: dict[int, list[float]], who: str) -> None:
    for wait, got in times.items():
        p50 = statistics.median(got)
        # the median answer comes at max_wait_ms, give or take scheduling (2 shared cores)
        assert wait * 0.9 <= p50 <= wait + 60, f"{who}: max_wait_ms {wait}: answers after {[round(t) for t in got]} ms"


@pytest.mark.parametrize("version", [12, 16])
def test_an_empty_fetch_is_answered_at_max_wait_on_kafka_and_on_the_emulator(kafka1, version):
    topic = f"fetch-wait-{version}"
    kafka1.create_topic(topic, 1)
    on_kafka = fetch_times(kafka1.bootstrap, topic, version)
    with run_cluster_in_thread(brokers=1, topics=[(topic, 1, 1)]) as emu:
        on_emulator = fetch_times(emu.bootstrap, topic, version)
    assert_waits(on_kafka, "Kafka")
    assert_waits(on_emulator, "emulator")
    for wait in on_kafka:
        gap = abs(statistics.median(on_kafka[wait]) - statistics.median(on_emulator[wait]))
        assert gap < 40, f"max_wait_ms {wait}: Kafka {on_kafka[wait]} vs emulator {on_emulator[wait]}"
