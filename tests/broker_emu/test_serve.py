"""Starting the emulator for real (real time, loopback TCP): the CLI, the threaded form, and a
smoke test with confluent-kafka when it is installed (the real-client suite is tests/realclients)."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import trio

from broker_emu.runtime import open_cluster, run_cluster_in_thread
from client.protocol.codec import decode_response, encode_request
from client.protocol.framing import FrameSplitter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def api_versions_over_tcp(host: str, port: int) -> int:
    """Send ApiVersions v3 on a fresh TCP connection; return the error code."""
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(encode_request(18, 3, 1, "t", {"client_software_name": "t", "client_software_version": "1"}))
        splitter, frames = FrameSplitter(), []
        while not frames:
            data = s.recv(65536)
            assert data, "the broker closed the connection"
            frames = splitter.feed(data)
        return decode_response(18, 3, frames[0])[1].error_code


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_serve_prints_bootstrap_serves_and_stops_on_signal(sig):
    with subprocess.Popen([sys.executable, "-m", "broker_emu.cli", "serve", "--brokers", "3", "--port", "0",
                           "--topic", "orders:3:2"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        try:
            line = proc.stdout.readline().strip()
            assert line.startswith("bootstrap="), (line, proc.stderr.read() if proc.poll() is not None else "")
            addresses = line.removeprefix("bootstrap=").split(",")
            assert len(addresses) == 3 and all(a.startswith("127.0.0.1:") for a in addresses)
            for a in addresses:
                assert api_versions_over_tcp("127.0.0.1", int(a.rsplit(":", 1)[1])) == 0
            proc.send_signal(sig)
            assert proc.wait(timeout=15) == 0
            assert [line for line in proc.stderr.read().splitlines() if not line.startswith("note: ")] == []   # a clean stop
        finally:
            if proc.poll() is None:
                proc.kill()


@contextlib.contextmanager
def serving(*args: str, lines: int):
    """``broker-emu serve ARGS`` in a subprocess: its first ``lines`` lines of KEY=VALUE pairs as a
    dict; on the way out it must stop cleanly on SIGTERM (killed if it did not)."""
    with subprocess.Popen([sys.executable, "-m", "broker_emu.cli", "serve", *args], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        try:
            yield dict(part.split("=", 1) for _ in range(lines) for part in proc.stdout.readline().split())
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=15) == 0
        finally:
            if proc.poll() is None:
                proc.kill()


def tls_api_versions_answered(port: int, context) -> bool:
    """Whether an ApiVersions v0 over TLS on ``port`` gets an answer (a refused client
    certificate shows as an alert or a reset after the TLS 1.3 handshake)."""
    import ssl

    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as s:
        s.sendall(encode_request(18, 0, 1, "t", {}))
        try:
            return len(s.recv(4)) == 4
        except (ssl.SSLError, ConnectionResetError):
            return False


def test_serve_with_client_certificates_prints_them_and_requires_one():
    """``--client-cert NAME``: the CA's certificate for NAME is written and printed; a TLS client
    with it is answered, one without it is refused in the handshake."""
    import ssl

    with serving("--brokers", "1", "--listener", "SSL://127.0.0.1:0", "--client-cert", "alice", lines=4) as lines:
        port = int(lines["bootstrap"].rsplit(":", 1)[1])
        context = ssl.create_default_context(cafile=lines["ca"])
        context.load_cert_chain(lines["client.cert.alice"], lines["client.key.alice"])
        assert tls_api_versions_answered(port, context)
        assert not tls_api_versions_answered(port, ssl.create_default_context(cafile=lines["ca"]))


def test_serve_with_two_listeners_prints_both():
    """``--listener PLAINTEXT://… --listener SSL://…``: each broker serves both; the second's
    bootstrap is printed as bootstrap.SSL and speaks TLS, the first plaintext."""
    import ssl

    with serving("--brokers", "2", "--listener", "PLAINTEXT://127.0.0.1:0", "--listener", "SSL://127.0.0.1:0",
                 lines=3) as lines:
        assert set(lines) == {"bootstrap", "bootstrap.SSL", "ca"}, lines
        plain = [int(a.rsplit(":", 1)[1]) for a in lines["bootstrap"].split(",")]
        secured = [int(a.rsplit(":", 1)[1]) for a in lines["bootstrap.SSL"].split(",")]
        assert len(set(plain + secured)) == 4
        assert all(api_versions_over_tcp("127.0.0.1", port) == 0 for port in plain)
        context = ssl.create_default_context(cafile=lines["ca"])
        assert all(tls_api_versions_answered(port, context) for port in secured)


def test_serve_rejects_a_bad_topic_spec():
    out = subprocess.run([sys.executable, "-m", "broker_emu.cli", "serve", "--topic", "a:b:c:d"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "NAME[:PARTITIONS[:RF]]" in out.stderr


def free_port_run(n: int) -> int:
    """A first port P with P..P+n-1 all free right now."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n > 65535:
            continue
        probes = []
        try:
            for p in range(base, base + n):
                probe = socket.socket()
                probes.append(probe)
                probe.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for probe in probes:
                probe.close()
    pytest.skip("no run of free ports found")


async def test_fixed_port_means_consecutive_ports():
    base = free_port_run(3)
    async with open_cluster(3, port=base) as cluster:
        assert cluster.bootstrap == f"127.0.0.1:{base},127.0.0.1:{base + 1},127.0.0.1:{base + 2}"
        assert await trio.to_thread.run_sync(api_versions_over_tcp, "127.0.0.1", base + 2) == 0


def test_threaded_cluster_serves_blocking_code():
    with run_cluster_in_thread(brokers=2, topics=[("t", 2, 2)]) as tc:
        host, port = tc.bootstrap.split(",")[1].rsplit(":", 1)
        assert api_versions_over_tcp(host, int(port)) == 0
        assert tc.call(lambda: [p.leader for p in tc.cluster.topics["t"].partitions]) != []


@pytest.mark.realclient
def test_confluent_kafka_smoke_acks_all_and_read_back():
    ck = pytest.importorskip("confluent_kafka")
    with run_cluster_in_thread(brokers=3, topics=[("smoke", 3, 3)]) as tc:
        producer = ck.Producer({"bootstrap.servers": tc.bootstrap, "acks": "all", "enable.idempotence": True,
                                "linger.ms": 5})
        delivered = []
        for i in range(30):
            producer.produce("smoke", value=b"v%d" % i, partition=i % 3,
                             on_delivery=lambda err, msg: delivered.append((err, msg.partition(), msg.offset())))
        assert producer.flush(30) == 0
        assert [e for e, _, _ in delivered] == [None] * 30
        assert sorted(o for _, p, o in delivered if p == 0) == list(range(10))
        consumer = ck.Consumer({"bootstrap.servers": tc.bootstrap, "group.id": "smoke", "enable.auto.commit": False})
        try:
            consumer.assign([ck.TopicPartition("smoke", p, 0) for p in range(3)])
            got, deadline = [], time.monotonic() + 30
            while len(got) < 30 and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    got.append(msg.value())
            assert sorted(got) == sorted(b"v%d" % i for i in range(30))
            low, high = consumer.get_watermark_offsets(ck.TopicPartition("smoke", 1), timeout=10)
            assert (low, high) == (0, 10)
        finally:
            consumer.close()
        assert tc.call(lambda: tc.cluster.partition("smoke", 0).high_watermark) == 10
