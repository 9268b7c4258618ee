"""One connection's SASL state, as SaslServerAuthenticator and KafkaChannel keep it.

Before authentication a connection may send ApiVersions (once, first) and SaslHandshake; after
a v1+ handshake only SaslAuthenticate (KIP-152), after a v0 handshake raw size-prefixed tokens.
Anything else is an IllegalSaslStateException and the connection closes. Once authenticated,
the session lasts ``connections.max.reauth.ms`` (KIP-368) if set and the client said it can
re-authenticate (SaslAuthenticate v1+): a SaslHandshake starts a re-authentication with the
same mechanism and principal, before or after the session ended; any other request after it
closes the connection
(SocketServer.Processor: "Disconnecting expired channel").
"""

from __future__ import annotations

from broker_emu.security.mechanisms import SaslAbort, SaslFailure
from broker_emu.security.settings import MechanismServer, Security
from client.errors import ErrorCode
from client.protocol import ApiKey

API_VERSIONS, HANDSHAKE, AUTHENTICATE = int(ApiKey.API_VERSIONS), int(ApiKey.SASL_HANDSHAKE), int(ApiKey.SASL_AUTHENTICATE)
ANONYMOUS = "User:ANONYMOUS"


class SaslSession:
    def __init__(self, security: Security):
        self.security = security
        self.state = "handshake_or_versions"   # -> handshake -> authenticate -> complete | failed
        self.raw_tokens = False                 # after a v0 handshake
        self.mechanism: str | None = None
        self.server: MechanismServer | None = None
        self.principal = ANONYMOUS
        self.expires_at: float | None = None    # trio seconds; None: the session never expires
        self.reauthenticating = False
        self.supports_reauth = False
        self.close_after_answer = False         # a failed step: the answer goes out, then the close
        self._bad_mechanism = "Illegal SASL state"

    @property
    def authenticated(self) -> bool:
        return self.state == "complete"

    def admit(self, api_key: int, now: float) -> str | None:
        """Why this request may not run now (the connection then closes), or None."""
        if self.state == "complete":
            if api_key == HANDSHAKE and self.expires_at is not None:
                # SocketServer.Processor checks KafkaChannel.maybeBeginServerReauthentication before
                # serverAuthenticationSessionExpired: a re-authentication may begin after the session
                # ended (Java's client re-authenticates only when it next sends)
                return None
            if self.expires_at is not None and now >= self.expires_at:
                return "SASL session expired (connections.max.reauth.ms): disconnecting expired channel"
            return None
        if self.state == "handshake_or_versions" and api_key in (API_VERSIONS, HANDSHAKE):
            if api_key == API_VERSIONS:
                self.state = "handshake"
            return None
        if self.state == "handshake" and api_key == HANDSHAKE:
            return None
        if self.state == "authenticate" and api_key == AUTHENTICATE:
            return None
        phase = "authentication" if self.state == "authenticate" else "handshake"
        return f"Unexpected Kafka request of type {ApiKey(api_key).name} during SASL {phase}."

    def handshake(self, mechanism: str, version: int) -> int:
        """The handshake's error code: 0; 33 UNSUPPORTED_SASL_MECHANISM, and then a close; 34
        ILLEGAL_SASL_STATE on an authenticated connection whose client cannot re-authenticate
        (KafkaApis answers it there)."""
        if self.state == "complete":
            if not self.supports_reauth:
                return ErrorCode.ILLEGAL_SASL_STATE
            # KIP-368: a handshake on an authenticated connection begins a re-authentication
            self.reauthenticating = True
            if mechanism != self.mechanism:
                self.state = "authenticate"
                self.server = None   # the next SaslAuthenticate fails (REAUTH_BAD_MECHANISM)
                self._bad_mechanism = (f"SASL mechanism '{mechanism}' requested by client is not supported for "
                                       f"re-authentication of mechanism '{self.mechanism}'")
                return ErrorCode.NONE
        if mechanism not in self.security.mechanisms:
            self.state, self.close_after_answer = "failed", True
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM
        self.mechanism = mechanism
        self.server = self.security.mechanism_server(mechanism)
        self.state = "authenticate"
        self.raw_tokens = version == 0
        return ErrorCode.NONE

    def authenticate(self, token: bytes, version: int, now: float) -> tuple[bytes, int]:
        """One token: (the server's token, the session lifetime in ms). Raises SaslFailure
        with the message the client gets; the connection then closes."""
        if version > 0:
            self.supports_reauth = True
        if self.server is None:
            self.state, self.close_after_answer = "failed", True
            raise SaslFailure(self._bad_mechanism, revealed=True)
        try:
            answer = self.server.evaluate(token)
        except SaslAbort:
            self.state = "failed"
            raise
        except SaslFailure as exc:
            self.state, self.close_after_answer = "failed", True
            if exc.revealed:
                raise
            what = "re-authentication" if self.reauthenticating else "authentication"
            raise SaslFailure(f"Authentication failed during {what} due to invalid credentials with SASL mechanism "
                              f"{self.mechanism}", revealed=True) from exc
        if not self.server.complete:
            return answer, 0
        principal = f"User:{self.server.user}"
        if self.reauthenticating and principal != self.principal:
            self.state, self.close_after_answer = "failed", True
            old, new = self.principal.split(":", 1), principal.split(":", 1)
            raise SaslFailure(f"Cannot change principals during re-authentication from {old[0]}.{old[1]}: "
                              f"{new[0]}.{new[1]}", revealed=True)
        self.principal, self.state, self.raw_tokens = principal, "complete", False
        self.reauthenticating = False
        lifetime = self._lifetime_ms()
        self.expires_at = now + lifetime / 1000 if lifetime is not None else None
        return answer, lifetime or 0

    def _lifetime_ms(self) -> int | None:
        """SaslServerAuthenticator.calcCompletionTimesAndReturnSessionLifetimeMs: the credential's
        expiry (an OAUTHBEARER token's exp) and connections.max.reauth.ms, whichever ends first;
        None when neither bounds the session."""
        expiry = getattr(self.server, "credential_expiry_ms", None)
        reauth = self.security.reauth_ms if self.security.reauth_ms > 0 else None
        if expiry is None:
            return reauth
        left = max(0, expiry - self.security.wall_ms())
        return left if reauth is None else min(left, reauth)
