"""A real client negotiating down under an old version profile: confluent-kafka
produces and consumes against the emulator as Kafka 4.4 and as a Kafka 2.8 broker; under 2.8 it
uses only what 2.8 advertised, and the versions it picks differ from the ones it uses today."""

from __future__ import annotations

import pytest

from tests.realclients.conftest import require_client

pytestmark = [pytest.mark.realclient]


def versions_used(release: str) -> dict[str, int]:
    from confluent_kafka import Consumer, Producer, TopicPartition

    from broker_emu.runtime import run_cluster_in_thread

    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)], config={"emu.kafka.version": release}) as tc:
        p = Producer({"bootstrap.servers": tc.bootstrap, "log_level": 0})
        p.produce("t", b"v", partition=0)
        assert p.flush(20) == 0
        c = Consumer({"bootstrap.servers": tc.bootstrap, "group.id": "g", "log_level": 0})
        c.assign([TopicPartition("t", 0, 0)])
        got = None
        for _ in range(40):
            got = c.poll(0.5)
            if got is not None and not got.error():
                break
        c.close()
        assert got is not None and got.value() == b"v"
        events = tc.call(lambda: [(e.api, e.api_version) for e in tc.cluster.trace.events if e.kind == "recv"])
    used: dict[str, int] = {}
    for api, version in events:
        used[api] = max(used.get(api, -1), version)
    return used


def test_confluent_kafka_negotiates_down_to_kafka_2_8():
    require_client("confluent-kafka")
    today, old = versions_used(""), versions_used("2.8")
    assert old["Produce"] <= 9 and old["Fetch"] <= 12 and old["Metadata"] <= 11 and old["ApiVersions"] <= 3
    assert (today["Produce"], today["Fetch"]) != (old["Produce"], old["Fetch"]), (today, old)


@pytest.mark.parametrize("api_version, magic", [((0, 10, 1), 1), ((0, 9), 0)])
def test_kafka_python_writing_old_message_formats(api_version, magic):
    """kafka-python told the broker is 0.10.1 (0.9) sends Produce v2 (v0) with magic 1 (0)
    message sets: a 3.6 broker converts and stores them, read back by a current consumer; a 4.x
    broker (the emulator without a profile) closes the connection, as Kafka 4.4 did to the same
    producer."""
    require_client("kafka-python")
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.errors import KafkaError

    from broker_emu.runtime import run_cluster_in_thread

    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)], config={"emu.kafka.version": "3.6"}) as tc:
        producer = KafkaProducer(bootstrap_servers=tc.bootstrap, api_version=api_version, acks=1)
        sent = [producer.send("t", f"m{magic}-{i}".encode(), key=b"k", partition=0).get(timeout=20) for i in range(3)]
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=tc.bootstrap, consumer_timeout_ms=3000)
        consumer.assign([TopicPartition("t", 0)])
        consumer.seek_to_beginning()
        got = [(m.offset, m.key, m.value, m.timestamp) for m in consumer]
        consumer.close()
    assert [s.offset for s in sent] == [0, 1, 2]
    assert [g[:3] for g in got] == [(i, b"k", f"m{magic}-{i}".encode()) for i in range(3)]
    # magic 1 carries the producer's CreateTime; magic 0 none (NO_TIMESTAMP)
    assert all((g[3] > 1_700_000_000_000) if magic == 1 else g[3] == -1 for g in got), got
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        producer = KafkaProducer(bootstrap_servers=tc.bootstrap, api_version=api_version, acks=1, retries=0,
                                 request_timeout_ms=5000)
        with pytest.raises(KafkaError):
            producer.send("t", b"x", partition=0).get(timeout=20)
        producer.close(timeout=2)
        closes = [e.details.get("reason", "") for e in tc.cluster.trace.events if e.kind == "conn_close"]
        assert any("not served by Kafka 4.x" in c for c in closes), closes
