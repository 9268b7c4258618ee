"""OAUTHBEARER on the wire, emulator against Apache Kafka 4.4 (OAuthBearerSaslServer with its
default OAuthBearerUnsecuredValidatorCallbackHandler): one script of handshakes and tokens — a
good one, an expired one (the error challenge, then the failure), a wrong scheme, a foreign
authorization id, a header without "alg" — run against both, answers compared."""

from __future__ import annotations

import base64
import json
import time

import trio

from broker_emu.runtime import run_cluster_in_thread
from client.sasl import oauthbearer_first, unsecured_jwt
from tests.broker_emu.wire import WireClient

HANDSHAKE, AUTHENTICATE, METADATA = 17, 36, 3
JAAS = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"


def _part(value: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def script(host: str, port: int) -> list:
    """Each step's answer, with the session lifetime rounded to what both can agree on."""

    async def authenticate(first: bytes, *then: bytes) -> list:
        async with await trio.open_tcp_stream(host, port) as stream:
            return await steps(WireClient(stream), first, *then)

    async def steps(w: WireClient, first: bytes, *then: bytes) -> list:
        hs = await w.call(HANDSHAKE, 1, {"mechanism": "OAUTHBEARER"})
        out: list = [("handshake", hs.error_code, list(hs.mechanisms))]
        try:
            for token in (first, *then):
                a = await w.call(AUTHENTICATE, 2, {"auth_bytes": token})
                lifetime = round(a.session_lifetime_ms / 10_000) * 10_000   # 60 s less the round trips
                out.append(("authenticate", a.error_code, a.error_message, bytes(a.auth_bytes), lifetime))
            if out[-1][1] == 0 and not out[-1][3]:
                md = await w.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
                out.append(("metadata", len(md.brokers)))
            else:
                out.append(("closed", await w.closed()))
        except EOFError:
            out.append(("closed without an answer",))
        return out

    async def main() -> list:
        now = int(time.time() * 1000)
        return [
            await authenticate(oauthbearer_first(unsecured_jwt("alice", now, life_s=60))),
            await authenticate(oauthbearer_first(unsecured_jwt("alice", now - 120_000, life_s=60)), b"\x01"),
            await authenticate(oauthbearer_first(unsecured_jwt("alice", now + 60_000, life_s=60)), b"\x01"),
            await authenticate(b"n,,\x01auth=Basic YWxpY2U6cHc=\x01\x01"),
            await authenticate(b"n,,\x01auth=token\x01\x01"),
            await authenticate(b"n,,\x01scheme=Bearer\x01\x01"),
            await authenticate(b"garbage"),
            await authenticate(b"n,a=bob,\x01auth=Bearer " + unsecured_jwt("alice", now).encode() + b"\x01\x01"),
            await authenticate(oauthbearer_first(f"{_part({'typ': 'JWT'})}.{_part({'sub': 'a', 'exp': now / 1000 + 60})}.")),
        ]

    return trio.run(main)


def test_oauthbearer_answers_match_kafka(kafka_factory):
    kafka = kafka_factory(config={"sasl.enabled.mechanisms": "OAUTHBEARER",
                                  "listener.name.client.oauthbearer.sasl.jaas.config": JAAS},
                          client_protocol="SASL_PLAINTEXT")
    host, port = kafka.client_bootstrap.split(",")[0].split(":")
    theirs = script(host, int(port))
    config = {"emu.security.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "OAUTHBEARER"}
    with run_cluster_in_thread(brokers=1, config=config) as tc:
        emu_host, emu_port = tc.bootstrap.split(",")[0].split(":")
        ours = script(emu_host, int(emu_port))
    assert ours == theirs
    # what the script saw, so a change on both sides still shows
    assert theirs[0][1][1:] == (0, "", b"", 60_000) and theirs[1][1][3] == b'{"status":"invalid_token"}'
