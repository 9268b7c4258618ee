"""InitProducerId, CreateTopics, DeleteTopics, DescribeConfigs, DescribeCluster, SASL and
telemetry. SASL is not supported: SaslHandshake lists no mechanism (error 33) and
SaslAuthenticate answers ILLEGAL_SASL_STATE, so a client configured for SASL fails clearly."""

from __future__ import annotations

import uuid

from broker_emu.registry import handles
from client.protocol import ApiKey

TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_TOPIC = 36, 37, 38, 17
INVALID_REPLICA_ASSIGNMENT, INVALID_REQUEST = 39, 42
UNKNOWN_TOPIC, UNKNOWN_TOPIC_ID = 3, 100


@handles(ApiKey.INIT_PRODUCER_ID, 0, 5)
async def init_producer_id(ctx, req):
    """Idempotent producers get a fresh id (or an epoch bump for a known id, v3+).
    Transactions are not emulated: a transactional id is accepted but ignored."""
    pid, epoch = ctx.cluster.init_producer_id(req.producer_id, req.producer_epoch)
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": pid, "producer_epoch": epoch}


@handles(ApiKey.CREATE_TOPICS, 2, 7)
async def create_topics(ctx, req):
    """Partitions/replication factor -1 take num.partitions/default.replication.factor;
    explicit replica assignments are honoured; validate_only changes nothing."""
    return {"throttle_time_ms": 0, "topics": [_create_one(ctx.cluster, t, req.validate_only) for t in req.topics]}


def _create_one(cluster, t, validate_only: bool) -> dict:
    entry = {"name": t.name, "error_code": 0, "error_message": None, "topic_config_error_code": 0,
             "num_partitions": -1, "replication_factor": -1, "configs": None}
    n = None if t.num_partitions == -1 else t.num_partitions
    rf = None if t.replication_factor == -1 else t.replication_factor
    assignments = [list(a.broker_ids) for a in sorted(t.assignments, key=lambda a: a.partition_index)] if t.assignments else None
    error = _create_error(cluster, t.name, n, rf, assignments)
    if error:
        entry.update(error_code=error[0], error_message=error[1])
        return entry
    if validate_only:
        n = len(assignments) if assignments else n or cluster.config["num.partitions"]
        rf = len(assignments[0]) if assignments else rf or min(cluster.config["default.replication.factor"], len(cluster.brokers))
        entry.update(num_partitions=n, replication_factor=rf)
        return entry
    try:
        topic = cluster.create_topic(t.name, n, rf, {c.name: c.value for c in t.configs or ()}, assignments)
    except ValueError as exc:
        entry.update(error_code=INVALID_REPLICA_ASSIGNMENT, error_message=str(exc))
        return entry
    entry.update(topic_id=topic.topic_id, num_partitions=len(topic.partitions),
                 replication_factor=len(topic.partitions[0].replicas))
    return entry


def _create_error(cluster, name: str, n, rf, assignments) -> tuple[int, str] | None:
    from broker_emu.cluster import MAX_PARTITIONS, validate_topic_name

    if assignments and (n is not None or rf is not None):
        return INVALID_REQUEST, "give either replica assignments or partitions and replication factor, not both"
    if name in cluster.topics:
        return TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
    if n is not None and n < 1:
        return INVALID_PARTITIONS, f"Number of partitions must be larger than 0, got {n}."
    if n is not None and n > MAX_PARTITIONS:
        return INVALID_PARTITIONS, f"{n} partitions is over broker-emu's limit of {MAX_PARTITIONS} per topic."
    if rf is not None and not 1 <= rf <= len(cluster.brokers):
        return INVALID_REPLICATION_FACTOR, f"Replication factor {rf} is not between 1 and the {len(cluster.brokers)} brokers."
    try:
        validate_topic_name(name)
    except ValueError as exc:
        return INVALID_TOPIC, str(exc)
    return None


@handles(ApiKey.DELETE_TOPICS, 1, 6)
async def delete_topics(ctx, req):
    cluster = ctx.cluster
    wanted = [(n, None) for n in req.topic_names or ()] + [(t.name, t.topic_id) for t in req.topics or ()]
    out = []
    for name, tid in wanted:
        topic = cluster.topics.get(name) if name else cluster.topic_by_id(tid)
        if topic is None:
            out.append({"name": name, "topic_id": tid, "error_code": UNKNOWN_TOPIC_ID if name is None else UNKNOWN_TOPIC})
            continue
        cluster.delete_topic(topic.name)
        out.append({"name": topic.name, "topic_id": topic.topic_id, "error_code": 0})
    return {"throttle_time_ms": 0, "responses": out}


