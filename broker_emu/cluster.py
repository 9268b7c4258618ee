"""The emulated cluster: brokers, topics, partitions, replication, purgatories, faults, trace.

Everything here is plain state changed by synchronous methods (atomic under trio); the
I/O lives in ``server.py`` and the waits in the purgatories.
"""

from __future__ import annotations

import itertools
import logging
import random
import sys
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable

import trio

from broker_emu import cluster_shape, reassignments
from broker_emu.config import ConfigError, broker_config
from broker_emu.faults import FaultEngine
from broker_emu.faults.rules import REPLICATION_MODES, FaultConfigError, check_ms
from broker_emu.group_configs import GroupConfigs
from broker_emu.internal_topics import ensure_offsets_topic, follow_coordinators
from broker_emu.log import LogMemory, PartitionLog, log_memory_budget
from broker_emu.partition import Partition
from broker_emu.purgatory import Purgatory
from broker_emu.quotas import Quotas
from broker_emu.replication import Replication
from broker_emu.scheduler import Scheduler
from broker_emu.security import Security, SecurityError
from broker_emu.topic_config import effective, validate_topic_configs
from broker_emu.topic_names import validate_topic_name
from broker_emu.trace import Kind, Trace
from broker_emu.version_profiles import ProfileError, VersionProfile
from broker_emu.waits import Waits
from kafka_common.wallclock import FIXED_EPOCH_MS, system_ms

log_module = logging.getLogger("broker_emu")
INTERNAL_TOPICS = ("__consumer_offsets",)
MAX_PARTITIONS = 10_000  # per topic: a valid CreateTopics must not be able to exhaust memory


@dataclass
class Broker:
    id: int
    host: str = "127.0.0.1"
    port: int = 0
    alive: bool = True
    rack: str | None = None
    connections: set = field(default_factory=set)
    listener_scope: trio.CancelScope | None = None
    # the extra listeners' ports (emu.extra.listeners): security protocol -> port
    listeners: dict[str, int] = field(default_factory=dict)


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str] = field(default_factory=dict)


def follows_system_clock(mode: str) -> bool:
    """``emu.wall.clock``: "fixed" keeps virtual-time runs reproducible; real clients in real
    time need the system's (token expiry, their own timestamps against ours)."""
    # a MockClock exists only once trio.testing is imported; importing it here would import
    # pytest too (100+ ms off `broker-emu serve`'s start)
    testing = sys.modules.get("trio.testing")
    mock = testing is not None and isinstance(trio.lowlevel.current_clock(), testing.MockClock)
    return mode == "system" or (mode == "auto" and not mock)


