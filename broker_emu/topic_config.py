"""Topic configs: Kafka's names, types, defaults and validators, the checks CreateTopics (and
AlterConfigs) make before a value is stored, and the parsed values the log works with.

Kafka's source of truth is ``LogConfig``'s ConfigDef (storage/internals/log/LogConfig.java): a
topic config is validated by ``LogConfig.validate`` — ``validateNames`` (an unknown name is
``InvalidConfigurationException("Unknown topic config name: x")``), then ``ConfigDef.parse`` of
every key in definition order (``ConfigDef.parseType`` and the key's validator throw
``ConfigException("Invalid value v for configuration k: reason")``), then ``validateValues`` and
the tiered-storage rules. The controller answers every one of them INVALID_CONFIG with the
exception's message (``ConfigurationControlManager.validateAlterConfig``,
``ReplicationControlManager.createTopics``); a null value is refused earlier
(``ReplicationControlManager.computeConfigChanges``: "Null value not supported for topic
configs: a,b").

Values are stored as the client sent them (Kafka stores the string too) and parsed where they are
used: ``log_rules`` gives the produce path what ``LogValidator`` needs. The emulator only acts on
some of them (sizes, min.insync.replicas, timestamps, cleanup.policy's key rule, compression.type,
retention.bytes); the rest are validated and reported but change nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol

LONG_MAX = (1 << 63) - 1
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_COMMA = re.compile(r"\s*,\s*")


class InvalidConfig(ValueError):
    """A config Kafka refuses, with Kafka's message (``InvalidConfigurationException`` or
    ``ConfigException``: both answer INVALID_CONFIG)."""


def bad_value(name: str, value: object, reason: str) -> InvalidConfig:
    """``ConfigException(name, value, message)``'s text."""
    return InvalidConfig(f"Invalid value {value} for configuration {name}: {reason}")


# -- parsing (ConfigDef.parseType) ----------------------------------------------------------------

def _java_strip(text: str) -> str:
    """``String.trim()``: strips code points up to U+0020 only."""
    return text.strip("".join(chr(c) for c in range(33)))


def _integer(name: str, raw: str, lo: int, hi: int, kind: str) -> int:
    text = _java_strip(raw)
    if not _INTEGER.match(text) or not lo <= int(text) <= hi:
        raise bad_value(name, raw, f"Not a number of type {kind}")
    return int(text)


def _parse(name: str, kind: str, raw: str) -> Any:
    if kind == "INT":
        return _integer(name, raw, INT_MIN, INT_MAX, kind)
    if kind == "LONG":
        return _integer(name, raw, -LONG_MAX - 1, LONG_MAX, kind)
    text = _java_strip(raw)
    if kind == "BOOLEAN":
        if text.lower() not in ("true", "false"):
            raise bad_value(name, raw, "Expected value to be either true or false")
        return text.lower() == "true"
    if kind == "DOUBLE":
        try:
            return float(text)
        except ValueError:
            raise bad_value(name, raw, "Not a number of type DOUBLE") from None
    if kind == "LIST":
        return [] if not text else _COMMA.split(text)
    return text


# -- validators (ConfigDef.Range, ValidString, ValidList and Kafka's own) ------------------------

Validator = Callable[[str, Any], None]


