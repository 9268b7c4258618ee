"""The cluster's topics and where their partitions' replicas are placed."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import trio

from broker_emu import cluster_shape
from broker_emu.brokers import BrokerRoster
from broker_emu.log import LogMemory, PartitionLog
from broker_emu.partition import Partition
from broker_emu.topic_config import effective, validate_topic_configs
from broker_emu.topic_names import validate_topic_name

MAX_PARTITIONS = 10_000  # per topic: a valid CreateTopics must not be able to exhaust memory


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str] = field(default_factory=dict)


class TopicCatalog:
    """``by_name`` is the cluster's ``topics``; ``on_deleted`` hears of each partition of a
    deleted topic (the purgatories answer the requests waiting on it)."""

    def __init__(self, config: Mapping[str, Any], rng: random.Random, roster: BrokerRoster, log_memory: LogMemory,
                 on_deleted: Callable[[Partition], None]):
        self.by_name: dict[str, Topic] = {}
        self._config, self._rng, self._roster, self._log_memory = config, rng, roster, log_memory
        self._on_deleted = on_deleted

    def create(self, name: str, partitions: int | None = None, replication_factor: int | None = None,
               configs: dict[str, str] | None = None, assignments: list[list[int]] | None = None) -> Topic:
        """A new topic, ready at once. Replicas are placed round-robin from a seeded random
        start (Kafka's rack-unaware assignment without its shifting), unless ``assignments``
        gives each partition's replica list; the first live replica leads; every live replica
        starts in the ISR. Raises ValueError naming the bad argument (``InvalidConfig``, with
        Kafka's message, for a config Kafka would refuse)."""
        if name in self.by_name:
            raise ValueError(f"topic {name!r} already exists")
        validate_topic_name(name)
        validate_topic_configs(configs or {}, self._config)
        placement = self._placement(partitions, replication_factor, assignments)
        parts = self._new_partitions(name, placement, configs or {}, 0)
        topic = Topic(name, self.new_uuid(), parts, dict(configs or {}))
        self.by_name[name] = topic
        cluster_shape.changed()
        return topic

    def _placement(self, partitions: int | None, rf: int | None, assignments: list[list[int]] | None) -> list[list[int]]:
        ids = sorted(self._roster.by_id)
        if assignments:
            for i, replicas in enumerate(assignments):
                if not replicas or len(set(replicas)) != len(replicas) or not set(replicas) <= set(ids):
                    raise ValueError(f"partition {i}: replica assignment {list(replicas)} must name distinct brokers of {ids}")
            if len(assignments) > MAX_PARTITIONS:
                raise ValueError(f"{len(assignments)} partitions is over broker-emu's limit of {MAX_PARTITIONS}")
            return [list(r) for r in assignments]
        n = partitions if partitions is not None else self._config["num.partitions"]
        rf = rf if rf is not None else min(self._config["default.replication.factor"], len(ids))
        if not 1 <= n <= MAX_PARTITIONS:
            raise ValueError(f"partitions must be between 1 and {MAX_PARTITIONS} (broker-emu's limit), got {n}")
        if not 1 <= rf <= len(ids):
            raise ValueError(f"replication factor {rf} is not between 1 and the {len(ids)} brokers")
        start = self._rng.randrange(len(ids))
        return [[ids[(start + i + k) % len(ids)] for k in range(rf)] for i in range(n)]

    def add_partitions(self, name: str, count: int, assignments: list[list[int]] | None = None) -> None:
        """Grow ``name`` to ``count`` partitions (KafkaApis/ReplicationControlManager.createPartitions):
        new partitions take the topic's replication factor, placed as at creation unless
        ``assignments`` names their replicas. Raises ValueError with Kafka's message."""
        topic = self.by_name[name]
        have = len(topic.partitions)
        if count == have:
            raise ValueError(f"Topic already has {have} partition(s).")
        if count < have:
            raise ValueError(f"The topic {name} currently has {have} partition(s); {count} would not be an increase.")
        additional = count - have
        if assignments is not None and len(assignments) != additional:
            raise ValueError(f"Attempted to add {additional} additional partition(s), but only {len(assignments)} "
                             "assignment(s) were specified.")
        placement = self._placement(additional, len(topic.partitions[0].replicas), assignments)
        topic.partitions.extend(self._new_partitions(name, placement, topic.configs, have))
        cluster_shape.changed()

    def _new_partitions(self, name: str, placement: list[list[int]], configs: dict[str, str], first: int) -> list[Partition]:
        """Partitions ``first``.. with these replica lists: the first live replica leads, every
        live replica starts in the ISR."""
        retention = effective("retention.bytes", configs, self._config)
        now = trio.current_time()
        alive = self._roster.is_alive
        parts = []
        for i, replicas in enumerate(placement, start=first):
            leader = next((r for r in replicas if alive(r)), replicas[0])
            followers = [r for r in replicas if r != leader]
            parts.append(Partition(name, i, replicas, leader, 0, sorted(r for r in replicas if alive(r)),
                                   PartitionLog(retention, self._log_memory, f"{name}-{i}"),
                                   {r: 0 for r in followers}, {r: now for r in followers}))
        return parts

    def delete(self, name: str) -> None:
        topic = self.by_name.pop(name)
        cluster_shape.changed()
        for p in topic.partitions:
            p.log.close()
            self._on_deleted(p)

    def new_uuid(self) -> uuid.UUID:
        """A random (version 4) UUID from the seeded RNG, so runs with the same ``emu.seed``
        get the same topic ids."""
        return uuid.UUID(int=self._rng.getrandbits(128), version=4)

    def all_partitions(self) -> Iterable[Partition]:
        for t in self.by_name.values():
            yield from t.partitions

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return next((t for t in self.by_name.values() if t.topic_id == topic_id), None)

    def partition(self, topic: str, index: int) -> Partition | None:
        t = self.by_name.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            return None
        return t.partitions[index]

    def maybe_auto_create(self, name: str) -> Topic | None:
        if name in self.by_name:
            return self.by_name[name]
        if not self._config["auto.create.topics.enable"]:
            return None
        try:
            validate_topic_name(name)
        except ValueError:
            return None
        return self.create(name)

    def max_message_bytes(self, topic: str) -> int:
        t = self.by_name.get(topic)
        return effective("max.message.bytes", t.configs if t is not None else {}, self._config)
