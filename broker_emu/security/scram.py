"""SCRAM credentials (RFC 5802, RFC 7677) as Kafka keeps them: per user and mechanism a salt, an
iteration count, a stored key and a server key (``ScramCredential``, ``ScramFormatter``). The
broker never keeps a password; AlterUserScramCredentials sends the salted password itself."""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass

MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# ScramMechanism.minIterations / ScramControlManager.MAX_ITERATIONS
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384
# the wire's ScramMechanism codes (DescribeUserScramCredentials / AlterUserScramCredentials)
MECHANISM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES = {code: name for name, code in MECHANISM_CODES.items()}


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def _hmac(algorithm: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, algorithm).digest()


def credential_from_salted(mechanism: str, salt: bytes, salted_password: bytes, iterations: int) -> ScramCredential:
    """What the broker keeps of a salted password (ScramFormatter.generateCredential)."""
    algorithm = MECHANISMS[mechanism]
    client_key = _hmac(algorithm, salted_password, b"Client Key")
    stored_key = hashlib.new(algorithm, client_key).digest()
    server_key = _hmac(algorithm, salted_password, b"Server Key")
    return ScramCredential(salt, iterations, stored_key, server_key)


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i) of RFC 5802: PBKDF2 with the mechanism's HMAC."""
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism], password.encode(), salt, iterations)


def credential_from_password(mechanism: str, password: str, iterations: int = MIN_ITERATIONS,
                             salt: bytes | None = None) -> ScramCredential:
    salt = salt if salt is not None else os.urandom(16)
    return credential_from_salted(mechanism, salt, salted_password(mechanism, password, salt, iterations), iterations)


def client_proof_matches(mechanism: str, credential: ScramCredential, auth_message: bytes, proof: bytes) -> bool:
    """RFC 5802 §3: the proof XOR HMAC(StoredKey, AuthMessage) is the ClientKey, whose hash
    must be the StoredKey (ScramSaslServer.verifyClientProof)."""
    algorithm = MECHANISMS[mechanism]
    signature = _hmac(algorithm, credential.stored_key, auth_message)
    if len(proof) != len(signature):
        return False
    client_key = bytes(a ^ b for a, b in zip(proof, signature))
    return hmac.compare_digest(hashlib.new(algorithm, client_key).digest(), credential.stored_key)


def server_signature(mechanism: str, credential: ScramCredential, auth_message: bytes) -> bytes:
    return _hmac(MECHANISMS[mechanism], credential.server_key, auth_message)


class ScramStore:
    """user -> mechanism -> credential: what DescribeUserScramCredentials lists."""

    def __init__(self) -> None:
        self.users: dict[str, dict[str, ScramCredential]] = {}

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.users.get(user, {}).get(mechanism)

    def put(self, user: str, mechanism: str, credential: ScramCredential) -> None:
        self.users.setdefault(user, {})[mechanism] = credential

    def delete(self, user: str, mechanism: str) -> bool:
        creds = self.users.get(user, {})
        if mechanism not in creds:
            return False
        del creds[mechanism]
        if not creds:
            del self.users[user]
        return True
