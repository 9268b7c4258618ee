"""Group configs (ConfigResource type GROUP, 32; KIP-848's per-group overrides): what
DescribeConfigs lists for a group, what IncrementalAlterConfigs / AlterConfigs accept, and the
values the KIP-848 coordinator reads.

Kafka 4.4's GroupConfig, as its broker answered on the wire (names, order, types, defaults, the
broker setting each falls back to, every refusal's message; tests/realkafka/test_group_configs_ab.py
compares the two brokers): a group's override wins, else the broker's ``group.*`` setting. The
consumer group's session timeout, heartbeat interval and assignment interval take effect here
(GroupMetadataManager reads ``groupConfigManager.groupConfig(groupId)`` first); share and streams
groups' record lock duration, delivery count limit, record locks, session timeout, heartbeat interval
and auto offset reset take effect in ``broker_emu/share/``; streams groups are not emulated, so
their configs are stored and described but change nothing. Ranges of the consumer settings are the
broker's ``group.consumer.min/max.*``, the share record lock's ``group.share.min/max.*``; the others
are Kafka's defaults (the emulator has no ``group.streams.*`` settings).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

GROUP_CONFIG_SOURCE, DEFAULT_CONFIG = 8, 5
BOOLEAN, STRING, INT, LIST = 1, 2, 3, 7
KIND_NAMES = {BOOLEAN: "BOOLEAN", STRING: "STRING", INT: "INT", LIST: "LIST"}
SHARE_AUTO_OFFSET_RESET = ("Invalid value `{v}` for configuration share.auto.offset.reset. The value must be either "
                           "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")


class InvalidGroupConfig(Exception):
    pass


class GroupKey(NamedTuple):
    name: str
    type: int
    default: str
    synonym: str                       # the broker setting behind it ("" : none, the key is its own)
    at_least: int | None = None
    bounds: tuple[Any, Any] | None = None   # (low, high): ints, or broker setting names
    listed: bool = True                # internal keys are accepted but not described

    @property
    def kind(self) -> str:             # what handlers.admin_configs._applied asks of a key
        return KIND_NAMES[self.type]


def _c(name: str) -> tuple[str, str]:
    return f"group.consumer.min.{name}", f"group.consumer.max.{name}"


# In the order Kafka 4.4 lists them
KEYS = {k.name: k for k in (
    GroupKey("consumer.session.timeout.ms", INT, "45000", "group.consumer.session.timeout.ms", 1, _c("session.timeout.ms")),
    GroupKey("streams.assignor.name", STRING, "sticky", "group.streams.assignors"),
    GroupKey("consumer.assignment.interval.ms", INT, "1000", "group.consumer.assignment.interval.ms", 0,
             _c("assignment.interval.ms")),
    GroupKey("errors.deadletterqueue.copy.record.enable", BOOLEAN, "false", ""),
    GroupKey("share.auto.offset.reset", STRING, "latest", ""),
    GroupKey("streams.rack.aware.assignment.tags", LIST, "", "group.streams.rack.aware.assignment.tags"),
    GroupKey("share.renew.acknowledge.enable", BOOLEAN, "true", ""),
    GroupKey("streams.initial.rebalance.delay.ms", INT, "3000", "group.streams.initial.rebalance.delay.ms", 0),
    GroupKey("share.session.timeout.ms", INT, "45000", "group.share.session.timeout.ms", 1, (45000, 60000)),
    GroupKey("streams.assignment.interval.ms", INT, "1000", "group.streams.assignment.interval.ms", 0, (0, 15000)),
    GroupKey("share.heartbeat.interval.ms", INT, "5000", "group.share.heartbeat.interval.ms", 1, (5000, 15000)),
    GroupKey("streams.heartbeat.interval.ms", INT, "5000", "group.streams.heartbeat.interval.ms", 1, (5000, 15000)),
    GroupKey("share.delivery.count.limit", INT, "5", "group.share.delivery.count.limit", 2, (2, 10)),
    GroupKey("errors.deadletterqueue.topic.name", STRING, "", ""),
    GroupKey("consumer.heartbeat.interval.ms", INT, "5000", "group.consumer.heartbeat.interval.ms", 1,
             _c("heartbeat.interval.ms")),
    GroupKey("share.record.lock.duration.ms", INT, "30000", "group.share.record.lock.duration.ms", 1000,
             ("group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms")),
    GroupKey("share.assignment.interval.ms", INT, "1000", "group.share.assignment.interval.ms", 0, (0, 15000)),
    GroupKey("share.isolation.level", STRING, "read_uncommitted", ""),
    GroupKey("streams.session.timeout.ms", INT, "45000", "group.streams.session.timeout.ms", 1, (45000, 60000)),
    GroupKey("share.partition.max.record.locks", INT, "2000", "group.share.partition.max.record.locks", 100, (100, 4000)),
    GroupKey("streams.num.standby.replicas", INT, "0", "group.streams.num.standby.replicas", 0, (None, 2)),
    GroupKey("consumer.assignor.offload.enable", BOOLEAN, "false", "", listed=False),
)}


def _parse(key: GroupKey, value: str) -> Any:
    """ConfigDef's parsing and validators, with its messages."""
    def invalid(why: str) -> InvalidGroupConfig:
        return InvalidGroupConfig(f"Invalid value {value} for configuration {key.name}: {why}")

    text = value.strip()
    if key.type == INT:
        try:
            number = int(text)
        except ValueError:
            raise invalid("Not a number of type INT") from None
        if not -2**31 <= number < 2**31:
            raise invalid("Not a number of type INT")
        if key.at_least is not None and number < key.at_least:
            raise invalid(f"Value must be at least {key.at_least}")
        return number
    if key.type == BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise invalid("Expected value to be either true or false")
        return text.lower() == "true"
    if key.name == "share.isolation.level" and text not in ("read_committed", "read_uncommitted"):
        raise invalid("String must be one of: read_committed, read_uncommitted")
    if key.name == "share.auto.offset.reset" and not (text in ("earliest", "latest") or text.startswith("by_duration:")):
        raise invalid(SHARE_AUTO_OFFSET_RESET.format(v=text))
    return text


