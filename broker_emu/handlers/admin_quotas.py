"""DescribeClientQuotas (v0-1) and AlterClientQuotas (v0-1), over ``broker_emu.quotas`` (Kafka's
``ClientQuotaControlManager`` and ``ClientQuotasImage.describe``). What is set throttles Produce
and Fetch at once (server.py; KIP-219's throttle_time_ms and muted connection)."""

from __future__ import annotations

from typing import Any

from broker_emu.context import RequestContext
from broker_emu.quotas import QuotaError
from broker_emu.registry import handles
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

EXACT, DEFAULT, ANY = 0, 1, 2


@handles(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1)
async def describe_client_quotas(ctx: RequestContext, req: Message) -> dict[str, Any]:
    components = []
    for c in req.components:
        if c.match_type not in (EXACT, DEFAULT, ANY):
            return {"throttle_time_ms": 0, "error_code": E.INVALID_REQUEST,
                    "error_message": f"Unknown match type {c.match_type}", "entries": None}
        components.append((c.entity_type, c.match_type, c.match))
    found = ctx.cluster.quotas.describe(components, req.strict)
    return {"throttle_time_ms": 0, "error_code": E.NONE, "error_message": None, "entries": [
        {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
         "values": [{"key": k, "value": v} for k, v in sorted(values.items())]} for entity, values in found]}


@handles(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1)
async def alter_client_quotas(ctx: RequestContext, req: Message) -> dict[str, Any]:
    out = []
    for entry in req.entries:
        parts = [(e.entity_type, e.entity_name) for e in entry.entity]
        code: int = E.NONE
        message: str | None = None
        try:
            ctx.cluster.quotas.alter(parts, [(op.key, op.value, op.remove) for op in entry.ops], req.validate_only)
        except QuotaError as exc:
            code, message = E.INVALID_REQUEST, str(exc)
        out.append({"error_code": code, "error_message": message,
                    "entity": [{"entity_type": t, "entity_name": n} for t, n in parts]})
    return {"throttle_time_ms": 0, "entries": out}
