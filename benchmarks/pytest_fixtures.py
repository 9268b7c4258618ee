"""What a user's test pays for its cluster (not a test): N tests that each produce one record
with our client, run in a fresh pytest process once with ``kafka_cluster`` (a cluster per test)
and once with ``shared_kafka_cluster`` (one cluster, isolated per test); the same tests with no
cluster at all are the reference for pytest's own cost.

Run: .venv/bin/python -m benchmarks.pytest_fixtures [--tests 40]
"""

from __future__ import annotations

import argparse
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
NONE = '''
import pytest

@pytest.mark.parametrize("n", range({tests}))
def test_nothing(n):
    pass
'''


def run(source: str) -> float:
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "test_bench.py").write_text(source)
        start = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", d], cwd=d,
                             capture_output=True, text=True)
        wall = time.monotonic() - start
        if out.returncode != 0:
            sys.exit(f"the benchmark's tests failed:\n{out.stdout[-2000:]}")
        return wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, default=40)
    n = ap.parse_args().tests
    bare = run(NONE.format(tests=n))
    own = run(BODY.format(tests=n, fixture="kafka_cluster"))
    shared = run(BODY.format(tests=n, fixture="shared_kafka_cluster"))
    per = {name: (wall - bare) / n * 1000 for name, wall in (("kafka_cluster", own), ("shared_kafka_cluster", shared))}
    print(f"{n} tests, each producing one record with our client; pytest alone: {bare:.1f} s")
    for name, ms in per.items():
        print(f"  {name:<22} {ms:7.1f} ms per test above pytest's own cost")
    print(f"  shared / own: {per['shared_kafka_cluster'] / per['kafka_cluster']:.2f}")


if __name__ == "__main__":
    main()
