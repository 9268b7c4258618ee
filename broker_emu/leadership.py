"""Partition leadership: moving a leader, the elections a stopped broker causes, and the
validated chaos entry point for replication."""

from __future__ import annotations

from typing import Any, Callable, Mapping

import trio

from broker_emu import cluster_shape
from broker_emu.brokers import BrokerRoster
from broker_emu.faults.rules import REPLICATION_MODES, FaultConfigError, check_ms
from broker_emu.partition import Partition
from broker_emu.replication import Replication
from broker_emu.topic_config import effective
from broker_emu.topics import TopicCatalog
from broker_emu.trace import Kind, Trace


class Leadership:
    """``partition_changed`` hears of every partition whose leader or high watermark may have
    moved (the purgatories re-check what waits on it); ``batches_dropped`` of the batches a new
    leader did not have (the transaction markers among them are written again)."""

    def __init__(self, catalog: TopicCatalog, roster: BrokerRoster, config: Mapping[str, Any], trace: Trace,
                 replication: Replication, partition_changed: Callable[[Partition], None],
                 batches_dropped: Callable[[Partition, list[bytes]], None] = lambda p, dropped: None):
        self._catalog, self._roster, self._config, self._trace = catalog, roster, config, trace
        self._replication, self._partition_changed = replication, partition_changed
        self._batches_dropped = batches_dropped

    def move_leader(self, topic: str, partition: int, broker_id: int) -> None:
        p = self._catalog.partition(topic, partition)
        if p is None:
            raise KeyError(f"no partition {topic}-{partition}")
        if broker_id not in p.replicas:
            raise ValueError(f"broker {broker_id} is not a replica of {topic}-{partition} (replicas {p.replicas})")
        if not self._roster.is_alive(broker_id):
            raise ValueError(f"broker {broker_id} is stopped")
        if p.leader == broker_id:
            return
        old = p.leader
        dropped = p.become_leader(broker_id, trio.current_time())
        self._trace.emit(Kind.LEADER_CHANGE, broker=broker_id, details={"topic": topic, "partition": partition, "from": old,
                                                                     "to": broker_id, "leader_epoch": p.leader_epoch})
        self._partition_changed(p)
        self._replication.resync(p)
        if dropped:
            self._batches_dropped(p, dropped)

    def broker_stopped(self, broker_id: int) -> None:
        """The controller drops the broker from ISRs at once and moves leadership to a live ISR
        member; with none the partition stays offline (no leader) until one returns, as Kafka
        with its default ``unclean.leader.election.enable=false``: electing a replica that lacks
        committed data would truncate below the high watermark."""
        alive = self._roster.is_alive
        for t in self._catalog.by_name.values():
            for p in t.partitions:
                if broker_id in p.isr and len(p.isr) > 1:
                    p.isr.remove(broker_id)
                    cluster_shape.changed()
                if p.leader == broker_id:
                    # the first live ISR member in assignment order (PartitionChangeBuilder.electLeader)
                    candidates = [r for r in p.replicas if r in p.isr and r != broker_id and alive(r)]
                    if not candidates and effective("unclean.leader.election.enable", t.configs, self._config):
                        candidates = [r for r in p.replicas if r != broker_id and alive(r)]
                    if candidates:
                        self.move_leader(p.topic, p.index, candidates[0])
                p.update_high_watermark()
                self._partition_changed(p)

    def set_replication(self, topic: str | None, partition: int | None, follower: int | None, mode: str,
                        lag_ms: float = 0.0) -> None:
        """Validated entry point for chaos (control API, scenario files, Python): see
        ``Replication``. The mode and lag are checked here too, so a NaN or infinite lag from
        Python never reaches a timer (faults.rules.check_ms)."""
        if mode not in REPLICATION_MODES:
            raise FaultConfigError("mode", f"unknown replication mode {mode!r} (known: {', '.join(REPLICATION_MODES)})")
        lag_ms = check_ms(lag_ms, "lag_ms")
        if topic is not None and topic not in self._catalog.by_name:
            raise KeyError(f"no topic {topic!r}")
        if topic is not None and partition is not None and self._catalog.partition(topic, partition) is None:
            raise KeyError(f"no partition {topic}-{partition}")
        if follower is not None and follower not in self._roster.by_id:
            raise KeyError(f"no broker {follower}")
        self._replication.set_mode(topic, partition, follower, mode, lag_ms)
