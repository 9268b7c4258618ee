"""SASL on our client's connections: PLAIN (RFC 4616), SCRAM-SHA-256/512 (RFC 5802) and
OAUTHBEARER (RFC 7628, KIP-255), run with SaslHandshake v1 and SaslAuthenticate (KIP-152) right
after the TCP or TLS connect.

The exchange counts against the connection setup timeout, as librdkafka documents ("TCP
connection setup as well SSL and SASL handshake") and as the Java client 4.4 was measured to do
(conformance scenario security.sasl-handshake-stall).
A broker that gives the session a lifetime (connections.max.reauth.ms, an OAUTHBEARER token's
expiry) closes the connection when it ends unless the client re-authenticates on it (KIP-368):
``SaslStream`` carries the login to repeat and the lifetime, and the connection's driver
(client/transport.py) repeats it in time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import trio

from client.errors import SaslAuthenticationFailedError, UnsupportedSaslMechanismError, error_for_code
from client.protocol import ApiKey
from client.protocol.codec import decode_response, encode_request
from client.protocol.framing import FrameSplitter

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = ("PLAIN", *HASHES, "OAUTHBEARER")
TokenSource = Callable[[], str]
Call = Callable[[ApiKey, int, Mapping[str, Any]], Awaitable[Any]]


def _base64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsecured_jwt(principal: str, now_ms: int, life_s: float = 3600, scope: tuple[str, ...] = (),
                  principal_claim: str = "sub", scope_claim: str = "scope", **claims: object) -> str:
    """An unsecured JWT (alg "none", no signature) as librdkafka's
    enable.sasl.oauthbearer.unsecure.jwt and Java's OAuthBearerUnsecuredLoginCallbackHandler
    make them; a Kafka broker without an OAuth validator accepts them."""
    issued = now_ms // 1000   # a JWT NumericDate in whole seconds, as librdkafka and Java write it
    body: dict[str, object] = {principal_claim: principal, "iat": issued, "exp": issued + life_s}
    if scope:
        body[scope_claim] = list(scope)
    body.update(claims)
    header = _base64url(json.dumps({"alg": "none"}).encode())
    return f"{header}.{_base64url(json.dumps(body).encode())}."


def unsecured_token_source(oauthbearer_config: str, wall_ms: Callable[[], int]) -> TokenSource:
    """librdkafka's sasl.oauthbearer.config: ``principal=NAME [scope=a,b] [lifeSeconds=N]
    [principalClaimName=sub] [scopeClaimName=scope]``."""
    options = dict(item.split("=", 1) for item in oauthbearer_config.split() if "=" in item)
    if not options.get("principal"):
        raise ValueError("sasl.oauthbearer.config needs principal=NAME for an unsecured JWT")
    scope = tuple(s for s in options.get("scope", "").split(",") if s)
    life = float(options.get("lifeSeconds", 3600))
    return lambda: unsecured_jwt(options["principal"], wall_ms(), life, scope,
                                 options.get("principalClaimName", "sub"), options.get("scopeClaimName", "scope"))


def oauthbearer_first(token: str) -> bytes:
    """RFC 7628's client initial response, no authorization id, no extensions."""
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


