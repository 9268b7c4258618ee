"""SaslHandshake and SaslAuthenticate (KIP-43, KIP-152, KIP-368).

On a SASL listener the connection's ``SaslSession`` (security/session.py) runs the exchange; on
any other listener, or once authenticated without re-authentication, Kafka's KafkaApis answers
ILLEGAL_SASL_STATE (handleSaslHandshakeRequest / handleSaslAuthenticateRequest)."""

from __future__ import annotations

from typing import Any

import trio

from broker_emu.context import RequestContext
from broker_emu.handlers import CloseConnection
from broker_emu.registry import handles
from broker_emu.security.mechanisms import SaslAbort, SaslFailure
from broker_emu.trace import Kind
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"


def _session(ctx: RequestContext) -> Any:
    return getattr(ctx.connection, "sasl", None)


@handles(ApiKey.SASL_HANDSHAKE, 0, 1)
async def sasl_handshake(ctx: RequestContext, req: Message) -> dict[str, Any]:
    session = _session(ctx)
    if session is None:
        return {"error_code": E.ILLEGAL_SASL_STATE, "mechanisms": []}
    error = session.handshake(req.mechanism, ctx.api_version)
    if error == E.ILLEGAL_SASL_STATE:
        return {"error_code": error, "mechanisms": []}
    _trace(ctx, "handshake", mechanism=req.mechanism, error=int(error) or None)
    return {"error_code": error, "mechanisms": list(session.security.mechanisms)}


@handles(ApiKey.SASL_AUTHENTICATE, 0, 2)
async def sasl_authenticate(ctx: RequestContext, req: Message) -> dict[str, Any]:
    session = _session(ctx)
    if session is None or session.authenticated:
        return {"error_code": E.ILLEGAL_SASL_STATE, "error_message": AFTER_AUTHENTICATION, "auth_bytes": b"",
                "session_lifetime_ms": 0}
    try:
        answer, lifetime = session.authenticate(bytes(req.auth_bytes), ctx.api_version, trio.current_time())
    except SaslAbort as exc:
        _trace(ctx, "failed", mechanism=session.mechanism, reason=str(exc))
        raise CloseConnection(f"SASL authentication failed: {exc}") from None
    except SaslFailure as exc:
        # the broker's own reason (Kafka logs it; the client is not told whether the user exists)
        _trace(ctx, "failed", mechanism=session.mechanism, error=str(exc),
               reason=str(exc.__cause__) if exc.__cause__ is not None else None)
        return {"error_code": E.SASL_AUTHENTICATION_FAILED, "error_message": str(exc), "auth_bytes": b"",
                "session_lifetime_ms": 0}
    rejection = getattr(session.server, "rejection", None)
    if not session.authenticated and rejection is not None:
        _trace(ctx, "token_rejected", mechanism=session.mechanism, reason=rejection)
        session.server.rejection = None
    if session.authenticated:
        _trace(ctx, "authenticated", mechanism=session.mechanism, principal=session.principal,
               session_lifetime_ms=lifetime or None)
    # Kafka 4.4 answers "" (the generated default), measured on the wire (tests/realkafka/test_oauthbearer_ab.py)
    return {"error_code": E.NONE, "error_message": "", "auth_bytes": answer, "session_lifetime_ms": lifetime}


def _trace(ctx: RequestContext, step: str, **details: Any) -> None:
    ctx.cluster.trace.emit(Kind.SASL, **ctx.trace_fields(),
                           details={"step": step, **{k: v for k, v in details.items() if v is not None}})
