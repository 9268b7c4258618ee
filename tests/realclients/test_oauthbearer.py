"""SASL/OAUTHBEARER with unsecured JWTs over SASL_SSL: each client makes its
own token as its documentation says — librdkafka (kcat, confluent-kafka) from
sasl.oauthbearer.config, kafka-python and aiokafka from a token provider, kafkajs from
oauthBearerProvider, ours from sasl.oauthbearer.config — produces three values and reads them
back as the token's subject; an expired token is refused with Kafka's error challenge. The
cluster runs in real time, so its wall clock follows the system's (emu.wall.clock auto)."""

from __future__ import annotations

import base64
import json
import subprocess
import time

import pytest

from tests.realclients.conftest import require_client, run_node

pytestmark = [pytest.mark.realclient]
SUBJECT = "svc-orders"


def jwt(subject: str = SUBJECT, life_s: float = 3600, issued_s: float | None = None) -> str:
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    now = int(time.time()) if issued_s is None else issued_s   # NumericDate: whole seconds
    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'iat': now, 'exp': now + life_s})}."


@pytest.fixture(scope="module")
def oauth(tmp_path_factory):
    from broker_emu.runtime import run_cluster_in_thread

    config = {"emu.security.protocol": "SASL_SSL", "sasl.enabled.mechanisms": "OAUTHBEARER,SCRAM-SHA-512",
              "emu.tls.dir": str(tmp_path_factory.mktemp("tls")), "group.initial.rebalance.delay.ms": 0}
    with run_cluster_in_thread(brokers=3, topics=[("t", 1, 3)], config=config) as tc:
        tc.ca = tc.cluster.security.tls.ca_path
        yield tc


def principals(tc) -> set[str]:
    return {e.details["principal"] for e in tc.cluster.trace.events
            if e.kind == "sasl" and e.details["step"] == "authenticated"}


def librdkafka_config(tc) -> dict[str, str]:
    return {"bootstrap.servers": tc.bootstrap, "security.protocol": "SASL_SSL", "ssl.ca.location": tc.ca,
            "sasl.mechanisms": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
            "sasl.oauthbearer.config": f"principal={SUBJECT}"}


