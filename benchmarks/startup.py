"""Start-up benchmark (not a test): how long from starting a 3-broker cluster until every broker
answers ApiVersions, the first request any client sends. Each target is started ``--runs`` times,
the targets taking turns so all see the same machine state; p50 and p99 (the slowest, for few runs)
are printed with each one's ratio to the first target.

- ``emulator``: ``python -m broker_emu.cli serve --brokers 3`` (the emulator's own command line)
  as a new process, with its bytecode cached (a warm PYTHONPYCACHEPREFIX, filled by one run before
  the timed ones) — what every start after a user's first sees;
- ``command``: the same through the ``broker-emu`` command (``conformance.main``, which composes
  the suite's commands with the emulator's), bytecode cached;
- ``emulator-cold``: the same with no bytecode at all (an empty PYTHONPYCACHEPREFIX and
  PYTHONDONTWRITEBYTECODE=1: every module, the standard library's too, compiled from source) —
  a pessimistic first start;
- ``kfake``: franz-go's kfake (``bash dev/build-adapters/go``), a new process;
- ``mock``: librdkafka's mock cluster, which lives inside a client: from making the client with
  test.mock.num.brokers=3 to its first Metadata answer;
- ``kafka`` (only with ``--kafka``, once): Apache Kafka 4.4 in KRaft mode, 3 nodes, each a JVM;
- with ``--reference DIR`` (another checkout of this repository, e.g. a ``git worktree`` of an
  earlier commit), ``emulator-before`` and ``command-before``: its ``emulator`` and ``command``,
  bytecode cached, in the same rounds, so a change is measured against what came before it on
  the same machine state.

Run: .venv/bin/python -m benchmarks.startup [--runs 20] [--targets emulator,command,emulator-cold,kfake,mock] [--kafka]
     [--reference DIR] [--json out/perf/startup.json]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from benchmarks.broker import kfake_binary

API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 1, 5) + b"bench"


def answers_api_versions(host: str, port: int, deadline: float) -> None:
    """Connect (again and again until ``deadline``: the listener may not be bound yet) and send
    ApiVersions v0; returns once a whole answer frame with error code 0 came back."""
    while True:
        try:
            with socket.create_connection((host, port), timeout=1) as s:
                s.sendall(struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0)
                size = struct.unpack(">i", _read(s, 4))[0]
                body = _read(s, size)
                correlation, error = struct.unpack(">ih", body[:6])
                if correlation != 1 or error != 0:
                    raise SystemExit(f"{host}:{port} answered ApiVersions with error {error}")
                return
        except OSError:
            if time.perf_counter() > deadline:
                raise
            time.sleep(0.0005)


def _read(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionResetError("closed before the answer")
        data += chunk
    return data


def _all_answer(bootstrap: str, t0: float) -> float:
    deadline = time.perf_counter() + 60
    for address in bootstrap.split(","):
        host, port = address.rsplit(":", 1)
        answers_api_versions(host, int(port), deadline)
    return time.perf_counter() - t0


# the CPU seconds (user + system) each process started here used, in order: it idles once its
# brokers answer and is killed then, so this is its start-up's CPU, which other work on a shared
# machine does not inflate as it does the wall time
CPU_SECONDS: list[float] = []


def _process_until_ready(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    """Seconds from starting ``argv`` until each broker of the ``bootstrap=`` line it prints first
    answers ApiVersions; the process is stopped afterwards (its CPU time goes to CPU_SECONDS)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env, cwd=cwd)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("bootstrap="):
            raise SystemExit(f"{argv[0]} did not start: {line!r}")
        return _all_answer(line.split("=", 1)[1], t0)
    finally:
        proc.kill()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        CPU_SECONDS.append(usage.ru_utime + usage.ru_stime)


ROOT = Path(__file__).resolve().parent.parent


def _serve_argv(module: str = "broker_emu.cli") -> list[str]:
    return [sys.executable, "-m", module, "serve", "--brokers", "3"]


