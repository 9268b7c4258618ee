"""Our client's SASL (client/sasl.py) against the emulator in virtual time."""

import pytest
import trio

from broker_emu.runtime import open_cluster
from client.errors import SaslAuthenticationFailedError
from client.exceptions import ConnectionSetupTimeoutException
from client.producer.async_producer import open_producer
from client.transport import sasl_connect

SASL = {"emu.security.protocol": "SASL_PLAINTEXT", "emu.sasl.users": "alice:alice-secret"}


def connect_to(cluster, mechanism="SCRAM-SHA-256", password="alice-secret"):
    async def in_memory(node, host, port):
        return cluster.connect(max(node, 0))
    return sasl_connect(mechanism, "alice", password, "ours", inner=in_memory)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_producer_authenticates_on_every_connection(autojump_clock, mechanism):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config=SASL) as cluster:
        async with open_producer({"bootstrap.servers": "127.0.0.1:0"}, connect=connect_to(cluster, mechanism)) as p:
            meta = await (await p.send("t", b"v", partition=0)).get()
        assert meta.offset == 0
        opened = {e.conn for e in cluster.trace.events if e.kind == "conn_open"}
        authenticated = {e.conn: e.details["principal"] for e in cluster.trace.events
                         if e.kind == "sasl" and e.details["step"] == "authenticated"}
        assert authenticated and set(authenticated) == opened and set(authenticated.values()) == {"User:alice"}


async def test_wrong_password_fails_the_send_with_kafkas_message(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=SASL) as cluster:
        async with open_producer({"bootstrap.servers": "127.0.0.1:0", "max.block.ms": 5000},
                                 connect=connect_to(cluster, password="wrong")) as p:
            future = await p.send("t", b"v", partition=0)   # failed at once, as Java's doSend returns it
            start = trio.current_time()
            with pytest.raises(SaslAuthenticationFailedError, match="invalid credentials with SASL mechanism SCRAM-SHA-256"):
                await future.get()
            assert trio.current_time() - start < 1


