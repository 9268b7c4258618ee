"""Every client over the emulator's secured listeners: SASL_SSL with
SCRAM-SHA-512, SSL, and SSL with client certificates (mutual TLS, ssl.client.auth=required) —
kcat, confluent-kafka, kafka-python, aiokafka, kafkajs and ours each produce three values and
read them back, and a wrong password is refused with Kafka's message."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.realclients.conftest import require_client, run_node

pytestmark = [pytest.mark.realclient]
USER, PASSWORD = "alice", "alice-secret"


@pytest.fixture(scope="module", params=["SASL_SSL", "SSL", "mTLS"])
def secured(request, tmp_path_factory):
    from broker_emu.runtime import run_cluster_in_thread

    mutual = request.param == "mTLS"
    config = {"emu.security.protocol": "SSL" if mutual else request.param, "emu.sasl.users": f"{USER}:{PASSWORD}",
              "emu.tls.dir": str(tmp_path_factory.mktemp("tls")), "group.initial.rebalance.delay.ms": 0}
    if mutual:   # a client without a certificate is refused in the handshake: each test proves it sent one
        config.update({"ssl.client.auth": "required", "emu.tls.client.certs": USER})
    with run_cluster_in_thread(brokers=3, topics=[("t", 1, 3)], config=config) as tc:
        tc.protocol = "SSL" if mutual else request.param
        tc.ca = tc.cluster.security.tls.ca_path
        tc.cert, tc.key = tc.cluster.security.tls.client_paths[USER] if mutual else ("", "")
        yield tc


def librdkafka_config(secured, password: str = PASSWORD) -> dict[str, str]:
    config = {"bootstrap.servers": secured.bootstrap, "security.protocol": secured.protocol,
              "ssl.ca.location": secured.ca}
    if secured.protocol == "SASL_SSL":
        config.update({"sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": USER, "sasl.password": password})
    if secured.cert:
        config.update({"ssl.certificate.location": secured.cert, "ssl.key.location": secured.key})
    return config


def test_kcat(secured):
    require_client("kcat")
    options = [arg for k, v in librdkafka_config(secured).items() if k != "bootstrap.servers" for arg in ("-X", f"{k}={v}")]
    tag = f"kcat-{secured.protocol}"
    lines = "".join(f"{tag}-{i}\n" for i in range(3)).encode()
    out = subprocess.run(["kcat", "-b", secured.bootstrap, *options, "-P", "-t", "t", "-p", "0"], input=lines,
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    read = subprocess.run(["kcat", "-b", secured.bootstrap, *options, "-C", "-t", "t", "-p", "0", "-o", "beginning", "-e"],
                          capture_output=True, timeout=60)
    assert read.returncode == 0, read.stderr
    assert [v for v in read.stdout.decode().split() if v.startswith(tag)] == [f"{tag}-{i}" for i in range(3)]


def test_confluent_kafka(secured):
    require_client("confluent-kafka")
    from confluent_kafka import Consumer, Producer, TopicPartition

    tag = f"confluent-{secured.protocol}"
    p = Producer({**librdkafka_config(secured), "log_level": 0})
    for i in range(3):
        p.produce("t", f"{tag}-{i}".encode(), partition=0)
    assert p.flush(30) == 0
    c = Consumer({**librdkafka_config(secured), "group.id": tag, "log_level": 0})
    c.assign([TopicPartition("t", 0, 0)])
    got: list[str] = []
    for _ in range(100):
        m = c.poll(0.3)
        if m is not None and not m.error() and m.value().decode().startswith(tag):
            got.append(m.value().decode())
        if len(got) == 3:
            break
    c.close()
    assert got == [f"{tag}-{i}" for i in range(3)]


def test_confluent_kafka_wrong_password_is_refused(tmp_path):
    require_client("confluent-kafka")
    from confluent_kafka import Producer

    from broker_emu.runtime import run_cluster_in_thread

    config = {"emu.security.protocol": "SASL_SSL", "emu.sasl.users": f"{USER}:{PASSWORD}", "emu.tls.dir": str(tmp_path)}
    with run_cluster_in_thread(brokers=1, config=config) as tc:
        tc.protocol, tc.ca, tc.cert = "SASL_SSL", tc.cluster.security.tls.ca_path, ""
        errors: list[str] = []
        p = Producer({**librdkafka_config(tc, "wrong"), "log_level": 0, "error_cb": lambda e: errors.append(str(e))})
        for _ in range(50):
            p.poll(0.2)
            if errors:
                break
        failed = [e for e in tc.cluster.trace.events if e.kind == "sasl" and e.details["step"] == "failed"]
    assert any("invalid credentials with SASL mechanism SCRAM-SHA-512" in e for e in errors), errors
    assert failed and failed[0].details["reason"] == "Invalid client credentials"   # ScramSaslServer's own words


def test_kafka_python(secured):
    require_client("kafka-python")
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    common = {"bootstrap_servers": secured.bootstrap, "security_protocol": secured.protocol, "ssl_cafile": secured.ca}
    if secured.cert:
        common.update(ssl_certfile=secured.cert, ssl_keyfile=secured.key)
    if secured.protocol == "SASL_SSL":
        common.update(sasl_mechanism="SCRAM-SHA-512", sasl_plain_username=USER, sasl_plain_password=PASSWORD)
    tag = f"kafka-python-{secured.protocol}"
    producer = KafkaProducer(acks="all", **common)
    for i in range(3):
        producer.send("t", f"{tag}-{i}".encode(), partition=0).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(consumer_timeout_ms=5000, **common)
    consumer.assign([TopicPartition("t", 0)])
    consumer.seek_to_beginning()
    got = [m.value.decode() for m in consumer if m.value.decode().startswith(tag)]
    consumer.close()
    assert got == [f"{tag}-{i}" for i in range(3)]


def test_aiokafka(secured):
    require_client("aiokafka")
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.helpers import create_ssl_context

    tag = f"aiokafka-{secured.protocol}"

    async def run() -> list[str]:
        common = {"bootstrap_servers": secured.bootstrap, "security_protocol": secured.protocol,
                  "ssl_context": create_ssl_context(cafile=secured.ca, certfile=secured.cert or None,
                                                    keyfile=secured.key or None)}
        if secured.protocol == "SASL_SSL":
            common.update(sasl_mechanism="SCRAM-SHA-512", sasl_plain_username=USER, sasl_plain_password=PASSWORD)
        producer = AIOKafkaProducer(acks="all", **common)
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait("t", f"{tag}-{i}".encode(), partition=0)
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
                got += [m.value.decode() for ms in batch.values() for m in ms if m.value.decode().startswith(tag)]
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == [f"{tag}-{i}" for i in range(3)]


def test_kafkajs(secured):
    require_client("kafkajs")
    mechanism = "SCRAM-SHA-512" if secured.protocol == "SASL_SSL" else "ssl"
    out = run_node("security_kafkajs.js", secured.bootstrap, secured.ca, mechanism, USER, PASSWORD,
                   *((secured.cert, secured.key) if secured.cert else ()), timeout=90)
    assert out.returncode == 0, out.stderr[-2000:]
    tag = f"kafkajs-{mechanism}"
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [f"{tag}-{i}" for i in range(3)]


def test_our_client(secured):
    from client import Consumer, Producer

    config = {"bootstrap.servers": secured.bootstrap, "security.protocol": secured.protocol, "ssl.ca.location": secured.ca,
              "ssl.certificate.location": secured.cert, "ssl.key.location": secured.key}
    if secured.protocol == "SASL_SSL":
        config.update({"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": USER, "sasl.password": PASSWORD})
    tag = f"ours-{secured.protocol}"
    with Producer(config) as p:
        futures = [p.send("t", f"{tag}-{i}".encode(), partition=0) for i in range(3)]
        for f in futures:
            f.result(timeout=30)
    with Consumer({**config, "auto.offset.reset": "earliest"}) as c:
        c.assign([("t", 0)])
        got: list[str] = []
        for _ in range(50):
            got += [r.value.decode() for r in c.poll(0.5) if r.value.decode().startswith(tag)]
            if len(got) >= 3:
                break
    assert got == [f"{tag}-{i}" for i in range(3)]
