"""Broker benchmark (not a test): the same confluent-kafka producer against (a) `broker-emu
serve` (a separate process) and (b) librdkafka's mock cluster (test.mock.num.brokers=3), in one
run. Prints throughput for 10 KB and 100 B messages with acks=1 and acks=all, and sequential
Metadata round-trip p50/p99, with the ratio emulator/mock for each.

Run: .venv/bin/python -m benchmarks.broker [--seconds-per-case 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from confluent_kafka import Producer

# Like with like: librdkafka's mock keeps 5 MB per partition (mpart->max_size) and reuses that
# memory; the emulator keeps every byte by default (log.retention.bytes -1, one cluster-wide
# budget), and a log that only grows costs a page fault per new page. The benchmark bounds the
# emulator's partition log as the mock bounds its own; --emulator-config overrides it.
EMULATOR_CONFIG = ["log.retention.bytes=268435456"]


def start_emulator(config: list[str] | None = None) -> tuple[subprocess.Popen, str]:
    extra = [arg for kv in (EMULATOR_CONFIG if config is None else config) for arg in ("--config", kv)]
    proc = subprocess.Popen([sys.executable, "-m", "broker_emu.cli", "serve", "--brokers", "3", "--topic", "bench:1:3",
                             *extra], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("bootstrap="):
        proc.kill()
        raise SystemExit(f"broker-emu serve did not start: {line!r}")
    return proc, line.split("=", 1)[1]


def producer_conf(target: str, acks: str) -> dict:
    conf = {"acks": acks, "linger.ms": 5, "batch.size": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
            "queue.buffering.max.messages": 1_000_000, "message.max.bytes": 1_000_000}
    if target == "mock":
        conf["test.mock.num.brokers"] = 3
    else:
        conf["bootstrap.servers"] = target
    return conf


def throughput(target: str, size: int, acks: str, seconds: float) -> tuple[int, float]:
    """Messages delivered and the seconds it took (produce for ``seconds``, then flush)."""
    p = Producer(producer_conf(target, acks))
    p.list_topics("bench", timeout=10)
    payload = os.urandom(size)
    errors = []

    def report(err, msg):
        if err is not None:
            errors.append(err)

    # warm up, then produce for a fixed time
    for _ in range(1000):
        p.produce("bench", payload, partition=0, on_delivery=report)
    p.flush(30)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(1000):
            while True:
                try:
                    p.produce("bench", payload, partition=0, on_delivery=report)
                    break
                except BufferError:
                    p.poll(0.01)
        n += 1000
        p.poll(0)
    p.flush(60)
    elapsed = time.perf_counter() - start
    if errors:
        raise SystemExit(f"{len(errors)} delivery errors against {target}: {errors[0]}")
    return n, elapsed


def interleaved(bootstrap: str, size: int, acks: str, seconds: float, rounds: int = 3) -> tuple[tuple[float, float], ...]:
    """Throughput of the emulator and of the mock, measured in alternating rounds (the same
    machine state for both; one long run each swung ratios by 0.15 between runs)."""
    totals = {bootstrap: [0.0, 0.0], "mock": [0.0, 0.0]}  # messages, seconds
    for _ in range(rounds):
        for target in (bootstrap, "mock"):
            n, elapsed = throughput(target, size, acks, seconds / rounds)
            totals[target][0] += n
            totals[target][1] += elapsed
    return tuple((n / t, n / t * size / 1e6) for n, t in (totals[bootstrap], totals["mock"]))


def metadata_rtts(targets: list[str], rounds: int = 10, per_round: int = 100) -> list[tuple[float, float]]:
    """Sequential Metadata round trips, p50 and p99 per target. The targets take turns in
    rounds so both see the same machine: one target measured after the other swung the
    ratio between 2x and 4x from run to run on a 2-core VM."""
    producers = [Producer(producer_conf(t, "1")) for t in targets]
    for p in producers:
        p.list_topics("bench", timeout=10)
    samples: list[list[float]] = [[] for _ in targets]
    for _ in range(rounds):
        for p, out in zip(producers, samples):
            for _ in range(per_round):
                t0 = time.perf_counter()
                p.list_topics("bench", timeout=10)
                out.append((time.perf_counter() - t0) * 1000)
    results = []
    for out in samples:
        out.sort()
        results.append((statistics.median(out), out[int(0.99 * len(out)) - 1]))
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds-per-case", type=float, default=3.0)
    parser.add_argument("--emulator-config", action="append", metavar="KEY=VALUE",
                        help=f"broker settings of the emulator (default: {' '.join(EMULATOR_CONFIG)})")
    args = parser.parse_args()
    proc, bootstrap = start_emulator(args.emulator_config)
    try:
        print(f"broker benchmark: confluent-kafka producer, linger.ms=5, {os.cpu_count()} cores")
        print(f"{'case':<22}{'broker-emu':>26}{'librdkafka mock':>26}{'ratio':>8}")
        for size in (10_240, 100):
            for acks in ("1", "all"):
                emu, mock = interleaved(bootstrap, size, acks, args.seconds_per_case)
                label = f"{size} B acks={acks}"
                print(f"{label:<22}{emu[0]:>12,.0f} msg/s {emu[1]:>6.1f} MB/s{mock[0]:>12,.0f} msg/s {mock[1]:>6.1f} MB/s{emu[0] / mock[0]:>7.2f}x")
        emu_md, mock_md = metadata_rtts([bootstrap, "mock"])
        print(f"{'metadata p50':<22}{emu_md[0]:>22.3f} ms{mock_md[0]:>23.3f} ms{emu_md[0] / mock_md[0]:>7.2f}x")
        print(f"{'metadata p99':<22}{emu_md[1]:>22.3f} ms{mock_md[1]:>23.3f} ms{emu_md[1] / mock_md[1]:>7.2f}x")
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