def at_least(lo: float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < lo:
            raise bad_value(name, value, f"Value must be at least {lo}")
    return check


def between(lo: float, hi: float) -> Validator:
    def check(name: str, value: Any) -> None:
        at_least(lo)(name, value)
        if value > hi:
            raise bad_value(name, value, f"Value must be no more than {hi}")
    return check


def one_of(*allowed: str) -> Validator:
    def check(name: str, value: Any) -> None:
        for item in value if isinstance(value, list) else [value]:  # ValidList checks each element
            if item not in allowed:
                raise bad_value(name, item, f"String must be one of: {', '.join(allowed)}")
    return check


def _gzip_level(name: str, value: int) -> None:
    """``CompressionType.GZIP.levelValidator``: 1..9, or -1 (Deflater's default)."""
    if value > 9 or (value < 1 and value != -1):
        raise bad_value(name, value, "Value must be between 1 and 9 or equal to -1")


def _throttled_replicas(name: str, value: list) -> None:
    """``ThrottledReplicaListValidator``: '*' or partition:broker pairs."""
    items = [_java_strip(v) for v in value]
    if not (all(re.fullmatch(r"([0-9]+:[0-9]+)?", v) for v in items) or "".join(items) == "*"):
        raise bad_value(name, "[" + ", ".join(value) + "]", f"{name} must be the literal '*' or a list of replicas "
                        "in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")


# MetadataVersion's releases and how many IVs each had (server-common MetadataVersion.java)
_RELEASES = {"0.8.0": 0, "0.8.1": 0, "0.8.2": 0, "0.9.0": 0, "0.10.0": 2, "0.10.1": 3, "0.10.2": 1, "0.11.0": 3,
             "1.0": 1, "1.1": 1, "2.0": 2, "2.1": 3, "2.2": 2, "2.3": 2, "2.4": 2, "2.5": 1, "2.6": 1, "2.7": 3,
             "2.8": 2, "3.0": 2, "3.1": 1, "3.2": 1, "3.3": 4, "3.4": 1, "3.5": 3, "3.6": 3, "3.7": 5, "3.8": 1,
             "3.9": 1, "4.0": 4}
_METADATA_VERSIONS = set(_RELEASES) | {f"{r}-IV{i}" for r, n in _RELEASES.items() for i in range(n)}


def _metadata_version(name: str, value: str) -> None:
    """``MetadataVersionValidator`` (``MetadataVersion.fromVersionString``)."""
    parts = value.split(".")
    n = 3 if value.startswith("0.") else 2
    key = value if n >= len(parts) else ".".join(parts[:n])
    if key not in _METADATA_VERSIONS:
        raise bad_value(name, value, f"Version {value} is not a valid version")


@dataclass(frozen=True)
class ConfigKey:
    name: str
    kind: str                      # ConfigDef.Type: INT, LONG, DOUBLE, BOOLEAN, STRING, LIST
    default: str                   # Kafka's default, as DescribeConfigs shows it
    validator: Validator | None = None
    broker: str | None = None      # the broker config that supplies the default, when the emulator has it

    def parse(self, raw: str) -> Any:
        value = _parse(self.name, self.kind, raw)
        if self.validator is not None:
            self.validator(self.name, value)
        return value


def _keys(*keys: ConfigKey) -> dict[str, ConfigKey]:
    return {k.name: k for k in keys}


# LogConfig's CONFIG, in its definition order (the first bad value in this order is the one reported)
TOPIC_CONFIGS: dict[str, ConfigKey] = _keys(
    ConfigKey("segment.bytes", "INT", "1073741824", at_least(14)),
    ConfigKey("segment.ms", "LONG", "604800000", at_least(1)),
    ConfigKey("segment.jitter.ms", "LONG", "0", at_least(0)),
    ConfigKey("segment.index.bytes", "INT", "10485760", at_least(4)),
    ConfigKey("flush.messages", "LONG", str(LONG_MAX), at_least(1)),
    ConfigKey("flush.ms", "LONG", str(LONG_MAX), at_least(0)),
    ConfigKey("retention.bytes", "LONG", "-1", None, "log.retention.bytes"),
    ConfigKey("retention.ms", "LONG", "604800000", at_least(-1)),
    ConfigKey("max.message.bytes", "INT", "1048588", at_least(0), "message.max.bytes"),
    ConfigKey("index.interval.bytes", "INT", "4096", at_least(0)),
    ConfigKey("delete.retention.ms", "LONG", "86400000", at_least(0)),
    ConfigKey("min.compaction.lag.ms", "LONG", "0", at_least(0)),
    ConfigKey("max.compaction.lag.ms", "LONG", str(LONG_MAX), at_least(1)),
    ConfigKey("file.delete.delay.ms", "LONG", "60000", at_least(0)),
    ConfigKey("min.cleanable.dirty.ratio", "DOUBLE", "0.5", between(0, 1)),
    ConfigKey("cleanup.policy", "LIST", "delete", one_of("compact", "delete")),
    ConfigKey("unclean.leader.election.enable", "BOOLEAN", "false", None, "unclean.leader.election.enable"),
    ConfigKey("min.insync.replicas", "INT", "1", at_least(1), "min.insync.replicas"),
    ConfigKey("compression.type", "STRING", "producer", one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    ConfigKey("compression.gzip.level", "INT", "-1", _gzip_level),
    ConfigKey("compression.lz4.level", "INT", "9", between(1, 17)),
    ConfigKey("compression.zstd.level", "INT", "3", between(-131072, 22)),
    ConfigKey("preallocate", "BOOLEAN", "false"),
    ConfigKey("message.format.version", "STRING", "3.0-IV1", _metadata_version),
    ConfigKey("message.timestamp.type", "STRING", "CreateTime", one_of("CreateTime", "LogAppendTime"),
              "log.message.timestamp.type"),
    ConfigKey("message.timestamp.difference.max.ms", "LONG", str(LONG_MAX), at_least(0)),
    ConfigKey("message.timestamp.before.max.ms", "LONG", str(LONG_MAX), at_least(0)),
    ConfigKey("message.timestamp.after.max.ms", "LONG", str(LONG_MAX), at_least(0)),
    ConfigKey("leader.replication.throttled.replicas", "LIST", "", _throttled_replicas),
    ConfigKey("follower.replication.throttled.replicas", "LIST", "", _throttled_replicas),
    ConfigKey("message.downconversion.enable", "BOOLEAN", "true"),
    ConfigKey("remote.storage.enable", "BOOLEAN", "false"),
    ConfigKey("local.retention.ms", "LONG", "-2", at_least(-2)),
    ConfigKey("local.retention.bytes", "LONG", "-2", at_least(-2)),
    ConfigKey("remote.log.copy.disable", "BOOLEAN", "false"),
    ConfigKey("remote.log.delete.on.disable", "BOOLEAN", "false"),
)


# ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS: each topic config's broker-wide setting, which
# Kafka lets AlterConfigs change at run time (DynamicLogConfig.ReconfigurableConfigs)
BROKER_SYNONYMS: dict[str, str] = {
    "segment.bytes": "log.segment.bytes", "segment.ms": "log.roll.ms", "segment.jitter.ms": "log.roll.jitter.ms",
    "segment.index.bytes": "log.index.size.max.bytes", "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms", "retention.bytes": "log.retention.bytes", "retention.ms": "log.retention.ms",
    "max.message.bytes": "message.max.bytes", "index.interval.bytes": "log.index.interval.bytes",
    "delete.retention.ms": "log.cleaner.delete.retention.ms", "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms", "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio", "cleanup.policy": "log.cleanup.policy",
    "unclean.leader.election.enable": "unclean.leader.election.enable", "min.insync.replicas": "min.insync.replicas",
    "compression.type": "compression.type", "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level", "compression.zstd.level": "compression.zstd.level",
    "preallocate": "log.preallocate", "message.timestamp.type": "log.message.timestamp.type",
    "message.timestamp.difference.max.ms": "log.message.timestamp.difference.max.ms",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "message.downconversion.enable": "log.message.downconversion.enable",
    "local.retention.ms": "log.local.retention.ms", "local.retention.bytes": "log.local.retention.bytes",
}
DYNAMIC_BROKER_KEYS: dict[str, ConfigKey] = {broker: TOPIC_CONFIGS[topic] for topic, broker in BROKER_SYNONYMS.items()}


def validate_topic_configs(configs: Mapping[str, str | None], broker: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The parsed overrides, or ``InvalidConfig`` with Kafka's message for the first problem:
    null values, unknown names, then each value in definition order, then the cross-key rules."""
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        raise InvalidConfig(f"Null value not supported for topic configs: {','.join(nulls)}")
    for name in configs:
        if name not in TOPIC_CONFIGS:
            raise InvalidConfig(f"Unknown topic config name: {name}")
    parsed = {k.name: k.parse(configs[k.name]) for k in TOPIC_CONFIGS.values() if k.name in configs}  # type: ignore[arg-type]
    _validate_values(parsed, broker or {})
    return parsed


def _validate_values(parsed: dict[str, Any], broker: Mapping[str, Any]) -> None:
    """``LogConfig.validateValues`` and the tiered-storage rule (``validateRemoteStorageOnlyIfSystemEnabled``)."""
    def value(name: str) -> Any:
        return parsed[name] if name in parsed else effective(name, {}, broker)

    low, high = value("min.compaction.lag.ms"), value("max.compaction.lag.ms")
    if low > high:
        raise InvalidConfig(f"conflict topic config setting min.compaction.lag.ms ({low}) > max.compaction.lag.ms ({high})")
    if value("remote.storage.enable"):  # the emulator has no tiered storage, like a broker without it enabled
        raise InvalidConfig("Tiered Storage functionality is disabled in the broker. Topic cannot be configured "
                            "with remote log storage.")


def effective(name: str, overrides: Mapping[str, str], broker: Mapping[str, Any]) -> Any:
    """A topic config's parsed value: the topic's override, else the broker setting behind it,
    else Kafka's default."""
    key = TOPIC_CONFIGS[name]
    if name in overrides:
        return key.parse(overrides[name])
    if key.broker is not None and key.broker in broker:
        value = broker[key.broker]
        return key.parse(str(value).lower() if isinstance(value, bool) else str(value))
    return key.parse(key.default)


class LogRules:
    """What the log's append path needs from a topic's configs (``LogConfig``'s fields that
    ``UnifiedLog.append`` and ``LogValidator`` read)."""

    __slots__ = ("max_message_bytes", "min_insync_replicas", "log_append_time", "before_max_ms", "after_max_ms",
                 "compact", "compression", "max_decompressed_bytes")

    def __init__(self, overrides: Mapping[str, str], broker: Mapping[str, Any]):
        def get(name: str) -> Any:
            return effective(name, overrides, broker)

        self.max_message_bytes: int = get("max.message.bytes")
        self.min_insync_replicas: int = get("min.insync.replicas")
        self.log_append_time: bool = get("message.timestamp.type") == "LogAppendTime"
        # LogConfig.getMessageTimestampBeforeMaxMs / AfterMaxMs: the deprecated difference config
        # applies while the new ones keep their default
        difference = get("message.timestamp.difference.max.ms")
        before, after = get("message.timestamp.before.max.ms"), get("message.timestamp.after.max.ms")
        self.before_max_ms: int = difference if before == LONG_MAX else before
        self.after_max_ms: int = difference if after == LONG_MAX else after
        self.compact: bool = "compact" in (p.lower() for p in get("cleanup.policy"))
        codec = get("compression.type")
        self.compression: str | None = None if codec == "producer" else "none" if codec == "uncompressed" else codec
        self.max_decompressed_bytes: int = broker.get("emu.decompressed.max.bytes", 64 << 20)


_RULES: dict[tuple, LogRules] = {}
_RULES_MAX = 1024


class _Configured(Protocol):
    """What ``log_rules`` reads of the cluster (a Protocol: the cluster imports this module)."""

    @property
    def topics(self) -> Mapping[str, Any]: ...

    @property
    def config(self) -> Mapping[str, Any]: ...


def log_rules(cluster: _Configured, topic: str) -> LogRules:
    """The topic's ``LogRules``, parsed once per distinct set of values (every produce asks)."""
    overrides, broker = cluster.topics[topic].configs, cluster.config
    key = (tuple(overrides.items()), *(broker.get(name) for name in _BROKER_INPUTS))
    rules = _RULES.get(key)
    if rules is None:
        if len(_RULES) >= _RULES_MAX:
            _RULES.clear()
        rules = _RULES[key] = LogRules(overrides, broker)
    return rules


# the broker settings LogRules reads: a change to any of them is a new cache key
_BROKER_INPUTS = tuple(k.broker for k in TOPIC_CONFIGS.values() if k.broker) + ("emu.decompressed.max.bytes",)
