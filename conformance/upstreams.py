"""What sits behind the proxy in a run on real Kafka or in a differential: a real Apache Kafka
cluster (conformance/realkafka, one per run) or the emulator (one per scenario), offered the same
way: create the scenario's topics, put its server-side faults in place, read the logs' ends.

Server-side faults on Kafka are real: a stalled follower is a paused node (SIGSTOP), a lagging one
a node paused for the lag and then resumed. The emulator gets the same rules as in a normal run
(``apply_setup`` with the replication and leader rules only; the proxy applies the others).
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import replace
from typing import Any, Iterator, Protocol

from broker_emu.runtime import run_cluster_in_thread
from conformance.adapters.base import scaled_ms
from conformance.cluster_setup import (
    SHARE_LOCK_FLOOR,
    SHARE_LOCK_FLOOR_MS,
    apply_setup,
    kip848_timers,
    real_time_broker_config,
    snapshot,
)
from conformance.model import Scenario

# Settings every run on real Kafka starts its cluster with: what the scenarios need of a broker
# that one shared cluster can give them all (the emulator gets the same through broker_config).
KAFKA_CLUSTER_CONFIG: dict[str, Any] = {
    "group.initial.rebalance.delay.ms": 0,     # as every conformance run of the emulator
    "group.min.session.timeout.ms": 100,       # scaled session timeouts (20 s / 30) are accepted
    "auto.create.topics.enable": False,        # topics are created per scenario; "missing" stays missing
    "replica.lag.time.max.ms": 1_000_000,      # a paused follower stays in the ISR: acks=all waits
    # a follower adds a new partition to its fetcher only between two of its long polls: with
    # Kafka's 500 ms the first acks=all Produce on a new topic waited up to that long (docs/
    # differences.md, 2); 20 ms is the default scaled as the emulator's broker timers are (/30)
    "replica.fetch.wait.max.ms": 20,
    # a follower whose fetch failed (its leader's node was paused, or it was) waits this long
    # before fetching again: Kafka's 1 s made a later acks=all Produce wait ~950 ms more on 3
    # nodes (difference 10); scaled like the wait above
    "replica.fetch.backoff.ms": 33,
    # a node paused for a stall or a lag must stay registered: a client that first waited on the
    # paused node (librdkafka sent InitProducerId there) kept it paused ~10 s, past Kafka's 9 s
    # default, and the controller fenced it and dropped it from every ISR (docs/differences.md, 4)
    "broker.session.timeout.ms": 60_000,
    # KIP-848's broker-owned group timers, scaled as the emulator's are in real-time runs
    **kip848_timers(30),
    # the share scenarios' scaled record locks are accepted as the emulator accepts them
    SHARE_LOCK_FLOOR: SHARE_LOCK_FLOOR_MS,
}
RESUME_SETTLE_S = 1.0
# broker settings a topic can carry instead (topic config name)
TOPIC_LEVEL = {"min.insync.replicas": "min.insync.replicas", "log.retention.ms": "retention.ms",
               "message.max.bytes": "max.message.bytes", "log.segment.bytes": "segment.bytes"}


def server_rules(scenario: Scenario) -> tuple[dict[str, Any], ...]:
    """The fault rules the cluster itself must carry out (replication, leader moves)."""
    return tuple(r for r in scenario.faults if "replication" in r or "move_leader" in r or "stop_coordinator_when_revoking" in r)


def proxy_rules(scenario: Scenario) -> tuple[dict[str, Any], ...]:
    """The fault rules the proxy applies on the wire (delays, black holes, errors...)."""
    return tuple(r for r in scenario.faults if not {"replication", "move_leader", "stop_coordinator_when_revoking"} & set(r))


class CellUpstream(Protocol):
    bootstrap: str

    def leader(self, topic: str, partition: int) -> int: ...

    def snapshot(self) -> dict[str, Any]: ...


class Upstream(Protocol):
    name: str
    brokers: int

    def node_ids(self) -> list[int]:
        """The ids of the upstream's brokers (a scenario's broker i is the i-th, by id)."""

    def cell(self, scenario: Scenario, scale: float) -> contextlib.AbstractContextManager[CellUpstream]: ...


# -- the emulator ------------------------------------------------------------------------------

class EmulatorCell:
    def __init__(self, tc: Any):
        self.tc = tc
        self.bootstrap = tc.bootstrap

    def leader(self, topic: str, partition: int) -> int:
        return int(self.tc.call(lambda: self.tc.cluster.partition(topic, partition).leader))

    def snapshot(self) -> dict[str, Any]:
        return dict(self.tc.call(snapshot, self.tc.cluster))


class EmulatorUpstream:
    """A fresh emulated cluster per scenario, as ``run_real_time`` starts it, but of the Kafka
    side's size: ``brokers`` brokers, each topic's replication factor at most that, as
    ``KafkaUpstream.create_topics`` makes them. A scenario's own three brokers against a 1-node
    Kafka made the sides differ in what clients do with more leaders (a consumer of 4 partitions
    fetched from 3 brokers on one side, 1 on the other: twice the Fetch requests)."""

    name = "emulator"

    def __init__(self, brokers: int | None = None):
        self.brokers = brokers or 3

    def node_ids(self) -> list[int]:
        return list(range(self.brokers))

    @contextlib.contextmanager
    def cell(self, scenario: Scenario, scale: float) -> Iterator[CellUpstream]:
        config = real_time_broker_config(scenario.broker_config, scale)
        if any(r.get("replication", {}).get("mode") == "stall" for r in scenario.faults):
            # Kafka's side keeps a paused follower in the ISR until the controller fences the
            # node (broker.session.timeout.ms, unscaled); the scenario's replica.lag.time.max.ms,
            # scaled, let it go after 33 s here. A client that never gives up on its record
            # (franz-go) then retried for 33 s on one side and ~65 s on the other.
            config["replica.lag.time.max.ms"] = KAFKA_CLUSTER_CONFIG["broker.session.timeout.ms"]
        topics = tuple((name, n, min(rf, self.brokers)) for name, n, rf in scenario.topics)
        with run_cluster_in_thread(brokers=self.brokers, topics=topics, config=config) as tc:
            tc.call(apply_setup, tc.cluster, replace(scenario, faults=server_rules(scenario)), scale)
            yield EmulatorCell(tc)


# -- real Kafka ----------------------------------------------------------------------------------

class KafkaCell:
    def __init__(self, upstream: "KafkaUpstream", topics: tuple[tuple[str, int, int], ...]):
        self.up = upstream
        self.bootstrap = upstream.bootstrap
        self.topics = topics
        self.paused: list[int] = []
        self.timers: list[threading.Timer] = []
        self.lagging: list[tuple[int, float]] = []   # (node, lag s): resumed that long after the first Produce
        # read before any node is paused (a metadata request to a paused node would hang)
        self.replicas: dict[tuple[str, int], tuple[int, list[int]]] = {}
        for name, _, _ in topics:
            for index, p in self._in_sync(name).items():
                self.replicas[(name, index)] = (p.leader, [r for r in p.replicas if r != p.leader])

    def _in_sync(self, name: str, timeout_s: float = 20.0) -> dict[int, Any]:
        """The topic's partitions once every replica is in the ISR: a node paused by an earlier
        scenario is left out of the ISR of topics created soon after (seen on Kafka 4.4), and
        acks=all would not wait for it."""
        deadline = time.monotonic() + timeout_s
        while True:
            parts = self.up.admin().list_topics(name, timeout=10).topics[name].partitions
            if all(set(p.isrs) == set(p.replicas) for p in parts.values()) or time.monotonic() > deadline:
                return dict(parts)
            time.sleep(0.1)

    def leader(self, topic: str, partition: int) -> int:
        return self.replicas[(topic, partition)][0]

    def followers(self, topic: str, partition: int) -> list[int]:
        return self.replicas[(topic, partition)][1]

    def pause(self, node_id: int, for_s: float | None = None) -> None:
        self.up.node(node_id).pause()
        self.paused.append(node_id)
        if for_s is not None:
            timer = threading.Timer(for_s, self.resume, (node_id,))
            self.timers.append(timer)
            timer.start()

    def resume(self, node_id: int) -> None:
        if node_id in self.paused:
            self.paused.remove(node_id)
            self.up.node(node_id).resume()

    def resume_all(self) -> None:
        for t in self.timers:
            t.cancel()
        resumed = list(self.paused)
        for node_id in resumed:
            self.resume(node_id)
        if resumed:
            # a resumed JVM needs about half a second before its fetches reach the leaders again
            # (docs/differences.md, 10): the next scenario must not meet a follower still waking
            time.sleep(RESUME_SETTLE_S)

    def snapshot(self) -> dict[str, Any]:
        """End offsets once the followers are resumed and caught up (the high watermark is what
        a consumer can read: after the resume it covers what the leader appended)."""
        self.resume_all()
        ends = self.up.end_offsets([(t, p) for t, n, _ in self.topics for p in range(n)])
        return {"log_end_offsets": ends, "high_watermarks": dict(ends)}


class KafkaUpstream:
    """A running real cluster (``conformance.realkafka.cluster.apache_kafka_cluster``), shared by every scenario
    of a run: each scenario gets topics of its own (the caller renames them run-unique)."""

    name = "kafka"

    def __init__(self, cluster: Any):
        self.cluster = cluster
        self.bootstrap: str = cluster.bootstrap
        self.brokers = len(cluster.nodes)
        self._admin: Any = None

    def admin(self) -> Any:
        if self._admin is None:
            from confluent_kafka.admin import AdminClient

            self._admin = AdminClient({"bootstrap.servers": self.bootstrap})
        return self._admin

    def node(self, node_id: int) -> Any:
        for i, n in enumerate(self.cluster.nodes):
            if getattr(n, "node_id", i) == node_id:
                return n
        raise KeyError(f"no Kafka node {node_id}")

    def node_ids(self) -> list[int]:
        return sorted(getattr(n, "node_id", i) for i, n in enumerate(self.cluster.nodes))

    def create_topics(self, topics: tuple[tuple[str, int, int], ...], config: dict[str, str],
                      leaders: dict[tuple[str, int], int] | None = None) -> None:
        """``leaders``: (topic, partition) -> the node that leads it from the start. Such a topic is
        created with explicit replicas, that node first: the preferred leader, which the
        controller elects at creation (KRaft's ReplicationControlManager)."""
        from confluent_kafka.admin import NewTopic

        new = [_new_topic(NewTopic, name, n, min(rf, self.brokers), config, self.node_ids(), leaders or {})
               for name, n, rf in topics]
        if not new:
            return
        for fut in self.admin().create_topics(new, operation_timeout=10).values():
            fut.result(timeout=20)
        deadline = time.monotonic() + 15
        for name, n, _ in topics:   # until every partition has a leader the brokers know of
            while time.monotonic() < deadline:
                md = self.admin().list_topics(name, timeout=5).topics.get(name)
                if md is not None and md.error is None and len(md.partitions) == n \
                        and all(p.leader >= 0 for p in md.partitions.values()):
                    break
                time.sleep(0.05)
        self._known_everywhere([name for name, _, _ in topics], deadline)

    def _known_everywhere(self, names: list[str], deadline: float) -> None:
        """Until every node's own Metadata lists the topics with their leaders: each broker learns
        a new topic from the metadata log on its own, and a client whose first Metadata went to
        one that had not yet was answered UNKNOWN_TOPIC_OR_PARTITION (once in a 3-node run), where
        the emulator's cluster knows a topic everywhere from its creation."""
        from conformance.realkafka import wire

        for address in self.bootstrap.split(","):
            host, port = address.rsplit(":", 1)
            while time.monotonic() < deadline:
                answer = wire.metadata(host, int(port), names)
                if all(t.error_code == 0 and t.partitions and all(p.leader_id >= 0 for p in t.partitions)
                       for t in answer.topics):
                    break
                time.sleep(0.02)

    def end_offsets(self, parts: list[tuple[str, int]], settle_s: float = 4.0) -> dict[str, int]:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "conformance-snapshot"})
        try:
            deadline, stable = time.monotonic() + settle_s, 0

            def read() -> dict[str, int]:
                while True:   # a node just resumed may not know the topic yet: Unknown partition
                    try:
                        return {f"{t}-{p}": c.get_watermark_offsets(TopicPartition(t, p), timeout=5)[1] for t, p in parts}
                    except Exception:
                        if time.monotonic() > deadline + 10:
                            raise
                        time.sleep(0.1)
            last = read()
            while time.monotonic() < deadline and stable < 3:   # settled: unchanged for 0.6 s
                time.sleep(0.2)
                now = read()
                stable = stable + 1 if now == last else 0
                last = now
            return last
        finally:
            c.close()

    def warm_up(self, timeout_s: float = 30.0) -> None:
        """What a fresh cluster does once, before the first scenario: the first InitProducerId is
        answered COORDINATOR_LOAD_IN_PROGRESS while the broker fetches a block of producer ids from
        the controller, the first FindCoordinator creates __consumer_offsets (COORDINATOR_NOT_AVAILABLE
        meanwhile). The emulator has neither; a scenario should not see them because it ran first."""
        from confluent_kafka import Consumer, Producer, TopicPartition

        self._producer_ids(timeout_s)
        self.create_topics((("conformance-warm-up", 1, self.brokers),), {})
        p = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True})
        p.produce("conformance-warm-up", b"warm")
        if p.flush(timeout_s):
            raise RuntimeError("the warm-up produce was not delivered")
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "conformance-warm-up"})
        deadline = time.monotonic() + timeout_s
        try:
            while True:   # NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE until __consumer_offsets is led
                try:
                    c.committed([TopicPartition("conformance-warm-up", 0)], timeout=5)
                    return
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
        finally:
            c.close()

    def _producer_ids(self, timeout_s: float) -> None:
        """Each broker fetches its own block of producer ids on its first InitProducerId: ask each
        until it answers without COORDINATOR_LOAD_IN_PROGRESS."""
        from client.protocol import ApiKey
        from conformance.realkafka import wire

        body = {"transactional_id": None, "transaction_timeout_ms": -1, "producer_id": -1, "producer_epoch": -1}
        deadline = time.monotonic() + timeout_s
        for address in self.bootstrap.split(","):
            host, port = address.rsplit(":", 1)
            while wire.call(host, int(port), ApiKey.INIT_PRODUCER_ID, 4, body).error_code != 0:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{address} never handed out a producer id")
                time.sleep(0.1)

    @contextlib.contextmanager
    def cell(self, scenario: Scenario, scale: float) -> Iterator[CellUpstream]:
        topic_config = {TOPIC_LEVEL[k]: str(v) for k, v in scenario.broker_config.items() if k in TOPIC_LEVEL}
        if any("replication" in r for r in scenario.faults):
            topic_config.setdefault("min.insync.replicas", "2")
        leaders = {(r["move_leader"]["topic"], r["move_leader"].get("partition") or 0): r["move_leader"]["broker"]
                   for r in server_rules(scenario) if "move_leader" in r}
        self.create_topics(scenario.topics, topic_config, leaders)
        cell = KafkaCell(self, scenario.topics)
        try:
            for rule in server_rules(scenario):
                if "replication" in rule:
                    _replicate_as(cell, rule["replication"], scale)
            yield cell
        finally:
            cell.resume_all()
            self.delete_topics([name for name, _, _ in scenario.topics])

    def delete_topics(self, names: list[str]) -> None:
        """A cell's topics, deleted when it is done: the emulator side starts each cell on a fresh
        cluster, and a shared cluster that kept every cell's topics answered a client that lists
        or describes all topics ever more slowly (sarama's ListTopics describes every topic's
        configs: 6-16 ms on a fresh cluster, 71-126 ms with 250 topics from earlier cells)."""
        if not names:
            return
        for fut in self.admin().delete_topics(names, operation_timeout=10).values():
            fut.result(timeout=20)


