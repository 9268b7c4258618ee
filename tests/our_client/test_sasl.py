"""Our client's SASL (client/sasl.py) against the emulator in virtual time."""

import pytest
import trio

from broker_emu import open_cluster
from client.errors import SaslAuthenticationFailedError
from client.exceptions import ConnectionSetupTimeoutException
from client.producer import open_producer
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


async def test_oauthbearer_tokens_bound_the_session_and_each_connection_gets_a_fresh_one(autojump_clock):
    """The broker ends the session at the token's exp (KIP-368); our client does not
    re-authenticate, so it reconnects and its token callback (confluent-kafka's oauth_cb shape)
    makes a new token, here on the cluster's virtual wall clock."""
    from broker_emu.cluster import FIXED_WALL_EPOCH_MS
    from client.sasl import unsecured_jwt
    from client.transport import oauth_token_source

    config = {"emu.security.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "OAUTHBEARER"}
    issued: list[float] = []

    def oauth_cb(settings):
        assert settings == "principal=ignored"
        issued.append(trio.current_time())
        return unsecured_jwt("svc", FIXED_WALL_EPOCH_MS + int(trio.current_time() * 1000), life_s=20), 0

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
        assert expired and len(issued) == len(authenticated) >= 2


def test_oauthbearer_needs_a_token_source():
    from client.config import ConfigException, producer_config

    base = {"bootstrap.servers": "b:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}
    with pytest.raises(ConfigException, match="needs oauth_cb, or enable.sasl.oauthbearer.unsecure.jwt"):
        producer_config(base)
    with pytest.raises(ConfigException, match="needs principal=NAME"):
        producer_config({**base, "enable.sasl.oauthbearer.unsecure.jwt": True})
    assert producer_config({**base, "enable.sasl.oauthbearer.unsecure.jwt": "true",
                            "sasl.oauthbearer.config": "principal=svc lifeSeconds=60"})["sasl.oauthbearer.config"]