# topic config name -> the broker config that supplies its default
TOPIC_DEFAULTS = {"max.message.bytes": "message.max.bytes", "min.insync.replicas": "min.insync.replicas",
                  "message.timestamp.type": "log.message.timestamp.type", "retention.bytes": "log.retention.bytes"}
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


@handles(ApiKey.DESCRIBE_CONFIGS, 1, 4)
async def describe_configs(ctx, req):
    """Topic (2) and broker (4) resources. Each value carries its source as the broker reports
    it: a topic override, a broker setting given at start (static), or Kafka's default."""
    cluster = ctx.cluster
    results = []
    for r in req.resources:
        entry = {"error_code": 0, "error_message": None, "resource_type": r.resource_type, "resource_name": r.resource_name, "configs": []}
        if r.resource_type == 2 and r.resource_name not in cluster.topics:
            entry.update(error_code=UNKNOWN_TOPIC, error_message=f"unknown topic {r.resource_name}")
        elif r.resource_type == 2:
            t = cluster.topics[r.resource_name]
            values = {name: (t.configs[name], DYNAMIC_TOPIC_CONFIG) if name in t.configs else _broker_value(cluster, broker_name)
                      for name, broker_name in TOPIC_DEFAULTS.items()}
            values.update({k: (v, DYNAMIC_TOPIC_CONFIG) for k, v in t.configs.items()})
            entry["configs"] = _configs(values, r.configuration_keys)
        elif r.resource_type == 4:
            entry["configs"] = _configs({k: _broker_value(cluster, k) for k in cluster.config if not k.startswith("emu.")},
                                        r.configuration_keys)
        else:
            entry.update(error_code=INVALID_REQUEST, error_message=f"resource type {r.resource_type} is not supported by broker-emu")
        results.append(entry)
    return {"throttle_time_ms": 0, "results": results}


def _broker_value(cluster, name: str) -> tuple[str, int]:
    from broker_emu.config import DEFAULTS

    value = cluster.config[name]
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return text, DEFAULT_CONFIG if value == DEFAULTS[name] else STATIC_BROKER_CONFIG


def _configs(values: dict[str, tuple[str, int]], keys) -> list[dict]:
    return [{"name": k, "value": v, "read_only": False, "is_default": source == DEFAULT_CONFIG,
             "config_source": source, "is_sensitive": False, "synonyms": [], "config_type": 0, "documentation": None}
            for k, (v, source) in sorted(values.items()) if keys is None or k in keys]


@handles(ApiKey.DESCRIBE_CLUSTER, 0, 1)
async def describe_cluster(ctx, req):
    cluster = ctx.cluster
    return {"throttle_time_ms": 0, "error_code": 0, "endpoint_type": 1, "cluster_id": cluster.cluster_id,
            "controller_id": cluster.controller_id,
            "brokers": [{"broker_id": b.id, "host": b.host, "port": b.port, "rack": b.rack} for b in cluster.live_brokers()],
            "cluster_authorized_operations": -2147483648}


@handles(ApiKey.SASL_HANDSHAKE, 0, 1)
async def sasl_handshake(ctx, req):
    return {"error_code": 33, "mechanisms": []}


@handles(ApiKey.SASL_AUTHENTICATE, 0, 2)
async def sasl_authenticate(ctx, req):
    return {"error_code": 34, "error_message": "broker-emu does not support SASL", "auth_bytes": b""}


@handles(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, 0, advertised=lambda cluster: cluster.config["emu.telemetry"])
async def get_telemetry_subscriptions(ctx, req):
    """KIP-714, only advertised with emu.telemetry: a subscription asking for no metrics."""
    instance = req.client_instance_id if req.client_instance_id and req.client_instance_id.int else uuid.UUID(int=ctx.cluster.rng.getrandbits(128))
    return {"throttle_time_ms": 0, "error_code": 0, "client_instance_id": instance, "subscription_id": 1,
            "accepted_compression_types": [0], "push_interval_ms": 300000, "telemetry_max_bytes": 1048576,
            "delta_temporality": True, "requested_metrics": []}
