"""Client configuration with Kafka's dotted names and defaults (Kafka's CommonClientConfigs,
ProducerConfig, ConsumerConfig)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from client.errors import KafkaError
from client.rebootstrap import STRATEGIES


class ConfigException(KafkaError):
    name = "CONFIG_EXCEPTION"


COMMON: dict[str, Any] = {
    "bootstrap.servers": None,
    "client.id": "broker-emu-client",
    "request.timeout.ms": 30000,
    "retry.backoff.ms": 100,
    "retry.backoff.max.ms": 1000,
    "reconnect.backoff.ms": 50,
    "reconnect.backoff.max.ms": 1000,
    "socket.connection.setup.timeout.ms": 10000,
    "socket.connection.setup.timeout.max.ms": 30000,
    "metadata.max.age.ms": 300000,
    "metadata.recovery.strategy": "rebootstrap",           # or none (KIP-899; rebootstrap by default since Kafka 4.0)
    "metadata.recovery.rebootstrap.trigger.ms": 300000,    # KIP-1102 (client/rebootstrap.py)
    "allow.auto.create.topics": True,
    "security.protocol": "PLAINTEXT",            # or SSL (client.transport.connect_from_config)
    "ssl.ca.location": "",                       # PEM file of trusted CAs; the system's if empty
    "ssl.endpoint.identification.algorithm": "https",   # "" skips the host name check
    "ssl.certificate.location": "",              # mutual TLS: our certificate (PEM) ...
    "ssl.key.location": "",                      # ... and its private key
    "sasl.mechanism": "PLAIN",                   # or SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (client/sasl.py)
    "sasl.username": "",
    "sasl.password": "",
    # OAUTHBEARER: confluent-kafka's oauth_cb(sasl.oauthbearer.config) -> token or (token, expiry),
    # or librdkafka's unsecured JWT from "principal=NAME scope=a,b lifeSeconds=N"
    "oauth_cb": None,
    "enable.sasl.oauthbearer.unsecure.jwt": False,
    "sasl.oauthbearer.config": "",
}
PRODUCER: dict[str, Any] = {
    **COMMON,
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 0,
    "batch.size": 16384,
    "buffer.memory": 33554432,
    "max.block.ms": 60000,
    "delivery.timeout.ms": 120000,
    "retries": 2147483647,
    "max.in.flight.requests.per.connection": 5,
    "compression.type": "none",
    "max.request.size": 1048576,
    "transactional.id": "",                      # set: a transactional producer (client.producer.transactions)
    "transaction.timeout.ms": 60000,
}


def parse_config(given: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ConfigException(f"unknown configuration {', '.join(unknown)} (known: {', '.join(sorted(defaults))})")
    config = dict(defaults)
    for key, value in given.items():
        default = defaults[key]
        if isinstance(default, bool):
            if isinstance(value, str):
                value = value.lower() == "true"
            if not isinstance(value, bool):
                raise ConfigException(f"{key} must be true or false, got {value!r}")
        elif isinstance(default, int) and key != "acks":
            try:
                value = int(value)
            except (TypeError, ValueError):
                raise ConfigException(f"{key} must be an integer, got {value!r}") from None
            if value < 0:
                raise ConfigException(f"{key} must not be negative, got {value}")
        config[key] = value
    if not config["bootstrap.servers"]:
        raise ConfigException("bootstrap.servers is required")
    _check_recovery(config)
    return config


def _check_recovery(config: dict[str, Any]) -> None:
    """Java's MetadataRecoveryStrategy.forName: either name, in any case."""
    strategy = str(config["metadata.recovery.strategy"]).lower()
    if strategy not in STRATEGIES:
        raise ConfigException(f"metadata.recovery.strategy must be one of {', '.join(STRATEGIES)}, "
                              f"got {config['metadata.recovery.strategy']!r}")
    config["metadata.recovery.strategy"] = strategy


