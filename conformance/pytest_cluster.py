"""What the pytest plugin hands a test: a cluster's shape from a marker or a factory's keywords,
thread-safe controls over a cluster running on its own thread, and, for a cluster shared by many
tests, the isolation that lets each test pay milliseconds instead of a cluster start.

Isolation on a shared cluster (what a test may rely on): its faults are gone when it ends, every
follower copies again, stopped brokers are started again, topics it made through the handle are
deleted, ``trace()`` and trace waits see only its own events, and ``unique(name)`` gives topic and
group names no other test uses. What it cannot undo: committed offsets and groups under names it
did not get from ``unique``, topics a client auto-created, and a cluster configuration — tests
that need their own configuration get their own cluster (a marker with other options).
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
from typing import Any

# the initial rebalance delay is Kafka's 3 s: a test's consumer group would wait that long for its
# first assignment (Apache Kafka's own test images and testcontainers set it to 0 too)
DEFAULTS: dict[str, Any] = {"brokers": 3, "topics": (), "config": {"group.initial.rebalance.delay.ms": 0}}
OPTIONS = ("brokers", "topics", "config", "kafka_version", "listener", "users", "client_certs", "transaction_version")
LISTENERS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class ClusterOptionError(ValueError):
    pass


def cluster_options(**given: Any) -> dict[str, Any]:
    """``run_cluster_in_thread``'s keywords for a cluster shaped as a marker or factory asks:
    ``brokers``, ``topics`` (``(name, partitions, replication_factor)``), ``config`` (Kafka's
    names), ``kafka_version`` (a version profile), ``listener`` (PLAINTEXT, SSL, SASL_PLAINTEXT,
    SASL_SSL), ``users`` (``{"alice": "secret"}`` for SASL), ``client_certs`` (names: mutual TLS),
    ``transaction_version`` (the finalized transaction.version: 2, Kafka 4.x's, or 1)."""
    for key in given:
        if key not in OPTIONS:
            close = difflib.get_close_matches(key, OPTIONS, n=1)
            raise ClusterOptionError(f"kafka_cluster: no option {key!r}" + (f"; did you mean {close[0]!r}?" if close else
                                                                          f" (options: {', '.join(OPTIONS)})"))
    brokers = given.get("brokers", DEFAULTS["brokers"])
    if not isinstance(brokers, int) or isinstance(brokers, bool) or brokers < 1:
        raise ClusterOptionError(f"kafka_cluster: brokers must be a whole number of at least 1, got {brokers!r}")
    config = {**DEFAULTS["config"], **(given.get("config") or {})}
    if given.get("kafka_version") is not None:
        config["emu.kafka.version"] = given["kafka_version"]
    if given.get("transaction_version") is not None:
        config["transaction.version"] = given["transaction_version"]
    listener = given.get("listener")
    if listener is not None:
        if str(listener).upper() not in LISTENERS:
            raise ClusterOptionError(f"kafka_cluster: listener must be one of {', '.join(LISTENERS)}, got {listener!r}")
        config["emu.security.protocol"] = str(listener).upper()
    users = given.get("users")
    if users:
        pairs = users.items() if isinstance(users, dict) else (str(u).split(":", 1) for u in users)
        config["emu.sasl.users"] = ",".join(f"{name}:{password}" for name, password in pairs)
    if given.get("client_certs"):
        config["emu.tls.client.certs"] = ",".join(given["client_certs"])
        config.setdefault("ssl.client.auth", "required")
    topics = tuple(tuple(t) for t in given.get("topics", DEFAULTS["topics"]))
    return {"brokers": brokers, "topics": topics, "config": config}


def shape_key(options: dict[str, Any]) -> str:
    """Clusters of one shape are interchangeable: the key a shared cluster is kept under."""
    return json.dumps(options, sort_keys=True, default=str)


class KafkaClusterHandle:
    """Thread-safe controls over a cluster running on its own thread (any test: sync, asyncio,
    or a third-party client's own threads)."""

    def __init__(self, threaded: Any):
        self._tc = threaded

    @property
    def bootstrap(self) -> str:
        return self._tc.bootstrap

    @property
    def cluster(self) -> Any:
        return self._tc.cluster

    @property
    def ca_file(self) -> str | None:
        """The CA certificate clients trust on an SSL or SASL_SSL listener (else None)."""
        tls = getattr(self.cluster.security, "tls", None)
        return getattr(tls, "ca_path", None)

    @property
    def faults(self) -> Any:
        """Named faults: ``kafka_cluster.faults.latency(api="Produce", ms=500)`` returns a handle
        (``.id``, ``.hits``, ``.clear()``); docs/faults.md."""
        return self._tc.faults

    def wait_for(self, what: str, timeout: float = 5.0, **params: Any) -> dict:
        """Block until the cluster reaches a state (``Cluster.wait_for``; docs/faults.md), or raise
        ``broker_emu.waits.WaitTimeout`` naming what was last seen."""
        return self._tc.wait_for(what, timeout, **params)

    def add_fault(self, rule: dict) -> int:
        return self._tc.call(lambda: self.cluster.faults.add(rule, self.cluster.now_ms()).id)

    def remove_fault(self, rule_id: int) -> bool:
        return self._tc.call(self.cluster.faults.remove, rule_id)

    def clear_faults(self) -> int:
        return self._tc.call(self.cluster.faults.clear)

    def set_replication(self, topic=None, partition=None, follower=None, mode="normal", lag_ms=0.0) -> None:
        self._tc.call(self.cluster.set_replication, topic, partition, follower, mode, lag_ms)

    def move_leader(self, topic: str, partition: int, broker: int) -> None:
        self._tc.call(self.cluster.move_leader, topic, partition, broker)

    def stop_broker(self, broker: int) -> None:
        self._tc.acall(self.cluster.stop_broker, broker)

    def start_broker(self, broker: int) -> None:
        self._tc.acall(self.cluster.start_broker, broker)

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None) -> None:
        self._tc.call(self.cluster.create_topic, name, partitions, replication_factor)

    def trace(self, **filters: Any) -> list:
        """Trace events (copies), filtered like ``Trace.query`` (kind, api, client_id, since_ms...)."""
        return self._tc.call(lambda: list(self.cluster.trace.query(**filters)))

    def describe(self) -> dict:
        return self._tc.call(self.cluster.describe)

    def unique(self, name: str) -> str:
        """``name`` itself: a cluster of one's own needs no unique names (the shared handle's does)."""
        return name


