"""AlterConfigs (v0-2) and IncrementalAlterConfigs (v0-1): topic and broker configs that then take
effect — the next Produce reads a topic's new ``max.message.bytes``, ``min.insync.replicas``,
timestamps or compression, and a leader election its ``unclean.leader.election.enable``.

Kafka's steps, in order: the broker's ``ConfigAdminManager.preprocess`` (a resource named twice,
duplicate keys, null values, the broker resource's name, the broker settings that may change at
run time), then the controller's ``ConfigurationControlManager``: SET / DELETE / APPEND / SUBTRACT
applied to the stored overrides (APPEND and SUBTRACT only on LIST keys, starting from the default),
``ControllerConfigurationValidator`` (``LogConfig.validate`` of the resulting topic overrides) and
only then whether the topic exists. Legacy AlterConfigs replaces a resource's overrides whole.

Broker settings that Kafka changes at run time are the broker synonyms of topic configs
(``DynamicLogConfig.ReconfigurableConfigs``); the rest answer "Cannot update these configs
dynamically". Deliberate difference: the emulated brokers share one configuration, so a value set
for one broker id applies to every broker (Kafka: to that broker); DescribeConfigs still reports
it as that broker's (DYNAMIC_BROKER_CONFIG) and the cluster-wide one as DYNAMIC_DEFAULT_BROKER_CONFIG.
Group configs (KIP-848's per-group overrides) live in broker_emu/group_configs.py. Broker loggers
and client-metrics resources answer INVALID_REQUEST.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from broker_emu.context import RequestContext
from broker_emu.group_configs import KEYS as GROUP_KEYS
from broker_emu.group_configs import InvalidGroupConfig
from broker_emu.group_configs import validate as validate_group_configs
from broker_emu.registry import handles
from broker_emu.topic_config import DYNAMIC_BROKER_KEYS, TOPIC_CONFIGS, InvalidConfig, validate_topic_configs
from broker_emu.topic_names import validate_topic_name
from broker_emu.trace import Kind
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

if TYPE_CHECKING:
    from broker_emu.cluster import Cluster

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OPS = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32


class Refused(Exception):
    def __init__(self, code: int, message: str | None):
        super().__init__(message)
        self.code, self.message = code, message


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1)
async def incremental_alter_configs(ctx: RequestContext, req: Message) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "responses": _alter(ctx, req.resources, req.validate_only, incremental=True)}


@handles(ApiKey.ALTER_CONFIGS, 0, 2)
async def alter_configs(ctx: RequestContext, req: Message) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "responses": _alter(ctx, req.resources, req.validate_only, incremental=False)}


def _alter(ctx: RequestContext, resources: list[Any], validate_only: bool, incremental: bool) -> list[dict[str, Any]]:
    named = Counter((r.resource_type, r.resource_name) for r in resources)
    out = []
    for r in resources:
        code: int = E.NONE
        message: str | None = None
        try:
            if named[(r.resource_type, r.resource_name)] > 1:
                raise Refused(E.INVALID_REQUEST, "Each resource must appear at most once.")
            ops = _operations(r, incremental)
            if r.resource_type == TOPIC:
                _alter_topic(ctx.cluster, r.resource_name, ops, incremental, validate_only)
            elif r.resource_type == BROKER:
                _alter_broker(ctx, r.resource_name, ops, incremental, validate_only)
            elif r.resource_type == GROUP:
                _alter_group(ctx.cluster, r.resource_name, ops, incremental, validate_only)
            elif r.resource_type == BROKER_LOGGER:
                _broker_name(ctx, r.resource_name)
                raise Refused(E.INVALID_REQUEST, "broker loggers are not emulated by broker-emu")
            else:
                raise Refused(E.INVALID_REQUEST, f"Unknown resource type {r.resource_type}" if r.resource_type != 16
                              else f"resource type {r.resource_type} is not supported by broker-emu")
        except Refused as refused:
            code, message = refused.code, refused.message
        out.append({"error_code": code, "error_message": message, "resource_type": r.resource_type,
                    "resource_name": r.resource_name})
    return out


def _operations(r: Any, incremental: bool) -> dict[str, tuple[int, str | None]]:
    """ConfigAdminManager.preprocess's checks; name -> (operation, value)."""
    names = [c.name for c in r.configs]
    if len(set(names)) != len(names):
        raise Refused(E.INVALID_REQUEST, "Error due to duplicate config keys")
    ops = {c.name: (c.config_operation if incremental else SET, c.value) for c in r.configs}
    nulls = [name for name, (op, value) in ops.items() if op != DELETE and value is None]
    if nulls:
        raise Refused(E.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
    unknown = next((op for op, _ in ops.values() if op not in OPS), None)
    if unknown is not None:   # the broker checks (ConfigAdminManager); on a topic Kafka 4.4 fails unchecked
        raise Refused(E.INVALID_REQUEST if r.resource_type == BROKER else E.UNKNOWN_SERVER_ERROR,
                      f"Unknown operations type {unknown}" if r.resource_type == BROKER else None)
    return ops


def _applied(current: dict[str, str], ops: dict[str, tuple[int, str | None]], incremental: bool,
             default: Any) -> dict[str, str]:
    """ConfigurationControlManager: the overrides after the operations (legacy: replaced whole)."""
    new = dict(current) if incremental else {}
    for name, (op, value) in ops.items():
        if op == SET:
            new[name] = value or ""
        elif op == DELETE:
            new.pop(name, None)
        else:
            key = default(name)
            if key is None or key.kind != "LIST":
                raise Refused(E.INVALID_CONFIG, f"Can't {OPS[op]} to key {name} because its type is not LIST.")
            start = new.get(name, key.default)
            parts = [p for p in start.split(",") if p] if start else []
            for item in (value or "").split(","):
                if op == APPEND and item not in parts:
                    parts.append(item)
                elif op == SUBTRACT and item in parts:
                    parts.remove(item)
            new[name] = ",".join(parts)
    return new


def _alter_topic(cluster: Cluster, name: str, ops: dict[str, tuple[int, str | None]], incremental: bool,
                 validate_only: bool) -> None:
    if not name:
        raise Refused(E.INVALID_REQUEST, "Default topic resources are not allowed.")
    try:
        validate_topic_name(name)
    except ValueError as exc:
        raise Refused(E.INVALID_TOPIC_EXCEPTION, str(exc)) from None
    topic = cluster.topics.get(name)
    new = _applied(topic.configs if topic is not None else {}, ops, incremental, TOPIC_CONFIGS.get)
    try:
        validate_topic_configs(new, cluster.config)
    except InvalidConfig as exc:
        raise Refused(E.INVALID_CONFIG, str(exc)) from None
    if topic is None:
        raise Refused(E.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    if not validate_only and new != topic.configs:
        before, topic.configs = topic.configs, new
        cluster.trace.emit(Kind.CONFIG_CHANGE, details={"resource": "topic", "name": name, "before": before, "after": new})


def _alter_group(cluster: Cluster, name: str, ops: dict[str, tuple[int, str | None]], incremental: bool,
                 validate_only: bool) -> None:
    """A group's configs, whether the group exists or not (Kafka keeps them in its metadata log);
    KIP-848 groups read them at their next heartbeat or timer (broker_emu/group_configs.py)."""
    if not name:
        raise Refused(E.INVALID_REQUEST, "Default group resources are not allowed.")
    store = cluster.group_configs.overrides
    new = _applied(store.get(name, {}), ops, incremental, GROUP_KEYS.get)
    try:
        validate_group_configs(new, cluster.config)
    except InvalidGroupConfig as exc:
        raise Refused(E.INVALID_CONFIG, str(exc)) from None
    if validate_only or new == store.get(name, {}):
        return
    before = store.get(name, {})
    if new:
        store[name] = new
    else:
        store.pop(name, None)
    cluster.trace.emit(Kind.CONFIG_CHANGE, details={"resource": "group", "name": name, "before": before, "after": new})


def _alter_broker(ctx: RequestContext, name: str, ops: dict[str, tuple[int, str | None]], incremental: bool,
                  validate_only: bool) -> None:
    cluster = ctx.cluster
    if name:
        _broker_name(ctx, name)
    fixed = [k for k in ops if k not in DYNAMIC_BROKER_KEYS]
    if fixed:   # Kafka 4.4's wording (a Java list, in the request's order)
        raise Refused(E.INVALID_REQUEST, f"Cannot update these configs dynamically: [{', '.join(fixed)}]")
    dynamic = cluster.dynamic_config
    new = _applied(dynamic.get(name, {}), ops, incremental, DYNAMIC_BROKER_KEYS.get)
    for key, value in new.items():
        try:
            DYNAMIC_BROKER_KEYS[key].parse(value)
        except InvalidConfig as exc:   # KAFKA-13609: a bad value is INVALID_REQUEST here
            raise Refused(E.INVALID_REQUEST, str(exc).replace(DYNAMIC_BROKER_KEYS[key].name, key, 1)) from None
    if validate_only or new == dynamic.get(name, {}):
        return
    before = dynamic.get(name, {})
    dynamic[name] = new
    cluster.apply_dynamic_config()
    cluster.trace.emit(Kind.CONFIG_CHANGE, broker=ctx.broker_id,
                       details={"resource": "broker", "name": name, "before": before, "after": new})


def _broker_name(ctx: RequestContext, name: str) -> None:
    """ConfigAdminManager.validateResourceNameIsCurrentNodeId."""
    try:
        broker_id = int(name)
    except ValueError:
        raise Refused(E.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
    if broker_id != ctx.broker_id:
        raise Refused(E.INVALID_REQUEST, f"Unexpected broker id, expected {ctx.broker_id}, but received {name}")
