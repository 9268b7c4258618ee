"""The emulated cluster: the composition root of its parts (brokers, topics, leadership,
coordinator placement, producer ids, clocks, tasks) and of the purgatories, faults, trace, group
and transaction coordinators that work on them.

Everything here is plain state changed by synchronous methods (atomic under trio); the
I/O lives in ``server.py`` and the waits in the purgatories. Each part is a small class of its
own module; the methods here are the cluster's public face, most of them handing over to a part.
"""

from __future__ import annotations

import itertools
import logging
import random
import uuid
from typing import IO, Any, Awaitable, Callable, Iterable, Iterator

import trio

from broker_emu import reassignments
from broker_emu.brokers import Broker, BrokerRoster
from broker_emu.clock import ClusterClock
from broker_emu.cluster_tasks import ClusterTasks
from broker_emu.config import ConfigError, broker_config
from broker_emu.coordinator_placement import CoordinatorPlacement
from broker_emu.faults.engine import FaultEngine
from broker_emu.front_door import FrontDoor
from broker_emu.group_configs import GroupConfigs
from broker_emu.groups.coordinator import GroupCoordinator
from broker_emu.internal_topics import ensure_offsets_topic, follow_coordinators
from broker_emu.leadership import Leadership
from broker_emu.log import LogMemory, PartitionLog, log_memory_budget
from broker_emu.partition import Partition
from broker_emu.plants import Plant
from broker_emu.producer_expiry import ProducerExpiry
from broker_emu.producer_ids import ProducerIds
from broker_emu.purgatory import DelayedOperation, Purgatory
from broker_emu.quotas import Quotas
from broker_emu.replication import Replication
from broker_emu.scheduler import Scheduler
from broker_emu.security.settings import Security, SecurityError
from broker_emu.share.coordinator import ShareCoordinator
from broker_emu.topics import Topic, TopicCatalog
from broker_emu.trace import Kind, Trace
from broker_emu.transactions.coordinator import TransactionCoordinator
from broker_emu.transactions.markers import lost_marker, write_marker
from broker_emu.version_profiles import ProfileError, VersionProfile
from broker_emu.waits import Waits

log_module = logging.getLogger("broker_emu")


