"""Scale benchmark (not a test): how the emulator's cost grows.

- ``parked``: 10^3, 10^4, 10^5 acks=all produces parked at once in the Produce purgatory of an
  in-process cluster (replication stalled, so none can complete) in **real time**, their
  deadlines spread evenly over --spread seconds, the first --timeout s (at least n/1000 s) after
  parking began, so all are parked before any expires. Reports the resident memory per parked
  produce (RSS growth / n: the request, its handler task, its DelayedProduce and timer, its
  record appended to the log, its trace events), how fast they were parked (the produce handler
  called directly, no connection), and how late each expired after its deadline (p50/p99/max),
  from the purgatory's own expire events.
- ``connections``: 1, 10, 100, 1,000 client connections to `broker-emu serve` (a separate
  process), each sending a Metadata request every --interval seconds (one thread multiplexes
  them with selectors), while a probe connection measures sequential Metadata round trips
  (p50/p99). The 1-connection row is the idle reference.

Run: .venv/bin/python -m benchmarks.scale [--cases parked,connections] [--parked 1000,10000,100000]
     [--connections 1,10,100,1000] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import socket
import statistics
import sys
import threading
import time

import trio
import trio.lowlevel

from benchmarks.broker import start_emulator
from benchmarks.memory import rss_mib
from client.protocol import ApiKey
from client.protocol.codec import decode_response, encode_request
from client.protocol.framing import FrameSplitter
from client.protocol.records import Record, encode_batch


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


# -- parked produces ---------------------------------------------------------------------------
def parked(n: int, timeout_s: float, spread_s: float) -> dict:
    """Park ``n`` acks=all produces at once (real time) and watch them expire."""
    from broker_emu.context import RequestContext
    from broker_emu.handlers.produce import produce
    from broker_emu.runtime import open_cluster
    from broker_emu.trace import Kind
    from client.protocol.wire import Message

    records = encode_batch([Record(b"x" * 100)])
    timeout_s = max(timeout_s, n / 1000)   # every produce is parked before the first deadline
    deadlines: dict[int, float] = {}
    late: list[float] = []
    result: dict = {"parked": n}

    async def main() -> None:
        # stalled followers would leave the ISR after replica.lag.time.max.ms and so complete the
        # produces (acks=all against an ISR of one): keep them in it for the whole run
        async with open_cluster(3, topics=[("t", 1, 3)], listen=False,
                                config={"replica.lag.time.max.ms": 3_600_000}) as cluster:
            cluster.set_replication("t", None, None, "stall")
            p = cluster.partition("t", 0)
            broker = cluster.brokers[p.leader]
            previous = cluster.produce_purgatory.on_event

            def watch(kind, op) -> None:
                if kind == Kind.PURGATORY_ENTER:
                    deadlines[id(op)] = trio.current_time() + op.timeout_s
                elif kind == Kind.PURGATORY_EXPIRE:
                    late.append(trio.current_time() - deadlines.pop(id(op)))
                previous(kind, op)

            cluster.produce_purgatory.on_event = watch
            before = _rss_bytes()
            t0 = time.perf_counter()
            start = trio.current_time()
            async with trio.open_nursery() as nursery:
                for i in range(n):
                    # deadlines absolute: start + timeout .. start + timeout + spread, whenever parked
                    due = start + timeout_s + spread_s * i / n
                    req = Message(acks=-1, timeout_ms=int((due - trio.current_time()) * 1000), topic_data=[
                        Message(name="t", partition_data=[Message(index=0, records=records)])])
                    ctx = RequestContext(cluster, broker, i, "127.0.0.1:1", ApiKey.PRODUCE, 9, i, "scale")
                    nursery.start_soon(produce, ctx, req)
                    if i % 1000 == 999:
                        await trio.lowlevel.checkpoint()   # let the handlers park as they come
                await trio.sleep(0.05)
                result["park_s"] = time.perf_counter() - t0
                result["waiting"] = len(cluster.produce_purgatory)
                result["bytes_per_op"] = (_rss_bytes() - before) / n
            result["expired"] = cluster.produce_purgatory.expired_count
            result["completed_otherwise"] = cluster.produce_purgatory.completed_count

    trio.run(main)
    result.update(late_p50_ms=_pct(late, 0.5) * 1000, late_p99_ms=_pct(late, 0.99) * 1000,
                  late_max_ms=max(late) * 1000 if late else float("nan"))
    return result


# -- many connections --------------------------------------------------------------------------
def _metadata_frame(corr: int) -> bytes:
    return encode_request(ApiKey.METADATA, 12, corr, "scale", {"topics": [{"name": "bench", "topic_id": None}],
                                                              "allow_auto_topic_creation": False,
                                                              "include_topic_authorized_operations": False})


class Load(threading.Thread):
    """``n`` connections, each sending a Metadata request every ``interval`` s and reading the
    answers; one thread, selectors."""

    def __init__(self, address: tuple[str, int], n: int, interval: float):
        super().__init__(daemon=True)
        self.address, self.n, self.interval = address, n, interval
        self.stop = threading.Event()
        self.answers = 0
        self.errors = 0
        self.ready = threading.Event()

    def run(self) -> None:
        sel = selectors.DefaultSelector()
        socks = []
        for _ in range(self.n):
            s = socket.create_connection(self.address)
            s.setblocking(False)
            socks.append(s)
            sel.register(s, selectors.EVENT_READ, FrameSplitter())
        self.ready.set()
        frame = _metadata_frame(1)
        next_send = [time.monotonic() + self.interval * i / self.n for i in range(self.n)]
        try:
            while not self.stop.is_set():
                now = time.monotonic()
                for i, s in enumerate(socks):
                    if next_send[i] <= now:
                        try:
                            s.send(frame)
                        except OSError:
                            self.errors += 1
                        next_send[i] = now + self.interval
                for key, _ in sel.select(timeout=0.005):
                    try:
                        data = key.fileobj.recv(1 << 16)   # type: ignore[union-attr]
                    except OSError:
                        self.errors += 1
                        continue
                    if not data:
                        self.errors += 1
                        sel.unregister(key.fileobj)
                        continue
                    self.answers += len(key.data.feed(data))
        finally:
            for s in socks:
                s.close()


def _probe(address: tuple[str, int], count: int) -> list[float]:
    s = socket.create_connection(address)
    splitter = FrameSplitter()
    rtts = []
    try:
        for i in range(count):
            t0 = time.perf_counter()
            s.sendall(_metadata_frame(i))
            frames: list[bytes] = []
            while not frames:
                frames = splitter.feed(s.recv(1 << 16))
            decode_response(ApiKey.METADATA, 12, frames[0])
            rtts.append((time.perf_counter() - t0) * 1000)
    finally:
        s.close()
    return rtts


def connections(counts: list[int], interval: float, probes: int) -> list[dict]:
    proc, bootstrap = start_emulator()
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    address = (host, int(port))
    rows = []
    try:
        for n in counts:
            load = Load(address, n - 1, interval) if n > 1 else None
            if load is not None:
                load.start()
                load.ready.wait(120)
                time.sleep(max(1.0, interval))   # every connection has sent once
            answers_before = load.answers if load else 0
            t0 = time.perf_counter()
            rtts = _probe(address, probes)
            elapsed = time.perf_counter() - t0
            rate = ((load.answers - answers_before) / elapsed) if load else 0.0
            if load is not None:
                load.stop.set()
                load.join(30)
            rows.append({"connections": n, "p50_ms": statistics.median(rtts), "p99_ms": _pct(rtts, 0.99),
                         "load_answers_per_s": rate, "load_errors": load.errors if load else 0,
                         "rss_mib": rss_mib(proc.pid)})
            r = rows[-1]
            print(f"  {n:>5} connections: metadata p50 {r['p50_ms']:.3f} ms, p99 {r['p99_ms']:.3f} ms; "
                  f"load {rate:,.0f} answers/s, {r['load_errors']} errors; serve RSS {r['rss_mib']:.0f} MiB", flush=True)
    finally:
        proc.terminate()
        proc.wait(10)
    return rows


def _rss_bytes() -> int:
    """This process's resident set (what the operations really cost, allocator included)."""
    return int(rss_mib(os.getpid()) * 1024 * 1024)



