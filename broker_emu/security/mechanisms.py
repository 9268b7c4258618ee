"""The broker's side of each SASL mechanism, sans-io: ``evaluate(client token) -> server
token``, ``complete`` and the authenticated user name once complete. Failures raise
``SaslFailure`` carrying what Kafka tells the client (SaslServerAuthenticator.handleSaslToken:
a SaslAuthenticationException's own message, or for any other SaslException a fixed text that
does not reveal whether the user exists)."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Mapping

from broker_emu.security import scram
from broker_emu.security.scram import ScramCredential


class SaslFailure(Exception):
    """``revealed``: Kafka sends this message (SaslAuthenticationException); otherwise the
    client sees only "... due to invalid credentials with SASL mechanism M"."""

    def __init__(self, message: str, revealed: bool = False):
        super().__init__(message)
        self.revealed = revealed


class SaslAbort(Exception):
    """A mechanism failure Kafka does not answer: an unchecked exception in its SaslServer, after
    which the connection closes."""


class PlainServer:
    """RFC 4616 as PlainSaslServer checks it: ``authzid NUL user NUL password``."""

    name = "PLAIN"

    def __init__(self, passwords: Mapping[str, str]):
        self._passwords = passwords
        self.complete = False
        self.user: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        parts = token.decode("utf-8", "replace").split("\x00")
        if len(parts) != 3:
            raise SaslFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}", revealed=True)
        authzid, user, password = parts
        if not user:
            raise SaslFailure("Authentication failed: username not specified", revealed=True)
        if not password:
            raise SaslFailure("Authentication failed: password not specified", revealed=True)
        if self._passwords.get(user) != password:
            raise SaslFailure("Authentication failed: Invalid username or password", revealed=True)
        if authzid and authzid != user:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different from "
                              "username", revealed=True)
        self.user, self.complete = user, True
        return b""


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        if len(part) >= 2 and part[1] == "=":
            out.setdefault(part[0], part[2:])
    return out


def _sasl_name(value: str) -> str:
    """RFC 5802 §5.1: ``=2C`` is a comma and ``=3D`` an equals sign in a user name."""
    return value.replace("=2C", ",").replace("=3D", "=")


def _alphanumeric_nonce() -> str:
    """ScramFormatter.secureRandomString: a 130-bit number in base 36."""
    value, digits = int.from_bytes(os.urandom(17), "big") >> 6, []
    while value:
        value, d = divmod(value, 36)
        digits.append("0123456789abcdefghijklmnopqrstuvwxyz"[d])
    return "".join(digits) or "0"


class ScramServer:
    """RFC 5802's two round trips, as ScramSaslServer runs them: client-first -> server-first
    (our nonce, the salt, the iterations); client-final (the proof) -> server-final (our
    signature)."""

    def __init__(self, mechanism: str, lookup: Callable[[str, str], ScramCredential | None],
                 nonce: Callable[[], str] | None = None):
        self.name = mechanism
        self._lookup = lookup
        self._nonce = nonce or _alphanumeric_nonce
        self.complete = False
        self.user: str | None = None
        self._state = "first"
        self._credential: ScramCredential | None = None
        self._first_bare = self._server_first = self._nonce_value = ""

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("Authentication failed: Invalid client message") from None
        if self._state == "first":
            return self._first(text)
        if self._state == "final":
            return self._final(text)
        raise SaslFailure(f"Unexpected challenge in Sasl server state {self._state}")

    def _first(self, text: str) -> bytes:
        # gs2 header "n,," / "y,," / "n,a=authzid," then the bare message "n=user,r=nonce[,ext]"
        pieces = text.split(",", 2)
        if len(pieces) != 3 or pieces[0] not in ("n", "y"):
            raise SaslFailure("Invalid SCRAM client first message")
        attrs = _attributes(pieces[2])
        user, client_nonce = attrs.get("n"), attrs.get("r")
        if not user or not client_nonce:
            raise SaslFailure("Invalid SCRAM client first message")
        user = _sasl_name(user)
        credential = self._lookup(user, self.name)
        if credential is None:
            raise SaslFailure("Authentication failed: Invalid user credentials")
        authzid = pieces[1][2:] if pieces[1].startswith("a=") else ""
        if authzid and _sasl_name(authzid) != user:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different from "
                              "username", revealed=True)
        if credential.iterations < scram.MIN_ITERATIONS:
            raise SaslFailure(f"Iterations {credential.iterations} is less than the minimum {scram.MIN_ITERATIONS}")
        self.user, self._credential = user, credential
        self._first_bare = pieces[2]
        self._nonce_value = client_nonce + self._nonce()
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce_value},s={salt},i={credential.iterations}"
        self._state = "final"
        return self._server_first.encode()

    def _final(self, text: str) -> bytes:
        assert self._credential is not None
        attrs = _attributes(text)
        # Kafka checks only that the nonce ends with ours (ScramSaslServer): librdkafka 2.0
        # (Debian's kcat) sends its own nonce in front of the combined one
        if not attrs.get("r", "").endswith(self._nonce_value):
            raise SaslFailure("Invalid client nonce in the final client message.")
        if "p" not in attrs or ",p=" not in text:
            raise SaslFailure("Authentication failed: Invalid client final message")
        without_proof = text[: text.rindex(",p=")]
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        try:
            proof = base64.b64decode(attrs["p"], validate=True)
        except ValueError:
            raise SaslFailure("Authentication failed: Invalid client final message") from None
        if not scram.client_proof_matches(self.name, self._credential, auth_message, proof):
            raise SaslFailure("Invalid client credentials")
        self._state, self.complete = "complete", True
        signature = scram.server_signature(self.name, self._credential, auth_message)
        return b"v=" + base64.b64encode(signature)
