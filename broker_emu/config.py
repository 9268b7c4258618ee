"""Broker configuration: Kafka's dotted names and defaults (Kafka's ServerConfigs,
ReplicationConfigs, GroupCoordinatorConfig, LogConfig), plus the emulator's own knobs under
``emu.``."""

from __future__ import annotations

import difflib
from typing import Any, Mapping

from broker_emu.topic_config import InvalidConfig, Validator, at_least, between, one_of
from broker_emu.version_profiles import PRE_TRANSACTION_V2_PROFILES

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
    # KIP-848 (GroupCoordinatorConfig): the consumer protocol's timers belong to the broker
    "group.coordinator.rebalance.protocols": "classic,consumer",
    "group.consumer.session.timeout.ms": 45000,
    "group.consumer.min.session.timeout.ms": 45000,
    "group.consumer.max.session.timeout.ms": 60000,
    "group.consumer.heartbeat.interval.ms": 5000,
    "group.consumer.min.heartbeat.interval.ms": 5000,
    "group.consumer.max.heartbeat.interval.ms": 15000,
    "group.consumer.assignors": "uniform,range",
    # classic members may join consumer groups and groups convert both ways (ConsumerGroupMigrationPolicy)
    "group.consumer.migration.policy": "bidirectional",
    # Kafka 4.3+: a group's target assignment is recomputed at most once per interval
    "group.consumer.assignment.interval.ms": 1000,
    "group.consumer.min.assignment.interval.ms": 0,
    "group.consumer.max.assignment.interval.ms": 15000,
    # KIP-932 share groups (GroupCoordinatorConfig, ShareGroupConfig): a record's acquisition lock,
    # the deliveries before a record is archived, the member's session and heartbeat
    "group.share.record.lock.duration.ms": 30000,
    "group.share.min.record.lock.duration.ms": 15000,
    "group.share.max.record.lock.duration.ms": 60000,
    "group.share.delivery.count.limit": 5,
    "group.share.partition.max.record.locks": 2000,
    "group.share.session.timeout.ms": 45000,
    "group.share.heartbeat.interval.ms": 5000,
    "offsets.topic.num.partitions": 50,
    "transaction.state.log.num.partitions": 50,
    "transaction.max.timeout.ms": 900000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10000,
    # the finalized level of the transaction.version feature (KIP-890 part 2 at 2, a new Kafka 4.x
    # cluster's): ApiVersions advertises it, and clients that read it (Java 4.x) run transactions
    # with an epoch bump per transaction; the broker serves both forms at any level, as Kafka does
    "transaction.version": 2,
    # TransactionStateManagerConfig / ProducerStateManagerConfig: a transactional id or producer id
    # unused this long is forgotten, at a check every interval (broker_emu/transactions/coordinator.py,
    # broker_emu/producer_expiry.py)
    "transactional.id.expiration.ms": 604800000,
    "transaction.remove.expired.transaction.cleanup.interval.ms": 3600000,
    "producer.id.expiration.ms": 86400000,
    "producer.id.expiration.check.interval.ms": 600000,
    # a Produce v12+'s partition leader retries adding the partition while the previous
    # transaction's markers are written (AddPartitionsToTxnConfig)
    "add.partitions.to.txn.retry.backoff.ms": 20,
    # a version 1 transactional Produce's partition must have been added by the client (Kafka 3.6+;
    # off by default here, DIFFERS_FROM_KAFKA below)
    "transaction.partition.verification.enable": False,
    "add.partitions.to.txn.retry.backoff.max.ms": 100,
    "emu.txn.marker.delay.ms": 0,             # how long the coordinator takes to write its markers after EndTxn
    # how long a broker that becomes a __transaction_state partition's leader takes to load it
    # (Kafka: TransactionStateManager.loadTransactionsForTxnTopicPartition, as long as its log is);
    # meanwhile its transactional ids are answered COORDINATOR_LOAD_IN_PROGRESS
    "emu.txn.load.ms": 0,
    "emu.controller.delay.ms": 0,             # how long the controller takes to get to an admin write (timeout_ms)
    "offsets.topic.replication.factor": 3,     # capped at the cluster's size, as a dev Kafka's broker config does
    "log.retention.bytes": -1,                 # Kafka's: unlimited per partition (emu.log.memory.bytes bounds all)
    "log.message.timestamp.type": "CreateTime",
    "cluster.id": "broker-emu-cluster",
    "emu.seed": 0,
    "emu.telemetry": False,                   # advertise GetTelemetrySubscriptions (KIP-714)
    "emu.replication.delay.ms": 0,            # how long followers take to copy in normal mode
    "emu.trace.max.bytes": 64 << 20,          # the in-memory trace is a ring of about this many bytes
    "emu.control.wait.max.ms": 60_000,        # the longest timeout_ms a control API wait accepts (at most 60000)
    # Kafka streams a compressed batch's records; the emulator decompresses a batch whole, so it
    # bounds the result (past it: MESSAGE_TOO_LARGE), lest a small batch expand into gigabytes
    "emu.decompressed.max.bytes": 64 << 20,
    # every partition's log together (log.LogMemory): past it the cluster's oldest batches go, and
    # the trace and stderr say so; 0 = half the memory available when the cluster starts
    "emu.log.memory.bytes": 0,
    # listener security (broker_emu/security): `--listener SASL_SSL://host:port` sets the protocol
    "emu.security.protocol": "PLAINTEXT",
    # Kafka's default is GSSAPI, which the emulator does not serve
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
    # OAUTHBEARER's unsecured JWTs: the unsecuredValidator* JAAS options of Kafka's default handler
    "emu.oauthbearer.principal.claim.name": "sub",
    "emu.oauthbearer.scope.claim.name": "scope",
    "emu.oauthbearer.required.scope": "",      # space-separated scopes every token must carry
    "emu.oauthbearer.allowable.clock.skew.ms": 0,
    # the wall clock of timestamps and token times: "fixed" (1.7e12 ms + trio time, reproducible),
    # "system" (follows the system clock), "auto" (system in real time, fixed under a MockClock)
    "emu.wall.clock": "auto",
    "emu.sasl.users": "",                      # name:password,... (PLAIN, and SCRAM credentials made from them)
    "connections.max.reauth.ms": 0,            # KIP-368: 0, sessions never expire
    # more listeners on every broker, each with its own security protocol: "SASL_SSL,SSL:9200"
    # (a port: the first broker's, the next ones count up; none: a free port each)
    "emu.extra.listeners": "",
    "emu.tls.dir": "",                         # where the generated CA (ca.pem) goes; "" a temporary folder
    "ssl.client.auth": "none",                 # mutual TLS: none, requested, required (Kafka's names)
    "emu.tls.client.certs": "",                # names the CA issues client certificates for (<name>.crt, .key)
    # ACLs are enforced when an authorizer is named (any name: the emulator's is StandardAuthorizer's rules)
    "authorizer.class.name": "",
    "super.users": "",                         # User:admin;User:ops
    "allow.everyone.if.no.acl.found": False,
    # version profiles (broker_emu/version_profiles.py): advertise what that release's broker did
    "emu.kafka.version": "",                   # 2.8, 3.6, 3.9, 4.1; "" as the emulator is
    "emu.api.max.versions": "",                # Produce=8,Fetch=11: caps on top of the profile
}