def test_kcat(oauth):
    require_client("kcat")
    options = [arg for k, v in librdkafka_config(oauth).items() if k != "bootstrap.servers" for arg in ("-X", f"{k}={v}")]
    lines = "".join(f"kcat-oauth-{i}\n" for i in range(3)).encode()
    out = subprocess.run(["kcat", "-b", oauth.bootstrap, *options, "-P", "-t", "t", "-p", "0"], input=lines,
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    read = subprocess.run(["kcat", "-b", oauth.bootstrap, *options, "-C", "-t", "t", "-p", "0", "-o", "beginning", "-e"],
                          capture_output=True, timeout=60)
    assert read.returncode == 0, read.stderr
    assert [v for v in read.stdout.decode().split() if v.startswith("kcat-oauth")] == [f"kcat-oauth-{i}" for i in range(3)]
    assert f"User:{SUBJECT}" in principals(oauth)


def test_confluent_kafka(oauth):
    require_client("confluent-kafka")
    from confluent_kafka import Consumer, Producer, TopicPartition

    p = Producer({**librdkafka_config(oauth), "log_level": 0})
    for i in range(3):
        p.produce("t", f"confluent-oauth-{i}".encode(), partition=0)
    assert p.flush(30) == 0
    # the other way librdkafka takes a token: the application's callback (Kafka's default
    # validator then checks the token's exp and iat against the broker's wall clock)
    c = Consumer({"bootstrap.servers": oauth.bootstrap, "security.protocol": "SASL_SSL", "ssl.ca.location": oauth.ca,
                  "sasl.mechanisms": "OAUTHBEARER", "oauth_cb": lambda _: (jwt("reader"), time.time() + 3600),
                  "group.id": "confluent-oauth", "log_level": 0})
    c.assign([TopicPartition("t", 0, 0)])
    got: list[str] = []
    for _ in range(100):
        m = c.poll(0.3)
        if m is not None and not m.error() and m.value().decode().startswith("confluent-oauth"):
            got.append(m.value().decode())
        if len(got) == 3:
            break
    c.close()
    assert got == [f"confluent-oauth-{i}" for i in range(3)]
    assert {f"User:{SUBJECT}", "User:reader"} <= principals(oauth)


def test_confluent_kafka_expired_token_is_refused_with_the_error_challenge(oauth):
    require_client("confluent-kafka")
    from confluent_kafka import Producer

    errors: list[str] = []
    p = Producer({"bootstrap.servers": oauth.bootstrap, "security.protocol": "SASL_SSL", "ssl.ca.location": oauth.ca,
                  "sasl.mechanisms": "OAUTHBEARER", "log_level": 0, "error_cb": lambda e: errors.append(str(e)),
                  # librdkafka checks only the expiry it is told; the broker checks the token's own exp
                  "oauth_cb": lambda _: (jwt("late", life_s=60, issued_s=time.time() - 120), time.time() + 3600)})
    for _ in range(50):
        p.poll(0.2)
        if errors:
            break
    assert any('{"status":"invalid_token"}' in e for e in errors), errors
    rejected = [e.details for e in oauth.cluster.trace.events if e.kind == "sasl" and e.details["step"] == "token_rejected"]
    assert any("was on or after the Expiration Time" in r["reason"] for r in rejected)


def test_kafka_python(oauth):
    require_client("kafka-python")
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class _Provider(AbstractTokenProvider):
        def token(self) -> str:
            return jwt()

    common = {"bootstrap_servers": oauth.bootstrap, "security_protocol": "SASL_SSL", "ssl_cafile": oauth.ca,
              "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": _Provider()}
    producer = KafkaProducer(acks="all", **common)
    for i in range(3):
        producer.send("t", f"kafka-python-oauth-{i}".encode(), partition=0).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(consumer_timeout_ms=5000, **common)
    consumer.assign([TopicPartition("t", 0)])
    consumer.seek_to_beginning()
    got = [m.value.decode() for m in consumer if m.value.decode().startswith("kafka-python-oauth")]
    consumer.close()
    assert got == [f"kafka-python-oauth-{i}" for i in range(3)]


def test_aiokafka(oauth):
    require_client("aiokafka")
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.abc import AbstractTokenProvider
    from aiokafka.helpers import create_ssl_context

    class Provider(AbstractTokenProvider):
        async def token(self) -> str:
            return jwt()

    async def run() -> list[str]:
        common = {"bootstrap_servers": oauth.bootstrap, "security_protocol": "SASL_SSL",
                  "ssl_context": create_ssl_context(cafile=oauth.ca), "sasl_mechanism": "OAUTHBEARER",
                  "sasl_oauth_token_provider": Provider()}
        producer = AIOKafkaProducer(acks="all", **common)
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait("t", f"aiokafka-oauth-{i}".encode(), partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(**common)
        await consumer.start()
        got: list[str] = []
        try:
            consumer.assign([TopicPartition("t", 0)])
            await consumer.seek_to_beginning()
            while len(got) < 3:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 30)
                got += [m.value.decode() for ms in batch.values() for m in ms if m.value.decode().startswith("aiokafka-oauth")]
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == [f"aiokafka-oauth-{i}" for i in range(3)]


def test_kafkajs(oauth):
    require_client("kafkajs")
    out = run_node("security_kafkajs.js", oauth.bootstrap, oauth.ca, "OAUTHBEARER", SUBJECT, "", timeout=90)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [f"kafkajs-OAUTHBEARER-{i}" for i in range(3)]


def test_our_client(oauth):
    from client import Consumer, Producer

    config = {"bootstrap.servers": oauth.bootstrap, "security.protocol": "SASL_SSL", "ssl.ca.location": oauth.ca,
              "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
              "sasl.oauthbearer.config": "principal=ours-svc lifeSeconds=600"}
    with Producer(config) as p:
        for f in [p.send("t", f"ours-oauth-{i}".encode(), partition=0) for i in range(3)]:
            f.result(timeout=30)
    with Consumer({**config, "auto.offset.reset": "earliest"}) as c:
        c.assign([("t", 0)])
        got: list[str] = []
        for _ in range(50):
            got += [r.value.decode() for r in c.poll(0.5) if r.value.decode().startswith("ours-oauth")]
            if len(got) >= 3:
                break
    assert got == [f"ours-oauth-{i}" for i in range(3)]
    lifetimes = [e.details.get("session_lifetime_ms") for e in oauth.cluster.trace.events
                 if e.kind == "sasl" and e.details.get("principal") == "User:ours-svc"]
    assert lifetimes and all(590_000 <= lt <= 600_000 for lt in lifetimes)   # the token's exp bounds each session
