"""Consumer benchmark (not a test): our consumer (blocking and async faces) vs aiokafka,
kafka-python and confluent-kafka reading the same records from the same `broker-emu serve` (a
separate process): 100 MB in 10 KB records and 1,000,000 records of 100 B, one partition each;
with --mixed N also N keyed records of 50 to 150 B (8-byte keys), so that no two neighbours need
share a size (our reader takes runs of same-sized records in bulk: this case shows it without).
Every client runs in a fresh process of its own, the clients take turns (--rounds), and the
figure is the median. Prints records/s and MB/s from the first record to the last (start-up:
connections, metadata, the first offsets, is left out for every client) and ratios to ours.

Like with like: every client may fetch up to 4 MB per partition and hand over up to 5,000
records per poll, no group (assigned partitions), no commits.

Run: .venv/bin/python -m benchmarks.consumer [--rounds 3] [--megabytes 100] [--small 1000000]
     [--mixed 500000] [--clients ours,ours-async,aiokafka,kafka-python,confluent-kafka] [--json F] [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from benchmarks.broker import start_emulator

MAX_PARTITION_FETCH = 4_194_304   # the same for every client
MAX_RECORDS = 5000
TOPICS = {10_240: "bench10k", 100: "bench100"}
MIXED_TOPIC = "bench100mixed"


def fill(bootstrap: str, topic: str, size: int, n: int, mixed: bool = False) -> None:
    import random

    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "1", "batch.size": 1_000_000,
                  "message.max.bytes": 1_000_000, "queue.buffering.max.kbytes": 1_048_576})
    rng = random.Random(7)
    payloads = [os.urandom(rng.randint(size // 2, size * 3 // 2) if mixed else size) for _ in range(997)]
    keys = [os.urandom(8) if mixed else None for _ in range(991)]
    for i in range(n):
        while True:
            try:
                p.produce(topic, payloads[i % 997], keys[i % 991], partition=0)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(300):
        raise SystemExit("could not produce the benchmark data")


def _ours(bootstrap: str, topic: str, n: int) -> float:
    import client

    with client.Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                          "max.partition.fetch.bytes": MAX_PARTITION_FETCH, "max.poll.records": MAX_RECORDS}) as c:
        c.assign([(topic, 0)])
        first = []
        while not first:
            first = c.poll(10.0)
        start, got = time.perf_counter(), len(first)
        while got < n:
            got += len(c.poll(1.0))
    return (n - len(first)) / (time.perf_counter() - start)


def _ours_async(bootstrap: str, topic: str, n: int) -> float:
    import trio

    import client

    async def run() -> float:
        async with client.open_consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
                                         "max.partition.fetch.bytes": MAX_PARTITION_FETCH,
                                         "max.poll.records": MAX_RECORDS}) as c:
            c.assign([client.TopicPartition(topic, 0)])
            first: list = []
            while not first:
                first = await c.poll(10.0)
            start, got = time.perf_counter(), len(first)
            while got < n:
                got += len(await c.poll(1.0))
            return (n - len(first)) / (time.perf_counter() - start)

    return trio.run(run)


def _aiokafka(bootstrap: str, topic: str, n: int) -> float:
    import asyncio

    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> float:
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                             max_partition_fetch_bytes=MAX_PARTITION_FETCH, fetch_max_bytes=2 * MAX_PARTITION_FETCH)
        await c.start()
        try:
            c.assign([TopicPartition(topic, 0)])
            first: dict = {}
            while not first:
                first = await c.getmany(timeout_ms=10_000, max_records=MAX_RECORDS)
            head = sum(len(v) for v in first.values())
            start, got = time.perf_counter(), head
            while got < n:
                got += sum(len(v) for v in (await c.getmany(timeout_ms=1000, max_records=MAX_RECORDS)).values())
            return (n - head) / (time.perf_counter() - start)
        finally:
            await c.stop()

    return asyncio.run(run())


def _kafka_python(bootstrap: str, topic: str, n: int) -> float:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                      max_partition_fetch_bytes=MAX_PARTITION_FETCH, fetch_max_bytes=2 * MAX_PARTITION_FETCH)
    try:
        c.assign([TopicPartition(topic, 0)])
        first: dict = {}
        while not first:
            first = c.poll(10_000, max_records=MAX_RECORDS)
        head = sum(len(v) for v in first.values())
        start, got = time.perf_counter(), head
        while got < n:
            got += sum(len(v) for v in c.poll(1000, max_records=MAX_RECORDS).values())
        return (n - head) / (time.perf_counter() - start)
    finally:
        c.close()


def _confluent(bootstrap: str, topic: str, n: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "max.partition.fetch.bytes": MAX_PARTITION_FETCH,
                  # librdkafka pauses 1 s (fetch.queue.backoff.ms) whenever its prefetch queue is full;
                  # with its defaults it read ~47 MB/s here. Tuned so the reference is not handicapped.
                  "fetch.queue.backoff.ms": 10, "queued.max.messages.kbytes": 1_000_000})
    c.assign([TopicPartition(topic, 0, 0)])
    first: list = []   # consume(n, t) waits for n messages or t: ask for few, or the tail costs a whole t
    while not first:
        first = [m for m in c.consume(500, 1.0) if m.error() is None]
    start, got = time.perf_counter(), len(first)
    while got < n:
        got += sum(1 for m in c.consume(500, 1.0) if m.error() is None)
    elapsed = time.perf_counter() - start
    c.close()
    return (n - len(first)) / elapsed


CLIENTS: dict[str, Callable[[str, str, int], float]] = {
    "ours": _ours, "ours-async": _ours_async, "aiokafka": _aiokafka, "kafka-python": _kafka_python,
    "confluent-kafka": _confluent,
}


def run_child(args: list[str], timeout: float = 600) -> float:
    out = subprocess.run([sys.executable, "-m", "benchmarks.consumer", "--child", *args], capture_output=True,
                         text=True, timeout=timeout)
    if out.returncode != 0:
        raise SystemExit(f"{args[0]} failed:\n{out.stderr[-3000:]}")
    return float(json.loads(out.stdout.strip().splitlines()[-1])["records_per_s"])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        what, bootstrap, topic, n = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
        print(json.dumps({"records_per_s": CLIENTS[what](bootstrap, topic, n)}))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--small", type=int, default=1_000_000, help="records of 100 B")
    parser.add_argument("--mixed", type=int, default=0, help="keyed records of 50 to 150 B (0: not run)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--json", help="write the figures here (docs/performance.md reads it)")
    parser.add_argument("--profile", action="store_true",
                        help="profile one more run of ours at 10 KB (the application thread only)")
    args = parser.parse_args()
    clients = args.clients.split(",")
    proc, bootstrap = start_emulator(topics=(*TOPICS.values(), MIXED_TOPIC))
    try:
        # (label, record size, topic, records)
        plan = [(f"{size} B", size, topic, args.megabytes * 1_000_000 // 10_240 if size == 10_240 else args.small)
                for size, topic in TOPICS.items()]
        if args.mixed:
            plan.append(("50 to 150 B, keyed", 100, MIXED_TOPIC, args.mixed))
        for _, size, topic, count in plan:
            fill(bootstrap, topic, size, count, mixed=topic == MIXED_TOPIC)
        print(f"consumer benchmark from broker-emu serve ({os.cpu_count()} cores): "
              + ", ".join(f"{count} records of {label}" for label, _, _, count in plan)
              + f"; median of {args.rounds} rounds")
        cases = []
        for label, size, topic, count in plan:
            runs: dict[str, list[float]] = {c: [] for c in clients}
            for _ in range(args.rounds):
                for c in clients:
                    runs[c].append(run_child([c, bootstrap, topic, str(count)]))
            row = {c: statistics.median(v) for c, v in runs.items()}
            cases.append({"size": size, "label": label, "records_per_s": row})
            base = row.get("ours") or next(iter(row.values()))
            print(label)
            for c in clients:
                print(f"  {c:<16}{row[c]:>12,.0f} rec/s {row[c] * size / 1e6:>8.1f} MB/s   ours/{c}: {base / row[c]:5.2f}x")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"cores": os.cpu_count(), "rounds": args.rounds, "cases": cases}, f, indent=1)
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
            _ours(bootstrap, TOPICS[10_240], plan[0][3])
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(12)
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
