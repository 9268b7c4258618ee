"""Several listeners per broker (``emu.extra.listeners``, ``serve --listener A --listener B``), as a
Docker Kafka's internal PLAINTEXT and external SASL_SSL listeners: each client meets the security
of the listener it bootstrapped from, and every answer naming brokers (Metadata, FindCoordinator,
node endpoints) gives that listener's ports — a client that got another listener's ports would
speak TLS to a plaintext port and never connect."""

from __future__ import annotations

import pytest

from tests.realclients.conftest import require_client

pytestmark = [pytest.mark.realclient]
CONFIG = {"emu.extra.listeners": "SASL_SSL", "emu.sasl.users": "alice:alice-secret",
          "group.initial.rebalance.delay.ms": 0}


def test_confluent_kafka_on_two_listeners_of_one_cluster():
    require_client("confluent-kafka")
    from confluent_kafka import Consumer, Producer

    from broker_emu.runtime import run_cluster_in_thread

    with run_cluster_in_thread(brokers=3, topics=[("t", 3, 3)], config=CONFIG) as tc:
        secured = {"bootstrap.servers": tc.cluster.bootstrap_for("SASL_SSL"), "security.protocol": "SASL_SSL",
                   "ssl.ca.location": tc.cluster.security.tls.ca_path, "sasl.mechanisms": "SCRAM-SHA-256",
                   "sasl.username": "alice", "sasl.password": "alice-secret", "log_level": 0}
        plain = {"bootstrap.servers": tc.bootstrap, "log_level": 0}
        for name, config in (("secured", secured), ("plain", plain)):
            p = Producer(config)
            for partition in range(3):
                p.produce("t", f"{name}-{partition}".encode(), partition=partition)
            assert p.flush(30) == 0
        c = Consumer({**secured, "group.id": "two-listeners", "auto.offset.reset": "earliest"})
        c.subscribe(["t"])
        got: set[str] = set()
        for _ in range(100):
            m = c.poll(0.3)
            if m is not None and not m.error():
                got.add(m.value().decode())
            if len(got) == 6:
                break
        c.close()
        ports = tc.call(lambda: {p: sorted(b.listeners[p] for b in tc.cluster.brokers.values()) for p in ("SASL_SSL",)})
        principals = tc.call(lambda: {e.details["principal"] for e in tc.cluster.trace.events
                                      if e.kind == "sasl" and e.details["step"] == "authenticated"})
    assert got == {f"{n}-{p}" for n in ("secured", "plain") for p in range(3)}   # the group's coordinator found too
    assert len(ports["SASL_SSL"]) == 3 and principals == {"User:alice"}


def test_kafka_python_on_the_secured_listener():
    require_client("kafka-python")
    from kafka import KafkaProducer

    from broker_emu.runtime import run_cluster_in_thread

    with run_cluster_in_thread(brokers=3, topics=[("t", 3, 3)], config=CONFIG) as tc:
        producer = KafkaProducer(bootstrap_servers=tc.cluster.bootstrap_for("SASL_SSL"), security_protocol="SASL_SSL",
                                 ssl_cafile=tc.cluster.security.tls.ca_path, sasl_mechanism="SCRAM-SHA-512",
                                 sasl_plain_username="alice", sasl_plain_password="alice-secret", acks="all")
        offsets = [producer.send("t", b"v", partition=p).get(timeout=30).offset for p in range(3)]
        producer.close()
    assert offsets == [0, 0, 0]
