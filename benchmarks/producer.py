"""Producer benchmark (not a test): our blocking producer vs confluent-kafka, both into the same
`broker-emu serve` (a separate process), in one run: 100 B and 10 KB, acks=1 and acks=all.
Prints msgs/s, MB/s and the ratio ours/confluent.

Run: .venv/bin/python -m benchmarks.producer [--seconds-per-case 3]
"""

from __future__ import annotations

import argparse
import os
import time

from benchmarks.broker import start_emulator


def confluent(bootstrap: str, size: int, acks: str, seconds: float) -> float:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, "message.max.bytes": 1_000_000,
                  "queue.buffering.max.kbytes": 1_048_576})
    p.list_topics("bench", timeout=10)
    payload, n, start = os.urandom(size), 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        try:
            p.produce("bench", payload, partition=0)
            n += 1
        except BufferError:
            p.poll(0.005)
    p.flush(60)
    return n / (time.perf_counter() - start)


def ours(bootstrap: str, size: int, acks: str, seconds: float) -> float:
    from client import Producer

    with Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, "batch.size": 1_000_000}) as p:
        p.send("bench", b"warm-up", partition=0).result(10)
        payload, n, start = os.urandom(size), 0, time.perf_counter()
        futures = []
        while time.perf_counter() - start < seconds:
            futures.append(p.send("bench", payload, partition=0))
            n += 1
            if len(futures) >= 5000:
                futures.pop(0).result(60)
        for f in futures:
            f.result(60)
        return n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds-per-case", type=float, default=3.0)
    args = parser.parse_args()
    proc, bootstrap = start_emulator()
    try:
        print(f"producer benchmark into broker-emu serve, linger.ms=5, {os.cpu_count()} cores")
        print(f"{'case':<20}{'ours':>24}{'confluent-kafka':>26}{'ratio':>8}")
        for size in (100, 10_240):
            for acks in ("1", "all"):
                a = ours(bootstrap, size, acks, args.seconds_per_case)
                b = confluent(bootstrap, size, acks, args.seconds_per_case)
                label = f"{size} B acks={acks}"
                print(f"{label:<20}{a:>12,.0f} msg/s {a * size / 1e6:>5.1f} MB/s{b:>12,.0f} msg/s {b * size / 1e6:>6.1f} MB/s{a / b:>7.2f}x")
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
