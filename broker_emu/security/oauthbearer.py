"""SASL/OAUTHBEARER (RFC 7628, KIP-255) with unsecured JWTs, as a Kafka broker checks them when
no validator is configured: OAuthBearerSaslServer with OAuthBearerUnsecuredValidatorCallbackHandler
(Kafka 4.4's classes; the JWT's parts Base64URL-decoded as OAuthBearerUnsecuredJws does).

The client's first message is ``n,[a=authzid],^Aauth=Bearer <jwt>^A[key=value^A]*^A``. A token
that fails validation is not an immediate failure: the server answers an error challenge
(``{"status":"invalid_token"}``), the client answers a lone ``^A``, and only then does the
exchange fail with that JSON as the message (OAuthBearerSaslServer.evaluateResponse). The
token's ``exp`` bounds the session (SaslServerAuthenticator.calcCompletionTimesAndReturnSessionLifetimeMs).
Times are checked against the cluster's wall clock, which follows the system clock in real time
(``emu.wall.clock``)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker_emu.security.mechanisms import SaslAbort, SaslFailure

SEPARATOR = "\x01"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"      # [\x01-\x7F&&[^=,]]
_KEY, _VALUE = r"[A-Za-z]+", r"[\x21-\x7E \t\r\n]+"
_CLIENT_FIRST = re.compile(f"n,(?:a=(?P<authzid>{_SASLNAME}))?,{SEPARATOR}"
                           f"(?P<kvpairs>(?:{_KEY}={_VALUE}{SEPARATOR})*){SEPARATOR}")
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*={0,2}")


@dataclass(frozen=True)
class UnsecuredValidator:
    """The JAAS options of OAuthBearerUnsecuredValidatorCallbackHandler (``unsecuredValidator*``),
    as broker settings: ``emu.oauthbearer.principal.claim.name`` etc."""
    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0


class InvalidToken(Exception):
    """OAuthBearerIllegalTokenException: the client hears only the status (and required scope);
    the reason is what Kafka logs."""

    def __init__(self, reason: str, scope: str | None = None):
        super().__init__(reason)
        self.scope = scope


@dataclass
class Token:
    principal: str
    expires_ms: int
    scope: frozenset[str]


def _json_part(part: str) -> dict[str, Any]:
    if not _BASE64URL.fullmatch(part) or len(part.rstrip("=")) % 4 == 1:
        raise InvalidToken("malformed Base64 URL encoded value")
    try:
        value = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (binascii.Error, UnicodeDecodeError, json.JSONDecodeError):
        raise InvalidToken("malformed JSON") from None
    return value if isinstance(value, dict) else {}


def _claim(claims: dict[str, Any], name: str, kind: type | tuple[type, ...], kind_name: str) -> Any:
    """A claim as Jackson converts it (OAuthBearerUnsecuredJws.convert: numbers stay numbers,
    arrays become lists of text, anything else, JSON null too, its text), checked for type."""
    if name not in claims:
        return None
    value = claims[name]
    if isinstance(value, bool):
        value = "true" if value else "false"
    elif value is None:
        value = "null"
    elif isinstance(value, list):
        value = [v if isinstance(v, str) else json.dumps(v) for v in value]
    elif not isinstance(value, (int, float, str)):
        value = ""
    if not isinstance(value, kind):
        raise InvalidToken(f"The '{name}' claim was not of type {kind_name}: {type(value).__name__}")
    return value


def validate(jwt: str, now_ms: int, options: UnsecuredValidator) -> Token:
    """OAuthBearerUnsecuredJws's parsing, then the handler's checks, in Kafka's order."""
    if ".." in jwt:
        raise InvalidToken("Malformed compact serialization contains '..'")
    parts = jwt.split(".")
    if len(parts) != 3:
        raise InvalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
    header, claims = _json_part(parts[0]), _json_part(parts[1])
    if "alg" not in header:
        # a NullPointerException in Kafka, which ends the connection without an answer
        raise SaslAbort("JWS header must have an Algorithm value")
    if _claim(header, "alg", str, "String") != "none":
        raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
    if parts[2]:
        raise InvalidToken("Unsecured JWS must not contain a digital signature")
    scope_value = _claim(claims, options.scope_claim, (str, list), "List")
    if isinstance(scope_value, str):
        scope = frozenset([scope_value.strip()] if scope_value.strip() else [])
    else:
        scope = frozenset(str(s) for s in scope_value or ())
    expires = _claim(claims, "exp", (int, float), "Number")
    if expires is None:
        raise InvalidToken("No expiration time in JWT")
    principal = _claim(claims, options.principal_claim, str, "String")
    if not principal or not principal.strip():
        raise InvalidToken(f"No principal name in JWT claim: {options.principal_claim}")
    issued = _claim(claims, "iat", (int, float), "Number")
    skew = options.clock_skew_ms
    if issued is not None and 1000 * issued > now_ms + skew:
        raise InvalidToken(f"The Issued At value ({issued} seconds) was after the indicated time ({now_ms} ms) "
                           f"plus allowable clock skew ({skew} ms)")
    if now_ms - skew >= 1000 * expires:
        raise InvalidToken(f"The indicated time ({now_ms} ms) minus allowable clock skew ({skew} ms) was on or after "
                           f"the Expiration Time value ({expires} seconds)")
    if issued is not None and expires <= issued:
        raise InvalidToken(f"The Expiration Time time ({expires} seconds) was not after the Issued At time "
                           f"({issued} seconds)")
    for needed in options.required_scope:
        if needed not in scope:
            raise InvalidToken(f"The provided scope ({sorted(scope)}) was missing a required scope ({needed})",
                               scope="[" + ", ".join(options.required_scope) + "]")
    return Token(principal, round(expires * 1000), scope)


