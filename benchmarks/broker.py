"""Broker benchmark (not a test): the same confluent-kafka producer against several brokers in
one run, side by side: (a) `broker-emu serve` (a separate process), (b) librdkafka's mock
cluster (test.mock.num.brokers=3, inside the producer), (c) franz-go's kfake (a Go program,
adapters/go/kfake in the cache, built by dev/build-adapters/go), (d) Apache Kafka 4.4.0 itself
(conformance/realkafka, installed by dev/install-kafka). Every target has 3 brokers and a
topic "bench" with one partition. Prints throughput for 10 KB and 100 B messages with acks=1 and
acks=all, the CPU each broker and the client used meanwhile (benchmarks/cpu.py), and the p50/p99
of sequential round trips — Metadata, and one record produced and flushed — each with its ratio
to the first target (the emulator unless --targets says otherwise).

Run: .venv/bin/python -m benchmarks.broker [--targets emulator,mock,kfake,kafka] [--seconds-per-case 3]
     [--rounds 3] [--emulator-config KEY=VALUE ...]
Before and after a change, in one run:
     git worktree add /tmp/before HEAD~1
     .venv/bin/python -m benchmarks.broker --targets emulator,emulator-before,mock --before /tmp/before

The targets take turns within each case (rounds), so all of them see the same machine state.
A target that is not available here (kfake not built, no Java) is left out with its reason,
unless it was named with --targets. Another broker is one function registered with
``@target("name")`` that starts it and returns a ``Target``. "time to ready" is from starting the
target to its first Metadata answer.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from benchmarks.cpu import CpuMeter, CpuUse
from benchmarks.round_trips import metadata_rtts, produce_rtts, producer_conf
from conformance.cache_dir import cache_dir

# Like with like: librdkafka's mock keeps 5 MB per partition (mpart->max_size) and reuses that
# memory; the emulator keeps every byte by default (log.retention.bytes -1, one cluster-wide
# budget), and a log that only grows costs a page fault per new page. The benchmark bounds the
# emulator's partition log as the mock bounds its own, at the same 5 MiB (it was 256 MiB until
# session 16: memory reused after 256 MB is out of every cache, 5-7 % of serve's CPU at 10 KB);
# --emulator-config overrides it. kfake keeps every batch in memory (no retention): see docs/kfake.md.
EMULATOR_CONFIG = ["log.retention.bytes=5242880"]


def kfake_binary() -> Path:
    """franz-go's kfake, where dev/build-adapters/go puts it: in the cache (conformance/cache_dir.py)."""
    return cache_dir("adapters", "go", "kfake")


CASES = ((10_240, "1"), (10_240, "all"), (100, "1"), (100, "all"))


# -- targets -------------------------------------------------------------------------------------
@dataclass
class Target:
    """A broker to measure: ``address`` is a bootstrap list, or "mock" for librdkafka's mock."""

    key: str
    label: str                                   # the column's title
    address: str
    stop: Callable[[], None] = field(default=lambda: None)
    ready_s: float | None = None                 # from start to bootstrap answering (None: in-process mock)
    pids: list[int] = field(default_factory=list)  # the broker's processes (benchmarks/cpu.py) ...
    threads: str | None = None                   # ... or this process's threads named so (the mock)


class TargetUnavailable(Exception):
    """The target cannot run here (the reason is the message)."""


TargetStarter = Callable[[argparse.Namespace], Target]
TARGETS: dict[str, TargetStarter] = {}


def target(key: str) -> Callable[[TargetStarter], TargetStarter]:
    """Registers a function that starts a target (3 brokers, topic "bench" with 1 partition)."""
    def register(start: TargetStarter) -> TargetStarter:
        TARGETS[key] = start
        return start
    return register


def start_emulator(config: list[str] | None = None, topics: tuple[str, ...] = ("bench",),
                   source: str | None = None) -> tuple[subprocess.Popen, str]:
    """``source``: another checkout whose code serves instead of this one (``-m`` puts the
    working directory first on the import path, ahead of the installed package)."""
    extra = [arg for kv in (EMULATOR_CONFIG if config is None else config) for arg in ("--config", kv)]
    extra += [arg for t in topics for arg in ("--topic", f"{t}:1:3")]
    proc = subprocess.Popen([sys.executable, "-m", "broker_emu.cli", "serve", "--brokers", "3",
                             *extra], stdout=subprocess.PIPE, text=True, cwd=source)
    return proc, _bootstrap_line(proc, "broker-emu serve")


def _bootstrap_line(proc: subprocess.Popen, what: str) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("bootstrap="):
        proc.kill()
        proc.wait()
        raise SystemExit(f"{what} did not start: {line!r}")
    return line.split("=", 1)[1]


def _stopper(proc: subprocess.Popen) -> Callable[[], None]:
    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return stop


