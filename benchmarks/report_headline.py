"""The two tables docs/performance.md opens with — what a user's tests pay, step by step: round
trips (``benchmarks.round_trips``) and a cluster's start-up (``benchmarks.startup``), each with
its plot. Part of ``benchmarks.report``; measures nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

ROUND_TRIPS = "## Round trips (`benchmarks.round_trips`)"
STARTUP = "## Start-up (`benchmarks.startup`)"
PYTEST = "## A test's cluster in pytest (`benchmarks.pytest_fixtures`)"

# a fetch round trip this long waited out the consumer's fetch.wait.max.ms (500 ms): librdkafka's mock
# delays an empty Fetch answer by its MaxWait and nothing wakes it (rdkafka_mock_handlers.c, Fetch)
PARKED_MS = 400.0

STARTUP_LABELS = {
    "emulator": "broker_emu.cli serve, bytecode cached",
    "command": "broker-emu serve, bytecode cached",
    "emulator-before": "broker_emu.cli serve, bytecode cached, before",
    "command-before": "broker-emu serve, bytecode cached, before",
    "emulator-cold": "broker_emu.cli serve, no bytecode at all",
    "kfake": "franz-go kfake",
    "mock": "librdkafka mock (in the client)",
}


def round_trip_section(rt: dict, plots: Path, chart: Callable[[str, str, dict[str, float]], str]) -> list[str]:
    labels = rt["targets"]
    md = [ROUND_TRIPS, "",
          f"confluent-kafka against each broker in turn ({rt['rounds']} rounds of {rt['per_round']} calls each, "
          f"{rt['cores']} cores), every call waiting for the one before: `list_topics`; one 100 B record "
          "produced (linger 0) and flushed, acks=1 and acks=all (one partition replicated 3 ways); and a "
          "record produced by one client until another client's consumer, its Fetch long-polling with "
          "fetch.min.bytes=1, returns it. Cells: p50 and p99, and in brackets the emulator's p50 ÷ that "
          "broker's (above 1×: the emulator is slower)."
          + (" A column marked (own run) was measured in a run of its own beside the emulator (three idle "
             "JVMs would slow every other target on two cores); its ratio is against that run's emulator."
             if any(label.endswith("(own run)") for label in labels) else ""), "",
          "| round trip | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    asleep: list[str] = []
    for kind, results in rt["kinds"].items():
        cells = []
        for i, r in enumerate(results):
            parked = kind == "fetch" and r["p50"] >= PARKED_MS
            if parked:
                asleep.append(labels[i])
            base = r.get("base", results[0]["p50"])   # a run of its own: the emulator of that run
            ratio = "" if i == 0 else " (—)" if parked else f" ({base / r['p50']:.2f}×)"
            cells.append(f"{r['p50']:.3f} / {r['p99']:.3f} ms{ratio}")
        md.append(f"| {kind} | " + " | ".join(cells) + " |")
        name = "round-trip-" + kind.replace(" ", "-").replace("=", "") + ".svg"
        (plots / name).write_text(chart(f"{kind}: p50 round trip", "ms", {lab: r["p50"] for lab, r in zip(labels, results)}))
    if asleep:
        md += ["", f"{', '.join(asleep)}: the Fetch is answered only when fetch.wait.max.ms (500 ms) runs out — "
               "a parked Fetch is not woken when a record arrives, so no ratio."]
    md += [""] + [f"![{kind}](performance/round-trip-{kind.replace(' ', '-').replace('=', '')}.svg)"
                  for kind in rt["kinds"]] + [""]
    return md


def with_own_runs(rt: dict, others: list[dict]) -> dict:
    """``rt`` with the other targets of runs of their own (Apache Kafka: its three idle JVMs would
    slow every other target on two cores) as more columns, each ratio against the emulator of its
    own run (``base``). A kind such a run did not measure leaves its columns out."""
    out = {**rt, "targets": list(rt["targets"]), "kinds": {k: list(v) for k, v in rt["kinds"].items()}}
    for run in others:
        extra = range(1, len(run["targets"]))
        if not all(kind in run["kinds"] for kind in out["kinds"]):
            continue
        out["targets"] += [f"{run['targets'][i]} (own run)" for i in extra]
        for kind, results in out["kinds"].items():
            theirs = run["kinds"][kind]
            results += [{**theirs[i], "base": theirs[0]["p50"]} for i in extra]
    return out


def startup_label(key: str, st: dict) -> str:
    label = STARTUP_LABELS.get(key, key)
    return f"{label} ({st['reference']})" if key.endswith("-before") and "reference" in st else label


def startup_section(st: dict, plots: Path, chart: Callable[[str, str, dict[str, float]], str]) -> list[str]:
    ms: dict[str, list[float]] = st["ms"]
    base = _p50(next(iter(ms.values())))
    md = [STARTUP, "",
          f"From starting a 3-broker cluster until every broker answers ApiVersions, {st['runs']} starts each, "
          f"the targets in turn, {st['cores']} cores: p50, the slowest start, and the p50 over the first row's. "
          "`broker_emu.cli serve` is the emulator's own command line (`python -m broker_emu.cli`), `broker-emu "
          "serve` the installed command, which composes the conformance suite's commands with it "
          "(`conformance.main`). Bytecode cached: a warm `PYTHONPYCACHEPREFIX` filled by one start before the "
          "timed ones; no bytecode at all: an empty one and `PYTHONDONTWRITEBYTECODE=1`. CPU: the p50 of the "
          "CPU time (user and system) the process used until it was stopped, right after its brokers "
          "answered — on a shared machine it moves less than the wall time.", "",
          "| cluster | p50 | slowest | ratio | CPU p50 |", "|---|---:|---:|---:|---:|"]
    bars = {}
    cpu: dict[str, list[float]] = st.get("cpu_ms", {})
    for key, values in ms.items():
        p50 = _p50(values)
        bars[startup_label(key, st)] = p50
        used = f"{_p50(cpu[key]):,.0f} ms" if key in cpu else ""
        md.append(f"| {startup_label(key, st)} | {p50:,.0f} ms | {max(values):,.0f} ms | {p50 / base:.2f}× | {used} |")
    if "kafka_once_ms" in st:
        md.append(f"| Apache Kafka 4.4, 3 KRaft nodes (once) | {st['kafka_once_ms']:,.0f} ms | | "
                  f"{st['kafka_once_ms'] / base:.0f}× | |")
    before = [f"{STARTUP_LABELS[key]} {_p50(ms[key]) / _p50(ms[key + '-before']):.2f}×"
              + (f" (CPU {_p50(cpu[key]) / _p50(cpu[key + '-before']):.2f}×)" if key in cpu and key + "-before" in cpu else "")
              for key in ("emulator", "command") if key in ms and key + "-before" in ms]
    if before:
        md += ["", f"Against {st.get('reference', 'the reference checkout')} in the same rounds (p50 now ÷ p50 "
               f"before): {'; '.join(before)}."]
    (plots / "startup.svg").write_text(chart("start to every broker answering ApiVersions (p50)", "ms", bars))
    return md + ["", "![start-up](performance/startup.svg)", ""]


def _p50(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def pytest_section(pf: dict, plots: Path, chart: Callable[[str, str, dict[str, float]], str]) -> list[str]:
    """What one more test costs with each of the plugin's fixtures (docs/pytest.md)."""
    md = [PYTEST, "",
          f"{pf['tests']} tests per pytest process, {pf['cores']} cores: tests that create a topic and produce one "
          "record with our client, and tests that only take the fixture. Each test's setup + call + teardown as "
          "pytest measured it, p50 and p90 over the tests after the first (the first pays the imports and, "
          "shared, the cluster's start, in its own column); `kafka_cluster` starts and stops a 3-broker cluster "
          "per test, `shared_kafka_cluster` shares one per process and resets it after each test.", "",
          "| fixture, test | p50 | p90 | first test |", "|---|---:|---:|---:|"]
    for name, row in pf["cases"].items():
        md.append(f"| {name} | {row['p50_ms']:.1f} ms | {row['p90_ms']:.1f} ms | {row['first_ms']:,.0f} ms |")
    (plots / "pytest-fixtures.svg").write_text(chart("a test's setup + call + teardown (p50)", "ms",
                                                     {name: row["p50_ms"] for name, row in pf["cases"].items()}))
    return md + ["", "![pytest fixtures](performance/pytest-fixtures.svg)", ""]