def _new_topic(new_topic: Any, name: str, partitions: int, rf: int, config: dict[str, str], nodes: list[int],
               leaders: dict[tuple[str, int], int]) -> Any:
    if not any(t == name for t, _ in leaders):
        return new_topic(name, partitions, rf, config=config)
    # the others in id order after the leader, round-robin per partition as Kafka spreads them
    assignment = []
    for p in range(partitions):
        first = leaders.get((name, p), nodes[p % len(nodes)])
        rest = [n for n in nodes[p % len(nodes):] + nodes[:p % len(nodes)] if n != first]
        assignment.append([first, *rest][:rf])
    # confluent-kafka 2.16 wants the partition count beside the assignment (its docs say -1; it refuses that as
    # "a default partition count")
    return new_topic(name, partitions, replica_assignment=assignment, config=config)


def _replicate_as(cell: KafkaCell, spec: dict[str, Any], scale: float) -> None:
    """A stalled follower is a paused node; a lagging one is paused until the lag (scaled) has
    passed since the first Produce. One follower is enough: acks=all waits for every replica in
    the ISR."""
    topic, partition = spec["topic"], spec.get("partition") or 0
    followers = cell.followers(topic, partition)
    if spec.get("follower") is not None:
        followers = [f for f in followers if f == spec["follower"]]
    if not followers:
        raise RuntimeError(f"{topic}-{partition} has no follower to stall")
    # never the KRaft quorum's leader (every node is a controller too): a paused active controller
    # stops the heartbeats of the whole cluster, and brokers are fenced when it resumes
    quorum = getattr(cell.up.cluster, "quorum_leader", lambda: None)()
    if quorum is not None and len(followers) > 1:
        followers = [f for f in followers if f != quorum.node_id] or followers
    cell.pause(followers[-1])
    if spec["mode"] == "lag":   # resumed lag_ms after the first Produce reached the proxy (on_kafka)
        cell.lagging.append((followers[-1], scaled_ms(spec.get("lag_ms", 0), scale) / 1000))
