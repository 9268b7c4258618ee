"""Memory benchmark (not a test): what hostile or long-lived clients cost `broker-emu serve`.

Each case runs against a fresh `broker-emu serve` process and reads its resident set
(/proc/PID/status VmRSS) before, at the peak, and after the clients went away:

- unread-pipeline: 3 connections pipeline Heartbeats and never read an answer
- long-client-id: 10,000 requests (answers read) with a 32 KB client id
- partial-frames: 4 connections each send an 80 MiB size prefix and 80 MiB - 1 bytes, then close
- soak: a producer and a consumer, --soak-rate 1 KB records/s for --soak-minutes, with a 64 MiB
  log cap (RSS sampled every minute; flat after warm-up is the goal)

Run: .venv/bin/python -m benchmarks.memory [--cases unread-pipeline,long-client-id,...] [--soak-minutes 10]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time

from client.protocol.codec import encode_request

MIB = 1 << 20


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def start(*extra: str) -> tuple[subprocess.Popen, list[tuple[str, int]]]:
    proc = subprocess.Popen([sys.executable, "-m", "broker_emu.cli", "serve", "--brokers", "1", "--topic", "t:1:1",
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("bootstrap="):
        proc.kill()
        raise SystemExit(f"broker-emu serve did not start: {line!r}")
    addrs = [(h, int(p)) for h, p in (a.rsplit(":", 1) for a in line.split("=", 1)[1].split(","))]
    return proc, addrs


def settle(pid: int, seconds: float = 2.0) -> float:
    time.sleep(seconds)
    return rss_mib(pid)


def unread_pipeline(addr, pid: int, seconds: float = 20.0) -> dict:
    body = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
    frame = encode_request(12, 4, 1, "hb", body)
    peak, sent = 0.0, 0
    socks = [socket.create_connection(addr) for _ in range(3)]
    for s in socks:
        s.setblocking(False)
    end = time.monotonic() + seconds
    blob = frame * 256
    while time.monotonic() < end:
        for s in socks:
            try:
                sent += s.send(blob) // len(frame)
            except BlockingIOError:
                pass
        peak = max(peak, rss_mib(pid))
        time.sleep(0.005)
    peak = max(peak, rss_mib(pid))
    for s in socks:
        s.close()
    return {"requests_sent": sent, "peak_mib": peak, "after_close_mib": settle(pid)}


def long_client_id(addr, pid: int, n: int = 10_000) -> dict:
    cid = "c" * 32_000
    s = socket.create_connection(addr)
    peak = 0.0
    for i in range(n):
        s.sendall(encode_request(18, 0, i, cid, {}))
        _read_frame(s)
        if i % 500 == 0:
            peak = max(peak, rss_mib(pid))
    s.close()
    return {"requests": n, "peak_mib": max(peak, rss_mib(pid)), "after_close_mib": settle(pid)}


def partial_frames(addr, pid: int, count: int = 4) -> dict:
    size = 80 * MIB
    peak = 0.0
    chunk = b"\0" * MIB
    socks = []
    for _ in range(count):
        s = socket.create_connection(addr)
        s.sendall(size.to_bytes(4, "big"))
        for _ in range(79):
            s.sendall(chunk)
        s.sendall(chunk[:-1])
        socks.append(s)
        peak = max(peak, rss_mib(pid))
    time.sleep(1)
    peak = max(peak, rss_mib(pid))
    for s in socks:
        s.close()
    return {"connections": count, "peak_mib": peak, "after_close_mib": settle(pid, 3.0)}


def soak(addr, pid: int, minutes: float, rate: float = 2000.0) -> dict:
    from client import Consumer, Producer

    bootstrap = f"{addr[0]}:{addr[1]}"
    stop = threading.Event()
    counts = {"produced": 0, "consumed": 0}

    def produce() -> None:
        with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as p:
            value = os.urandom(1000)
            started = time.monotonic()
            while not stop.is_set():
                futures = [p.send("t", value) for _ in range(200)]
                for f in futures:
                    f.result()
                counts["produced"] += len(futures)
                ahead = counts["produced"] / rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)

    def consume() -> None:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak", "auto.offset.reset": "latest"})
        c.subscribe(["t"])
        while not stop.is_set():
            counts["consumed"] += len(c.poll(0.5))
        c.close(2)

    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    for t in threads:
        t.start()
    samples = []
    start = time.monotonic()
    while time.monotonic() - start < minutes * 60:
        time.sleep(min(60.0, minutes * 60 / 10))
        samples.append((round((time.monotonic() - start) / 60, 2), round(rss_mib(pid), 1)))
        print(f"  soak {samples[-1][0]} min: {samples[-1][1]} MiB, {counts['produced']} produced", file=sys.stderr)
    stop.set()
    for t in threads:
        t.join()
    return {"minutes": minutes, **counts, "rss_mib_by_minute": samples,
            "slope_mib_per_hour_after_warmup": slope_after_warmup(samples)}


def slope_after_warmup(samples: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of RSS over time (MiB per hour), leaving out the first third of the
    samples (warm-up: the retention-bounded log filling to its 64 MiB)."""
    tail = samples[len(samples) // 3:]
    if len(tail) < 2:
        return None
    mx = sum(t for t, _ in tail) / len(tail)
    my = sum(m for _, m in tail) / len(tail)
    var = sum((t - mx) ** 2 for t, _ in tail)
    return round(sum((t - mx) * (m - my) for t, m in tail) / var * 60, 2) if var else None


def _read_frame(s: socket.socket) -> bytes:
    head = _read_exact(s, 4)
    return _read_exact(s, int.from_bytes(head, "big"))


def _read_exact(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        got = s.recv(n - len(buf))
        if not got:
            raise ConnectionError("closed")
        buf += got
    return bytes(buf)


CASES = {
    "unread-pipeline": lambda addr, pid, a: unread_pipeline(addr, pid),
    "long-client-id": lambda addr, pid, a: long_client_id(addr, pid),
    "partial-frames": lambda addr, pid, a: partial_frames(addr, pid),
    "soak": lambda addr, pid, a: soak(addr, pid, a.soak_minutes, a.soak_rate),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="unread-pipeline,long-client-id,partial-frames")
    ap.add_argument("--soak-minutes", type=float, default=10.0)
    ap.add_argument("--soak-rate", type=float, default=2000.0, help="records/s of 1 KB")
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    out = {}
    for name in args.cases.split(","):
        extra = ("--config", "log.retention.bytes=67108864") if name == "soak" else ()
        proc, addrs = start(*extra)
        try:
            base = settle(proc.pid, 1.0)
            figures = CASES[name](addrs[0], proc.pid, args)
            figures["baseline_mib"] = base
            figures["alive"] = proc.poll() is None
            out[name] = figures
            print(f"{name}: {json.dumps(figures)}")
        finally:
            proc.terminate()
            proc.wait(10)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