# Kafka's validators for the broker settings the emulator uses (KafkaConfig / ServerLogConfigs)
VALIDATORS: dict[str, Validator] = {
    "num.partitions": at_least(1), "default.replication.factor": at_least(1), "min.insync.replicas": at_least(1),
    "replica.lag.time.max.ms": at_least(0), "message.max.bytes": at_least(0), "socket.request.max.bytes": at_least(1),
    "group.initial.rebalance.delay.ms": at_least(0), "group.min.session.timeout.ms": at_least(0),
    "group.max.session.timeout.ms": at_least(0), "offsets.topic.num.partitions": at_least(1),
    "offsets.topic.replication.factor": at_least(1),
    "group.consumer.session.timeout.ms": at_least(1), "group.consumer.min.session.timeout.ms": at_least(1),
    "group.consumer.max.session.timeout.ms": at_least(1), "group.consumer.heartbeat.interval.ms": at_least(1),
    "group.consumer.min.heartbeat.interval.ms": at_least(1), "group.consumer.max.heartbeat.interval.ms": at_least(1),
    "group.consumer.assignment.interval.ms": at_least(0), "group.consumer.min.assignment.interval.ms": at_least(0),
    "group.consumer.max.assignment.interval.ms": at_least(0),
    "group.share.record.lock.duration.ms": at_least(1000), "group.share.min.record.lock.duration.ms": at_least(1000),
    "group.share.max.record.lock.duration.ms": at_least(1000), "group.share.delivery.count.limit": at_least(2),
    "group.share.partition.max.record.locks": at_least(100), "group.share.session.timeout.ms": at_least(1),
    "group.share.heartbeat.interval.ms": at_least(1),
    "transaction.state.log.num.partitions": at_least(1), "transaction.max.timeout.ms": at_least(1),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": at_least(1), "emu.txn.marker.delay.ms": at_least(0), "emu.txn.load.ms": at_least(0),
    "transaction.version": between(0, 2), "add.partitions.to.txn.retry.backoff.ms": at_least(1),
    "add.partitions.to.txn.retry.backoff.max.ms": at_least(0), "transactional.id.expiration.ms": at_least(1), "producer.id.expiration.ms": at_least(1),
    "transaction.remove.expired.transaction.cleanup.interval.ms": at_least(1),
    "producer.id.expiration.check.interval.ms": at_least(1),
    "emu.controller.delay.ms": at_least(0),
    "group.consumer.migration.policy": one_of("disabled", "upgrade", "downgrade", "bidirectional"),
    "log.message.timestamp.type": one_of("CreateTime", "LogAppendTime"), "emu.decompressed.max.bytes": at_least(0),
    "emu.trace.max.bytes": at_least(0), "connections.max.reauth.ms": at_least(0), "emu.control.wait.max.ms": at_least(0),
    "emu.oauthbearer.allowable.clock.skew.ms": at_least(0), "emu.wall.clock": one_of("auto", "fixed", "system"),
    "ssl.client.auth": one_of("none", "requested", "required"),
    "emu.security.protocol": one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), "emu.replication.delay.ms": at_least(0), "emu.log.memory.bytes": at_least(-1),
}