def error_challenge(error: InvalidToken) -> str:
    """OAuthBearerSaslServer.jsonErrorResponse, byte for byte."""
    if error.scope is None:
        return '{"status":"invalid_token"}'
    return f'{{"status":"insufficient_scope", "scope":"{error.scope}"}}'


class OAuthBearerServer:
    name = "OAUTHBEARER"

    def __init__(self, options: UnsecuredValidator, wall_ms: Callable[[], int]):
        self._options, self._wall_ms = options, wall_ms
        self.complete = False
        self.user: str | None = None
        self.credential_expiry_ms: int | None = None   # the token's exp: it bounds the session
        self.rejection: str | None = None              # why the last token was refused (Kafka logs it)
        self._error: str | None = None

    def evaluate(self, response: bytes) -> bytes:
        if response == SEPARATOR.encode() and self._error is not None:
            raise SaslFailure(self._error, revealed=True)
        self._error = None
        text = response.decode("utf-8", "replace")
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message")
        pairs = dict(kv.split("=", 1) for kv in match["kvpairs"].split(SEPARATOR) if kv)
        auth = pairs.get("auth")
        if auth is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message: 'auth' not specified")
        auth_match = _AUTH.fullmatch(auth)
        if auth_match is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message: invalid 'auth' format")
        if auth_match["scheme"].lower() != "bearer":
            # Kafka formats this message with a group its matcher lacks: the IllegalArgumentException
            # ends the connection unanswered (measured against Kafka 4.4, test_oauthbearer_ab.py)
            raise SaslAbort(f"Invalid scheme in OAUTHBEARER client first message: {auth_match['scheme']}")
        try:
            token = validate(auth_match["token"], self._wall_ms(), self._options)
        except InvalidToken as exc:
            self.rejection = str(exc)
            self._error = error_challenge(exc)
            return self._error.encode()
        authzid = match["authzid"] or ""
        if authzid and authzid != token.principal:
            raise SaslFailure(f"Authentication failed: Client requested an authorization id ({authzid}) that is "
                              f"different from the token's principal name ({token.principal})", revealed=True)
        self.user, self.credential_expiry_ms, self.complete = token.principal, token.expires_ms, True
        return b""
