"""Producer benchmark (not a test): our producer (blocking and async faces) vs kafka-python,
aiokafka and confluent-kafka, all into the same `broker-emu serve` (a separate process), in one
run: 100 B and 10 KB, acks=1 (and acks=all with --acks all). Every client runs in a fresh
process of its own, the clients take turns within each case (--rounds), and the figure is the
median of the rounds. Prints msgs/s, MB/s and each client's ratio to ours (blocking face).

Like with like: every client gets linger 5 ms, one partition, a batch of up to 1 MB, a buffer
of 256 MB, no compression, and keeps at most 5,000 sends unconfirmed (the futures it waits on).

Run: .venv/bin/python -m benchmarks.producer [--seconds-per-case 3] [--rounds 3] [--acks 1,all]
     [--clients ours,ours-async,kafka-python,aiokafka,confluent-kafka] [--json F] [--memory]

``--memory`` also reports the bytes each in-flight record costs our producer and kafka-python
(100,000 records of 100 B queued behind a long linger, measured with tracemalloc).
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

TOPIC = "bench"
LINGER_MS = 5
BATCH = 1_000_000
BUFFER = 268_435_456
WINDOW = 5000          # unconfirmed sends a client may have
SIZES = (100, 10_240)


def _blocking_sends(send: Callable[[bytes], object], wait: Callable[[object], object], size: int,
                    seconds: float) -> float:
    """msg/s of ``send`` for ``seconds``, waiting on the oldest futures to keep at most
    2 x WINDOW unconfirmed (the same loop for every blocking client)."""
    payload, n, start = os.urandom(size), 0, time.perf_counter()
    futures: list = []
    while time.perf_counter() - start < seconds:
        futures.append(send(payload))
        n += 1
        if len(futures) >= 2 * WINDOW:
            for f in futures[:WINDOW]:
                wait(f)
            del futures[:WINDOW]
    for f in futures:
        wait(f)
    return n / (time.perf_counter() - start)


def _ours(bootstrap: str, size: int, acks: str, seconds: float) -> float:
    from client import Producer

    with Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": LINGER_MS, "batch.size": BATCH,
                   "buffer.memory": BUFFER, "max.request.size": 2 * BATCH}) as p:
        p.send(TOPIC, b"warm-up", partition=0).result(10)
        return _blocking_sends(lambda v: p.send(TOPIC, v, partition=0), lambda f: f.result(60), size, seconds)


def _ours_async(bootstrap: str, size: int, acks: str, seconds: float) -> float:
    import trio

    import client

    async def run() -> float:
        async with client.open_producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": LINGER_MS,
                                         "batch.size": BATCH, "buffer.memory": BUFFER,
                                         "max.request.size": 2 * BATCH}) as p:
            await (await p.send(TOPIC, b"warm-up", partition=0)).get()
            payload, n, start = os.urandom(size), 0, time.perf_counter()
            futures: list = []
            while time.perf_counter() - start < seconds:
                futures.append(await p.send(TOPIC, payload, partition=0))
                n += 1
                if len(futures) >= 2 * WINDOW:
                    await _settled(futures[:WINDOW])
                    del futures[:WINDOW]
            await _settled(futures)
            return n / (time.perf_counter() - start)

    return trio.run(run)


async def _settled(futures: list) -> None:
    """Wait for each future (awaiting only those not done: in trio every await of a done one is
    still a trip through the scheduler), raising the first error."""
    for f in futures:
        if not f.done():
            await f.wait()
        if f.error is not None:
            raise f.error


def _kafka_python(bootstrap: str, size: int, acks: str, seconds: float) -> float:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, acks=1 if acks == "1" else "all", linger_ms=LINGER_MS,
                      batch_size=BATCH, max_request_size=2 * BATCH)
    try:
        p.send(TOPIC, b"warm-up", partition=0).get(10)
        return _blocking_sends(lambda v: p.send(TOPIC, v, partition=0), lambda f: f.get(60), size, seconds)
    finally:
        p.close(10)


def _aiokafka(bootstrap: str, size: int, acks: str, seconds: float) -> float:
    import asyncio

    from aiokafka import AIOKafkaProducer

    async def run() -> float:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1 if acks == "1" else "all", linger_ms=LINGER_MS,
                             max_batch_size=BATCH, max_request_size=2 * BATCH)
        await p.start()
        try:
            await (await p.send(TOPIC, b"warm-up", partition=0))
            payload, n, start = os.urandom(size), 0, time.perf_counter()
            futures: list = []
            while time.perf_counter() - start < seconds:
                futures.append(await p.send(TOPIC, payload, partition=0))
                n += 1
                if len(futures) >= 2 * WINDOW:
                    await asyncio.gather(*futures[:WINDOW])
                    del futures[:WINDOW]
            await asyncio.gather(*futures)
            return n / (time.perf_counter() - start)
        finally:
            await p.stop()

    return asyncio.run(run())


def _confluent(bootstrap: str, size: int, acks: str, seconds: float) -> float:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": LINGER_MS, "batch.size": BATCH,
                  "message.max.bytes": 2 * BATCH, "queue.buffering.max.kbytes": BUFFER // 1024})
    p.produce(TOPIC, b"warm-up", partition=0)
    p.flush(10)
    payload, n, start = os.urandom(size), 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        try:
            p.produce(TOPIC, payload, partition=0)
            n += 1
        except BufferError:
            p.poll(0.005)
    p.flush(60)
    return n / (time.perf_counter() - start)


CLIENTS: dict[str, Callable[[str, int, str, float], float]] = {
    "ours": _ours, "ours-async": _ours_async, "kafka-python": _kafka_python, "aiokafka": _aiokafka,
    "confluent-kafka": _confluent,
}


def _memory_per_record(client_name: str, bootstrap: str, n: int = 100_000, size: int = 100) -> float:
    """Bytes of Python heap per queued record (none sent: linger 60 s, batches that never fill)."""
    import tracemalloc

    payload = os.urandom(size)
    if client_name == "ours":
        from client import Producer

        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 60_000, "batch.size": 16 * BATCH,
                      "buffer.memory": BUFFER, "max.request.size": 32 * BATCH})
        p.send(TOPIC, b"warm-up", partition=0)
        time.sleep(1.0)
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        futures = [p.send(TOPIC, payload, partition=0) for _ in range(n)]
        time.sleep(0.5)   # the network thread has appended them all
        used = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert len(futures) == n   # (held until measured)
        return used / n   # the child exits without closing (os._exit): nothing needs delivering
    from kafka import KafkaProducer

    kp = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=60_000, batch_size=16 * BATCH,
                       max_request_size=32 * BATCH)
    kp.send(TOPIC, b"warm-up", partition=0)
    time.sleep(1.0)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kfutures = [kp.send(TOPIC, payload, partition=0) for _ in range(n)]
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(kfutures) == n
    return used / n


def _child(argv: list[str]) -> None:
    what, bootstrap = argv[0], argv[1]
    if what == "memory":
        print(json.dumps({"bytes_per_record": _memory_per_record(argv[2], bootstrap)}), flush=True)
        os._exit(0)
    size, acks, seconds = int(argv[2]), argv[3], float(argv[4])
    print(json.dumps({"msgs": CLIENTS[what](bootstrap, size, acks, seconds)}))


def run_child(args: list[str], timeout: float = 300) -> dict:
    out = subprocess.run([sys.executable, "-m", "benchmarks.producer", "--child", *args], capture_output=True,
                         text=True, timeout=timeout)
    if out.returncode != 0:
        raise SystemExit(f"{args[0]} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(bootstrap: str, clients: list[str], cases: list[tuple[int, str]], seconds: float,
            rounds: int) -> dict[tuple[int, str], dict[str, float]]:
    table: dict[tuple[int, str], dict[str, float]] = {}
    for size, acks in cases:
        runs: dict[str, list[float]] = {c: [] for c in clients}
        for _ in range(rounds):
            for c in clients:
                runs[c].append(run_child([c, bootstrap, str(size), acks, str(seconds)])["msgs"])
        table[(size, acks)] = {c: statistics.median(v) for c, v in runs.items()}
        _print_case(size, acks, table[(size, acks)], clients)
    return table


def _print_case(size: int, acks: str, row: dict[str, float], clients: list[str]) -> None:
    base = row.get("ours") or next(iter(row.values()))
    print(f"{size} B acks={acks}")
    for c in clients:
        v = row[c]
        print(f"  {c:<16}{v:>12,.0f} msg/s {v * size / 1e6:>8.1f} MB/s   ours/{c}: {base / v:5.2f}x")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds-per-case", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--acks", default="1")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--memory", action="store_true")
    parser.add_argument("--json", help="write the figures here (docs/performance.md's tables and plots read it)")
    args = parser.parse_args()
    clients = args.clients.split(",")
    cases = [(int(s), a) for s in args.sizes.split(",") for a in args.acks.split(",")]
    proc, bootstrap = start_emulator()
    try:
        print(f"producer benchmark into broker-emu serve ({os.cpu_count()} cores), linger.ms={LINGER_MS}, "
              f"median of {args.rounds} rounds of {args.seconds_per_case} s")
        table = measure(bootstrap, clients, cases, args.seconds_per_case, args.rounds)
        memory = {}
        if args.memory:
            for c in ("ours", "kafka-python"):
                memory[c] = run_child(["memory", bootstrap, c])["bytes_per_record"]
                print(f"memory per queued 100 B record: {c:<14}{memory[c]:>8.0f} B")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"cores": os.cpu_count(), "seconds": args.seconds_per_case, "rounds": args.rounds,
                           "cases": [{"size": s, "acks": a, "msgs": row} for (s, a), row in table.items()],
                           "memory_per_record": memory}, f, indent=1)
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
