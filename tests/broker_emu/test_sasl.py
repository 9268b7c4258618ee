"""SASL on the emulator's listeners, on the wire and in virtual time (SaslServerAuthenticator's
states, KIP-152 and KIP-368). Real clients: tests/realclients/test_security.py."""

import base64

import pytest
import trio

from broker_emu.config import ConfigError
from broker_emu.runtime import open_cluster
from broker_emu.security.mechanisms import SaslFailure, ScramServer
from broker_emu.security.scram import ScramStore, credential_from_password
from client.sasl import _Scram
from tests.broker_emu.helpers import API_VERSIONS, METADATA, SASL_HANDSHAKE, WireClient

SASL_AUTHENTICATE = 36
SASL = {"emu.security.protocol": "SASL_PLAINTEXT", "emu.sasl.users": "alice:alice-secret,bob:bob-secret"}


async def scram_login(w: WireClient, mechanism: str, user: str, password: str, version: int = 2):
    hs = await w.call(SASL_HANDSHAKE, 1, {"mechanism": mechanism})
    assert hs.error_code == 0
    scram = _Scram(mechanism, user, password)
    first = await w.call(SASL_AUTHENTICATE, version, {"auth_bytes": scram.first()})
    assert first.error_code == 0, first.error_message
    final = await w.call(SASL_AUTHENTICATE, version, {"auth_bytes": scram.final(bytes(first.auth_bytes))})
    if final.error_code == 0:
        scram.check(bytes(final.auth_bytes))
    return final


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_scram_exchange_admits_requests_as_the_user(autojump_clock, mechanism):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=SASL) as cluster:
        w = WireClient(cluster.connect(0))
        versions = await w.call(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert versions.error_code == 0
        final = await scram_login(w, mechanism, "alice", "alice-secret")
        assert (final.error_code, final.session_lifetime_ms) == (0, 0)
        md = await w.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
        assert [t.name for t in md.topics] == ["t"]
        done = [e for e in cluster.trace.events if e.kind == "sasl" and e.details["step"] == "authenticated"]
        assert [(e.details["mechanism"], e.details["principal"]) for e in done] == [(mechanism, "User:alice")]


async def test_wrong_password_gets_kafkas_message_then_the_close(autojump_clock):
    async with open_cluster(1, listen=False, config=SASL) as cluster:
        w = WireClient(cluster.connect(0))
        final = await scram_login(w, "SCRAM-SHA-256", "alice", "wrong")
        # the message does not say whether the user exists (SaslServerAuthenticator.handleSaslToken)
        assert (final.error_code, final.error_message) == (
            58, "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
        assert await w.closed()
        w2 = WireClient(cluster.connect(0))
        await w2.call(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        plain = await w2.call(SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0bob\0nope"})
        assert (plain.error_code, plain.error_message) == (58, "Authentication failed: Invalid username or password")
        assert await w2.closed()


async def test_other_requests_before_authentication_close_the_connection(autojump_clock):
    async with open_cluster(1, listen=False, config=SASL) as cluster:
        w = WireClient(cluster.connect(0))
        await w.send(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
        assert await w.closed()
        refused = [e for e in cluster.trace.events if e.kind == "recv" and (e.details or {}).get("refused")]
        assert refused[0].details["refused"] == "Unexpected Kafka request of type METADATA during SASL handshake."
        # during SaslAuthenticate's phase the request gets its error answer first (ILLEGAL_SASL_STATE)
        w = WireClient(cluster.connect(0))
        await w.call(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        md = await w.call(METADATA, 12, {"topics": [{"name": "t", "topic_id": None}], "allow_auto_topic_creation": False})
        assert [t.error_code for t in md.topics] == [34]
        assert await w.closed()


async def test_unknown_mechanism_lists_the_enabled_ones(autojump_clock):
    async with open_cluster(1, listen=False, config={**SASL, "sasl.enabled.mechanisms": "SCRAM-SHA-512"}) as cluster:
        w = WireClient(cluster.connect(0))
        hs = await w.call(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert (hs.error_code, list(hs.mechanisms)) == (33, ["SCRAM-SHA-512"])
        assert await w.closed()


async def test_handshake_v0_carries_bare_tokens(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=SASL) as cluster:
        w = WireClient(cluster.connect(0))
        assert (await w.call(SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})).error_code == 0
        token = b"\0alice\0alice-secret"
        await w.stream.send_all(len(token).to_bytes(4, "big") + token)
        assert await w.stream.receive_some(4) == b"\0\0\0\0"    # PLAIN's empty answer, size-prefixed
        md = await w.call(METADATA, 1, {"topics": None})
        assert [t.name for t in md.topics] == ["t"]


async def test_session_ends_at_max_reauth_unless_renewed(autojump_clock):
    config = {**SASL, "connections.max.reauth.ms": 10_000}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        md_body = {"topics": None, "allow_auto_topic_creation": False}
        renewed, lapsed = WireClient(cluster.connect(0)), WireClient(cluster.connect(0))
        for w in (renewed, lapsed):
            assert (await scram_login(w, "SCRAM-SHA-256", "alice", "alice-secret")).session_lifetime_ms == 10_000
        await trio.sleep(8)
        again = await scram_login(renewed, "SCRAM-SHA-256", "alice", "alice-secret")   # KIP-368 re-authentication
        assert (again.error_code, again.session_lifetime_ms) == (0, 10_000)
        await trio.sleep(2.5)
        assert (await renewed.call(METADATA, 12, md_body)).topics[0].name == "t"
        await lapsed.send(METADATA, 12, md_body)
        assert await lapsed.closed()
        closes = [e for e in cluster.trace.events if e.kind == "conn_close" and "expired" in e.details["reason"]]
        assert len(closes) == 1 and closes[0].t_ms == 10_500
        # re-authenticating as somebody else is refused
        other = await scram_login(renewed, "SCRAM-SHA-256", "bob", "bob-secret")
        assert (other.error_code, other.error_message) == (
            58, "Cannot change principals during re-authentication from User.alice: User.bob")
        assert await renewed.closed()


async def test_a_re_authentication_may_begin_after_the_session_ended(autojump_clock):
    """SocketServer.Processor lets a SaslHandshake begin a re-authentication before it checks the
    session's expiry: an idle client that re-authenticates before its next request keeps the
    connection."""
    config = {**SASL, "connections.max.reauth.ms": 10_000}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        w = WireClient(cluster.connect(0))
        await scram_login(w, "SCRAM-SHA-256", "alice", "alice-secret")
        await trio.sleep(30)
        again = await scram_login(w, "SCRAM-SHA-256", "alice", "alice-secret")
        assert (again.error_code, again.session_lifetime_ms) == (0, 10_000)
        md = await w.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
        assert md.topics[0].name == "t"


async def test_plaintext_listener_answers_illegal_sasl_state(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        auth = await w.call(SASL_AUTHENTICATE, 2, {"auth_bytes": b"x"})
        assert (auth.error_code, auth.error_message) == (34, "SaslAuthenticate request received after successful authentication")


def test_scram_server_checks_the_nonce_and_the_proof():
    store = ScramStore()
    store.put("u", "SCRAM-SHA-256", credential_from_password("SCRAM-SHA-256", "pw"))
    server = ScramServer("SCRAM-SHA-256", store.get)
    client = _Scram("SCRAM-SHA-256", "u", "pw")
    final = client.final(server.evaluate(client.first()))
    forged = final.replace(b"r=" + client.nonce.encode(), b"r=" + base64.b64encode(b"other").decode().encode())
    with pytest.raises(SaslFailure, match="nonce"):
        server.evaluate(forged)


async def test_bad_security_configs_are_refused():
    with pytest.raises(ConfigError, match="not supported"):
        open_cluster_config({**SASL, "sasl.enabled.mechanisms": "GSSAPI"})
    with pytest.raises(ConfigError, match="name:password"):
        open_cluster_config({**SASL, "emu.sasl.users": "alice"})
    with pytest.raises(ConfigError, match="ssl.client.auth=required needs an SSL or SASL_SSL listener"):
        open_cluster_config({**SASL, "ssl.client.auth": "required"})
    with pytest.raises(ConfigError, match="ssl.client.auth"):
        open_cluster_config({"emu.security.protocol": "SSL", "ssl.client.auth": "sometimes"})


def open_cluster_config(config):
    from broker_emu.cluster import Cluster
    return Cluster(1, config)


DESCRIBE_SCRAM, ALTER_SCRAM = 50, 51


async def test_scram_credentials_altered_on_the_wire_take_effect_at_the_next_login(autojump_clock):
    from broker_emu.security.scram import salted_password

    async with open_cluster(1, listen=False, config=SASL) as cluster:
        admin = WireClient(cluster.connect(0))
        await scram_login(admin, "SCRAM-SHA-256", "alice", "alice-secret")
        salt = b"0123456789abcdef"
        upsert = {"name": "carol", "mechanism": 2, "iterations": 8192, "salt": salt,
                  "salted_password": salted_password("SCRAM-SHA-512", "carol-secret", salt, 8192)}
        r = await admin.call(ALTER_SCRAM, 0, {"deletions": [{"name": "bob", "mechanism": 1}, {"name": "nobody", "mechanism": 1}],
                                              "upsertions": [upsert, {**upsert, "name": "dave", "iterations": 100},
                                                             {**upsert, "name": "", "iterations": 4096}]})
        assert sorted((x.user, x.error_code, x.error_message) for x in r.results) == [
            ("", 93, "Username must not be empty"), ("bob", 0, None), ("carol", 0, None), ("dave", 93, "Too few iterations"),
            ("nobody", 91, "Attempt to delete a user credential that does not exist")]
        d = await admin.call(DESCRIBE_SCRAM, 0, {"users": [{"name": "carol"}, {"name": "bob"}, {"name": "x"}, {"name": "x"}]})
        assert [(x.user, x.error_code, [(c.mechanism, c.iterations) for c in x.credential_infos]) for x in d.results] == [
            ("carol", 0, [(2, 8192)]), ("bob", 0, [(2, 4096)]), ("x", 92, [])]
        assert (await scram_login(WireClient(cluster.connect(0)), "SCRAM-SHA-512", "carol", "carol-secret")).error_code == 0
        gone = WireClient(cluster.connect(0))      # bob's SCRAM-SHA-256 credential was deleted
        await gone.call(SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"})
        first = await gone.call(SASL_AUTHENTICATE, 2, {"auth_bytes": _Scram("SCRAM-SHA-256", "bob", "bob-secret").first()})
        assert first.error_code == 58


async def test_each_listener_has_its_own_security(autojump_clock):
    """A PLAINTEXT cluster with a SASL_PLAINTEXT listener besides (emu.extra.listeners): the
    plaintext connection is served at once as User:ANONYMOUS; one on the SASL listener must log in."""
    config = {"emu.extra.listeners": "SASL_PLAINTEXT", "emu.sasl.users": "alice:alice-secret"}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        md_body = {"topics": None, "allow_auto_topic_creation": False}
        plain = WireClient(cluster.connect(0))
        assert (await plain.call(METADATA, 12, md_body)).topics[0].name == "t"
        refused = WireClient(cluster.connect(0, "SASL_PLAINTEXT"))
        await refused.send(METADATA, 12, md_body)
        assert await refused.closed()
        secured = WireClient(cluster.connect(0, "SASL_PLAINTEXT"))
        await scram_login(secured, "SCRAM-SHA-256", "alice", "alice-secret")
        assert (await secured.call(METADATA, 12, md_body)).topics[0].name == "t"
        with pytest.raises(ValueError, match="no SSL listener"):
            cluster.connect(0, "SSL")


async def test_extra_listeners_are_checked():
    for spec, why in (("PLAINTEXT", "a second PLAINTEXT listener"), ("SSL,SSL", "a second SSL listener"),
                      ("TLS", "expected PROTOCOL"), ("SSL:port", "expected PROTOCOL")):
        with pytest.raises(ConfigError, match=why):
            open_cluster_config({"emu.extra.listeners": spec})