def _ready_s(bootstrap: str, t0: float) -> float:
    """Seconds from ``t0`` until the bootstrap's first Metadata answer (the first answer a
    client gets: what a test suite waits for before it can start)."""
    from confluent_kafka.admin import AdminClient

    AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=60)
    return time.perf_counter() - t0


@target("emulator")
def emulator_target(args: argparse.Namespace) -> Target:
    t0 = time.perf_counter()
    proc, bootstrap = start_emulator(args.emulator_config)
    return Target("emulator", "broker-emu", bootstrap, _stopper(proc), _ready_s(bootstrap, t0), [proc.pid])


@target("mock")
def mock_target(args: argparse.Namespace) -> Target:
    return Target("mock", "librdkafka mock", "mock", threads="rdk:mock")


@target("kfake")
def kfake_target(args: argparse.Namespace) -> Target:
    kfake = kfake_binary()
    if not os.access(kfake, os.X_OK):
        raise TargetUnavailable(f"{kfake} is not built (bash dev/build-adapters/go)")
    # kfake stops when its stdin closes: a pipe we hold, so it never outlives this run
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(kfake), "-brokers", "3", "-topic", "bench:1"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    bootstrap = _bootstrap_line(proc, "kfake")
    return Target("kfake", "franz-go kfake", bootstrap, _stopper(proc), _ready_s(bootstrap, t0), [proc.pid])


@target("kafka")
def kafka_target(args: argparse.Namespace) -> Target:
    """Apache Kafka 4.4.0 itself (conformance/realkafka): 3 KRaft nodes, small heaps, on this
    machine's 2 cores beside the client; "bench" replicated 3 ways as on the emulator."""
    from conformance.realkafka.cluster import KafkaCluster
    from conformance.realkafka.install import KafkaNotInstalled, check_installed

    try:
        check_installed()
    except KafkaNotInstalled as exc:   # no java, or dev/install-kafka not run: the reason, not a crash
        raise TargetUnavailable(str(exc)) from None
    t0 = time.perf_counter()
    cluster = KafkaCluster(brokers=3).start()
    try:
        cluster.create_topic("bench", partitions=1, replication_factor=3)
        ready = _ready_s(cluster.bootstrap, t0)
    except BaseException:
        cluster.stop()
        raise

    def stop() -> None:
        cluster.stop()

    pids = [node.proc.pid for node in cluster.nodes if node.proc is not None]
    return Target("kafka", "Apache Kafka 4.4", cluster.bootstrap, stop, ready, pids)


@target("emulator-before")
def emulator_before_target(args: argparse.Namespace) -> Target:
    """The emulator as another checkout has it (--before DIR): a refactor's "no slower" is a
    ratio measured in the same run, not against figures from another day."""
    if not args.before:
        raise TargetUnavailable("no --before checkout given")
    t0 = time.perf_counter()
    proc, bootstrap = start_emulator(args.emulator_config, source=args.before)
    return Target("emulator-before", f"broker-emu at {args.before}", bootstrap, _stopper(proc),
                  _ready_s(bootstrap, t0), [proc.pid])


def start_targets(keys: list[str], explicit: bool, args: argparse.Namespace) -> list[Target]:
    """Starts each target in order. One that is unavailable is left out (said on stdout),
    or ends the run when it was asked for by name."""
    started: list[Target] = []
    for key in keys:
        try:
            started.append(TARGETS[key](args))
        except TargetUnavailable as exc:
            if explicit:
                stop_targets(started)
                raise SystemExit(f"target {key}: {exc}") from None
            print(f"(target {key} left out: {exc})")
    return started


def stop_targets(targets: list[Target]) -> None:
    for t in targets:
        t.stop()


# -- measurements --------------------------------------------------------------------------------
def throughput(target: str, size: int, acks: str, seconds: float,
               meter: CpuMeter | None = None) -> tuple[int, float, CpuUse | None]:
    """Messages delivered, the seconds it took (produce for ``seconds``, then flush) and, with
    ``meter``, the CPU used meanwhile (measured before the producer and its threads go)."""
    from confluent_kafka import Producer  # here: the targets and the report load without it

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
    if meter is not None:
        meter.start()
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
    cpu = meter.stop() if meter is not None else None
    if errors:
        raise SystemExit(f"{len(errors)} delivery errors against {target}: {errors[0]}")
    return n, elapsed, cpu


