"""What a user's test pays for its cluster (not a test): N tests that each produce one record
with our client, run in a fresh pytest process once with ``kafka_cluster`` (a cluster per test)
and once with ``shared_kafka_cluster`` (one cluster, isolated per test), and N tests that only
take each fixture; N tests with no cluster at all are the reference for pytest's own cost.

Two measures. The wall time of each pytest process, less the reference's, per test (what a suite
pays, startup and imports included); and, from pytest's own per-phase durations (a conftest
hook writes them), each test's setup + call + teardown, p50 over the tests after the first (the
first pays the imports and, shared, the cluster's start): what one more test costs, which on a
shared machine moves much less than a wall time does.

Run: .venv/bin/python -m benchmarks.pytest_fixtures [--tests 40] [--json out/perf/pytest-fixtures.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BODY = '''
import client
import pytest

@pytest.mark.parametrize("n", range({tests}))
def test_one_record(n, {fixture}):
    c = {fixture}
    topic = c.unique("t")
    c.create_topic(topic, 1, 1)
    with client.Producer({{"bootstrap.servers": c.bootstrap}}) as p:
        assert p.send(topic, b"x", partition=0).result(10).offset == 0
'''
FIXTURE_ONLY = '''
import pytest

@pytest.mark.parametrize("n", range({tests}))
def test_fixture_only(n, {fixture}):
    assert {fixture}.bootstrap
'''
NONE = '''
import pytest

@pytest.mark.parametrize("n", range({tests}))
def test_nothing(n):
    pass
'''
# each phase's duration as pytest measured it, written when the session ends
CONFTEST = '''
import json, os

PHASES = []

def pytest_runtest_logreport(report):
    PHASES.append((report.nodeid, report.when, report.duration))

def pytest_sessionfinish(session):
    with open(os.environ["BENCH_PHASES"], "w") as f:
        json.dump(PHASES, f)
'''


def run(source: str) -> tuple[float, list[float]]:
    """The pytest process's wall seconds, and each test's setup + call + teardown seconds."""
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "test_bench.py").write_text(source)
        (Path(d) / "conftest.py").write_text(CONFTEST)
        phases = Path(d) / "phases.json"
        start = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", d], cwd=d,
                             capture_output=True, text=True, env={**os.environ, "BENCH_PHASES": str(phases)})
        wall = time.monotonic() - start
        if out.returncode != 0:
            sys.exit(f"the benchmark's tests failed:\n{out.stdout[-2000:]}")
        per_test: dict[str, float] = {}
        for nodeid, _, seconds in json.loads(phases.read_text()):
            per_test[nodeid] = per_test.get(nodeid, 0.0) + seconds
        return wall, list(per_test.values())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, default=40)
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    n = args.tests
    bare_wall, bare_tests = run(NONE.format(tests=n))
    cases = {f"{fixture}, {what}": run(source.format(tests=n, fixture=fixture))
             for fixture in ("kafka_cluster", "shared_kafka_cluster")
             for what, source in (("one record", BODY), ("fixture only", FIXTURE_ONLY))}
    print(f"{n} tests each; pytest alone: {bare_wall:.1f} s, a test {statistics.median(bare_tests) * 1000:.2f} ms")
    print(f"  {'case':<36}{'wall/test':>11}{'first':>9}{'p50 after':>11}{'p90 after':>11}")
    figures = {"tests": n, "cores": os.cpu_count(), "bare_wall_s": bare_wall, "cases": {}}
    for name, (wall, tests) in cases.items():
        rest = sorted(tests[1:])
        row = {"wall_per_test_ms": (wall - bare_wall) / n * 1000, "first_ms": tests[0] * 1000,
               "p50_ms": statistics.median(rest) * 1000, "p90_ms": rest[int(len(rest) * 0.9)] * 1000}
        figures["cases"][name] = row
        print(f"  {name:<36}{row['wall_per_test_ms']:>9.1f}ms{row['first_ms']:>7.0f}ms"
              f"{row['p50_ms']:>9.1f}ms{row['p90_ms']:>9.1f}ms")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