def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="parked,connections")
    ap.add_argument("--parked", default="1000,10000,100000")
    ap.add_argument("--timeout", type=float, default=5.0, help="s before the first parked produce expires")
    ap.add_argument("--spread", type=float, default=10.0, help="s over which the parked produces' deadlines spread")
    ap.add_argument("--connections", default="1,10,100,1000")
    ap.add_argument("--interval", type=float, default=1.0, help="s between one connection's Metadata requests")
    ap.add_argument("--probes", type=int, default=2000)
    ap.add_argument("--json")
    args = ap.parse_args()
    out: dict = {"cores": os.cpu_count()}
    cases = args.cases.split(",")
    if "parked" in cases:
        print(f"parked acks=all produces (real time; deadlines {args.timeout}..{args.timeout + args.spread} s):")
        out["parked"] = []
        for n in (int(x) for x in args.parked.split(",")):
            r = parked(n, args.timeout, args.spread)
            out["parked"].append(r)
            print(f"  {n:>7,}: {r['bytes_per_op']:,.0f} B each, parked in {r['park_s']:.2f} s, {r['expired']:,} expired "
                  f"{r['late_p50_ms']:.1f} / {r['late_p99_ms']:.1f} / {r['late_max_ms']:.1f} ms late (p50/p99/max)",
                  flush=True)
    if "connections" in cases:
        print(f"connections, each sending Metadata every {args.interval} s, a probe's sequential Metadata:")
        out["connections"] = connections([int(x) for x in args.connections.split(",")], args.interval, args.probes)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
