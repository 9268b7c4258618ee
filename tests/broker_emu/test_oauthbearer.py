"""SASL/OAUTHBEARER with unsecured JWTs on the emulator's listeners, in virtual time
(OAuthBearerSaslServer, OAuthBearerUnsecuredValidatorCallbackHandler, KIP-368's token-bounded
sessions). The cluster's wall clock is the fixed epoch under the MockClock. Real clients:
tests/realclients/test_oauthbearer.py."""

import base64
import json

import pytest
import trio

from broker_emu.runtime import open_cluster
from broker_emu.security.oauthbearer import InvalidToken, UnsecuredValidator, validate
from client.sasl import oauthbearer_first, unsecured_jwt
from kafka_common.wallclock import FIXED_EPOCH_MS
from tests.broker_emu.helpers import METADATA, SASL_HANDSHAKE, WireClient

SASL_AUTHENTICATE = 36
OAUTH = {"emu.security.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "OAUTHBEARER"}
MD = {"topics": None, "allow_auto_topic_creation": False}


def part(value) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


async def login(w: WireClient, first: bytes, version: int = 2):
    hs = await w.call(SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})
    assert (hs.error_code, list(hs.mechanisms)) == (0, ["OAUTHBEARER"])
    return await w.call(SASL_AUTHENTICATE, version, {"auth_bytes": first})


def events(cluster, step):
    return [e.details for e in cluster.trace.events if e.kind == "sasl" and e.details["step"] == step]


async def test_a_valid_token_authenticates_its_subject_for_the_tokens_lifetime(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=OAUTH) as cluster:
        w = WireClient(cluster.connect(0))
        await trio.sleep(5)
        token = unsecured_jwt("alice", FIXED_EPOCH_MS + 5000, life_s=60)
        answer = await login(w, oauthbearer_first(token))
        # the session lasts until the token's exp (SaslServerAuthenticator: credential expiry)
        assert (answer.error_code, bytes(answer.auth_bytes), answer.session_lifetime_ms) == (0, b"", 60_000)
        assert [e["principal"] for e in events(cluster, "authenticated")] == ["User:alice"]
        md = await w.call(METADATA, 12, MD)
        assert [t.name for t in md.topics] == ["t"]
        await trio.sleep(60.5)
        await w.send(METADATA, 12, MD)
        assert await w.closed()
        closes = [e for e in cluster.trace.events if e.kind == "conn_close"]
        assert "expired" in closes[-1].details["reason"] and closes[-1].t_ms == pytest.approx(65_500, abs=1)


async def test_max_reauth_ms_shorter_than_the_token_bounds_the_session(autojump_clock):
    async with open_cluster(1, listen=False, config={**OAUTH, "connections.max.reauth.ms": 10_000}) as cluster:
        w = WireClient(cluster.connect(0))
        answer = await login(w, oauthbearer_first(unsecured_jwt("alice", FIXED_EPOCH_MS, life_s=60)))
        assert (answer.error_code, answer.session_lifetime_ms) == (0, 10_000)