def validate(values: Mapping[str, str], broker_config: Mapping[str, Any]) -> None:
    """GroupConfig.validate: known names, each value parsed, then the ranges the broker allows."""
    for name in values:
        if name not in KEYS:
            raise InvalidGroupConfig(f"Unknown group config name: {name}")
    parsed = {name: _parse(KEYS[name], value) for name, value in values.items()}
    for name, number in parsed.items():
        key = KEYS[name]
        if key.bounds is None:
            continue
        low, high = (broker_config[b] if isinstance(b, str) else b for b in key.bounds)
        if low is None and number > high:
            raise InvalidGroupConfig(f"{name} must be less than or equal to {high}")
        if low is not None and not low <= number <= high:
            raise InvalidGroupConfig(f"{name} must be in the range {low} to {high} inclusive.")
    if parsed.get("streams.assignor.name", "sticky") != "sticky":
        raise InvalidGroupConfig(f"streams.assignor.name '{parsed['streams.assignor.name']}' is not a registered task "
                                 "assignor. Registered assignors are: [sticky].")


class GroupConfigs:
    """Every group's overrides (Kafka keeps them in the metadata log, whether the group exists or not)."""

    def __init__(self) -> None:
        self.overrides: dict[str, dict[str, str]] = {}

    def value(self, group_id: str, name: str, broker_setting: Callable[[str], Any]) -> int:
        """A consumer or share group's number in force: its override, else the broker's."""
        override = self.overrides.get(group_id, {}).get(name)
        return int(override) if override is not None else int(broker_setting(KEYS[name].synonym))

    def text(self, group_id: str, name: str) -> str:
        """A setting with no broker synonym (``share.auto.offset.reset``): the override, else Kafka's default."""
        return self.overrides.get(group_id, {}).get(name, KEYS[name].default)

    def describe(self, group_id: str, keys: list[str] | None, synonyms: bool,
                 broker_chain: Callable[[str], list[tuple[str, str, int]]]) -> list[dict[str, Any]]:
        """DescribeConfigs' entries; ``broker_chain(setting)``: the broker setting's levels,
        the one in force first (empty when the emulator has no such setting)."""
        mine = self.overrides.get(group_id, {})
        out = []
        for key in KEYS.values():
            if not key.listed or (keys is not None and key.name not in keys):
                continue
            chain = broker_chain(key.synonym) if key.synonym else []
            fallback = chain or [(key.synonym or key.name, key.default, DEFAULT_CONFIG)]
            levels = ([(key.name, mine[key.name], GROUP_CONFIG_SOURCE)] if key.name in mine else []) + fallback
            _, value, source = levels[0]
            out.append({"name": key.name, "value": value, "read_only": False, "is_default": False,
                        "config_source": source, "is_sensitive": False, "config_type": key.type, "documentation": None,
                        "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in levels] if synonyms else []})
        return out