class ConfigError(ValueError):
    pass


def unknown_key(key: Any) -> str:
    """One line for a key that is not a broker config: the key meant, when one is close."""
    close = difflib.get_close_matches(str(key), DEFAULTS, n=1)
    if close:
        return f"unknown broker config {key!r}; did you mean {close[0]!r}?"
    return f"unknown broker config {key!r} (broker_emu/config.py lists the {len(DEFAULTS)} known)"


def broker_config(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    config = dict(DEFAULTS)
    for key, value in (overrides or {}).items():
        if key not in DEFAULTS:
            raise ConfigError(unknown_key(key))
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
        if key in VALIDATORS:
            try:
                VALIDATORS[key](key, value)
            except InvalidConfig as exc:
                raise ConfigError(str(exc)) from None
        config[key] = value
    _check_consumer_group_bounds(config)
    if (overrides or {}).get("transaction.version") is not None and config["transaction.version"] >= 2 \
            and config["emu.kafka.version"] in PRE_TRANSACTION_V2_PROFILES:
        raise ConfigError(f"transaction.version {config['transaction.version']} needs Kafka 4.0 or later; "
                          f"emu.kafka.version {config['emu.kafka.version']} serves transactions version 1 only")
    return config


def _check_consumer_group_bounds(config: dict[str, Any]) -> None:
    """GroupCoordinatorConfig's cross-checks: each KIP-848 timer within its bounds, the heartbeat
    interval below the session timeout, known protocols and assignors."""
    for name in ("session.timeout.ms", "heartbeat.interval.ms", "assignment.interval.ms"):
        value, low, high = (config[f"group.consumer.{k}"] for k in (name, "min." + name, "max." + name))
        if not low <= value <= high:
            raise ConfigError(f"group.consumer.{name} must be between group.consumer.min.{name} ({low}) and "
                              f"group.consumer.max.{name} ({high}), got {value}")
    lock, low, high = (config[f"group.share.{k}record.lock.duration.ms"] for k in ("", "min.", "max."))
    if not low <= lock <= high:
        raise ConfigError(f"group.share.record.lock.duration.ms must be between group.share.min.record.lock.duration.ms "
                          f"({low}) and group.share.max.record.lock.duration.ms ({high}), got {lock}")
    if config["group.consumer.heartbeat.interval.ms"] >= config["group.consumer.session.timeout.ms"]:
        raise ConfigError("group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms")
    protocols = {p.strip() for p in config["group.coordinator.rebalance.protocols"].split(",")}
    if not protocols <= {"classic", "consumer"} or "classic" not in protocols:
        raise ConfigError("group.coordinator.rebalance.protocols must list classic and optionally consumer, got "
                          f"{config['group.coordinator.rebalance.protocols']!r}")
    assignors = [a.strip() for a in config["group.consumer.assignors"].split(",") if a.strip()]
    if not assignors or not set(assignors) <= {"uniform", "range"}:
        raise ConfigError(f"group.consumer.assignors must name uniform and/or range, got {config['group.consumer.assignors']!r}")


# Kafka's default where the emulator's differs, and why it does: `serve` says so at start
DIFFERS_FROM_KAFKA: dict[str, tuple[Any, str]] = {
    "default.replication.factor": (1, "capped at the number of brokers, so a topic made without one is replicated"),
    "transaction.partition.verification.enable": (True, "a version 1 transactional Produce is appended unverified, as "
                                                        "before transaction version 2; true checks it as Kafka does"),
}


def differences_from_kafka(config: dict[str, Any]) -> list[str]:
    """One phrase per setting in which ``config`` (a started cluster's) holds the emulator's own
    default rather than Kafka's."""
    return [f"{key}={config[key]} (Kafka: {kafka}; {why})" for key, (kafka, why) in DIFFERS_FROM_KAFKA.items()
            if config.get(key) == DEFAULTS[key]]
