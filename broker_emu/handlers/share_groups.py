"""KIP-932 membership on the wire: ShareGroupHeartbeat v1 and ShareGroupDescribe v1 (Kafka 4.4's
only versions; v0 was the 4.0 early access, removed in 4.1). The semantics are in
``broker_emu/share/coordinator.py``; here the request's fields go in and the answer is shaped.
"""

from __future__ import annotations

from typing import Any

from broker_emu.context import RequestContext
from broker_emu.handlers.authorized import GROUP_OPERATIONS, authorized_for
from broker_emu.registry import handles
from broker_emu.security.acls import GROUP
from client.protocol import ApiKey
from client.protocol.wire import Message


def _client_host(ctx: Any) -> str:
    host = ctx.client_host or ""
    return host if host.startswith("/") else "/" + host


@handles(ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1)
async def share_group_heartbeat(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Joins (epoch 0), heartbeats and leaves (-1); the assignment comes with a new epoch."""
    subscribed = req["subscribed_topic_names"]
    answer = ctx.cluster.share.heartbeat(
        group_id=req["group_id"], member_id=req["member_id"], epoch=req["member_epoch"], rack_id=req["rack_id"],
        subscribed=None if subscribed is None else list(subscribed), client_id=ctx.client_id or "",
        client_host=_client_host(ctx), broker_id=ctx.broker_id)
    return {"throttle_time_ms": 0, **answer}


@handles(ApiKey.SHARE_GROUP_DESCRIBE, 1, 1)
async def share_group_describe(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Each group's epochs and members; GROUP_ID_NOT_FOUND for a group that is not a share group."""
    asked_ops = req["include_authorized_operations"]
    out = []
    for group_id in req["group_ids"]:
        found = ctx.cluster.share.describe(group_id, ctx.broker_id)
        ops = authorized_for(ctx, GROUP_OPERATIONS, bool(asked_ops) and not found["error_code"], GROUP, group_id)
        out.append({**found, "authorized_operations": ops})
    return {"throttle_time_ms": 0, "groups": out}
