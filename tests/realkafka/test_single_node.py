"""One Apache Kafka node: a record produced with acks=all is read back by our client and by
confluent-kafka, byte for byte, at the same offsets."""

from __future__ import annotations

import time

import pytest

import client
from conformance.realkafka import wire
from tests.realclients.conftest import require_client

pytestmark = pytest.mark.realkafka

SENT = [(b"k%d" % i, b"value-%d-" % i + b"x" * (i * 31)) for i in range(20)]


def _produce_with_ours(bootstrap: str, topic: str) -> list[int]:
    with client.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5}) as p:
        futures = [p.send(topic, value, key=key, partition=0) for key, value in SENT]
        return [f.result(30).offset for f in futures]


def _read_with_ours(bootstrap: str, topic: str, want: int) -> list:
    with client.Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as c:
        c.assign([(topic, 0)])
        records: list = []
        deadline = time.time() + 30
        while len(records) < want and time.time() < deadline:
            records += c.poll(0.5)
    return records


def test_metadata_lists_the_one_broker(kafka1):
    node = kafka1.nodes[0]
    meta = wire.metadata("127.0.0.1", node.ports.broker_port, [])
    assert [(b.node_id, b.host, b.port) for b in meta.brokers] == [(1, "127.0.0.1", node.ports.broker_port)]
    assert meta.cluster_id == kafka1.cluster_id
    assert kafka1.startup_seconds is not None and kafka1.startup_seconds < 120


def test_acks_all_read_back_by_our_client(kafka1):
    kafka1.create_topic("ours-acks-all")
    offsets = _produce_with_ours(kafka1.bootstrap, "ours-acks-all")
    assert offsets == list(range(len(SENT)))
    records = _read_with_ours(kafka1.bootstrap, "ours-acks-all", len(SENT))
    assert [(r.key, r.value) for r in records] == SENT
    assert [r.offset for r in records] == offsets


def test_acks_all_read_back_by_confluent_kafka(kafka1):
    require_client("confluent-kafka")
    from confluent_kafka import Consumer, Producer

    kafka1.create_topic("confluent-acks-all")
    p = Producer({"bootstrap.servers": kafka1.bootstrap, "acks": "all", "linger.ms": 5})
    for key, value in SENT:
        p.produce("confluent-acks-all", value=value, key=key, partition=0)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": kafka1.bootstrap, "group.id": "realkafka-readback",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe(["confluent-acks-all"])
        got: list = []
        deadline = time.time() + 30
        while len(got) < len(SENT) and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append((m.key(), m.value(), m.offset()))
    finally:
        c.close()
    assert got == [(k, v, i) for i, (k, v) in enumerate(SENT)]
    # and our client reads what confluent-kafka wrote
    assert [(r.key, r.value) for r in _read_with_ours(kafka1.bootstrap, "confluent-acks-all", len(SENT))] == SENT