class Cluster(Waits):   # Waits: cluster.wait_for(...)
    def __init__(self, brokers: int | Iterable[int] = 3, config: dict[str, Any] | None = None,
                 host: str = "127.0.0.1", trace_sink=None):
        self.config = broker_config(config)
        ids = list(range(brokers)) if isinstance(brokers, int) else list(brokers)
        if not ids:
            raise ValueError("a cluster needs at least one broker")
        self.brokers: dict[int, Broker] = {i: Broker(i, host) for i in ids}
        self.host = host
        self.rng = random.Random(self.config["emu.seed"])
        self.cluster_id = self.config["cluster.id"]
        self.controller_id = ids[0]
        self.topics: dict[str, Topic] = {}
        self.scheduler = Scheduler()
        self.trace = Trace(trio.current_time, sink=trace_sink, max_bytes=self.config["emu.trace.max.bytes"])
        self.log_memory = LogMemory(log_memory_budget(self.config["emu.log.memory.bytes"]), self._log_evicted)
        self._evict_warned_at = float("-inf")
        self.faults = FaultEngine(seed=self.config["emu.seed"], brokers=ids, clock=self.trace.now_ms)
        self.produce_purgatory = Purgatory("Produce", self.scheduler, self._purgatory_event)
        self.fetch_purgatory = Purgatory("Fetch", self.scheduler, self._purgatory_event)
        self.delete_records_purgatory = Purgatory("DeleteRecords", self.scheduler, self._purgatory_event)
        self.replication = Replication(self.scheduler, self.config, self.is_alive, self._partition_changed,
                                       self._isr_changed, partitions=self.all_partitions, emit=self.trace.emit)
        self.next_producer_id = 1000
        # the coordinator's view (InitProducerId); sequences live per partition, in its log
        self.producer_epochs: dict[int, int] = {}
        self.groups: Any = None
        self.txn: Any = None          # broker_emu.transactions.coordinator, attached with the groups (runtime)
        self.plant: Any = None        # a planted bug (broker_emu/plants.py): set by Python code only
        self._nursery: trio.Nursery | None = None
        self.conn_ids = itertools.count(1)
        # AlterConfigs on brokers: "" (cluster-wide) or a broker id -> overrides (handlers/admin_configs.py)
        # A Kafka 4.x cluster is formatted with min.insync.replicas as a cluster-wide dynamic value
        # (KIP-966, eligible leader replicas need it there): DescribeConfigs shows it with source 3
        self.dynamic_config: dict[str, dict[str, str]] = {"": {"min.insync.replicas": str(self.config["min.insync.replicas"])}}
        self.static_config = dict(self.config)
        self.group_configs = GroupConfigs()   # ConfigResource GROUP overrides (KIP-848 groups read them)
        self._system_wall: bool | None = None   # decided at the first reading (needs trio running)
        self.kept_metadata: dict[Any, tuple[int, dict]] = {}   # handlers/metadata.py: answers kept per shape
        self.quotas = Quotas()   # AlterClientQuotas; the server throttles Produce and Fetch by them
        try:
            self.security = Security(self.config, host, self.wall_ms)   # the listeners' protocol, SASL credentials, TLS
            self.profile = VersionProfile(self.config)    # emu.kafka.version, emu.api.max.versions
        except (SecurityError, ProfileError) as exc:
            raise ConfigError(str(exc)) from None

    def _log_evicted(self, log: PartitionLog, freed: int, log_start: int) -> None:
        """The log memory budget dropped a partition's oldest batches: say so, in the trace
        always and on stderr at most every 10 s, so nobody mistakes it for a bug."""
        topic, _, index = log.name.rpartition("-")
        self.trace.emit(Kind.LOG_EVICTED, details={"topic": topic, "partition": int(index or 0), "bytes": freed,
                                                "log_start_offset": log_start, "budget": self.log_memory.limit})
        now = trio.current_time()
        if now - self._evict_warned_at >= 10:
            self._evict_warned_at = now
            log_module.warning("broker-emu: the logs reached emu.log.memory.bytes=%d: dropped the oldest %d bytes of "
                               "%s (log start offset now %d); raise the budget to keep more", self.log_memory.limit,
                               freed, log.name, log_start)

    def apply_dynamic_config(self) -> None:
        """The broker settings in force: static, then the cluster-wide dynamic values, then any
        broker's own (the emulated brokers share one configuration)."""
        from broker_emu.topic_config import DYNAMIC_BROKER_KEYS

        config = dict(self.static_config)
        for scope in sorted(self.dynamic_config, key=lambda name: name != ""):
            for name, value in self.dynamic_config[scope].items():
                if name in config:   # the ones the emulator acts on
                    config[name] = DYNAMIC_BROKER_KEYS[name].parse(value)
        self.config.update(config)

    # -- time ---------------------------------------------------------------------------------
    def now_ms(self) -> float:
        return self.trace.now_ms()

    def wall_ms(self) -> int:
        """Kafka's wall clock (LogAppendTime, ListOffsets, OAUTHBEARER token times): the system
        clock in real time, a fixed epoch plus trio's clock under a MockClock (``emu.wall.clock``)."""
        if self._system_wall is None:
            self._system_wall = follows_system_clock(self.config["emu.wall.clock"])
        return system_ms() if self._system_wall else FIXED_EPOCH_MS + int(self.now_ms())

    # -- brokers ------------------------------------------------------------------------------
    def broker_ids(self) -> set[int]:
        return set(self.brokers)

    def is_alive(self, broker_id: int) -> bool:
        b = self.brokers.get(broker_id)
        return b is not None and b.alive

    def live_brokers(self) -> list[Broker]:
        return [b for b in self.brokers.values() if b.alive]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{b.host}:{b.port}" for b in self.brokers.values())

    def bootstrap_for(self, protocol: str) -> str:
        """The bootstrap servers of the listener with this security protocol."""
        if protocol == self.security.protocol:
            return self.bootstrap
        return ",".join(f"{b.host}:{b.listeners[protocol]}" for b in self.brokers.values())

    # -- topics -------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int | None = None, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None, assignments: list[list[int]] | None = None) -> Topic:
        """A new topic, ready at once. Replicas are placed round-robin from a seeded random
        start (Kafka's rack-unaware assignment without its shifting), unless ``assignments``
        gives each partition's replica list; the first live replica leads; every live replica
        starts in the ISR. Raises ValueError naming the bad argument (``InvalidConfig``, with
        Kafka's message, for a config Kafka would refuse)."""
        if name in self.topics:
            raise ValueError(f"topic {name!r} already exists")
        validate_topic_name(name)
        validate_topic_configs(configs or {}, self.config)
        placement = self._placement(partitions, replication_factor, assignments)
        parts = self._new_partitions(name, placement, configs or {}, 0)
        topic = Topic(name, self.new_uuid(), parts, dict(configs or {}))
        self.topics[name] = topic
        cluster_shape.changed()
        return topic

    def _placement(self, partitions: int | None, rf: int | None, assignments: list[list[int]] | None) -> list[list[int]]:
        ids = sorted(self.brokers)
        if assignments:
            for i, replicas in enumerate(assignments):
                if not replicas or len(set(replicas)) != len(replicas) or not set(replicas) <= set(ids):
                    raise ValueError(f"partition {i}: replica assignment {list(replicas)} must name distinct brokers of {ids}")
            if len(assignments) > MAX_PARTITIONS:
                raise ValueError(f"{len(assignments)} partitions is over broker-emu's limit of {MAX_PARTITIONS}")
            return [list(r) for r in assignments]
        n = partitions if partitions is not None else self.config["num.partitions"]
        rf = rf if rf is not None else min(self.config["default.replication.factor"], len(ids))
        if not 1 <= n <= MAX_PARTITIONS:
            raise ValueError(f"partitions must be between 1 and {MAX_PARTITIONS} (broker-emu's limit), got {n}")
        if not 1 <= rf <= len(ids):
            raise ValueError(f"replication factor {rf} is not between 1 and the {len(ids)} brokers")
        start = self.rng.randrange(len(ids))
        return [[ids[(start + i + k) % len(ids)] for k in range(rf)] for i in range(n)]

    def add_partitions(self, name: str, count: int, assignments: list[list[int]] | None = None) -> None:
        """Grow ``name`` to ``count`` partitions (KafkaApis/ReplicationControlManager.createPartitions):
        new partitions take the topic's replication factor, placed as at creation unless
        ``assignments`` names their replicas. Raises ValueError with Kafka's message."""
        topic = self.topics[name]
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
        retention = effective("retention.bytes", configs, self.config)
        now = trio.current_time()
        parts = []
        for i, replicas in enumerate(placement, start=first):
            leader = next((r for r in replicas if self.is_alive(r)), replicas[0])
            followers = [r for r in replicas if r != leader]
            parts.append(Partition(name, i, replicas, leader, 0, sorted(r for r in replicas if self.is_alive(r)),
                                   PartitionLog(retention, self.log_memory, f"{name}-{i}"),
                                   {r: 0 for r in followers}, {r: now for r in followers}))
        return parts

    def delete_topic(self, name: str) -> None:
        topic = self.topics.pop(name)
        cluster_shape.changed()
        for p in topic.partitions:
            p.log.close()
            self.produce_purgatory.check_and_complete(p.key)
            self.fetch_purgatory.check_and_complete(p.key)

    def new_uuid(self) -> uuid.UUID:
        """A random (version 4) UUID from the seeded RNG, so runs with the same ``emu.seed``
        get the same topic ids."""
        return uuid.UUID(int=self.rng.getrandbits(128), version=4)

    def all_partitions(self) -> Iterable[Partition]:
        for t in self.topics.values():
            yield from t.partitions

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    def partition(self, topic: str, index: int) -> Partition | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            return None
        return t.partitions[index]

    def maybe_auto_create(self, name: str) -> Topic | None:
        if name in self.topics:
            return self.topics[name]
        if not self.config["auto.create.topics.enable"]:
            return None
        try:
            validate_topic_name(name)
        except ValueError:
            return None
        return self.create_topic(name)

    def max_message_bytes(self, topic: str) -> int:
        t = self.topics.get(topic)
        return effective("max.message.bytes", t.configs if t is not None else {}, self.config)

    # -- groups -------------------------------------------------------------------------------
    def coordinator_for(self, group_id: str) -> int:
        """Kafka: partition = abs(hashCode(group)) % offsets.topic.num.partitions, coordinator =
        that __consumer_offsets partition's leader (``broker_emu.internal_topics``)."""
        return self.offsets_partition_leader((java_string_hash(group_id) & 0x7FFFFFFF) % self.config["offsets.topic.num.partitions"])

    def ensure_offsets_topic(self) -> Topic:
        return ensure_offsets_topic(self)

    def offsets_partition_leader(self, p: int) -> int:
        """Partition p's replicas are brokers p, p+1, ... (in id order, offsets.topic.replication.factor
        of them) and its leader the first live one, so stopping a broker moves only the groups it
        coordinated, as a leader election would; -1 when none is alive (offline partition)."""
        ids = sorted(self.brokers)
        rf = min(self.config["offsets.topic.replication.factor"], len(ids))
        for k in range(rf):
            broker = ids[(p + k) % len(ids)]
            if self.is_alive(broker):
                return broker
        return -1

    # -- replication and leadership -------------------------------------------------------------
    def appends_replicate_at_once(self) -> bool:
        """Every follower of every partition copies an append in the append's own step, so an
        acks=all produce completes without waiting (``HandlerBackend.answers_at_once``). A stopped
        broker leaves the ISRs as it stops (``stop_broker``); the liveness check is for a broker
        that would stay in an ISR while down, as a crashed one does in Kafka until
        replica.lag.time.max.ms."""
        return self.replication.immediate() and all(b.alive for b in self.brokers.values())

    def after_append(self, p: Partition, previous_leo: int) -> None:
        self.replication.after_append(p, previous_leo)
        if p.update_high_watermark():
            self._partition_changed(p)

    def _partition_changed(self, p: Partition) -> None:
        self.produce_purgatory.check_and_complete(p.key)
        self.fetch_purgatory.check_and_complete(p.key)
        self.delete_records_purgatory.check_and_complete(p.key)

    def _isr_changed(self, p: Partition, brokers: list[int], how: str) -> None:
        details = {"topic": p.topic, "partition": p.index, how: brokers, "isr": list(p.isr), "high_watermark": p.high_watermark}
        if how == "shrink":   # the timeline names the broker clock that fired
            details["replica_lag_time_max_ms"] = self.config["replica.lag.time.max.ms"]
        self.trace.emit(Kind.ISR_CHANGE, details=details)
        if p.adding_replicas and how == "expand":
            reassignments.maybe_complete(self, p)

    def move_leader(self, topic: str, partition: int, broker_id: int) -> None:
        p = self.partition(topic, partition)
        if p is None:
            raise KeyError(f"no partition {topic}-{partition}")
        if broker_id not in p.replicas:
            raise ValueError(f"broker {broker_id} is not a replica of {topic}-{partition} (replicas {p.replicas})")
        if not self.is_alive(broker_id):
            raise ValueError(f"broker {broker_id} is stopped")
        if p.leader == broker_id:
            return
        old = p.leader
        p.become_leader(broker_id, trio.current_time())
        self.trace.emit(Kind.LEADER_CHANGE, broker=broker_id, details={"topic": topic, "partition": partition, "from": old,
                                                                    "to": broker_id, "leader_epoch": p.leader_epoch})
        self._partition_changed(p)
        self.replication.resync(p)

    def set_replication(self, topic: str | None, partition: int | None, follower: int | None, mode: str, lag_ms: float = 0.0) -> None:
        """Validated entry point for chaos (control API, scenario files, Python): see
        ``Replication``. The mode and lag are checked here too, so a NaN or infinite lag from
        Python never reaches a timer (faults.rules.check_ms)."""
        if mode not in REPLICATION_MODES:
            raise FaultConfigError("mode", f"unknown replication mode {mode!r} (known: {', '.join(REPLICATION_MODES)})")
        lag_ms = check_ms(lag_ms, "lag_ms")
        if topic is not None and topic not in self.topics:
            raise KeyError(f"no topic {topic!r}")
        if topic is not None and partition is not None and self.partition(topic, partition) is None:
            raise KeyError(f"no partition {topic}-{partition}")
        if follower is not None and follower not in self.brokers:
            raise KeyError(f"no broker {follower}")
        self.replication.set_mode(topic, partition, follower, mode, lag_ms)

    def set_marker_delay(self, ms: float | None) -> None:
        """The control API's marker delay (None: emu.txn.marker.delay.ms again)."""
        if self.txn is None:
            raise ValueError("this cluster has no transaction coordinator")
        self.txn.marker_delay_ms = ms

    def stop_broker_later(self, broker_id: int, delay_s: float = 0.0) -> None:
        """Stop the broker from synchronous code (a fault, a trigger): in the cluster's nursery,
        ``delay_s`` from now."""
        async def stop() -> None:
            await trio.sleep(delay_s)
            await self.stop_broker(broker_id)

        if self._nursery is None:
            raise RuntimeError("the cluster is not running (open_cluster / run_cluster_in_thread)")
        self._nursery.start_soon(stop)

    async def stop_broker(self, broker_id: int) -> None:
        """Close the listener and every connection; the controller moves leadership to a live
        ISR member and drops the broker from ISRs at once (faster than Kafka's session timeout,
        so scenarios are exact; documented). With no live ISR member the partition stays
        offline (metadata: no leader) until one returns, as Kafka with its default
        ``unclean.leader.election.enable=false``: electing a replica that lacks committed data
        would truncate below the high watermark."""
        b = self.brokers[broker_id]
        if not b.alive:
            return
        b.alive = False
        cluster_shape.changed()
        self.trace.emit(Kind.BROKER_STOP, broker=broker_id)
        if b.listener_scope is not None:
            b.listener_scope.cancel()
        for conn in list(b.connections):
            conn.abort("broker stopped")
        for t in self.topics.values():
            for p in t.partitions:
                if broker_id in p.isr and len(p.isr) > 1:
                    p.isr.remove(broker_id)
                    cluster_shape.changed()
                if p.leader == broker_id:
                    # the first live ISR member in assignment order (PartitionChangeBuilder.electLeader)
                    candidates = [r for r in p.replicas if r in p.isr and r != broker_id and self.is_alive(r)]
                    if not candidates and effective("unclean.leader.election.enable", t.configs, self.config):
                        candidates = [r for r in p.replicas if r != broker_id and self.is_alive(r)]
                    if candidates:
                        self.move_leader(p.topic, p.index, candidates[0])
                p.update_high_watermark()
                self._partition_changed(p)
        follow_coordinators(self)
        if self.groups is not None:
            self.groups.broker_stopped(broker_id)

    async def start_broker(self, broker_id: int) -> None:
        b = self.brokers[broker_id]
        if b.alive:
            return
        b.alive = True
        cluster_shape.changed()
        self.trace.emit(Kind.BROKER_START, broker=broker_id)
        if self._nursery is not None and b.port:
            from broker_emu.listeners import serve_broker
            await self._nursery.start(serve_broker, self, b, b.port)
        self.replication.resync_all()
        follow_coordinators(self)

    # -- in-memory connections --------------------------------------------------------------------
    def connect(self, broker_id: int, protocol: str | None = None) -> trio.abc.Stream:
        """The client end of a new in-memory connection to ``broker_id``, served by the same
        pipeline as TCP connections (for exact virtual-time tests). Raises OSError like a
        refused TCP connect if the broker is unknown or stopped."""
        from broker_emu.listeners import connect_in_memory

        return connect_in_memory(self, broker_id, protocol)

    async def open_connection(self, broker_id: int) -> trio.abc.Stream:
        """``connect`` as a client's connect call sees it: a drop_connects fault makes the attempt
        hang (the trace records ``connect_dropped``), as a SYN into a firewall would."""
        for rule in self.faults.on_connect(broker_id, 0, self.now_ms(), only="drop_connects"):
            self.trace.emit(Kind.CONNECT_DROPPED, broker=broker_id, details={"rule": rule.id})
            await trio.sleep_forever()
        return self.connect(broker_id)

    # -- idempotence ----------------------------------------------------------------------------
    def init_producer_id(self, producer_id: int = -1, epoch: int = -1) -> tuple[int, int]:
        if producer_id >= 0 and producer_id in self.producer_epochs:
            self.producer_epochs[producer_id] += 1
            return producer_id, self.producer_epochs[producer_id]
        pid = self.next_producer_id
        self.next_producer_id += 1
        self.producer_epochs[pid] = 0
        return pid, 0

    # -- purgatory trace ------------------------------------------------------------------------
    def _purgatory_event(self, kind: str, op) -> None:
        ctx = getattr(op, "ctx", None)
        fields = ctx.trace_fields() if ctx is not None else {}
        self.trace.emit(kind, **fields, details=op.describe() if hasattr(op, "describe") else {})

    # -- description ----------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        return {
            "cluster_id": self.cluster_id,
            "controller": self.controller_id,
            "brokers": [{"id": b.id, "host": b.host, "port": b.port, "alive": b.alive} for b in self.brokers.values()],
            "topics": [
                {"name": t.name, "topic_id": str(t.topic_id), "partitions": [
                    {"partition": p.index, "leader": p.leader, "leader_epoch": p.leader_epoch, "replicas": p.replicas,
                     "isr": p.isr, "log_start_offset": p.log.log_start_offset, "log_end_offset": p.log_end_offset,
                     "high_watermark": p.high_watermark} for p in t.partitions]}
                for t in self.topics.values()
            ],
            "faults": [r.to_dict() for r in self.faults.rules.values()],
            "purgatory": {"produce": len(self.produce_purgatory), "fetch": len(self.fetch_purgatory)},
        }


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (UTF-16 code units), as a signed 32-bit int."""
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split() if s else []:
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h

