"""The files one node runs from: its ``server.properties`` (a combined broker+controller in KRaft
mode, on loopback, with settings small enough for tests) and its log4j2 configuration."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class NodePorts:
    node_id: int
    broker_port: int       # PLAINTEXT: clients and replication
    controller_port: int   # CONTROLLER: the KRaft quorum
    client_port: int = 0   # CLIENT: an extra listener for clients (e.g. SASL_PLAINTEXT), when asked for


HOST = "127.0.0.1"


def small_defaults(brokers: int) -> dict[str, str]:
    """Where a small loopback cluster must differ from Kafka's defaults to start at all (internal
    topics' replication on fewer than three nodes) or to start fast (fewer internal partitions
    and threads). Nothing that changes what a client sees is here: a user of `broker-emu kafka
    start` gets Kafka's own behaviour (topics auto-created, the initial rebalance delay); what
    tests need is in HARNESS, added by the harness. Every one can be overridden by ``config``."""
    rf = str(min(3, brokers))
    return {
        "num.partitions": "1",
        "default.replication.factor": "1",
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": "5",
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": str(min(2, brokers)),
        "transaction.state.log.num.partitions": "5",
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": str(min(2, brokers)),
        "num.network.threads": "2",
        "num.io.threads": "4",
        "num.recovery.threads.per.data.dir": "1",
        "log.retention.check.interval.ms": "300000",
        "controlled.shutdown.enable": "true",
    }


# Kafka's defaults the test harness changes, and why: a scenario's "missing topic" must stay
# missing, and a test's group must not wait 3 s for its first rebalance. Added by the harness
# (conformance runs, the test fixtures), never by `broker-emu kafka start`.
HARNESS: dict[str, str] = {
    "auto.create.topics.enable": "false",
    "group.initial.rebalance.delay.ms": "0",
}

# Kafka's own default of each small_defaults key, for `kafka start` to say where it differs
KAFKA_DEFAULTS: dict[str, str] = {
    "num.partitions": "1", "default.replication.factor": "1", "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "50", "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2", "transaction.state.log.num.partitions": "50",
    "share.coordinator.state.topic.replication.factor": "3", "share.coordinator.state.topic.min.isr": "2",
    "num.network.threads": "3", "num.io.threads": "8", "num.recovery.threads.per.data.dir": "2",
    "log.retention.check.interval.ms": "300000", "controlled.shutdown.enable": "true",
    "auto.create.topics.enable": "true", "group.initial.rebalance.delay.ms": "3000",
}


def differences_from_kafka(brokers: int, overrides: Mapping[str, object] | None = None) -> list[str]:
    """``key=value (Kafka: default)`` for each setting a started cluster has that Kafka's
    defaults do not (the caller's overrides included)."""
    settings = {**small_defaults(brokers), **{k: _value(v) for k, v in (overrides or {}).items()}}
    return [f"{k}={v} (Kafka: {KAFKA_DEFAULTS[k]})" if k in KAFKA_DEFAULTS else f"{k}={v} (your --config)"
            for k, v in settings.items() if KAFKA_DEFAULTS.get(k) != v]


def server_properties(node: NodePorts, all_nodes: list[NodePorts], data_dir: str,
                      overrides: Mapping[str, object] | None = None, client_protocol: str = "") -> str:
    """The text of one node's server.properties; ``client_protocol`` adds a CLIENT listener with
    that security protocol (its SASL settings come with the overrides, e.g.
    ``listener.name.client.oauthbearer.sasl.jaas.config``) while replication stays on PLAINTEXT."""
    voters = ",".join(f"{n.node_id}@{HOST}:{n.controller_port}" for n in all_nodes)
    props: dict[str, str] = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{HOST}:{node.broker_port},CONTROLLER://{HOST}:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{node.broker_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": data_dir,
    }
    if client_protocol:
        props["listeners"] += f",CLIENT://{HOST}:{node.client_port}"
        props["advertised.listeners"] += f",CLIENT://{HOST}:{node.client_port}"
        props["listener.security.protocol.map"] += f",CLIENT:{client_protocol}"
    props.update(small_defaults(len(all_nodes)))
    props.update({k: _value(v) for k, v in (overrides or {}).items()})
    return "".join(f"{k}={v}\n" for k, v in props.items())


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def log4j2_properties(level: str = "INFO") -> str:
    """Everything to stdout (the launcher sends it to the node's log file), at ``level``, with
    the noisiest loggers turned down."""
    lines = [
        "status = warn",
        "shutdownHook = disable",   # Kafka logs its own shutdown, which runs in a JVM shutdown hook
        "appender.out.type = Console",
        "appender.out.name = out",
        "appender.out.layout.type = PatternLayout",
        "appender.out.layout.pattern = [%d] %p %m (%c)%n",
        f"rootLogger.level = {level}",
        "rootLogger.appenderRef.out.ref = out",
        "logger.config.name = org.apache.kafka.common.config.AbstractConfig",
        "logger.config.level = WARN",
        "logger.appinfo.name = org.apache.kafka.common.utils.AppInfoParser",
        "logger.appinfo.level = WARN",
    ]
    return "\n".join(lines) + "\n"


def parse_overrides(pairs: list[str] | None) -> dict[str, str]:
    """``["KEY=VALUE", ...]`` (the CLI's ``--config``) as a dict; a pair without '=' raises."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--config wants KEY=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out