def emulator(prefix: Path, module: str = "broker_emu.cli", checkout: Path = ROOT) -> Callable[[], float]:
    """``-m`` puts the current directory first on sys.path: the process runs ``checkout``'s code."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(prefix)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    _process_until_ready(_serve_argv(module), env, checkout)     # fills the cache: the timed runs read it
    return lambda: _process_until_ready(_serve_argv(module), env, checkout)


def emulator_cold(root: Path) -> Callable[[], float]:
    def run() -> float:
        with tempfile.TemporaryDirectory(dir=root) as empty:
            env = {**os.environ, "PYTHONPYCACHEPREFIX": empty, "PYTHONDONTWRITEBYTECODE": "1"}
            return _process_until_ready(_serve_argv(), env, ROOT)
    return run


def kfake() -> Callable[[], float]:
    binary = kfake_binary()
    if not os.access(binary, os.X_OK):
        raise LookupError(f"{binary} is not built (bash dev/build-adapters/go)")
    return lambda: _process_until_ready([str(binary), "-brokers", "3"])


def mock() -> Callable[[], float]:
    from confluent_kafka import Producer

    def run() -> float:
        t0 = time.perf_counter()
        p = Producer({"test.mock.num.brokers": 3, "log_level": 0})
        p.list_topics(timeout=30)
        ready = time.perf_counter() - t0
        p.flush(0)
        return ready
    return run


def apache_kafka() -> float:
    from conformance.realkafka.cluster import apache_kafka_cluster

    t0 = time.perf_counter()
    with apache_kafka_cluster(brokers=3) as k:
        return _all_answer(k.bootstrap, t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--targets", default="emulator,command,emulator-cold,kfake,mock")
    ap.add_argument("--kafka", action="store_true", help="start Apache Kafka once too (tens of seconds)")
    ap.add_argument("--json", help="write the figures here too (benchmarks.report reads out/perf/startup.json)")
    ap.add_argument("--reference", type=Path, metavar="DIR",
                    help="another checkout: its emulator and command in the same rounds (emulator-before, command-before)")
    ap.add_argument("--reference-name", help="what to call it on the page (default: its git commit)")
    args = ap.parse_args()
    targets = args.targets.split(",")
    if args.reference:
        targets += [f"{key}-before" for key in ("emulator", "command") if key in targets]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ref = args.reference.resolve() if args.reference else ROOT
        makers: dict[str, Callable[[], Callable[[], float]]] = {
            "emulator": lambda: emulator(root / "pycache"),
            "command": lambda: emulator(root / "pycache", "conformance.main"),
            "emulator-before": lambda: emulator(root / "pycache", checkout=ref),
            "command-before": lambda: emulator(root / "pycache", "conformance.main", checkout=ref),
            "emulator-cold": lambda: emulator_cold(root), "kfake": kfake, "mock": mock}
        runs: dict[str, Callable[[], float]] = {}
        for key in targets:
            try:
                runs[key] = makers[key]()
            except LookupError as exc:
                print(f"{key}: left out ({exc})")
        times: dict[str, list[float]] = {key: [] for key in runs}
        cpu: dict[str, list[float]] = {}
        for i in range(args.runs):
            for key, run in runs.items():
                started = len(CPU_SECONDS)
                times[key].append(run())
                if len(CPU_SECONDS) > started:   # a process of its own (not the mock, inside this one)
                    cpu.setdefault(key, []).append(CPU_SECONDS[-1])
            print(f"\rround {i + 1}/{args.runs}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    kafka_s = apache_kafka() if args.kafka else None
    report(times, kafka_s, cpu)
    if args.json:
        figures = {"cores": os.cpu_count(), "runs": args.runs, "ms": {key: sorted(v * 1000 for v in values)
                                                                     for key, values in times.items()},
                   "cpu_ms": {key: sorted(v * 1000 for v in values) for key, values in cpu.items()}}
        if kafka_s is not None:
            figures["kafka_once_ms"] = kafka_s * 1000
        if args.reference:
            figures["reference"] = args.reference_name or subprocess.run(
                ["git", "-C", str(args.reference), "rev-parse", "--short", "HEAD"],
                capture_output=True, text=True).stdout.strip() or str(args.reference)
        Path(args.json).write_text(json.dumps(figures, indent=1))


def report(times: dict[str, list[float]], kafka_s: float | None, cpu: dict[str, list[float]]) -> None:
    base = statistics.median(next(iter(times.values())))
    print(f"{'target':<16}{'p50 ms':>10}{'max ms':>10}{'ratio':>8}{'CPU p50 ms':>12}")
    for key, values in times.items():
        p50 = statistics.median(values)
        used = f"{statistics.median(cpu[key]) * 1000:>12.0f}" if key in cpu else ""
        print(f"{key:<16}{p50 * 1000:>10.0f}{max(values) * 1000:>10.0f}{p50 / base:>8.2f}{used}")
    if kafka_s is not None:
        print(f"{'kafka (once)':<16}{kafka_s * 1000:>10.0f}{'':>10}{kafka_s / base:>8.2f}")


if __name__ == "__main__":
    main()
