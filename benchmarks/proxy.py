"""Proxy benchmark (not a test): what `broker-emu proxy` adds. The same confluent-kafka producer
against the same upstream (`broker-emu serve`, a separate process, or any cluster given with
--upstream), (a) directly and (b) through `broker-emu proxy` (another process), in one run,
taking turns. Prints produce throughput for 100 B and 10 KB messages with acks=1, and
sequential Metadata round-trip p50/p99, with the ratio proxied/direct for each.

Run: .venv/bin/python -m benchmarks.proxy [--seconds-per-case 3] [--upstream HOST:PORT]
(with --upstream, the cluster needs a topic "bench" with partition 0).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from benchmarks.broker import metadata_rtts, start_emulator, throughput


def start_proxy(upstream: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "broker_emu.cli", "proxy", "--upstream", upstream],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("bootstrap="):
        proc.kill()
        raise SystemExit(f"broker-emu proxy did not start: {line!r}")
    return proc, line.split("=", 1)[1]


def interleaved(targets: list[str], size: int, seconds: float, rounds: int = 3) -> list[float]:
    """Messages per second for each target, measured in alternating rounds (the same machine
    state for both)."""
    totals = [[0.0, 0.0] for _ in targets]
    for _ in range(rounds):
        for target, total in zip(targets, totals):
            n, elapsed, _ = throughput(target, size, "1", seconds / rounds)
            total[0] += n
            total[1] += elapsed
    return [n / t for n, t in totals]


def report(seconds: float, direct: str, proxied: str) -> None:
    print(f"proxy benchmark: confluent-kafka producer, linger.ms=5, acks=1, {os.cpu_count()} cores")
    print(f"{'case':<16}{'direct':>22}{'through the proxy':>24}{'ratio':>8}")
    for size in (100, 10_240):
        d, p = interleaved([direct, proxied], size, seconds)
        print(f"{f'{size} B':<16}{d:>12,.0f} msg/s {d * size / 1e6:>5.1f} MB/s"
              f"{p:>12,.0f} msg/s {p * size / 1e6:>5.1f} MB/s{p / d:>7.2f}x")
    (d50, d99), (p50, p99) = metadata_rtts([direct, proxied])
    print(f"{'metadata p50':<16}{d50:>18.3f} ms{p50:>21.3f} ms{p50 / d50:>10.2f}x")
    print(f"{'metadata p99':<16}{d99:>18.3f} ms{p99:>21.3f} ms{p99 / d99:>10.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds-per-case", type=float, default=3.0)
    parser.add_argument("--upstream", help="an existing cluster (default: start `broker-emu serve`, 3 brokers)")
    args = parser.parse_args()
    emulator = None
    if args.upstream:
        upstream = args.upstream
    else:
        emulator, upstream = start_emulator()
    proxy, proxied = start_proxy(upstream)
    try:
        report(args.seconds_per_case, upstream, proxied)
    finally:
        for proc in (proxy, emulator):
            if proc is not None:
                proc.terminate()
                proc.wait(10)


if __name__ == "__main__":
    main()