def producer_config(given: Mapping[str, Any]) -> dict[str, Any]:
    """KIP-91: delivery.timeout.ms must cover linger.ms + request.timeout.ms. Set explicitly too
    small, that is an error naming the three values; left unset, it is raised to fit (as Java)."""
    config = parse_config(given, PRODUCER)
    acks = str(config["acks"])
    if acks not in ("all", "-1", "0", "1"):
        raise ConfigException(f"acks must be all, -1, 0 or 1, got {config['acks']!r}")
    config["acks"] = -1 if acks in ("all", "-1") else int(acks)
    floor = config["linger.ms"] + config["request.timeout.ms"]
    if config["delivery.timeout.ms"] < floor:
        if "delivery.timeout.ms" in given:
            raise ConfigException(
                f"delivery.timeout.ms ({config['delivery.timeout.ms']}) must be at least linger.ms "
                f"({config['linger.ms']}) + request.timeout.ms ({config['request.timeout.ms']}) = {floor}")
        config["delivery.timeout.ms"] = floor
    _check_idempotence(config, given)
    if str(config["compression.type"]) not in COMPRESSION:
        raise ConfigException(f"compression.type must be one of {', '.join(COMPRESSION)}, got {config['compression.type']!r}")
    if config["max.in.flight.requests.per.connection"] < 1:
        raise ConfigException("max.in.flight.requests.per.connection must be at least 1")
    _check_security(config)
    return config


