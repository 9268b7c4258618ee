"""Broker configuration: Kafka's dotted names and defaults (SEMANTICS.md §4), plus the
emulator's own knobs under ``emu.``."""

from __future__ import annotations

from typing import Any, Mapping

DEFAULTS: dict[str, Any] = {
    "auto.create.topics.enable": True,
    "num.partitions": 1,
    "default.replication.factor": 3,          # capped at the number of brokers
    "min.insync.replicas": 1,
    "replica.lag.time.max.ms": 30000,
    "unclean.leader.election.enable": False,   # a stopped sole ISR member leaves its partitions offline
    "message.max.bytes": 1048588,
    "socket.request.max.bytes": 104857600,
    "group.initial.rebalance.delay.ms": 3000,
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1800000,
    "offsets.topic.num.partitions": 50,
    "log.retention.bytes": 268435456,          # in memory: bounded per partition (Kafka: -1, on disk)
    "log.message.timestamp.type": "CreateTime",
    "cluster.id": "broker-emu-cluster",
    "emu.seed": 0,
    "emu.telemetry": False,                   # advertise GetTelemetrySubscriptions (KIP-714)
    "emu.replication.delay.ms": 0,            # how long followers take to copy in normal mode
    "emu.trace.max.bytes": 64 << 20,          # the in-memory trace is a ring of about this many bytes
}


class ConfigError(ValueError):
    pass


def broker_config(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    config = dict(DEFAULTS)
    for key, value in (overrides or {}).items():
        if key not in DEFAULTS:
            raise ConfigError(f"unknown broker config {key!r} (known: {', '.join(sorted(DEFAULTS))})")
        expected = type(DEFAULTS[key])
        if expected is bool and isinstance(value, str):
            value = value.lower() in ("true", "1", "yes")
        elif expected is int and isinstance(value, str):
            try:
                value = int(value)
            except ValueError:
                raise ConfigError(f"{key} must be an integer, got {value!r}") from None
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise ConfigError(f"{key} must be {expected.__name__}, got {value!r}")
        config[key] = value
    return config
