"""DeleteGroups v0-2 and OffsetDelete v0 on the wire (KafkaApis.handleDeleteGroupsRequest /
handleOffsetDeleteRequest); the rules are in ``deletion.py``. OffsetDelete answers partitions of
topics or partitions the cluster lacks UNKNOWN_TOPIC_OR_PARTITION before asking the group, as
KafkaApis does; a group error is top-level with no topics (``OffsetDeleteRequest.getErrorResponse``).
DeleteGroups v3 (a message per group) is not served: clients negotiate v2."""

from __future__ import annotations

from typing import Any

import trio

from broker_emu.context import RequestContext
from broker_emu.registry import handles
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message


@handles(ApiKey.DELETE_GROUPS, 0, 2)
async def delete_groups(ctx: RequestContext, req: Message) -> dict[str, Any]:
    results = ctx.cluster.groups.delete_groups(list(req["groups_names"]), broker_id=ctx.broker_id, now=trio.current_time())
    return {"throttle_time_ms": 0, "results": [{"group_id": g, "error_code": code} for g, code in results]}


@handles(ApiKey.OFFSET_DELETE, 0, 0)
async def offset_delete(ctx: RequestContext, req: Message) -> dict[str, Any]:
    cluster = ctx.cluster
    unknown: list[tuple[str, int]] = []
    known: dict[str, list[int]] = {}
    for t in req["topics"]:
        for p in t["partitions"]:
            index = p["partition_index"]
            if cluster.partition(t["name"], index) is None:
                unknown.append((t["name"], index))
            else:
                known.setdefault(t["name"], []).append(index)
    error, found = cluster.groups.delete_offsets(req["group_id"], list(known.items()), broker_id=ctx.broker_id,
                                                 now=trio.current_time())
    if error:
        return {"error_code": error, "throttle_time_ms": 0, "topics": []}
    by_topic: dict[str, list[dict[str, int]]] = {}
    for topic, index in unknown:
        by_topic.setdefault(topic, []).append({"partition_index": index, "error_code": E.UNKNOWN_TOPIC_OR_PARTITION})
    for topic, parts in found:
        by_topic.setdefault(topic, []).extend({"partition_index": p, "error_code": code} for p, code in parts)
    return {"error_code": E.NONE, "throttle_time_ms": 0,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
