"""CreatePartitions (KIP-195): a topic grows (ControllerApis.createPartitions,
ReplicationControlManager.createPartitions), once the controller gets to it before ``timeout_ms``
(controller_deadline.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker_emu.context import RequestContext
from broker_emu.handlers import KAFKA_INTERNAL_TOPICS
from broker_emu.handlers.controller_deadline import controller_in_time, zookeeper_change_in_time
from broker_emu.registry import handles
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

if TYPE_CHECKING:
    from broker_emu.cluster import Cluster


@handles(ApiKey.CREATE_PARTITIONS, 0, 3)
async def create_partitions(ctx: RequestContext, req: Message) -> dict[str, Any]:
    names = [t.name for t in req.topics]
    if ctx.cluster.profile.zookeeper:
        # 2.8 (ZkAdminManager.createPartitions): written first, REQUEST_TIMED_OUT while spreading
        results = [_one(ctx.cluster, t, req.validate_only, duplicate=names.count(t.name) > 1) for t in req.topics]
        added = [r for r in results if r["error_code"] == E.NONE and not req.validate_only]
        if added and not await zookeeper_change_in_time(ctx, "CreatePartitions", req.timeout_ms):
            for r in added:
                r.update(error_code=E.REQUEST_TIMED_OUT, error_message=None)
        return {"throttle_time_ms": 0, "results": results}
    if not await controller_in_time(ctx, "CreatePartitions", req.timeout_ms):
        return {"throttle_time_ms": 0, "results": [{"name": n, "error_code": E.REQUEST_TIMED_OUT, "error_message": None}
                                                   for n in names]}
    return {"throttle_time_ms": 0, "results": [
        _one(ctx.cluster, t, req.validate_only, duplicate=names.count(t.name) > 1) for t in req.topics]}


def _one(cluster: Cluster, t: Any, validate_only: bool, duplicate: bool) -> dict[str, Any]:
    def result(code: int, message: str | None = None) -> dict[str, Any]:
        return {"name": t.name, "error_code": code, "error_message": message}

    if duplicate:
        return result(E.INVALID_REQUEST, "Duplicate topic name.")
    if t.name not in cluster.topics or t.name in KAFKA_INTERNAL_TOPICS:
        return result(E.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
    assignments = [list(a.broker_ids) for a in t.assignments] if t.assignments is not None else None
    have = len(cluster.topics[t.name].partitions)
    if t.count <= have:
        return result(E.INVALID_PARTITIONS, f"Topic already has {have} partition(s)." if t.count == have else
                      f"The topic {t.name} currently has {have} partition(s); {t.count} would not be an increase.")
    if assignments is not None and len(assignments) != t.count - have:
        return result(E.INVALID_REPLICA_ASSIGNMENT, f"Attempted to add {t.count - have} additional partition(s), but only "
                                                    f"{len(assignments)} assignment(s) were specified.")
    rf = len(cluster.topics[t.name].partitions[0].replicas)
    if assignments is not None and any(len(a) != rf or len(set(a)) != rf or not set(a) <= set(cluster.brokers) for a in assignments):
        return result(E.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes a partition with "
                                                    f"{'a wrong number of' if any(len(a) != rf for a in assignments) else 'unknown or duplicate'} "
                                                    f"replicas (replication factor {rf}, brokers {sorted(cluster.brokers)}).")
    if not validate_only:
        try:
            cluster.add_partitions(t.name, t.count, assignments)
        except ValueError as exc:
            return result(E.INVALID_PARTITIONS, str(exc))
    return result(E.NONE)
