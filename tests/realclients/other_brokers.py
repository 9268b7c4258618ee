"""franz-go's kfake as a stand-in for the emulator in the real-client tests.

    .venv/bin/python -m pytest --broker kfake tests/realclients   # the tests marked any_broker, on kfake

``KfakeCluster`` starts `.cache/adapters/go/kfake` (built by dev/build-adapters/go) with 3
brokers on 127.0.0.1 and the tests' topic t (3 partitions), and offers what the tests' ``cluster``
fixture offers: ``bootstrap``, and ``call(fn)`` with ``cluster.topics[name].partitions`` (each
with ``index`` and ``log_end_offset``) and ``cluster.create_topic``. kfake has no in-process
state to reach from Python, so these go over the wire (ListOffsets and CreateTopics, through
confluent-kafka); tests that read the emulator's trace or inject faults have no equivalent here.

Run a real-client test module against kfake (each test that takes ``cluster`` gets a fresh one;
any further arguments go to pytest):

    .venv/bin/python -m tests.realclients.kfake_cluster tests/realclients/test_emulator_python_clients.py [-k NAME]

The module is copied beside a conftest that defines ``cluster`` as a kfake cluster, and pytest
runs the copy. docs/kfake.md has what came out.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
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

    def create_topic(self, name: str, partitions: int | None = None, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None) -> None:
        """As the emulator's ``Cluster.create_topic``, over the wire (CreateTopics)."""
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        topic = NewTopic(name, partitions or 1, replication_factor or -1, config=configs or {})
        admin.create_topics([topic], operation_timeout=10)[name].result(15)

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


CONFTEST = """import pytest

from tests.realclients.kfake_cluster import KfakeCluster


@pytest.fixture
def cluster():
    with KfakeCluster() as kf:
        yield kf
"""


def main() -> int:
    """Copies the test module beside a conftest whose ``cluster`` fixture is a kfake cluster
    and runs pytest on the copy (from the repository, so its imports resolve)."""
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(__doc__)
        return 2
    module, pytest_args = Path(sys.argv[1]).resolve(), sys.argv[2:]
    with tempfile.TemporaryDirectory(prefix="kfake-tests-") as tmp:
        (Path(tmp) / "conftest.py").write_text(CONFTEST)
        shutil.copy(module, Path(tmp) / module.name)
        return subprocess.call([sys.executable, "-m", "pytest", str(Path(tmp) / module.name), "-p", "no:cacheprovider",
                                "--rootdir", str(REPO), "-c", str(REPO / "pyproject.toml"), *pytest_args], cwd=REPO)


if __name__ == "__main__":
    sys.exit(main())
