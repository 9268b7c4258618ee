"""Metadata v0-13: live brokers, cluster id, controller, topics with leaders, epochs, ISR and
topic ids. A null topic list (v1+) or an empty one (v0) means every topic. Missing topics are
auto-created when the broker allows it and the request does (v4+ flag; always before v4).
Auto-created topics are ready at once (a real broker first answers LEADER_NOT_AVAILABLE).

A topic that cannot be described carries what ``KafkaApis.metadataResponseTopic`` puts beside
the error: its name, the zero topic id (or the unknown id asked for, with a null name),
``Topic.isInternal(name)`` and no partitions. Authorized operations (v8+) are every operation the
resource supports when asked for, as with no authorizer (``broker_emu.handlers.authorized``):
topic operations on every topic looked up by name, error or not (``handleTopicMetadataRequest``
sets them after ``getTopicMetadata``), never on an unknown topic id; cluster operations only in
v8-10, the versions that carry the field. v13 (KIP-1102, Kafka 4.0) adds a top-level ErrorCode,
none here: a broker answers REBOOTSTRAP_REQUIRED there only when told to (the ``rebootstrap``
fault), as a real one would behind a load balancer that moved the cluster."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from broker_emu import cluster_shape
from broker_emu.acl_checks import authorized as allowed
from broker_emu.context import RequestContext
from broker_emu.handlers import KAFKA_INTERNAL_TOPICS
from broker_emu.handlers.authorized import (
    CLUSTER_OPERATIONS,
    NOT_REQUESTED,
    TOPIC_OPERATIONS,
    authorized,
    authorized_for,
)
from broker_emu.registry import handles
from broker_emu.security.acls import CLUSTER, CLUSTER_NAME, CREATE, DESCRIBE, TOPIC
from broker_emu.topic_names import validate_topic_name
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

if TYPE_CHECKING:
    from broker_emu.brokers import BrokerRoster
    from broker_emu.cluster import Cluster

ZERO_UUID = uuid.UUID(int=0)


def partition_metadata(p, live: set[int]) -> dict:
    """``live``: the ids of the live brokers (read once per answer)."""
    alive = p.leader in live
    return {
        "error_code": E.NONE if alive else E.LEADER_NOT_AVAILABLE,
        "partition_index": p.index,
        "leader_id": p.leader if alive else -1,
        "leader_epoch": p.leader_epoch,
        "replica_nodes": list(p.replicas),
        "isr_nodes": [b for b in p.isr if b in live],
        "offline_replicas": [b for b in p.replicas if b not in live],
    }


def _live_ids(roster: BrokerRoster) -> set[int]:
    return {b.id for b in roster.live()}


def topic_metadata(cluster: Cluster, topic, ops: int = NOT_REQUESTED) -> dict:
    live = _live_ids(cluster.roster)
    return {"error_code": E.NONE, "name": topic.name, "topic_id": topic.topic_id,
            "is_internal": topic.name in KAFKA_INTERNAL_TOPICS,
            "partitions": [partition_metadata(p, live) for p in topic.partitions],
            "topic_authorized_operations": ops}


def topic_error(error: int, name: str | None, topic_id: uuid.UUID = ZERO_UUID, ops: int = NOT_REQUESTED) -> dict:
    """``KafkaApis.metadataResponseTopic(error, name, id, isInternal, no partitions)``."""
    return {"error_code": error, "name": name, "topic_id": topic_id, "is_internal": name in KAFKA_INTERNAL_TOPICS,
            "partitions": [], "topic_authorized_operations": ops}


KEPT_ANSWERS = 256   # per cluster: repeated requests x listeners


@handles(ApiKey.METADATA, 0, 13)
async def metadata(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """A request seen before (``ctx.repeat``) gets the answer built for it then while the
    cluster's shape has not changed since (``broker_emu.cluster_shape``), per listener (the ports
    differ); not under an authorizer, whose answers depend on the principal and the ACLs."""
    cluster = ctx.cluster
    if ctx.repeat is None or cluster.security.authorizer is not None:
        return _answer(ctx, req)
    key = (ctx.repeat, getattr(ctx.connection, "protocol", None))
    generation = cluster_shape.generation()   # read first: a topic auto-created below moves it
    kept = cluster.kept_metadata.get(key)
    if kept is not None and kept[0] == generation:
        if cluster_shape.VERIFY:
            fresh = _answer(ctx, req)
            if fresh != kept[1]:
                raise AssertionError(f"a kept Metadata answer is stale (its shape changed without "
                                     f"cluster_shape.changed()): kept {kept[1]!r}, now {fresh!r}")
        return kept[1]
    answer = _answer(ctx, req)
    if len(cluster.kept_metadata) >= KEPT_ANSWERS:
        cluster.kept_metadata.clear()
    cluster.kept_metadata[key] = (generation, answer)
    return answer


def _answer(ctx: RequestContext, req: Message) -> dict[str, Any]:
    cluster = ctx.cluster
    v = ctx.api_version
    requested = req.topics
    topic_ops = authorized(TOPIC_OPERATIONS, v >= 8 and bool(req.include_topic_authorized_operations))
    if requested is not None and v < 12 and any(e.name is None or (e.topic_id or ZERO_UUID) != ZERO_UUID
                                                 for e in requested):
        # v10-11 carry a topic id field but may not use it: KafkaApis.handleTopicMetadataRequest
        # throws InvalidRequestException, answered by MetadataRequest.getErrorResponse (every
        # requested topic INVALID_REQUEST, a null name as "", no brokers)
        return {"throttle_time_ms": 0, "brokers": [], "topics": [
            {"name": e.name or "", "topic_id": e.topic_id, "error_code": E.INVALID_REQUEST, "is_internal": False,
             "partitions": []} for e in requested]}
    if requested is None or (v == 0 and not requested):
        if cluster.security.authorizer is None:   # the hot path: no per-topic checks
            topics = [topic_metadata(cluster, t, topic_ops) for t in cluster.topics.values()]
        else:   # every topic this principal may describe, with its own authorized operations
            topics = [topic_metadata(cluster, t, _ops(ctx, t.name, topic_ops)) for t in cluster.topics.values()
                      if allowed(ctx, DESCRIBE, TOPIC, t.name, traced=False)]
    else:
        auto = req.allow_auto_topic_creation if v >= 4 else True
        topics = [_authorized_topic(ctx, entry, auto, topic_ops) for entry in requested]
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": b.id, "host": b.host, "port": ctx.port_of(b), "rack": b.rack} for b in cluster.live_brokers()],
        "cluster_id": cluster.cluster_id,
        "controller_id": controller_id(cluster),
        "topics": topics,
        "cluster_authorized_operations": authorized_for(ctx, CLUSTER_OPERATIONS, 8 <= v <= 10 and
                                                        bool(req.include_cluster_authorized_operations),
                                                        CLUSTER, CLUSTER_NAME),
    }


def _authorized_topic(ctx: RequestContext, entry, auto: bool, ops: int) -> dict:
    """KafkaApis.getTopicMetadata's checks: a named topic the principal may not describe is
    TOPIC_AUTHORIZATION_FAILED (zero id, no partitions); one that would be auto-created needs
    CREATE on the cluster or on the topic."""
    name = entry.name
    if name is not None and ctx.cluster.security.authorizer is not None:
        if not allowed(ctx, DESCRIBE, TOPIC, name):
            return topic_error(E.TOPIC_AUTHORIZATION_FAILED, name, ops=_ops(ctx, name, ops))
        if name not in ctx.cluster.topics and auto and not (allowed(ctx, CREATE, CLUSTER, CLUSTER_NAME, traced=False)
                                                            or allowed(ctx, CREATE, TOPIC, name)):
            return topic_error(E.TOPIC_AUTHORIZATION_FAILED, name, ops=_ops(ctx, name, ops))
        return _one_topic(ctx.cluster, entry, auto, _ops(ctx, name, ops))
    if name is None and entry.topic_id is not None:
        t = ctx.cluster.topic_by_id(entry.topic_id)
        if t is not None and not allowed(ctx, DESCRIBE, TOPIC, t.name):
            return topic_error(E.TOPIC_AUTHORIZATION_FAILED, None, entry.topic_id)
    return _one_topic(ctx.cluster, entry, auto, ops)


def _ops(ctx: RequestContext, name: str, ops: int) -> int:
    """KIP-430 under an authorizer: the topic operations this principal may do."""
    return authorized_for(ctx, TOPIC_OPERATIONS, ops != NOT_REQUESTED, TOPIC, name)


def _one_topic(cluster: Cluster, entry, auto: bool, ops: int) -> dict:
    name = entry.name
    if name is None and entry.topic_id is not None:  # v12 by id; unknown ids get no authorized operations
        t = cluster.topic_by_id(entry.topic_id)
        return topic_metadata(cluster, t, ops) if t else topic_error(E.UNKNOWN_TOPIC_ID, None, entry.topic_id)
    t = cluster.topics.get(name) or (cluster.maybe_auto_create(name) if auto else None)
    if t is None:
        return topic_error(E.INVALID_TOPIC_EXCEPTION if _invalid(name) else E.UNKNOWN_TOPIC_OR_PARTITION, name, ops=ops)
    return topic_metadata(cluster, t, ops)


def controller_id(cluster: Cluster) -> int:
    """The controller if it is alive, else the lowest live broker (a KRaft broker reports a
    random live one), else -1."""
    if cluster.is_alive(cluster.controller_id):
        return cluster.controller_id
    return min((b.id for b in cluster.live_brokers()), default=-1)


def _invalid(name: str) -> bool:
    try:
        validate_topic_name(name)
        return False
    except ValueError:
        return True