_RUNS = itertools.count(1)


class SharedClusterHandle(KafkaClusterHandle):
    """One test's view of a cluster shared by many: see the module's docstring for what is
    isolated. ``reset()`` runs when the test ends, passed or failed."""

    def __init__(self, threaded: Any, test_id: str):
        super().__init__(threaded)
        self.tag = hashlib.sha1(test_id.encode()).hexdigest()[:6] + str(next(_RUNS))
        self.started_ms: float = threaded.call(lambda: float(threaded.cluster.now_ms()))
        self._topics: list[str] = []

    def unique(self, name: str) -> str:
        """A topic or group name only this test uses (the same for the same ``name``)."""
        return f"{name}-{self.tag}"

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None) -> None:
        super().create_topic(name, partitions, replication_factor)
        self._topics.append(name)

    def trace(self, **filters: Any) -> list:
        filters.setdefault("since_ms", self.started_ms)
        return super().trace(**filters)

    def wait_for(self, what: str, timeout: float = 5.0, **params: Any) -> dict:
        if what == "trace":
            params.setdefault("since_ms", self.started_ms)
        return super().wait_for(what, timeout, **params)

    def reset(self) -> None:
        """One trip to the cluster's thread for the whole reset (a trip per step cost each test
        about a millisecond a step on a loaded machine)."""
        cluster, topics = self.cluster, tuple(self._topics)

        async def undo() -> None:
            cluster.faults.clear()
            cluster.set_replication(None, None, None, "normal", 0.0)
            for broker_id, broker in list(cluster.brokers.items()):
                if not broker.alive:
                    await cluster.start_broker(broker_id)
            for name in topics:
                if name in cluster.topics:
                    cluster.delete_topic(name)

        self._tc.acall(undo)
