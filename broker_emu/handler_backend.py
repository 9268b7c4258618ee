"""The emulated broker's backend for the request pipeline (``backend.Backend``): requests are
answered by the handlers registered for their API (``registry.py``), under the authorizer when
one is set (``acl_enforcement.py``), and Produce and Fetch count against the client quotas
(``quotas.py``)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Mapping

import trio

from broker_emu.acl_enforcement import call_authorized
from broker_emu.backend import Connection, Reply
from broker_emu.context import RequestContext
from broker_emu.handlers import CloseConnection, error_response
from broker_emu.registry import REGISTRY, advertised_range
from broker_emu.repeated_requests import encode_with_errors
from broker_emu.request_peek import produce_start
from broker_emu.trace import Kind
from client.protocol import ApiKey
from client.protocol.codec import RequestHeader
from client.protocol.framing import Frame

if TYPE_CHECKING:
    from broker_emu.cluster import Cluster

PRODUCE, FETCH = int(ApiKey.PRODUCE), int(ApiKey.FETCH)
QUOTA_KEYS = {PRODUCE: "producer_byte_rate", FETCH: "consumer_byte_rate"}
# handlers that answer without waiting on anything (no purgatory, no group join)
ANSWERS_AT_ONCE = frozenset(int(k) for k in (ApiKey.METADATA, ApiKey.API_VERSIONS, ApiKey.FIND_COORDINATOR,
                                              ApiKey.DESCRIBE_CLUSTER, ApiKey.DESCRIBE_CONFIGS, ApiKey.LIST_GROUPS,
                                              ApiKey.DESCRIBE_GROUPS))


class HandlerBackend:
    passes_through = False   # an API or version the broker does not serve closes the connection, as Kafka's
    lists_in_flight = True

    def __init__(self, cluster: "Cluster"):
        self.cluster = cluster
        # the versions served: the registry's, narrowed by the version profile (a partial, not a
        # method: this runs on every request, and a Python frame is a measurable part of it)
        self.advertised: Callable[[int], tuple[int, int] | None] = partial(advertised_range, cluster)

    async def open(self, conn: "Connection", tasks: trio.Nursery) -> bool:
        return True

    async def aclose(self) -> None:
        pass

    def answers_at_once(self, frame: Frame) -> bool:
        """An API whose handler never waits. Saves a task switch per Metadata round trip (~15%
        of its latency, benchmarks/broker); a Produce with acks 0 or 1, or acks=all while every
        follower copies at once, about 13% of a one-record round trip and 8% of the server's CPU
        per megabyte at 10 KB."""
        if int.from_bytes(frame[:2], "big") in ANSWERS_AT_ONCE:
            return True
        # a Produce waits only with acks=-1 while a follower copies later; a quota's mute is a sleep;
        # from v12 a transactional one may wait for its coordinator (handlers/produce_verification.py)
        acks, transactional = produce_start(frame)
        if transactional and int.from_bytes(frame[2:4], "big") >= 12:
            return False
        return ((acks in (0, 1) or (acks == -1 and self.cluster.appends_replicate_at_once()))
                and not self.cluster.quotas.values)

    async def answer(self, ctx: RequestContext, header: RequestHeader, body: Any, frame: Frame) -> Any:
        try:
            handler = REGISTRY[ctx.api_key].handler   # (an int finds its ApiKey)
            if self.cluster.security.authorizer is None:
                return await handler(ctx, body)
            return await call_authorized(ctx, body, handler)
        except CloseConnection:
            raise   # the handler's own way to close instead of answering
        except Exception as exc:  # a bug, never a way to reject input: Kafka's answer for it
            return _failed(ctx, body, exc)

    async def late_answer(self, ctx: RequestContext, header: RequestHeader, body: Any, frame: Frame) -> Any:
        """The broker handles a held request when it is released, whether or not its client is
        still connected."""
        return await self.answer(ctx, header, body, frame)

    def error_answer(self, ctx: RequestContext, body: Any, code: int) -> Any:
        try:
            return error_response(ctx.api_key, ctx.api_version, body, code)
        except Exception as exc:
            return _failed(ctx, body, exc)

    def without_brokers(self, ctx: RequestContext, answer: Any) -> Any:
        # a copy: the emulator keeps repeated Metadata answers and hands out the same dict again
        return {**answer, "brokers": []} if isinstance(answer, Mapping) and "brokers" in answer else answer

    def encode(self, conn: "Connection", ctx: RequestContext, body: Any, answer: Mapping[str, Any]) -> Reply | None:
        try:   # the common case inline; conn.encode is the one with Kafka's error answer as fallback
            out, errors = encode_with_errors(ctx.api_key, ctx.api_version, ctx.correlation_id, answer, ctx.repeat)
        except Exception:
            encoded = conn.encode(ctx, body, answer)
            return None if encoded is None else (encoded[0], encoded[1], answer)
        return out, errors, answer

    def quota_ms(self, ctx: RequestContext, request_bytes: int, reply: Reply) -> float:
        """KafkaApis: a Produce's request size counts against producer_byte_rate, a Fetch's
        response size against consumer_byte_rate (quotas.py); the throttle, traced, or 0."""
        if not self.cluster.quotas.values:
            return 0.0
        key = QUOTA_KEYS.get(ctx.api_key)
        if key is None:
            return 0.0
        amount = request_bytes if ctx.api_key == PRODUCE else len(reply[0])
        throttle = self.cluster.quotas.record(ctx.client_id or "", key, amount, trio.current_time())
        if throttle:
            self.cluster.trace.emit(Kind.QUOTA_THROTTLE, **ctx.trace_fields(),
                                    details={"quota": key, "bound": self.cluster.quotas.quota(ctx.client_id or "", key),
                                             "bytes": amount, "throttle_ms": throttle})
        return throttle

    def throttled(self, conn: "Connection", ctx: RequestContext, body: Any, reply: Reply, throttle_ms: float) -> Reply | None:
        answer = dict(reply[2])
        answer["throttle_time_ms"] = max(int(throttle_ms), answer.get("throttle_time_ms", 0) or 0)
        return self.encode(conn, ctx, body, answer)


def _failed(ctx: RequestContext, body: Any, exc: Exception) -> Any:
    """An exception out of a handler: Kafka's error answer for it (``Connection.handler_failed``),
    or the close when even that cannot be built."""
    answer = ctx.connection.handler_failed(ctx, body, exc, "handler")
    if answer is None:
        raise CloseConnection(f"internal error (handler): {type(exc).__name__}: {exc}")
    return answer
