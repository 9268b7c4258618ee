"""CreateTopics, DeleteTopics, DescribeConfigs, DescribeCluster and telemetry (SASL: sasl.py)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from broker_emu.context import RequestContext
from broker_emu.handlers import kafka_message
from broker_emu.handlers.authorized import CLUSTER_OPERATIONS, authorized_for
from broker_emu.handlers.controller_deadline import controller_in_time, zookeeper_change_in_time
from broker_emu.registry import handles
from broker_emu.security.acls import CLUSTER, CLUSTER_NAME
from broker_emu.topic_config import (
    BROKER_SYNONYMS,
    DYNAMIC_BROKER_KEYS,
    TOPIC_CONFIGS,
    InvalidConfig,
    validate_topic_configs,
)
from broker_emu.topic_names import validate_topic_name
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

if TYPE_CHECKING:
    from broker_emu.cluster import Cluster

BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2  # org.apache.kafka.clients.admin.EndpointType
ZERO_UUID = uuid.UUID(int=0)


@handles(ApiKey.CREATE_TOPICS, 2, 7)
async def create_topics(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Partitions/replication factor -1 take num.partitions/default.replication.factor;
    explicit replica assignments are honoured; validate_only changes nothing. Configs are
    validated as the controller does (``broker_emu.topic_config``): a null value, an unknown
    name or a bad value answers INVALID_CONFIG with Kafka's message naming the key and why."""
    if ctx.cluster.profile.zookeeper:
        return await _create_topics_zookeeper(ctx, req)
    if not await controller_in_time(ctx, "CreateTopics", req.timeout_ms):
        return {"throttle_time_ms": 0, "topics": [
            {"name": t.name, "topic_id": ZERO_UUID, "error_code": E.REQUEST_TIMED_OUT, "error_message": None,
             "topic_config_error_code": E.NONE, "num_partitions": -1, "replication_factor": -1, "configs": []}
            for t in req.topics]}
    return {"throttle_time_ms": 0, "topics": [_create_one(ctx.cluster, t, req.validate_only) for t in req.topics]}


