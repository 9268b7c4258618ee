"""franz-go's kfake behind the proxy: the conformance scenarios on another fake broker.

As on real Kafka (conformance/on_kafka.py), the proxy in front applies the scenario's wire faults
and keeps the trace the judges read; kfake (adapters/go/kfake in the cache, conformance/cache_dir.py; dev/build-adapters/go)
answers. A fresh kfake per scenario (it starts in ~4 ms). What kfake cannot do is N/A with the
reason (``kfake_support``): it has no followers to stall or slow (acks=all is acknowledged at
once, Produce's timeout ignored), no leader move from outside its Go process, no per-scenario
broker settings beyond what a topic carries. docs/kfake.md has a run's figures.

    from conformance.kfake_upstream import run_on_kfake
    results = run_on_kfake(scenarios, adapters, scale=30.0)
"""

from __future__ import annotations

import contextlib
import subprocess
import types
from pathlib import Path
from typing import Any, Callable, Iterator

from conformance.adapters.base import Adapter
from conformance.cache_dir import cache_dir, install_hint
from conformance.model import Result, Scenario, Status
from conformance.on_kafka import _rule_support, run_cells
from conformance.upstreams import TOPIC_LEVEL, CellUpstream, KafkaUpstream

# broker settings the launcher sets (as every conformance run of the emulator does)
KFAKE_BROKER_CONFIG: dict[str, Any] = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 100,
                                       "auto.create.topics.enable": False}   # kfake without -auto-create


def kfake_binary() -> Path:
    """Where dev/build-adapters/go puts kfake: in the cache (conformance/cache_dir.py)."""
    return cache_dir("adapters", "go", "kfake")


def kfake_support(scenario: Scenario) -> str:
    """"" when the scenario can run on kfake behind the proxy, else why not."""
    if scenario.not_on_kafka:   # what a real Kafka behind the proxy cannot play, kfake cannot either
        return scenario.not_on_kafka
    for rule in scenario.faults:
        if "replication" in rule:
            return ("stalls or slows a follower: kfake has no replication (acks=all is acknowledged at once, "
                    "Produce's timeout_ms is ignored)")
        if "move_leader" in rule:
            return "moves a partition's leader at a set time: kfake's MoveTopicPartition is reachable only from Go"
        if "stop_coordinator_when_revoking" in rule:
            return "stops the group coordinator when the emulator's coordinator reports a revocation (its own trace)"
        why = _rule_support(rule, 3)
        if why:
            return why
    for key, value in scenario.broker_config.items():
        if key not in TOPIC_LEVEL and KFAKE_BROKER_CONFIG.get(key, "unset") != value:
            return f"broker setting {key}={value}: the kfake launcher takes no broker settings and it is no topic config"
    return ""


class KfakeCell:
    def __init__(self, up: KafkaUpstream, topics: tuple[tuple[str, int, int], ...]):
        self.up, self.bootstrap, self.topics = up, up.bootstrap, topics

    def leader(self, topic: str, partition: int) -> int:
        return int(self.up.admin().list_topics(topic, timeout=10).topics[topic].partitions[partition].leader)

    def snapshot(self) -> dict[str, Any]:
        ends = self.up.end_offsets([(t, p) for t, n, _ in self.topics for p in range(n)], settle_s=0.0)
        return {"log_end_offsets": ends, "high_watermarks": dict(ends)}


class KfakeUpstream:
    name = "kfake"

    def __init__(self, brokers: int = 3):
        self.brokers = brokers

    def node_ids(self) -> list[int]:
        return list(range(self.brokers))   # kfake numbers its brokers from 0, as the emulator does

    @contextlib.contextmanager
    def cell(self, scenario: Scenario, scale: float) -> Iterator[CellUpstream]:
        kfake = kfake_binary()
        if not kfake.is_file():
            raise FileNotFoundError(f"kfake is not built ({kfake} missing): {install_hint('dev/build-adapters/go')}")
        proc = subprocess.Popen([str(kfake), "-brokers", str(scenario.brokers or self.brokers),
                                 "-group-min-session-ms", str(KFAKE_BROKER_CONFIG["group.min.session.timeout.ms"])],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            if not line.startswith("bootstrap="):
                raise RuntimeError(f"kfake did not start: {line!r}")
            cluster = types.SimpleNamespace(bootstrap=line.split("=", 1)[1], nodes=[None] * (scenario.brokers or self.brokers))
            up = KafkaUpstream(cluster)   # its wire helpers: create topics, read end offsets
            topic_config = {TOPIC_LEVEL[k]: str(v) for k, v in scenario.broker_config.items() if k in TOPIC_LEVEL}
            up.create_topics(scenario.topics, topic_config)
            yield KfakeCell(up, scenario.topics)
        finally:
            if proc.stdin is not None:
                proc.stdin.close()   # kfake stops when its stdin closes
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def run_on_kfake(scenarios: list[Scenario], adapters: list[Adapter], scale: float,
                 progress: Callable[[int, int, Result], None] | None = None) -> list[Result]:
    """Every (scenario, client) cell on kfake behind the proxy; N/A with the reason where kfake
    cannot play the scenario. Results in the order scenarios x adapters, as ``run_cells``."""
    runnable = [s for s in scenarios if not kfake_support(s)]
    ran = {(r.scenario, r.client): r for r in run_cells(runnable, adapters, scale, KfakeUpstream(), progress)}
    return [ran.get((s.id, a.name)) or Result(s.id, a.name, Status.NA, message=kfake_support(s))
            for a in adapters for s in scenarios]