def interleaved(targets: list[Target], size: int, acks: str, seconds: float,
                rounds: int = 3) -> tuple[list[float], list[dict | None]]:
    """Messages per second of each target, measured in alternating rounds (the same machine
    state for all; one long run each swung ratios by 0.15 between runs), and the cores its
    broker and the client used meanwhile (``CpuUse.as_dict``, None where not measurable)."""
    totals = [[0.0, 0.0] for _ in targets]  # messages, seconds
    cpu: list[list[CpuUse]] = [[] for _ in targets]
    for _ in range(rounds):
        for t, total, used in zip(targets, totals, cpu):
            n, elapsed, use = throughput(t.address, size, acks, seconds / rounds, CpuMeter(t.pids, t.threads))
            total[0] += n
            total[1] += elapsed
            if use is not None:
                used.append(use)
    return [n / t for n, t in totals], [_mean_use(used) if len(used) == rounds else None for used in cpu]


def _mean_use(uses: list[CpuUse]) -> dict:
    return {key: statistics.fmean(u.as_dict()[key] for u in uses) for key in uses[0].as_dict()}


# -- the report ----------------------------------------------------------------------------------
CASE_W, CELL_W = 18, 32


def _row(label: str, cells: list[str]) -> str:
    return f"{label:<{CASE_W}}" + "".join(f"{c:>{CELL_W}}" for c in cells)


def _ratio(value: float, base: float, first: bool) -> str:
    return "" if first else f" ({value / base:.2f}x)"


def cpu_cell(use: dict | None) -> str:
    """Cores used by the broker and the client, and the client's busiest thread."""
    if use is None:
        return "-"
    return f"{use['broker']:.2f} + {use['client']:.2f} (max {use['busiest_client_thread']:.2f})"


def report(targets: list[Target], seconds: float, rounds: int) -> dict:
    """Print the side-by-side table; return its figures (``--json``)."""
    figures: dict = {"cores": os.cpu_count(), "seconds": seconds, "rounds": rounds,
                     "targets": [t.label for t in targets], "cases": []}
    addresses = [t.address for t in targets]
    print(f"broker benchmark: confluent-kafka producer, linger.ms=5, {os.cpu_count()} cores, "
          f"{seconds:g} s per case and target in {rounds} rounds")
    print(f"(Nx) = that target's figure / {targets[0].label}'s: throughput above 1x is faster, latency above 1x slower")
    print("cores = broker + client (the client's busiest thread); max near 1.00: the client set the pace")
    print(_row("case", [t.label for t in targets]))
    for size, acks in CASES:
        rates, cpu = interleaved(targets, size, acks, seconds, rounds)
        figures["cases"].append({"size": size, "acks": acks, "msgs": rates, "cpu": cpu})
        cells = [f"{r:,.0f}/s {r * size / 1e6:.1f} MB/s{_ratio(r, rates[0], i == 0)}" for i, r in enumerate(rates)]
        print(_row(f"{size} B acks={acks}", cells), flush=True)
        print(_row("  cores", [cpu_cell(use) for use in cpu]), flush=True)
    print(_row("time to ready", ["in-process" if t.ready_s is None else
                                 f"{t.ready_s:.2f} s{_ratio(t.ready_s, targets[0].ready_s, i == 0) if targets[0].ready_s else ''}"
                                 for i, t in enumerate(targets)]), flush=True)
    figures["ready_s"] = [t.ready_s for t in targets]
    for what, measure in (("metadata", metadata_rtts), ("produce", produce_rtts)):
        rtts = measure(addresses)
        figures[f"{what}_ms"] = [{"p50": r[0], "p99": r[1]} for r in rtts]
        for name, k in ((f"{what} p50", 0), (f"{what} p99", 1)):
            base = rtts[0][k]
            print(_row(name, [f"{r[k]:.3f} ms{_ratio(r[k], base, i == 0)}" for i, r in enumerate(rtts)]), flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", help=f"comma-separated, the first is the base of the ratios "
                        f"(default: {','.join(TARGETS)}; known: {', '.join(TARGETS)})")
    parser.add_argument("--seconds-per-case", type=float, default=3.0, help="per case and target (default 3)")
    parser.add_argument("--rounds", type=int, default=3, help="turns the targets take within a case (default 3)")
    parser.add_argument("--json", help="write the figures here too (benchmarks.report reads out/perf/broker.json)")
    parser.add_argument("--emulator-config", action="append", metavar="KEY=VALUE",
                        help=f"broker settings of the emulator (default: {' '.join(EMULATOR_CONFIG)})")
    parser.add_argument("--before", metavar="DIR",
                        help="another checkout (e.g. a git worktree of the commit before a change) served as the "
                             "target emulator-before, to compare the two in one run")
    args = parser.parse_args()
    keys = args.targets.split(",") if args.targets else list(TARGETS)
    unknown = [k for k in keys if k not in TARGETS]
    if unknown:
        parser.error(f"unknown target {', '.join(unknown)} (known: {', '.join(TARGETS)})")
    targets = start_targets(keys, bool(args.targets), args)
    try:
        if targets:
            figures = report(targets, args.seconds_per_case, args.rounds)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(figures, f, indent=1)
    finally:
        stop_targets(targets)


if __name__ == "__main__":
    main()
