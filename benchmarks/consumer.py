"""Consumer benchmark (not a test): our blocking consumer vs confluent-kafka reading the same
data (default 100 MB in 10 KB records, one partition) from the same `broker-emu serve` (a
separate process), in one run, in alternating rounds. Prints MB/s (first record to last) and
the ratio ours/confluent.

Run: .venv/bin/python -m benchmarks.consumer [--megabytes 100] [--rounds 2] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

from benchmarks.broker import start_emulator

RECORD = 10_240
MAX_PARTITION_FETCH = 4_194_304   # the same for both clients


def fill(bootstrap: str, megabytes: int) -> int:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "1", "batch.size": 1_000_000,
                  "message.max.bytes": 1_000_000, "queue.buffering.max.kbytes": 1_048_576})
    payload = os.urandom(RECORD)
    n = megabytes * 1_000_000 // RECORD
    for _ in range(n):
        while True:
            try:
                p.produce("bench", payload, partition=0)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(120):
        raise SystemExit("could not produce the benchmark data")
    return n


def ours(bootstrap: str, n: int) -> float:
    """MB/s from the first record to the last (start-up — connections, metadata, the first
    ListOffsets — is left out for both clients; librdkafka's alone takes ~1 s of timers)."""
    import client

    with client.Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                          "max.partition.fetch.bytes": MAX_PARTITION_FETCH, "max.poll.records": 5000}) as c:
        c.assign([("bench", 0)])
        first = c.poll(10.0)
        start, got = time.perf_counter(), 0
        while got < n - len(first):
            got += len(c.poll(1.0))
    return got * RECORD / (time.perf_counter() - start) / 1e6


def confluent(bootstrap: str, n: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "max.partition.fetch.bytes": MAX_PARTITION_FETCH,
                  # librdkafka pauses 1 s (fetch.queue.backoff.ms) whenever its prefetch queue is full;
                  # with its defaults it read ~47 MB/s here. Tuned so the reference is not handicapped.
                  "fetch.queue.backoff.ms": 10, "queued.max.messages.kbytes": 1_000_000})
    c.assign([TopicPartition("bench", 0, 0)])
    first = []   # consume(n, t) waits for n messages or t: ask for few, or the tail costs a whole t
    while not first:
        first = [m for m in c.consume(500, 1.0) if m.error() is None]
    start, got = time.perf_counter(), 0
    while got < n - len(first):
        got += sum(1 for m in c.consume(500, 1.0) if m.error() is None)
    elapsed = time.perf_counter() - start
    c.close()
    return got * RECORD / elapsed / 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--profile", action="store_true",
                        help="profile one more run of ours (the application thread only: fetches run on the network thread)")
    args = parser.parse_args()
    proc, bootstrap = start_emulator()
    try:
        n = fill(bootstrap, args.megabytes)
        print(f"consumer benchmark: {n} records of {RECORD} B ({n * RECORD / 1e6:.0f} MB), one partition, "
              f"{os.cpu_count()} cores")
        a, b = [], []
        for _ in range(args.rounds):
            a.append(ours(bootstrap, n))
            b.append(confluent(bootstrap, n))
        ours_mb, theirs_mb = sum(a) / len(a), sum(b) / len(b)
        print(f"{'ours':<18}{ours_mb:>10.1f} MB/s   (rounds: {', '.join(f'{x:.0f}' for x in a)})")
        print(f"{'confluent-kafka':<18}{theirs_mb:>10.1f} MB/s   (rounds: {', '.join(f'{x:.0f}' for x in b)})")
        print(f"{'ratio':<18}{ours_mb / theirs_mb:>10.2f}x")
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            ours(bootstrap, n)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(12)
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
