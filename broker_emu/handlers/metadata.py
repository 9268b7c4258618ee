"""Metadata v0-12: live brokers, cluster id, controller, topics with leaders, epochs, ISR and
topic ids. A null topic list (v1+) or an empty one (v0) means every topic. Missing topics are
auto-created when the broker allows it and the request does (v4+ flag; always before v4).
Auto-created topics are ready at once (a real broker first answers LEADER_NOT_AVAILABLE)."""

from __future__ import annotations

from broker_emu.registry import handles
from client.protocol import ApiKey


def partition_metadata(cluster, p) -> dict:
    alive = cluster.is_alive(p.leader)
    return {
        "error_code": 0 if alive else 5,
        "partition_index": p.index,
        "leader_id": p.leader if alive else -1,
        "leader_epoch": p.leader_epoch,
        "replica_nodes": list(p.replicas),
        "isr_nodes": [b for b in p.isr if cluster.is_alive(b)],
        "offline_replicas": [b for b in p.replicas if not cluster.is_alive(b)],
    }


def topic_metadata(cluster, topic) -> dict:
    return {"error_code": 0, "name": topic.name, "topic_id": topic.topic_id, "is_internal": False,
            "partitions": [partition_metadata(cluster, p) for p in topic.partitions],
            "topic_authorized_operations": -2147483648}


@handles(ApiKey.METADATA, 0, 12)
async def metadata(ctx, req):
    cluster = ctx.cluster
    requested = req.topics
    if requested is None or (ctx.api_version == 0 and not requested):
        topics = [topic_metadata(cluster, t) for t in cluster.topics.values()]
    else:
        auto = req.allow_auto_topic_creation if ctx.api_version >= 4 else True
        topics = []
        for entry in requested:
            name = entry.name
            if name is None and entry.topic_id is not None:
                t = cluster.topic_by_id(entry.topic_id)
                topics.append(topic_metadata(cluster, t) if t else
                              {"error_code": 100, "name": None, "topic_id": entry.topic_id, "partitions": []})
                continue
            t = cluster.topics.get(name) or (cluster.maybe_auto_create(name) if auto else None)
            if t is None:
                error = 17 if _invalid(name) else 3
                topics.append({"error_code": error, "name": name, "partitions": []})
            else:
                topics.append(topic_metadata(cluster, t))
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": b.id, "host": b.host, "port": b.port, "rack": b.rack} for b in cluster.live_brokers()],
        "cluster_id": cluster.cluster_id,
        "controller_id": cluster.controller_id if cluster.is_alive(cluster.controller_id) else
        min((b.id for b in cluster.live_brokers()), default=-1),
        "topics": topics,
        "cluster_authorized_operations": -2147483648,
    }


def _invalid(name: str) -> bool:
    from broker_emu.cluster import validate_topic_name
    try:
        validate_topic_name(name)
        return False
    except ValueError:
        return True
