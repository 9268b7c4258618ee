"""The emulator's own share of a round trip (not a test): sequential requests from a client that
costs next to nothing, so what is measured is the broker, not librdkafka's threads.

- ``memory``: in this process, over the in-memory transport (``cluster.connect``): the request
  path without a kernel, steady on a loaded machine, and what ``--profile`` profiles;
- ``socket``: ``broker_emu.cli serve`` in its own process, a blocking loopback socket here (the
  frames pre-encoded with our codec): the path ``benchmarks.round_trips`` takes, less the
  client. ``--pause`` prints the server's pid and waits, to attach ``py-spy record --pid``.

Kinds: ``metadata`` (v12, the one topic), ``produce1`` / ``produceall`` (one 100 B record, v9,
acks=1 / acks=-1, to the leader), ``fetch`` (a Fetch v12 parked with min_bytes=1 at the log end,
woken by an acks=1 Produce on another connection: timed from the Produce sent until the Fetch's
answer is read).

Socket mode also prints the server's CPU time per call (/proc): a client's own costs (this one's
or librdkafka's threads) and the machine's load move the latency, not that.

Run: .venv/bin/python -m benchmarks.server_rtt [--mode memory|socket] [--n 3000]
     [--kinds metadata,produce1,produceall,fetch] [--profile out.prof]
A sampling profile of the server (py-spy, in the test extras): start socket mode with a large
--n and, once it measures, ``py-spy record --pid SERVER_PID --duration 6 --format raw``.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import time
from typing import Any

from client.protocol import ApiKey
from client.protocol.codec import decode_response, encode_request
from client.protocol.records import Record, encode_batch

TOPIC, VALUE = "bench", b"x" * 100
KINDS = ("metadata", "produce1", "produceall", "fetch")
_SIZE = struct.Struct(">i")


def metadata_frame(cid: int) -> bytes:
    return encode_request(ApiKey.METADATA, 12, cid, "rtt", {
        "topics": [{"topic_id": None, "name": TOPIC}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})


def produce_frame(cid: int, acks: int) -> bytes:
    batch = encode_batch([Record(VALUE)], base_timestamp=1_700_000_000_000)
    return encode_request(ApiKey.PRODUCE, 9, cid, "rtt", {
        "transactional_id": None, "acks": acks, "timeout_ms": 30_000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]})


def fetch_frame(cid: int, offset: int) -> bytes:
    return encode_request(ApiKey.FETCH, 12, cid, "rtt", {
        "replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
        "topics": [{"topic": TOPIC, "partitions": [{"partition": 0, "fetch_offset": offset, "log_start_offset": -1,
                                                    "partition_max_bytes": 1 << 20, "current_leader_epoch": -1,
                                                    "last_fetched_epoch": -1}]}]})


def frames_for(kind: str, count: int) -> list[bytes]:
    """The requests of a sequential kind, encoded before the clock starts."""
    if kind == "metadata":
        return [metadata_frame(i) for i in range(count)]
    acks = 1 if kind == "produce1" else -1
    return [produce_frame(i, acks) for i in range(count)]


def summary(kind: str, samples: list[float], cpu_s: float | None = None) -> str:
    samples.sort()
    p50, p99 = statistics.median(samples), samples[int(0.99 * len(samples)) - 1]
    cpu = "" if cpu_s is None else f"   server CPU {cpu_s / len(samples) * 1e6:6.1f} µs a call"
    return f"{kind:<12} p50 {p50 * 1e6:7.1f} µs   p99 {p99 * 1e6:7.1f} µs{cpu}   ({len(samples)} calls)"


# -- in memory ------------------------------------------------------------------------------------
async def _memory(kinds: list[str], n: int, profile: str | None) -> None:
    import trio

    from broker_emu.runtime import open_cluster

    async def call(stream: Any, frame: bytes) -> bytes:
        await stream.send_all(frame)
        return await read_frame(stream)

    async def read_frame(stream: Any) -> bytes:
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + _SIZE.unpack_from(buf)[0]:
            chunk = await stream.receive_some(1 << 16)
            if not chunk:
                raise SystemExit("the broker closed the connection")
            buf += chunk
        return buf

    async with open_cluster(3, topics=[(TOPIC, 1, 3)], listen=False) as cluster:
        leader = cluster.partition(TOPIC, 0).leader
        for kind in kinds:
            stream = cluster.connect(leader)
            samples: list[float] = []
            if kind == "fetch":
                producer = cluster.connect(leader)
                for i in range(n + n // 10):
                    end = cluster.partition(TOPIC, 0).log_end_offset
                    await stream.send_all(fetch_frame(i, end))
                    await trio.lowlevel.checkpoint()   # the Fetch parks
                    await trio.lowlevel.checkpoint()
                    t0 = time.perf_counter()
                    await call(producer, produce_frame(i, 1))
                    await read_frame(stream)
                    if i >= n // 10:
                        samples.append(time.perf_counter() - t0)
            else:
                for i, f in enumerate(frames_for(kind, n + n // 10)):
                    t0 = time.perf_counter()
                    await call(stream, f)
                    if i >= n // 10:
                        samples.append(time.perf_counter() - t0)
            print(summary(kind, samples), flush=True)


def run_memory(kinds: list[str], n: int, profile: str | None) -> None:
    import trio

    if profile is None:
        trio.run(_memory, kinds, n, profile)
        return
    import cProfile

    cProfile.runctx("trio.run(_memory, kinds, n, profile)", globals(), {"trio": trio, "_memory": _memory,
                                                                        "kinds": kinds, "n": n, "profile": profile},
                    profile)


# -- over a socket --------------------------------------------------------------------------------
def _recv_frame(sock: socket.socket) -> bytes:
    head = _recv_exact(sock, 4)
    return head + _recv_exact(sock, _SIZE.unpack(head)[0])


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise SystemExit("the broker closed the connection")
        buf += chunk
    return bytes(buf)


def _connect(address: str) -> socket.socket:
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _leader_and_end(bootstrap: str) -> tuple[str, int]:
    sock = _connect(bootstrap.split(",")[0])
    sock.sendall(metadata_frame(1))
    _, md = decode_response(ApiKey.METADATA, 12, _recv_frame(sock)[4:])
    leader = md.topics[0].partitions[0].leader_id
    broker = next(b for b in md.brokers if b.node_id == leader)
    sock.close()
    return f"{broker.host}:{broker.port}", 0


def run_socket(kinds: list[str], n: int, pause: bool) -> None:
    from benchmarks.broker import _stopper, start_emulator
    from benchmarks.cpu import process_seconds

    proc, bootstrap = start_emulator()
    stop = _stopper(proc)
    try:
        leader, _ = _leader_and_end(bootstrap)
        if pause:
            input(f"server pid {proc.pid}; press enter to start ")
        produced = 0
        for kind in kinds:
            sock = _connect(leader)
            samples: list[float] = []
            cpu0 = process_seconds([proc.pid])
            if kind == "fetch":
                producer = _connect(leader)
                for i in range(n + n // 10):
                    sock.sendall(fetch_frame(i, produced))
                    time.sleep(0.0002)   # the Fetch parks
                    t0 = time.perf_counter()
                    producer.sendall(produce_frame(i, 1))
                    _recv_frame(producer)
                    _recv_frame(sock)
                    produced += 1
                    if i >= n // 10:
                        samples.append(time.perf_counter() - t0)
                producer.close()
            else:
                for i, f in enumerate(frames_for(kind, n + n // 10)):
                    t0 = time.perf_counter()
                    sock.sendall(f)
                    _recv_frame(sock)
                    if i >= n // 10:
                        samples.append(time.perf_counter() - t0)
                if kind != "metadata":
                    produced += n + n // 10
            cpu = (process_seconds([proc.pid]) - cpu0) * n / (n + n // 10)   # less the warm-up's share
            sock.close()
            print(summary(kind, samples, cpu), flush=True)
    finally:
        stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("memory", "socket"), default="memory")
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--profile", help="memory mode: write cProfile's stats here")
    parser.add_argument("--pause", action="store_true", help="socket mode: wait for enter before measuring")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    if args.mode == "memory":
        run_memory(kinds, args.n, args.profile)
    else:
        run_socket(kinds, args.n, args.pause)


if __name__ == "__main__":
    main()