COMPRESSION = ("none", "gzip", "snappy", "lz4", "zstd")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _check_security(config: dict[str, Any]) -> None:
    from client.sasl import MECHANISMS

    protocol = str(config["security.protocol"]).upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise ConfigException(f"security.protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                              f"got {config['security.protocol']!r}")
    if protocol.startswith("SASL_"):
        if config["sasl.mechanism"] not in MECHANISMS:
            raise ConfigException(f"sasl.mechanism must be one of {', '.join(MECHANISMS)}, got {config['sasl.mechanism']!r}")
        if config["sasl.mechanism"] == "OAUTHBEARER":
            _check_oauthbearer(config)
        elif not config["sasl.username"]:
            raise ConfigException(f"security.protocol {protocol} needs sasl.username and sasl.password")


def _check_oauthbearer(config: dict[str, Any]) -> None:
    """librdkafka's rule: a token callback, or the unsecured JWT it makes itself from
    sasl.oauthbearer.config (which then needs principal=)."""
    if config["oauth_cb"] is not None:
        if not callable(config["oauth_cb"]):
            raise ConfigException("oauth_cb must be callable")
        return
    if not config["enable.sasl.oauthbearer.unsecure.jwt"]:
        raise ConfigException("sasl.mechanism OAUTHBEARER needs oauth_cb, or enable.sasl.oauthbearer.unsecure.jwt=true "
                              "with sasl.oauthbearer.config")
    if "principal=" not in str(config["sasl.oauthbearer.config"]):
        raise ConfigException("sasl.oauthbearer.config needs principal=NAME for an unsecured JWT, got "
                              f"{config['sasl.oauthbearer.config']!r}")


def _check_idempotence(config: dict[str, Any], given: Mapping[str, Any]) -> None:
    """Idempotence is on by default, but quietly off when the user chose settings it cannot
    keep (acks other than all, retries=0, more than 5 requests in flight); asking for it
    explicitly with such settings is an error (Java 3.x rules)."""
    conflicts = []
    if config["acks"] != -1:
        conflicts.append(f"acks={config['acks']} (needs all)")
    if config["retries"] == 0:
        conflicts.append("retries=0 (needs > 0)")
    if config["max.in.flight.requests.per.connection"] > 5:
        conflicts.append(f"max.in.flight.requests.per.connection={config['max.in.flight.requests.per.connection']} (needs <= 5)")
    if config["transactional.id"]:
        # KafkaProducer.configureTransactionState: transactions need idempotence
        if not config["enable.idempotence"] or conflicts:
            why = ["enable.idempotence=false"] if not config["enable.idempotence"] else conflicts
            raise ConfigException(f"transactional.id={config['transactional.id']} needs idempotence, which "
                                  + ", ".join(why) + " rules out")
        return
    if config["enable.idempotence"] and conflicts:
        if "enable.idempotence" in given:
            raise ConfigException("enable.idempotence=true conflicts with " + ", ".join(conflicts))
        config["enable.idempotence"] = False

CONSUMER: dict[str, Any] = {
    **COMMON,
    "group.id": None,
    "default.api.timeout.ms": 60000,
    "fetch.max.wait.ms": 500,
    "fetch.min.bytes": 1,
    "fetch.max.bytes": 52428800,
    "max.partition.fetch.bytes": 1048576,
    "max.poll.records": 500,
    "auto.offset.reset": "latest",
    "isolation.level": "read_uncommitted",       # read_committed: only committed transactions' records
    "enable.auto.commit": False,
    "auto.commit.interval.ms": 5000,
    "session.timeout.ms": 45000,
    "heartbeat.interval.ms": 3000,
    "max.poll.interval.ms": 300000,
    "partition.assignment.strategy": "range,roundrobin",   # preference order sent in JoinGroup
    "group.instance.id": None,                              # static membership (KIP-345)
    "group.protocol": "classic",                            # or consumer: KIP-848, the broker owns the group
    "group.remote.assignor": None,                          # KIP-848: the broker's assignor (uniform, range)
}


def consumer_config(given: Mapping[str, Any]) -> dict[str, Any]:
    config = parse_config(given, CONSUMER)
    if config["auto.offset.reset"] not in ("earliest", "latest", "none"):
        raise ConfigException(f"auto.offset.reset must be earliest, latest or none, got {config['auto.offset.reset']!r}")
    if config["isolation.level"] not in ("read_uncommitted", "read_committed"):
        raise ConfigException(f"isolation.level must be read_uncommitted or read_committed, got {config['isolation.level']!r}")
    if config["request.timeout.ms"] <= config["fetch.max.wait.ms"]:
        raise ConfigException(f"request.timeout.ms ({config['request.timeout.ms']}) must exceed fetch.max.wait.ms "
                              f"({config['fetch.max.wait.ms']}): a long poll is not a dead broker")
    if config["heartbeat.interval.ms"] >= config["session.timeout.ms"]:
        raise ConfigException(f"heartbeat.interval.ms ({config['heartbeat.interval.ms']}) must be below "
                              f"session.timeout.ms ({config['session.timeout.ms']})")
    _check_group_protocol(config, given)
    _check_security(config)
    from client.assignors import ASSIGNORS
    for name in config["partition.assignment.strategy"].split(","):
        if name.strip() not in ASSIGNORS:
            raise ConfigException(f"partition.assignment.strategy: unknown assignor {name.strip()!r} "
                                  f"(known: {', '.join(ASSIGNORS)})")
    return config


# Java's ConsumerConfig refuses these under group.protocol=consumer: the broker owns them
CLASSIC_ONLY = {"session.timeout.ms": "group.consumer.session.timeout.ms",
                "heartbeat.interval.ms": "group.consumer.heartbeat.interval.ms",
                "partition.assignment.strategy": "group.remote.assignor (the broker's assignor)"}


def _check_group_protocol(config: Mapping[str, Any], given: Mapping[str, Any]) -> None:
    """As Java's ConsumerConfig: under group.protocol=consumer the broker owns the session, the
    heartbeat interval and the assignment, so setting them here is an error, not silently ignored."""
    protocol = str(config["group.protocol"]).lower()
    if protocol not in ("classic", "consumer"):
        raise ConfigException(f"group.protocol must be classic or consumer, got {config['group.protocol']!r}")
    if protocol == "classic":
        if config["group.remote.assignor"] is not None:
            raise ConfigException("group.remote.assignor is only used with group.protocol=consumer")
        return
    for name, owner in CLASSIC_ONLY.items():
        if name in given:
            raise ConfigException(f"{name} is not supported when group.protocol=consumer: the broker owns it ({owner})")