async def _create_topics_zookeeper(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Version profile 2.8: topics are created first; those still spreading at ``timeout_ms`` are
    answered REQUEST_TIMED_OUT, and exist all the same."""
    results = [_create_one(ctx.cluster, t, req.validate_only) for t in req.topics]
    created = [r for r in results if r["error_code"] == E.NONE and not req.validate_only]
    if created and not await zookeeper_change_in_time(ctx, "CreateTopics", req.timeout_ms):
        for r in created:
            r.update(error_code=E.REQUEST_TIMED_OUT, error_message=None)
    return {"throttle_time_ms": 0, "topics": results}


def _create_one(cluster: Cluster, t, validate_only: bool) -> dict:
    """One CreatableTopicResult as the controller builds it (``ReplicationControlManager.createTopics``):
    an error carries its message and the schema defaults (zero topic id, -1 partitions and
    replication factor, an empty config list); a success (or a validate_only pass) carries the
    topic's effective configs (v5+, KIP-525) — here the ones the emulator knows, as
    DescribeConfigs reports them."""
    entry = {"name": t.name, "topic_id": ZERO_UUID, "error_code": E.NONE, "error_message": None, "topic_config_error_code": E.NONE,
             "num_partitions": -1, "replication_factor": -1, "configs": []}
    n = None if t.num_partitions == -1 else t.num_partitions
    rf = None if t.replication_factor == -1 else t.replication_factor
    assignments = [list(a.broker_ids) for a in sorted(t.assignments, key=lambda a: a.partition_index)] if t.assignments else None
    error = _create_error(cluster, t.name, n, rf, assignments, t.configs or ())
    if error:
        entry.update(error_code=error[0], error_message=error[1])
        return entry
    if validate_only:
        n = len(assignments) if assignments else n or cluster.config["num.partitions"]
        rf = len(assignments[0]) if assignments else rf or min(cluster.config["default.replication.factor"], len(cluster.brokers))
        entry.update(num_partitions=n, replication_factor=rf, configs=_created_configs(cluster, creation_configs(t)))
        return entry
    try:
        topic = cluster.create_topic(t.name, n, rf, creation_configs(t), assignments)
    except ValueError as exc:
        entry.update(error_code=E.INVALID_REPLICA_ASSIGNMENT, error_message=str(exc))
        return entry
    entry.update(topic_id=topic.topic_id, num_partitions=len(topic.partitions),
                 replication_factor=len(topic.partitions[0].replicas), configs=_created_configs(cluster, topic.configs))
    return entry


def creation_configs(t) -> dict[str, str]:
    return {c.name: c.value for c in t.configs or ()}


def _created_configs(cluster: Cluster, overrides: dict[str, str]) -> list[dict]:
    """CreatableTopicConfigs: name, value, source, not read-only, not sensitive."""
    return [{"name": c["name"], "value": c["value"], "read_only": False, "config_source": c["config_source"],
             "is_sensitive": False} for c in _configs(topic_values(cluster, overrides), None)]


def _create_error(cluster: Cluster, name: str, n, rf, assignments, configs) -> tuple[int, str] | None:
    from broker_emu.topics import MAX_PARTITIONS

    if assignments and (n is not None or rf is not None):
        return E.INVALID_REQUEST, "give either replica assignments or partitions and replication factor, not both"
    if name in cluster.topics:
        return E.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
    try:  # before the partition checks, as ReplicationControlManager.createTopics
        validate_topic_configs({c.name: c.value for c in configs}, cluster.config)
    except InvalidConfig as exc:
        return E.INVALID_CONFIG, str(exc)
    if n is not None and n < 1:
        return E.INVALID_PARTITIONS, f"Number of partitions must be larger than 0, got {n}."
    if n is not None and n > MAX_PARTITIONS:
        return E.INVALID_PARTITIONS, f"{n} partitions is over broker-emu's limit of {MAX_PARTITIONS} per topic."
    if rf is not None and not 1 <= rf <= len(cluster.brokers):
        return E.INVALID_REPLICATION_FACTOR, f"Replication factor {rf} is not between 1 and the {len(cluster.brokers)} brokers."
    try:
        validate_topic_name(name)
    except ValueError as exc:
        return E.INVALID_TOPIC_EXCEPTION, str(exc)
    return None


@handles(ApiKey.DELETE_TOPICS, 1, 6)
async def delete_topics(ctx: RequestContext, req: Message) -> dict[str, Any]:
    cluster = ctx.cluster
    wanted = [(n, None) for n in req.topic_names or ()] + [(t.name, t.topic_id) for t in req.topics or ()]
    if cluster.profile.zookeeper:
        # 2.8 (ZkAdminManager.deleteTopics): marked for deletion first, REQUEST_TIMED_OUT while spreading
        out = _delete_each(cluster, wanted)
        deleted = [r for r in out if r["error_code"] == E.NONE]
        if deleted and not await zookeeper_change_in_time(ctx, "DeleteTopics", req.timeout_ms):
            for r in deleted:
                r.update(error_code=E.REQUEST_TIMED_OUT, error_message=None)
        return {"throttle_time_ms": 0, "responses": out}
    if not await controller_in_time(ctx, "DeleteTopics", req.timeout_ms):
        return {"throttle_time_ms": 0, "responses": [{"name": name, "topic_id": tid or ZERO_UUID, "error_code": E.REQUEST_TIMED_OUT,
                                                      "error_message": None} for name, tid in wanted]}
    return {"throttle_time_ms": 0, "responses": _delete_each(cluster, wanted)}


def _delete_each(cluster: Cluster, wanted: list) -> list[dict]:
    out = []
    for name, tid in wanted:
        topic = cluster.topics.get(name) if name else cluster.topic_by_id(tid)
        if topic is None:
            # ReplicationControlManager.findTopicIds / findTopicNames: new ApiError(code), so
            # Errors.message() goes out (v5+); a name gets the zero id, an id a null name
            error = E.UNKNOWN_TOPIC_ID if name is None else E.UNKNOWN_TOPIC_OR_PARTITION
            out.append({"name": name, "topic_id": tid or ZERO_UUID, "error_code": error, "error_message": kafka_message(error)})
            continue
        cluster.delete_topic(topic.name)
        out.append({"name": topic.name, "topic_id": topic.topic_id, "error_code": E.NONE, "error_message": None})
    return out


# topic config name -> the broker config that supplies its default
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 2, 3, 4, 5


@handles(ApiKey.DESCRIBE_CONFIGS, 1, 4)
async def describe_configs(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Topic (2) and broker (4) resources. Each value carries its source as the broker reports
    it: a topic override, a broker setting given at start (static), or Kafka's default.
    Errors as ``ConfigHelper.describeConfigs`` answers them: an unknown topic gets
    UNKNOWN_TOPIC_OR_PARTITION with the schema's empty message; an invalid name, another
    broker's id or an unsupported type the exception's message; never any configs. A broker
    resource named "" lists the cluster-wide dynamic values (min.insync.replicas, as Kafka 4.x is
    formatted, and what AlterConfigs set); synonyms (v1+) list every level a value has.
    Groups (32) list their configs (broker_emu/group_configs.py). Deliberate difference: broker
    loggers and client metrics are not emulated and answer INVALID_REQUEST (a real broker
    describes them)."""
    wants = ctx.api_version >= 1 and bool(req.include_synonyms)
    return {"throttle_time_ms": 0, "results": [_describe_one(ctx, r, wants) for r in req.resources]}


def _describe_one(ctx, r, wants_synonyms: bool = False) -> dict:
    cluster = ctx.cluster
    entry = {"error_code": E.NONE, "error_message": None, "resource_type": r.resource_type, "resource_name": r.resource_name,
             "configs": []}
    if r.resource_type == 2:
        try:
            validate_topic_name(r.resource_name)
        except ValueError as exc:
            return entry | {"error_code": E.INVALID_TOPIC_EXCEPTION, "error_message": str(exc)}
        t = cluster.topics.get(r.resource_name)
        if t is None:
            return entry | {"error_code": E.UNKNOWN_TOPIC_OR_PARTITION, "error_message": ""}
        synonyms = (lambda k: _synonyms(cluster, k, ctx.broker_id, t.configs)) if wants_synonyms else None
        return entry | {"configs": _configs(topic_values(cluster, t.configs, ctx.broker_id), r.configuration_keys, synonyms)}
    if r.resource_type == 4:
        if r.resource_name == "":   # the cluster-wide dynamic values (AlterConfigs on broker "")
            defaults = cluster.dynamic_config.get("", {})
            return entry | {"configs": _configs({k: (v, DYNAMIC_DEFAULT_BROKER_CONFIG) for k, v in defaults.items()},
                                                r.configuration_keys)}
        if r.resource_name != str(ctx.broker_id):
            return entry | {"error_code": E.INVALID_REQUEST, "error_message": f"Unexpected broker id, expected {ctx.broker_id} "
                            f"or empty string, but received {r.resource_name}"}
        names = {k for k in cluster.config if not k.startswith("emu.")}
        names |= {k for scope in ("", r.resource_name) for k in cluster.dynamic_config.get(scope, {})}
        values = {k: _broker_value(cluster, k, ctx.broker_id) for k in names}
        synonyms = (lambda k: _synonyms(cluster, k, ctx.broker_id, None)) if wants_synonyms else None
        return entry | {"configs": _configs(values, r.configuration_keys, synonyms)}
    if r.resource_type == 32:
        if not r.resource_name:
            return entry | {"error_code": E.INVALID_REQUEST, "error_message": "Group name must not be empty"}
        # Kafka 4.4 answers a group with an empty message, not null (measured: test_group_configs_ab.py)
        return entry | {"error_message": "", "configs": cluster.group_configs.describe(
            r.resource_name, r.configuration_keys, wants_synonyms, lambda name: broker_chain(cluster, name, ctx.broker_id))}
    return entry | {"error_code": E.INVALID_REQUEST, "error_message": f"resource type {r.resource_type} is not supported by broker-emu"}


def topic_values(cluster: Cluster, overrides: dict[str, str], broker_id: int | None = None) -> dict[str, tuple[str, int]]:
    """(value, source) of every topic config (LogConfig's): the topic's override, else the broker
    setting behind it (dynamic or static), else Kafka's default."""
    dynamic = {k for scope in cluster.dynamic_config.values() for k in scope}
    values = {}
    for name, key in TOPIC_CONFIGS.items():
        synonym = BROKER_SYNONYMS.get(name)
        if name in overrides:
            values[name] = (overrides[name], DYNAMIC_TOPIC_CONFIG)
        elif synonym is not None and (synonym in cluster.static_config or synonym in dynamic):
            values[name] = _broker_value(cluster, synonym, broker_id)
        else:
            values[name] = (key.default, DEFAULT_CONFIG)
    return values


def _broker_value(cluster: Cluster, name: str, broker_id: int | None = None) -> tuple[str, int]:
    """A broker setting and its source: the first of its ``broker_chain``."""
    chain = broker_chain(cluster, name, broker_id)
    return (chain[0][1], chain[0][2]) if chain else (DYNAMIC_BROKER_KEYS[name].default, DEFAULT_CONFIG)


def broker_chain(cluster: Cluster, name: str, broker_id: int | None) -> list[tuple[str, str, int]]:
    """(name, value, source) of a broker setting at every level that has one, the one in force
    first: this broker's dynamic value, the cluster-wide one, the static setting, Kafka's default
    (DynamicBrokerConfig's precedence; DescribeConfigs' synonyms)."""
    from broker_emu.config import DEFAULTS

    def text(value: Any) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)

    dynamic, out = cluster.dynamic_config, []
    if broker_id is not None and name in dynamic.get(str(broker_id), {}):
        out.append((name, dynamic[str(broker_id)][name], DYNAMIC_BROKER_CONFIG))
    if name in dynamic.get("", {}):
        out.append((name, dynamic[""][name], DYNAMIC_DEFAULT_BROKER_CONFIG))
    if name in cluster.static_config and cluster.static_config[name] != DEFAULTS.get(name):
        out.append((name, text(cluster.static_config[name]), STATIC_BROKER_CONFIG))
    if name in DEFAULTS:
        out.append((name, text(DEFAULTS[name]), DEFAULT_CONFIG))
    return out


