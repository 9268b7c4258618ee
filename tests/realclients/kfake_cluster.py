"""franz-go's kfake as a stand-in for the emulator in the real-client tests (by hand, for now).

``KfakeCluster`` starts `.cache/adapters/go/kfake` (built by dev/build-adapters/go) with 3
brokers on 127.0.0.1 and the tests' topic t (3 partitions), and offers what the tests' ``cluster``
fixture offers: ``bootstrap``, and ``call(fn)`` with ``cluster.topics[name].partitions`` (each
with ``index`` and ``log_end_offset``). kfake has no in-process state to read from Python, so
those log end offsets are asked over the wire (ListOffsets, through confluent-kafka).

Run a test module's ``test_*(cluster)`` functions against kfake, each on a fresh cluster:

    .venv/bin/python -m tests.realclients.kfake_cluster tests/realclients/test_emulator_python_clients.py [-k NAME]

It prints one line per test (PASS, FAIL with the assertion or error, SKIP) and a closing
"N passed, N failed" line. docs/kfake.md has what came out.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
KFAKE = REPO / ".cache" / "adapters" / "go" / "kfake"


@dataclass
class _Partition:
    index: int
    log_end_offset: int


class _Topic:
    def __init__(self, cluster: KfakeCluster, name: str) -> None:
        self._cluster, self._name = cluster, name

    @property
    def partitions(self) -> list[_Partition]:
        return self._cluster.log_end_offsets(self._name)


class _Topics:
    def __init__(self, cluster: KfakeCluster) -> None:
        self._cluster = cluster

    def __getitem__(self, name: str) -> _Topic:
        return _Topic(self._cluster, name)


class KfakeCluster:
    """A kfake process: ``with KfakeCluster() as kf: kf.bootstrap``."""

    def __init__(self, brokers: int = 3, topics: tuple[tuple[str, int], ...] = (("t", 3),)) -> None:
        if not KFAKE.is_file():
            raise FileNotFoundError(f"{KFAKE} is not built (bash dev/build-adapters/go)")
        args = [str(KFAKE), "-brokers", str(brokers)]
        for name, partitions in topics:
            args += ["-topic", f"{name}:{partitions}"]
        self._proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      text=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line.startswith("bootstrap="):
            self.close()
            raise RuntimeError(f"kfake did not start: {line!r}")
        self.bootstrap = line.split("=", 1)[1]
        self.cluster = self          # the tests read cluster.cluster.topics[...]
        self.topics = _Topics(self)

    def call(self, fn: Callable[[], Any]) -> Any:
        return fn()

    def log_end_offsets(self, topic: str) -> list[_Partition]:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "kfake-cluster-probe"})
        try:
            meta = c.list_topics(topic, timeout=10).topics[topic]
            return [_Partition(p, c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1])
                    for p in sorted(meta.partitions)]
        finally:
            c.close()

    def close(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._proc.stdin.close()           # kfake stops when its stdin closes
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()

    def __enter__(self) -> KfakeCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _tests(path: Path, pattern: str | None) -> list[tuple[str, Callable[..., Any]]]:
    spec = importlib.util.spec_from_file_location(f"tests.realclients.{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return [(name, fn) for name, fn in vars(module).items()
            if name.startswith("test_") and callable(fn) and "cluster" in inspect.signature(fn).parameters
            and (pattern is None or pattern in name)]


def run_one(fn: Callable[..., Any]) -> tuple[str, str]:
    """("PASS"|"FAIL"|"SKIP", detail) of one test on a fresh kfake cluster."""
    import _pytest.outcomes

    with KfakeCluster() as kf:
        try:
            fn(kf)
        except _pytest.outcomes.Skipped as exc:
            return "SKIP", str(exc)
        except Exception as exc:  # a failed test: report it, go on with the next
            where = traceback.extract_tb(exc.__traceback__)[-1]
            return "FAIL", f"{type(exc).__name__} at {Path(where.filename).name}:{where.lineno}: {where.line}: {exc}"[:600]
    return "PASS", ""


def main() -> int:
    parser = argparse.ArgumentParser(description="run real-client tests against franz-go's kfake")
    parser.add_argument("module", type=Path)
    parser.add_argument("-k", dest="pattern")
    args = parser.parse_args()
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for name, fn in _tests(args.module, args.pattern):
        start = time.perf_counter()
        status, detail = run_one(fn)
        counts[status] += 1
        print(f"{status} {name} ({time.perf_counter() - start:.1f} s) {detail}", flush=True)
    print(f"kfake: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