class _Scram:
    def __init__(self, mechanism: str, user: str, password: str, nonce: str | None = None):
        self.algorithm = HASHES[mechanism]
        self.user, self.password = user, password
        self.nonce = nonce or base64.b64encode(os.urandom(18)).decode()
        name = user.replace("=", "=3D").replace(",", "=2C")
        self.first_bare = f"n={name},r={self.nonce}"
        self.signature = b""

    def first(self) -> bytes:
        return ("n,," + self.first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        attrs = dict(part.split("=", 1) for part in server_first.decode().split(",") if "=" in part)
        nonce, salt, iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
        if not nonce.startswith(self.nonce):
            raise SaslAuthenticationFailedError("the broker's SCRAM nonce does not extend ours")
        salted = hashlib.pbkdf2_hmac(self.algorithm, self.password.encode(), salt, iterations)
        client_key = hmac.new(salted, b"Client Key", self.algorithm).digest()
        stored_key = hashlib.new(self.algorithm, client_key).digest()
        without_proof = f"c={base64.b64encode(b'n,,').decode()},r={nonce}"
        auth_message = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.new(stored_key, auth_message, self.algorithm).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        server_key = hmac.new(salted, b"Server Key", self.algorithm).digest()
        self.signature = hmac.new(server_key, auth_message, self.algorithm).digest()
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def check(self, server_final: bytes) -> None:
        if server_final.decode() != "v=" + base64.b64encode(self.signature).decode():
            raise SaslAuthenticationFailedError("the broker's SCRAM signature does not match: not the broker we know")


class _Exchange:
    """Request/response on the bare stream, before the connection is handed to its driver."""

    def __init__(self, stream: trio.abc.Stream, client_id: str | None):
        self.stream, self.client_id = stream, client_id
        self.splitter = FrameSplitter()
        self.correlation = 0

    async def call(self, api: ApiKey, version: int, body: Mapping[str, Any]) -> Any:
        self.correlation += 1
        await self.stream.send_all(encode_request(int(api), version, self.correlation, self.client_id, body))
        while True:
            data = await self.stream.receive_some(65536)
            if not data:
                raise trio.BrokenResourceError(f"the broker closed the connection during SASL ({api.name})")
            frames = self.splitter.feed(bytes(data))
            if frames:
                return decode_response(int(api), version, frames[0])[1]


async def authenticate(call: Call, mechanism: str, user: str, password: str, token: TokenSource | None = None) -> int:
    """Run the exchange through ``call`` (request, answer); the session lifetime the broker gave
    (ms, 0: none)."""
    hs = await call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
    if hs.error_code:
        raise UnsupportedSaslMechanismError(f"the broker offers {', '.join(hs.mechanisms) or 'no mechanism'}, "
                                            f"not {mechanism}")

    async def step(token: bytes) -> Any:
        answer = await call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        if answer.error_code:
            raise error_for_code(answer.error_code, answer.error_message)
        return answer

    if mechanism == "PLAIN":
        answer = await step(f"\0{user}\0{password}".encode())
    elif mechanism == "OAUTHBEARER":
        if token is None:
            raise SaslAuthenticationFailedError("OAUTHBEARER needs a token: set oauth_cb or "
                                                "enable.sasl.oauthbearer.unsecure.jwt with sasl.oauthbearer.config")
        answer = await step(oauthbearer_first(token()))
        if answer.auth_bytes:
            # an error challenge (RFC 7628 §3.2.2): acknowledge it, the broker then fails the login
            # with the challenge as its message
            answer = await step(b"\x01")
    else:
        scram = _Scram(mechanism, user, password)
        first = await step(scram.first())
        answer = await step(scram.final(bytes(first.auth_bytes)))
        scram.check(bytes(answer.auth_bytes))
    return int(answer.session_lifetime_ms)


@dataclass(frozen=True)
class SaslLogin:
    mechanism: str
    user: str
    password: str
    client_id: str | None = None
    token: TokenSource | None = None   # OAUTHBEARER: a fresh token for each login

    async def on_stream(self, stream: trio.abc.Stream) -> SaslStream:
        """Authenticate a bare stream before its driver takes it over."""
        lifetime = await authenticate(_Exchange(stream, self.client_id).call, self.mechanism, self.user,
                                      self.password, self.token)
        return SaslStream(stream, self, lifetime)

    async def again(self, call: Call) -> int:
        """KIP-368 re-authentication on a connection in use: SaslHandshake then SaslAuthenticate, no
        ApiVersions (Java's SaslClientAuthenticator goes from REAUTH_PROCESS_ORIG_APIVERSIONS_RESPONSE
        straight to REAUTH_SEND_HANDSHAKE_REQUEST); the new session's lifetime."""
        return await authenticate(call, self.mechanism, self.user, self.password, self.token)


class SaslStream(trio.abc.Stream):
    """An authenticated stream: the login to repeat and the session's lifetime (ms, 0: none)."""

    def __init__(self, inner: trio.abc.Stream, login: SaslLogin, lifetime_ms: int):
        self.inner, self.login, self.lifetime_ms = inner, login, lifetime_ms

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()
