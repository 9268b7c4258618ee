"""KIP-932's admin calls on share-group offsets on the wire: DescribeShareGroupOffsets (v0-1, v1
with KIP-1226's lag), AlterShareGroupOffsets (v0) and DeleteShareGroupOffsets (v0), Kafka 4.4's
versions. What they do is ``broker_emu/share/offsets.py``; here are KafkaApis' checks around it
(``handleDescribeShareGroupOffsetsRequest``, ``handleAlterShareGroupOffsetsRequest``,
``handleDeleteShareGroupOffsetsRequest``) and GroupCoordinatorService's (an empty group id, the
coordinator). The whole-request ACL checks (READ on the group to alter, DELETE to delete) are
``broker_emu/acl_enforcement.py``'s; the per-group and per-topic ones are here.
"""

from __future__ import annotations

from typing import Any

from broker_emu.acl_checks import authorized
from broker_emu.context import RequestContext
from broker_emu.handlers import kafka_message
from broker_emu.registry import handles
from broker_emu.security import acls as A
from broker_emu.share import offsets
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

TOPIC_DENIED = "Topic authorization failed."


def _top_error(code: int, message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message or kafka_message(code),
            "responses": []}


def _coordinator_error(ctx: RequestContext, group_id: str) -> int | None:
    """GroupCoordinatorService's checks before the write: an empty group id, then the coordinator."""
    if not group_id:
        return E.INVALID_GROUP_ID
    if ctx.cluster.coordinator_for(group_id) != ctx.broker_id:
        return E.NOT_COORDINATOR
    return None


@handles(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1)
async def describe_share_group_offsets(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Each group's share partitions' start offsets (and lag, v1); a null topic list is every
    share partition the group has state for."""
    return {"throttle_time_ms": 0, "groups": [_describe_group(ctx, g) for g in req["groups"]]}


def _describe_group(ctx: RequestContext, group: Any) -> dict[str, Any]:
    group_id, topics = group["group_id"], group["topics"]
    coord = ctx.cluster.share
    if not authorized(ctx, A.DESCRIBE, A.GROUP, group_id):
        return {"group_id": group_id, "topics": [], "error_code": E.GROUP_AUTHORIZATION_FAILED, "error_message": None}
    if topics is None:
        if ctx.cluster.coordinator_for(group_id) != ctx.broker_id:   # a read on the coordinator's runtime
            return {"group_id": group_id, "topics": [], "error_code": E.NOT_COORDINATOR,
                    "error_message": kafka_message(E.NOT_COORDINATOR)}
        found = offsets.describe(coord, group_id, None)
        # Clients are not shown topics they may not describe
        found["topics"] = [t for t in found["topics"] if authorized(ctx, A.DESCRIBE, A.TOPIC, t["topic_name"], False)]
        return found
    allowed = [t for t in topics if authorized(ctx, A.DESCRIBE, A.TOPIC, t["topic_name"])]
    denied = [t for t in topics if t not in allowed]
    found = offsets.describe(coord, group_id, allowed)
    found["topics"] += [{"topic_name": t["topic_name"], "topic_id": offsets.ZERO_UUID, "partitions": [
        {"partition_index": p, "start_offset": -1, "leader_epoch": 0, "lag": -1,
         "error_code": E.TOPIC_AUTHORIZATION_FAILED, "error_message": TOPIC_DENIED} for p in t["partitions"]]}
        for t in denied]
    return found


@handles(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0)
async def alter_share_group_offsets(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Sets the start offset of share partitions of a group with no members."""
    group_id = req["group_id"]
    before: list[dict[str, Any]] = []   # refused before the coordinator: they come first in the answer
    asked = []
    for t in req["topics"]:
        name = t["topic_name"]
        if not authorized(ctx, A.READ, A.TOPIC, name):
            code, message = E.TOPIC_AUTHORIZATION_FAILED, TOPIC_DENIED
        elif name not in ctx.cluster.topics:
            code, message = E.UNKNOWN_TOPIC_OR_PARTITION, offsets.UNKNOWN_TOPIC_MESSAGE
        else:
            asked.append(t)
            continue
        topic = ctx.cluster.topics.get(name)
        before.append({"topic_name": name, "topic_id": topic.topic_id if topic else offsets.ZERO_UUID, "partitions": [
            {"partition_index": p["partition_index"], "error_code": code, "error_message": message}
            for p in t["partitions"]]})
    refused = _coordinator_error(ctx, group_id)
    if refused is not None:
        return _top_error(refused)
    try:
        done = offsets.alter(ctx.cluster.share, group_id, asked)
    except offsets.OffsetsError as exc:
        return _top_error(exc.code, exc.message)
    return {"throttle_time_ms": 0, "error_code": E.NONE, "error_message": None, "responses": before + done}


@handles(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0)
async def delete_share_group_offsets(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Removes the share-partition state of topics of a group with no members."""
    group_id = req["group_id"]
    names = [t["topic_name"] for t in req["topics"]]
    denied = [n for n in names if not authorized(ctx, A.READ, A.TOPIC, n)]
    refused = _coordinator_error(ctx, group_id)
    if refused is not None:
        return _top_error(refused)
    try:
        done = offsets.delete(ctx.cluster.share, group_id, [n for n in names if n not in denied])
    except offsets.OffsetsError as exc:
        return _top_error(exc.code, exc.message)
    first = [{"topic_name": n, "topic_id": offsets.ZERO_UUID, "error_code": E.TOPIC_AUTHORIZATION_FAILED,
              "error_message": TOPIC_DENIED} for n in denied]
    return {"throttle_time_ms": 0, "error_code": E.NONE, "error_message": None, "responses": first + done}