class Cluster(Waits):   # Waits: cluster.wait_for(...)
    def __init__(self, brokers: int | Iterable[int] = 3, config: dict[str, Any] | None = None,
                 host: str = "127.0.0.1", trace_sink: IO[str] | None = None):
        self.config = broker_config(config)
        ids = list(range(brokers)) if isinstance(brokers, int) else list(brokers)
        self.roster = BrokerRoster(ids, host)
        self.brokers: dict[int, Broker] = self.roster.by_id
        self.host = host
        self.rng = random.Random(self.config["emu.seed"])
        self.cluster_id = self.config["cluster.id"]
        self.controller_id = ids[0]
        self.scheduler = Scheduler()
        self.trace = Trace(trio.current_time, sink=trace_sink, max_bytes=self.config["emu.trace.max.bytes"])
        self.clock = ClusterClock(self.trace.now_ms, self.config)
        self.tasks = ClusterTasks()
        # an address of its own in front of the cluster, when a scenario gives the client one (broker_set.open_front_door)
        self.front_door: FrontDoor | None = None
        self.log_memory = LogMemory(log_memory_budget(self.config["emu.log.memory.bytes"]), self._log_evicted)
        self._evict_warned_at = float("-inf")
        self.catalog = TopicCatalog(self.config, self.rng, self.roster, self.log_memory, self._topic_partition_deleted)
        self.topics: dict[str, Topic] = self.catalog.by_name
        self.faults = FaultEngine(seed=self.config["emu.seed"], brokers=ids, clock=self.trace.now_ms)
        self.produce_purgatory = Purgatory("Produce", self.scheduler, self._purgatory_event)
        self.fetch_purgatory = Purgatory("Fetch", self.scheduler, self._purgatory_event)
        self.delete_records_purgatory = Purgatory("DeleteRecords", self.scheduler, self._purgatory_event)
        self.replication = Replication(self.scheduler, self.config, self.is_alive, self._partition_changed,
                                       self._isr_changed, partitions=self.all_partitions, emit=self.trace.emit)
        self.leadership = Leadership(self.catalog, self.roster, self.config, self.trace, self.replication,
                                     self._partition_changed, self._batches_dropped)
        self.coordinators = CoordinatorPlacement(self.roster.ids, self.is_alive, self.config)
        self.producer_ids = ProducerIds()
        # the coordinator's view (InitProducerId); sequences live per partition, in its log
        self.producer_epochs: dict[int, int] = self.producer_ids.epochs
        self.groups = GroupCoordinator(self)
        self.share = ShareCoordinator(self)   # KIP-932 share groups and their share partitions
        self.txn = TransactionCoordinator(self)   # its timeout check starts with the cluster (start_coordinators)
        self.producer_expiry = ProducerExpiry(self)   # producer.id.expiration.ms, from start_coordinators
        self.plant: Plant | None = None   # a planted bug (broker_emu/plants.py): set by Python code only
        self.conn_ids: Iterator[int] = itertools.count(1)
        # AlterConfigs on brokers: "" (cluster-wide) or a broker id -> overrides (handlers/admin_configs.py)
        # A Kafka 4.x cluster is formatted with min.insync.replicas as a cluster-wide dynamic value
        # (KIP-966, eligible leader replicas need it there): DescribeConfigs shows it with source 3
        self.dynamic_config: dict[str, dict[str, str]] = {"": {"min.insync.replicas": str(self.config["min.insync.replicas"])}}
        self.static_config = dict(self.config)
        self.group_configs = GroupConfigs()   # ConfigResource GROUP overrides (KIP-848 groups read them)
        self.kept_metadata: dict[Any, tuple[int, dict]] = {}   # handlers/metadata.py: answers kept per shape
        self.quotas = Quotas()   # AlterClientQuotas; the server throttles Produce and Fetch by them
        try:
            self.security: Security = Security(self.config, host, self.wall_ms)   # the listeners' protocol, SASL credentials, TLS
            self.profile = VersionProfile(self.config)    # emu.kafka.version, emu.api.max.versions
        except (SecurityError, ProfileError) as exc:
            raise ConfigError(str(exc)) from None

    async def start_coordinators(self, nursery: trio.Nursery, listen: Callable[..., Awaitable[Any]] | None = None,
                                 connect: Callable[..., trio.abc.Stream] | None = None) -> None:
        """Bind the cluster to the nursery its tasks run in (and to the pipeline's listener and
        in-memory connection, ``ClusterTasks``) and start the timers of the group and
        transaction coordinators (the scheduler must already run)."""
        self.tasks.bind(nursery, listen, connect)
        await nursery.start(self.scheduler.run)
        self.txn.start()
        self.producer_expiry.start()
        await nursery.start(self.groups.run)

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

    # -- time (ClusterClock) ----------------------------------------------------------------------
    def now_ms(self) -> float:
        return self.clock.now_ms()

    def wall_ms(self) -> int:
        """Kafka's wall clock (``ClusterClock.wall_ms``, ``emu.wall.clock``)."""
        return self.clock.wall_ms()

    # -- brokers (BrokerRoster) -----------------------------------------------------------------
    def broker_ids(self) -> set[int]:
        return self.roster.ids()

    def is_alive(self, broker_id: int) -> bool:
        return self.roster.is_alive(broker_id)

    def live_brokers(self) -> list[Broker]:
        return self.roster.live()

    @property
    def bootstrap(self) -> str:
        return self.roster.bootstrap()

    def bootstrap_for(self, protocol: str) -> str:
        """The bootstrap servers of the listener with this security protocol."""
        return self.roster.bootstrap(None if protocol == self.security.protocol else protocol)

    # -- topics (TopicCatalog) ------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int | None = None, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None, assignments: list[list[int]] | None = None) -> Topic:
        """``TopicCatalog.create``: a new topic, ready at once (ValueError naming a bad argument)."""
        return self.catalog.create(name, partitions, replication_factor, configs, assignments)

    def add_partitions(self, name: str, count: int, assignments: list[list[int]] | None = None) -> None:
        self.catalog.add_partitions(name, count, assignments)

    def delete_topic(self, name: str) -> None:
        self.catalog.delete(name)

    def _topic_partition_deleted(self, p: Partition) -> None:
        self.produce_purgatory.check_and_complete(p.key)
        self.fetch_purgatory.check_and_complete(p.key)

    def new_uuid(self) -> uuid.UUID:
        return self.catalog.new_uuid()

    def all_partitions(self) -> Iterable[Partition]:
        return self.catalog.all_partitions()

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self.catalog.by_id(topic_id)

    def partition(self, topic: str, index: int) -> Partition | None:
        return self.catalog.partition(topic, index)

    def maybe_auto_create(self, name: str) -> Topic | None:
        return self.catalog.maybe_auto_create(name)

    def max_message_bytes(self, topic: str) -> int:
        return self.catalog.max_message_bytes(topic)

    # -- coordinators (CoordinatorPlacement) ------------------------------------------------------
    def coordinator_for(self, group_id: str) -> int:
        return self.coordinators.coordinator_for(group_id)

    def ensure_offsets_topic(self) -> Topic:
        return ensure_offsets_topic(self)

    def offsets_partition_leader(self, p: int) -> int:
        return self.coordinators.offsets_partition_leader(p)

    # -- replication and leadership -------------------------------------------------------------
    def appends_replicate_at_once(self) -> bool:
        """Every follower of every partition copies an append in the append's own step, so an
        acks=all produce completes without waiting (``HandlerBackend.answers_at_once``). A stopped
        broker leaves the ISRs as it stops (``stop_broker``); the liveness check is for a broker
        that would stay in an ISR while down, as a crashed one does in Kafka until
        replica.lag.time.max.ms."""
        return self.replication.immediate() and self.roster.all_alive()

    def after_append(self, p: Partition, previous_leo: int) -> None:
        self.replication.after_append(p, previous_leo)
        if p.update_high_watermark():
            self._partition_changed(p)

    def _batches_dropped(self, p: Partition, dropped: list[bytes]) -> None:
        """A new leader that had less truncated the log: the transaction markers it lost are
        written again on it, as the coordinator's marker channel retries a WriteTxnMarkers the old
        leader never answered with the marker replicated (Kafka appends markers with acks=all:
        ``TransactionMarkerChannelManager``, ``ReplicaManager.appendRecords``)."""
        for data in dropped:
            marker = lost_marker(data)
            if marker is None:
                continue
            pid, epoch, commit = marker
            offset = write_marker(self, p, pid, epoch, commit)
            self.trace.emit(Kind.TXN_MARKER, broker=p.leader, details={
                "topic": p.topic, "partition": p.index, "offset": offset, "commit": commit, "producer_id": pid,
                "epoch": epoch, "rewritten": "the new leader did not have it"})

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
        self.leadership.move_leader(topic, partition, broker_id)

    def set_replication(self, topic: str | None, partition: int | None, follower: int | None, mode: str, lag_ms: float = 0.0) -> None:
        """``Leadership.set_replication``: the validated entry point for replication chaos."""
        self.leadership.set_replication(topic, partition, follower, mode, lag_ms)

    def set_marker_delay(self, ms: float | None) -> None:
        """The control API's marker delay (None: emu.txn.marker.delay.ms again)."""
        self.txn.marker_delay_ms = ms

    # -- broker lifecycle -------------------------------------------------------------------------
    def stop_broker_later(self, broker_id: int, delay_s: float = 0.0) -> None:
        """Stop the broker from synchronous code (a fault, a trigger): in the cluster's nursery,
        ``delay_s`` from now."""
        async def stop() -> None:
            await trio.sleep(delay_s)
            await self.stop_broker(broker_id)

        self.tasks.start_soon(stop, why="the cluster is not running (open_cluster / run_cluster_in_thread)")

    def run_late(self, fn: Callable[[], Awaitable[None]]) -> None:
        """A held request whose client has gone (``faults/apply.hold``) waits and is answered in
        the cluster's nursery: it outlives its connection."""
        self.tasks.start_soon(fn, why="the cluster is not running (open_cluster / run_cluster_in_thread)")

    def connection_ended(self, broker_id: int, conn_id: int) -> None:
        """What a closed connection takes with it beyond the connection: the share sessions it
        opened (``ShareCoordinator.connection_closed``)."""
        self.share.connection_closed(broker_id, conn_id)

    async def stop_broker(self, broker_id: int) -> None:
        """Close the listener and every connection; the controller moves leadership to a live
        ISR member and drops the broker from ISRs at once (faster than Kafka's session timeout,
        so scenarios are exact; documented): ``Leadership.broker_stopped``."""
        b = self.roster.mark_stopped(broker_id)
        if b is None:
            return
        self.trace.emit(Kind.BROKER_STOP, broker=broker_id)
        self.roster.disconnect(b)
        self.leadership.broker_stopped(broker_id)
        follow_coordinators(self)
        self.groups.broker_stopped(broker_id)
        self.txn.coordinators_moved()

    async def start_broker(self, broker_id: int) -> None:
        b = self.roster.mark_started(broker_id)
        if b is None:
            return
        self.trace.emit(Kind.BROKER_START, broker=broker_id)
        if self.tasks.running and b.port and self.tasks.listen is not None:
            await self.tasks.start(self.tasks.listen, self, b, b.port)
        self.replication.resync_all()
        follow_coordinators(self)
        self.txn.coordinators_moved()

    # -- in-memory connections --------------------------------------------------------------------
    def connect(self, broker_id: int, protocol: str | None = None) -> trio.abc.Stream:
        """The client end of a new in-memory connection to ``broker_id``, served by the same
        pipeline as TCP connections (for exact virtual-time tests). Raises OSError like a
        refused TCP connect if the broker is unknown or stopped."""
        return self.tasks.connect(self, broker_id, protocol)

    async def open_connection(self, broker_id: int) -> trio.abc.Stream:
        """``connect`` as a client's connect call sees it: a drop_connects fault makes the attempt
        hang (the trace records ``connect_dropped``), as a SYN into a firewall would."""
        for rule in self.faults.on_connect(broker_id, 0, self.now_ms(), only="drop_connects"):
            self.trace.emit(Kind.CONNECT_DROPPED, broker=broker_id, details={"rule": rule.id})
            await trio.sleep_forever()
        return self.connect(broker_id)

    # -- idempotence (ProducerIds) --------------------------------------------------------------
    def init_producer_id(self, producer_id: int = -1, epoch: int = -1) -> tuple[int, int]:
        return self.producer_ids.init(producer_id, epoch)

    # -- purgatory trace ------------------------------------------------------------------------
    def _purgatory_event(self, kind: str, op: DelayedOperation) -> None:
        ctx = getattr(op, "ctx", None)
        if ctx is not None and type(kind) is Kind:   # a request's own event: the positional path
            self.trace.emit_request(kind, ctx.trace_fields(), op.describe())
            return
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