async def test_a_stalled_handshake_counts_against_the_setup_timeout(autojump_clock):
    """librdkafka's reading of socket.connection.setup.timeout.ms (client/sasl.py)."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=SASL) as cluster:
        cluster.faults.add({"match": {"api": "SaslHandshake"}, "action": {"type": "black_hole"}}, cluster.now_ms())
        connect = connect_to(cluster)
        from client.config import producer_config
        from client.network import NetworkClient

        async with trio.open_nursery() as nursery:
            net = NetworkClient(producer_config({"bootstrap.servers": "127.0.0.1:0",
                                                 "socket.connection.setup.timeout.ms": 3000}), nursery, connect=connect)
            start = trio.current_time()
            with pytest.raises(ConnectionSetupTimeoutException):
                await net.connection(-1)
            assert 2.4 <= trio.current_time() - start <= 3.6   # the setup timeout, with its ±20% jitter
            nursery.cancel_scope.cancel()


async def test_oauthbearer_tokens_bound_the_session_and_each_login_gets_a_fresh_one(autojump_clock):
    """The broker ends the session at the token's exp (KIP-368); our client re-authenticates on
    the same connection before then, with a new token from its callback (confluent-kafka's
    oauth_cb shape), here on the cluster's virtual wall clock."""
    from client.sasl import unsecured_jwt
    from client.transport import oauth_token_source
    from kafka_common.wallclock import FIXED_EPOCH_MS

    config = {"emu.security.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "OAUTHBEARER"}
    issued: list[float] = []

    def oauth_cb(settings):
        assert settings == "principal=ignored"
        issued.append(trio.current_time())
        return unsecured_jwt("svc", FIXED_EPOCH_MS + int(trio.current_time() * 1000), life_s=20), 0

    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        client_config = {"bootstrap.servers": "127.0.0.1:0", "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "OAUTHBEARER", "oauth_cb": oauth_cb, "sasl.oauthbearer.config": "principal=ignored"}

        async def in_memory(node, host, port):
            return cluster.connect(max(node, 0))
        connect = sasl_connect("OAUTHBEARER", "", "", "ours", inner=in_memory, token=oauth_token_source(client_config))
        async with open_producer(client_config, connect=connect) as p:
            first = await (await p.send("t", b"a", partition=0)).get()
            await trio.sleep(45)   # two sessions' worth of token lifetime
            second = await (await p.send("t", b"b", partition=0)).get()
        assert (first.offset, second.offset) == (0, 1)
        authenticated = [e for e in cluster.trace.events if e.kind == "sasl" and e.details["step"] == "authenticated"]
        assert {e.details["principal"] for e in authenticated} == {"User:svc"}
        # exp is whole seconds after iat, which rounds the issue time down: at most 20 s left
        assert all(19_000 < e.details["session_lifetime_ms"] <= 20_000 for e in authenticated)
        expired = [e for e in cluster.trace.events if e.kind == "conn_close" and "expired" in e.details.get("reason", "")]
        assert not expired and len(issued) == len(authenticated) >= 3
        # no connection was replaced: the producer's connections logged in again and again
        assert {e.conn for e in authenticated} == {e.conn for e in cluster.trace.events if e.kind == "conn_open"}
        assert max(len(times) for times in _logins(cluster).values()) >= 3


def _logins(cluster) -> dict:
    """conn -> the times (ms) it authenticated, first login and re-authentications."""
    out: dict = {}
    for e in cluster.trace.events:
        if e.kind == "sasl" and e.details["step"] == "authenticated":
            out.setdefault(e.conn, []).append(e.t_ms)
    return out


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
async def test_connections_re_authenticate_before_the_session_ends(autojump_clock, mechanism):
    """KIP-368 with connections.max.reauth.ms: each connection logs in again between 85 % and 95 %
    of its session (Java's SaslClientAuthenticator.ReauthInfo), so none is closed as expired and
    the producer keeps the connections it opened."""
    config = {**SASL, "connections.max.reauth.ms": 10_000}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        async with open_producer({"bootstrap.servers": "127.0.0.1:0"}, connect=connect_to(cluster, mechanism)) as p:
            offsets = []
            for i in range(12):   # a record every 5 s for a minute: six sessions' worth
                offsets.append((await (await p.send("t", b"v%d" % i, partition=0)).get()).offset)
                await trio.sleep(5)
        assert offsets == list(range(12))
        closes = [e for e in cluster.trace.events if e.kind == "conn_close" and "expired" in e.details.get("reason", "")]
        assert closes == []
        logins = _logins(cluster)
        opened = {e.conn for e in cluster.trace.events if e.kind == "conn_open"}
        assert set(logins) == opened
        for times in logins.values():
            assert len(times) >= 6
            gaps = [b - a for a, b in zip(times, times[1:])]
            assert all(8_500 <= g <= 9_500 + 50 for g in gaps), gaps


async def test_requests_made_while_re_authenticating_wait_and_are_answered(autojump_clock):
    """The re-authentication's exchange is slow (a 2 s delay on SaslAuthenticate): a send made
    meanwhile waits for it and then goes out on the same connection."""
    config = {**SASL, "connections.max.reauth.ms": 10_000}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        async with open_producer({"bootstrap.servers": "127.0.0.1:0", "linger.ms": 0},
                                 connect=connect_to(cluster)) as p:
            assert (await (await p.send("t", b"a", partition=0)).get()).offset == 0
            cluster.faults.add({"match": {"api": "SaslAuthenticate"}, "action": {"type": "delay_response", "ms": 2000}},
                               cluster.now_ms())
            await trio.sleep(9.6)   # past 95 % of the session: the re-authentication is under way
            start = trio.current_time()
            assert (await (await p.send("t", b"b", partition=0)).get()).offset == 1
            assert trio.current_time() - start > 0.5
        produce_conns = {e.conn for e in cluster.trace.events if e.kind == "recv" and e.api == "Produce"}
        assert len(produce_conns) == 1 and all(len(t) == 2 for t in _logins(cluster).values())


async def test_a_refused_re_authentication_closes_the_connection_and_logins_back_off(autojump_clock):
    """The password changed on the broker since the login: the re-authentication fails and the
    connection closes. Later logins fail too, each after the reconnect backoff (not in a tight
    loop); a record for a partition whose leader is known waits out delivery.timeout.ms (Java's
    Sender does not fail batches on an authentication failure), a send that needs metadata fails
    with the broker's reason."""
    from broker_emu.security.scram import credential_from_password
    from client.exceptions import DeliveryTimeoutException

    config = {**SASL, "connections.max.reauth.ms": 10_000}
    async with open_cluster(1, topics=[("t", 1, 1), ("u", 1, 1)], listen=False, config=config) as cluster:
        # strategy none: with the default (rebootstrap) the one broker backing off after the failed login makes the
        # client rebootstrap (Java's DefaultMetadataUpdater.maybeUpdate: no node available), which forgets the
        # partitions, so the record for "t" would wait for metadata and fail with the login's error too
        async with open_producer({"bootstrap.servers": "127.0.0.1:0", "max.block.ms": 5000, "delivery.timeout.ms": 30_000,
                                  "metadata.recovery.strategy": "none"}, connect=connect_to(cluster)) as p:
            assert (await (await p.send("t", b"a", partition=0)).get()).offset == 0
            cluster.security.scram.put("alice", "SCRAM-SHA-256", credential_from_password("SCRAM-SHA-256", "new"))
            await trio.sleep(10)
            failed = [e for e in cluster.trace.events if e.kind == "sasl" and e.details["step"] == "failed"]
            assert failed and failed[0].t_ms <= 9_500 + 50
            with pytest.raises(DeliveryTimeoutException):
                await (await p.send("t", b"b", partition=0)).get()
            with pytest.raises(SaslAuthenticationFailedError, match="invalid credentials"):
                await (await p.send("u", b"c", partition=0)).get()
        failures = [e.t_ms for e in cluster.trace.events if e.kind == "sasl" and e.details["step"] == "failed"]
        assert 5 <= len(failures) <= 60, len(failures)   # about one a second (reconnect.backoff.max.ms), not thousands


@pytest.mark.parametrize("api,code,raised,says", [
    ("SaslHandshake", 33, "UnsupportedSaslMechanismError", "not SCRAM-SHA-256"),
    ("SaslAuthenticate", 58, "SaslAuthenticationFailedError", "SASL_AUTHENTICATION_FAILED|authentication")])
async def test_handshake_faults_fail_the_login_with_the_brokers_error(autojump_clock, api, code, raised, says):
    """The handshake's faults (docs/security.md): a wrong-mechanism answer to SaslHandshake, an
    authentication failure from SaslAuthenticate — the send fails at once with that error."""
    from client import errors

    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=SASL) as cluster:
        cluster.faults.add({"match": {"api": api}, "action": {"type": "error", "error": code}}, cluster.now_ms())
        async with open_producer({"bootstrap.servers": "127.0.0.1:0", "max.block.ms": 5000},
                                 connect=connect_to(cluster)) as p:
            future = await p.send("t", b"v", partition=0)
            with pytest.raises(getattr(errors, raised), match=says):
                await future.get()
        applied = [e.api for e in cluster.trace.events if e.kind == "fault_applied"]
        assert applied and set(applied) == {api}
