"""KIP-848 on the wire: ConsumerGroupHeartbeat v0-1 and ConsumerGroupDescribe v0-1.

Advertised while ``group.coordinator.rebalance.protocols`` lists ``consumer`` (Kafka 4.x's
default), as a broker without the new protocol leaves them out of ApiVersions. The semantics are in
``kip848.py``; here the request's fields become a ``GroupHeartbeat`` and the answer is shaped.
"""

from __future__ import annotations

from typing import Any

import trio

from broker_emu.context import RequestContext
from broker_emu.groups.kip848 import GroupHeartbeat
from broker_emu.handlers.authorized import GROUP_OPERATIONS, authorized_for
from broker_emu.registry import handles
from broker_emu.security.acls import GROUP
from client.protocol import ApiKey
from client.protocol.wire import Message


def _consumer_protocol_on(cluster: Any) -> bool:
    return "consumer" in {p.strip() for p in cluster.config["group.coordinator.rebalance.protocols"].split(",")}


def _client_host(ctx: Any) -> str:
    host = ctx.client_host or ""
    return host if host.startswith("/") else "/" + host


@handles(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, advertised=_consumer_protocol_on)
async def consumer_group_heartbeat(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Joins (epoch 0), heartbeats, reconciles and leaves (-1; -2 for a static member)."""
    owned = req["topic_partitions"]
    hb = GroupHeartbeat(
        group_id=req["group_id"], member_id=req["member_id"], member_epoch=req["member_epoch"],
        instance_id=req["instance_id"], rack_id=req["rack_id"], rebalance_timeout_ms=req["rebalance_timeout_ms"],
        subscribed_topic_names=None if req["subscribed_topic_names"] is None else list(req["subscribed_topic_names"]),
        subscribed_topic_regex=req.get("subscribed_topic_regex") if ctx.api_version >= 1 else None,
        server_assignor=req["server_assignor"],
        owned=None if owned is None else [(tp["topic_id"], list(tp["partitions"])) for tp in owned],
        client_id=ctx.client_id or "", client_host=_client_host(ctx), api_version=ctx.api_version)
    answer = ctx.cluster.groups.consumer_group_heartbeat(hb, broker_id=ctx.broker_id, now=trio.current_time())
    return {"throttle_time_ms": 0, **answer}


@handles(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, advertised=_consumer_protocol_on)
async def consumer_group_describe(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Each group's epochs, members, assignments and targets; GROUP_ID_NOT_FOUND for a group
    that does not exist or is classic."""
    asked_ops = req["include_authorized_operations"]
    out = []
    for group_id in req["group_ids"]:
        found = ctx.cluster.groups.describe_consumer_group(group_id, broker_id=ctx.broker_id, now=trio.current_time())
        ops = authorized_for(ctx, GROUP_OPERATIONS, bool(asked_ops) and not found["error_code"], GROUP, group_id)
        out.append({**found, "authorized_operations": ops})
    return {"throttle_time_ms": 0, "groups": out}