def _synonyms(cluster: Cluster, name: str, broker_id: int, overrides: dict[str, str] | None) -> list[dict]:
    """DescribeConfigs' synonyms (v1+, include_synonyms): for a topic config its override, then its
    broker synonym's levels; for a broker setting its own levels."""
    chain = []
    if overrides is not None:
        if name in overrides:
            chain.append((name, overrides[name], DYNAMIC_TOPIC_CONFIG))
        name = BROKER_SYNONYMS.get(name, "")
    if name:
        chain += broker_chain(cluster, name, broker_id)
    return [{"name": n, "value": v, "source": src} for n, v, src in chain]


def _configs(values: dict[str, tuple[str, int]], keys, synonyms: Any = None) -> list[dict]:
    """``synonyms``: name -> its synonym entries, when the request asked for them."""
    return [{"name": k, "value": v, "read_only": False, "is_default": source == DEFAULT_CONFIG,
             "config_source": source, "is_sensitive": False, "synonyms": synonyms(k) if synonyms else [],
             "config_type": 0, "documentation": None}
            for k, (v, source) in sorted(values.items()) if keys is None or k in keys]


@handles(ApiKey.DESCRIBE_CLUSTER, 0, 1)
async def describe_cluster(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Brokers answer for the broker endpoint type (KIP-919): asked for a controller endpoint,
    or an unknown type, Kafka answers MISMATCHED_ENDPOINT_TYPE / UNSUPPORTED_ENDPOINT_TYPE
    (INVALID_REQUEST in v0) with a message and nothing else (``AuthHelper.computeDescribeClusterResponse``).
    Cluster authorized operations, when asked, are every cluster operation (no authorizer)."""
    from broker_emu.handlers.metadata import controller_id

    cluster = ctx.cluster
    wanted = req.endpoint_type if ctx.api_version >= 1 else BROKER_ENDPOINT
    if wanted != BROKER_ENDPOINT:
        known = wanted == CONTROLLER_ENDPOINT
        error = E.INVALID_REQUEST if ctx.api_version == 0 else E.MISMATCHED_ENDPOINT_TYPE if known else E.UNSUPPORTED_ENDPOINT_TYPE
        message = ("The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
                   if known else f"Unsupported endpoint type {wanted}")
        return {"throttle_time_ms": 0, "error_code": error, "error_message": message}
    return {"throttle_time_ms": 0, "error_code": E.NONE, "error_message": None, "endpoint_type": BROKER_ENDPOINT,
            "cluster_id": cluster.cluster_id, "controller_id": controller_id(cluster),
            "brokers": [{"broker_id": b.id, "host": b.host, "port": ctx.port_of(b), "rack": b.rack} for b in cluster.live_brokers()],
            "cluster_authorized_operations": authorized_for(ctx, CLUSTER_OPERATIONS,
                                                            bool(req.include_cluster_authorized_operations),
                                                            CLUSTER, CLUSTER_NAME)}


@handles(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, 0, advertised=lambda cluster: cluster.config["emu.telemetry"])
async def get_telemetry_subscriptions(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """KIP-714, only advertised with emu.telemetry: a subscription asking for no metrics."""
    instance = req.client_instance_id if req.client_instance_id and req.client_instance_id.int else uuid.UUID(int=ctx.cluster.rng.getrandbits(128))
    return {"throttle_time_ms": 0, "error_code": E.NONE, "client_instance_id": instance, "subscription_id": 1,
            "accepted_compression_types": [0], "push_interval_ms": 300000, "telemetry_max_bytes": 1048576,
            "delta_temporality": True, "requested_metrics": []}