@pytest.mark.parametrize("token, reason", [
    (unsecured_jwt("alice", FIXED_EPOCH_MS - 120_000, life_s=60), "was on or after the Expiration Time"),
    (unsecured_jwt("alice", FIXED_EPOCH_MS + 60_000, life_s=60), "The Issued At value"),
    (f"{part({'alg': 'HS256'})}.{part({'sub': 'alice', 'exp': 2e9})}.", "must have 'none' for an algorithm"),
    (f"{part({'alg': 'none'})}.{part({'sub': 'alice', 'exp': 2e9})}.c2ln", "must not contain a digital signature"),
    (f"{part({'alg': 'none'})}.{part({'sub': 'alice'})}.", "No expiration time in JWT"),
    (f"{part({'alg': 'none'})}.{part({'exp': 2e9})}.", "No principal name in JWT claim: sub"),
    (f"{part({'alg': 'none'})}.{part({'sub': 'alice', 'exp': 'soon'})}.", "The 'exp' claim was not of type Number"),
    ("a.b", "must have 3 dot-separated"),
])
async def test_a_refused_token_gets_the_error_challenge_then_the_failure(autojump_clock, token, reason):
    async with open_cluster(1, listen=False, config=OAUTH) as cluster:
        w = WireClient(cluster.connect(0))
        challenge = await login(w, oauthbearer_first(token))
        # RFC 7628 §3.2.2: an error challenge, not yet a failure (OAuthBearerSaslServer.process)
        assert (challenge.error_code, bytes(challenge.auth_bytes)) == (0, b'{"status":"invalid_token"}')
        final = await w.call(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\x01"})
        assert (final.error_code, final.error_message) == (58, '{"status":"invalid_token"}')
        assert await w.closed()
        assert reason in events(cluster, "token_rejected")[0]["reason"]


async def test_a_missing_required_scope_is_insufficient_scope(autojump_clock):
    config = {**OAUTH, "emu.oauthbearer.required.scope": "write read"}
    async with open_cluster(1, listen=False, config=config) as cluster:
        w = WireClient(cluster.connect(0))
        token = unsecured_jwt("alice", FIXED_EPOCH_MS, scope=("read",))
        challenge = await login(w, oauthbearer_first(token))
        assert bytes(challenge.auth_bytes) == b'{"status":"insufficient_scope", "scope":"[write, read]"}'
        w2 = WireClient(cluster.connect(0))
        ok = await login(w2, oauthbearer_first(unsecured_jwt("alice", FIXED_EPOCH_MS, scope=("read", "write"))))
        assert (ok.error_code, bytes(ok.auth_bytes)) == (0, b"")


async def test_clock_skew_admits_a_token_issued_slightly_ahead(autojump_clock):
    config = {**OAUTH, "emu.oauthbearer.allowable.clock.skew.ms": 5000}
    async with open_cluster(1, listen=False, config=config) as cluster:
        w = WireClient(cluster.connect(0))
        ok = await login(w, oauthbearer_first(unsecured_jwt("alice", FIXED_EPOCH_MS + 4000)))
        assert (ok.error_code, bytes(ok.auth_bytes)) == (0, b"")


@pytest.mark.parametrize("first, message", [
    (b"n,,\x01auth=token\x01\x01", "Authentication failed during authentication due to invalid credentials "
                                      "with SASL mechanism OAUTHBEARER"),
    (b"garbage", "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"),
    (b"n,a=bob,\x01auth=Bearer " + unsecured_jwt("alice", FIXED_EPOCH_MS).encode() + b"\x01\x01",
     "Authentication failed: Client requested an authorization id (bob) that is different from the token's "
     "principal name (alice)"),
])
async def test_a_malformed_first_message_fails_at_once(autojump_clock, first, message):
    async with open_cluster(1, listen=False, config=OAUTH) as cluster:
        w = WireClient(cluster.connect(0))
        answer = await login(w, first)
        assert (answer.error_code, answer.error_message) == (58, message)
        assert await w.closed()


@pytest.mark.parametrize("first", [
    # Kafka: a NullPointerException in OAuthBearerUnsecuredJws, which no catch answers
    oauthbearer_first(f"{part({})}.{part({'sub': 'a', 'exp': 2e9})}."),
    # Kafka: an IllegalArgumentException formatting the wrong-scheme message
    b"n,,\x01auth=Basic abc\x01\x01",
])
async def test_these_tokens_close_the_connection_unanswered(autojump_clock, first):
    async with open_cluster(1, listen=False, config=OAUTH) as cluster:
        w = WireClient(cluster.connect(0))
        await w.call(SASL_HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})
        await w.send(SASL_AUTHENTICATE, 2, {"auth_bytes": first})
        assert await w.closed()


def test_claims_convert_as_jackson_does():
    now, opts = FIXED_EPOCH_MS, UnsecuredValidator(principal_claim="azp", scope_claim="roles")
    token = f"{part({'alg': 'none'})}.{part({'azp': True, 'exp': 2e9, 'roles': 'admin'})}."
    parsed = validate(token, now, opts)
    assert (parsed.principal, parsed.scope, parsed.expires_ms) == ("true", frozenset({"admin"}), 2_000_000_000_000)
    with pytest.raises(InvalidToken, match="malformed Base64 URL"):
        validate("ab+c.def.", now, opts)
