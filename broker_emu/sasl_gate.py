"""The pipeline's SASL gate (server.Connection asks it before decoding or running a request):
what SaslServerAuthenticator lets through before and after authentication."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import trio

from broker_emu.context import RequestContext
from broker_emu.handlers import error_response
from broker_emu.security.mechanisms import SaslAbort, SaslFailure
from broker_emu.security.session import SaslSession
from broker_emu.trace import Kind
from client.errors import ErrorCode
from client.protocol import ApiKey
from client.protocol.framing import Frame


class Connection(Protocol):
    """What the gate uses of the connection it guards (``server.Connection``'s public face; the
    server imports this module)."""

    sasl: SaslSession | None
    stream: trio.abc.Stream

    def trace(self, kind: str, **fields: Any) -> None: ...
    def abort(self, reason: str) -> None: ...
    def closed_by(self, who: str, reason: str) -> None: ...
    def encode(self, ctx: RequestContext, body: Any, response: Mapping[str, Any]) -> tuple[bytes, list[int]] | None: ...
    async def send(self, out: bytes, correlation_id: int, api_key: int, version: int, errors: Any,
                   fields: dict[str, Any] | None = None) -> bool: ...


async def sasl_admits(conn: Connection, ctx: RequestContext, body: Any) -> bool:
    """SaslServerAuthenticator's gate: before authentication only the exchange's own APIs
    (another request during SaslAuthenticate's phase gets its error answer with
    ILLEGAL_SASL_STATE, then the close); after an expired session nothing."""
    assert conn.sasl is not None
    refusal = conn.sasl.admit(ctx.api_key, trio.current_time())
    if refusal is None:
        return True
    conn.trace(Kind.RECV, correlation_id=ctx.correlation_id, api_key=ctx.api_key, api=ApiKey(ctx.api_key).api_name,
                api_version=ctx.api_version, details={"refused": refusal})
    if conn.sasl.state == "authenticate":
        answer = error_response(ctx.api_key, ctx.api_version, body, ErrorCode.ILLEGAL_SASL_STATE)
        encoded = conn.encode(ctx, body, answer)
        if encoded is not None:
            await conn.send(encoded[0], ctx.correlation_id, ctx.api_key, ctx.api_version, encoded[1])
    conn.abort(refusal)
    return False


async def raw_sasl_token(conn: Connection, frame: Frame) -> bool:
    """After a v0 SaslHandshake the tokens travel bare, each size-prefixed (KIP-43); a
    failure closes the connection without an answer."""
    assert conn.sasl is not None
    try:
        answer, _ = conn.sasl.authenticate(bytes(frame), 0, trio.current_time())   # (tokens are small)
    except (SaslFailure, SaslAbort) as exc:
        conn.abort(f"SASL authentication failed: {exc}")
        return False
    try:
        await conn.stream.send_all(len(answer).to_bytes(4, "big") + answer)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        conn.closed_by("client", "reset while sending a SASL token")
        return False
    return True
