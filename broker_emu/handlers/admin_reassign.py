"""AlterPartitionReassignments (v0-1) and ListPartitionReassignments (v0) over
``broker_emu.reassignments`` (ReplicationControlManager.alterPartitionReassignments /
listPartitionReassignments), within KRaft's controller deadline (controller_deadline.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker_emu import reassignments
from broker_emu.context import RequestContext
from broker_emu.handlers.controller_deadline import controller_in_time
from broker_emu.reassignments import ReassignmentError
from broker_emu.registry import handles
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

if TYPE_CHECKING:
    from broker_emu.cluster import Cluster


@handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1)
async def alter_partition_reassignments(ctx: RequestContext, req: Message) -> dict[str, Any]:
    allow_rf_change = req.allow_replication_factor_change if ctx.api_version >= 1 else True
    in_time = await controller_in_time(ctx, "AlterPartitionReassignments", req.timeout_ms)
    responses = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            code: int = E.NONE
            message: str | None = None
            try:
                if not in_time:
                    raise ReassignmentError(E.REQUEST_TIMED_OUT, None)
                _alter_one(ctx.cluster, t.name, p.partition_index, p.replicas, allow_rf_change)
            except ReassignmentError as exc:
                code, message = exc.code, exc.message
            parts.append({"partition_index": p.partition_index, "error_code": code, "error_message": message})
        responses.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "allow_replication_factor_change": allow_rf_change, "error_code": E.NONE,
            "error_message": None, "responses": responses}


def _alter_one(cluster: Cluster, topic: str, index: int, replicas: list[int] | None, allow_rf_change: bool) -> None:
    if topic not in cluster.topics:
        raise ReassignmentError(E.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}.")
    p = cluster.partition(topic, index)
    if p is None:
        raise ReassignmentError(E.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{index}.")
    if replicas is None:
        if not reassignments.in_progress(p):
            raise ReassignmentError(E.NO_REASSIGNMENT_IN_PROGRESS, None)   # Kafka 4.4: no message
        reassignments.cancel(cluster, p)
        return
    reassignments.validate_target(cluster, list(replicas))
    original = [r for r in p.replicas if r not in p.adding_replicas]
    if not allow_rf_change and len(replicas) != len(original):
        raise ReassignmentError(E.INVALID_REPLICATION_FACTOR, f"The replication factor is changed from "
                                f"{len(original)} to {len(replicas)}")
    reassignments.start(cluster, p, list(replicas))


@handles(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0)
async def list_partition_reassignments(ctx: RequestContext, req: Message) -> dict[str, Any]:
    cluster = ctx.cluster
    if not await controller_in_time(ctx, "ListPartitionReassignments", req.timeout_ms):
        return {"throttle_time_ms": 0, "error_code": E.REQUEST_TIMED_OUT, "error_message": None, "topics": []}
    wanted = None if req.topics is None else {(t.name, i) for t in req.topics for i in t.partition_indexes}
    topics = []
    for name, topic in sorted(cluster.topics.items()):
        parts = [{"partition_index": p.index, "replicas": list(p.replicas), "adding_replicas": list(p.adding_replicas),
                  "removing_replicas": list(p.removing_replicas)} for p in topic.partitions
                 if reassignments.in_progress(p) and (wanted is None or (name, p.index) in wanted)]
        if parts:
            topics.append({"name": name, "partitions": parts})
    return {"throttle_time_ms": 0, "error_code": E.NONE, "error_message": None, "topics": topics}
