"""Our consumer with real clients over loopback TCP (real time, short timeouts): it reads what
confluent-kafka produced with every codec, and shares a consumer group with kafka-python —
each side's assignor and protocol metadata must make sense to the other."""

import time

import pytest

import client
from tests.realclients.conftest import require_client

pytestmark = [pytest.mark.realclient, pytest.mark.any_broker]   # passes on kfake too (--broker kfake)
FAST = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 300, "auto.offset.reset": "earliest"}


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_our_consumer_reads_what_confluent_kafka_produced(cluster, codec):
    require_client("confluent-kafka")
    from confluent_kafka import Producer

    topic = f"codec-{codec}"
    cluster.call(lambda: cluster.cluster.create_topic(topic, 1, 3))
    p = Producer({"bootstrap.servers": cluster.bootstrap, "compression.type": codec, "linger.ms": 20})
    sent = [(b"k%d" % i, b"value-%d-" % i + b"x" * (i * 37)) for i in range(50)]
    for key, value in sent:
        p.produce(topic, value=value, key=key, partition=0, headers=[("h", b"%d" % len(value))])
    assert p.flush(20) == 0
    with client.Consumer({"bootstrap.servers": cluster.bootstrap, "auto.offset.reset": "earliest"}) as c:
        c.assign([(topic, 0)])
        records, deadline = [], time.time() + 20
        while len(records) < len(sent) and time.time() < deadline:
            records += c.poll(0.5)
    assert [(r.key, r.value) for r in records] == sent
    assert [r.offset for r in records] == list(range(len(sent)))
    assert all(r.headers == (("h", b"%d" % len(r.value)),) for r in records)


def test_our_consumer_shares_a_group_with_kafka_python(cluster):
    require_client("kafka-python")
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap)
    for i in range(30):
        producer.send("t", b"m%d" % i, partition=i % 3)
    producer.flush(20)
    producer.close()

    ours = client.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "mixed", **FAST,
                            "partition.assignment.strategy": "range"})
    ours.subscribe(["t"])
    theirs = KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="mixed", auto_offset_reset="earliest",
                           enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=300)
    got_ours, got_theirs = [], []
    deadline = time.time() + 40
    while time.time() < deadline:
        got_ours += ours.poll(0.2)
        for batch in theirs.poll(timeout_ms=200).values():
            got_theirs += batch
        mine, others = set(ours.assignment()), {(tp.topic, tp.partition) for tp in theirs.assignment()}
        if len(mine) + len(others) == 3 and mine and others and not mine & others and \
                len(got_ours) + len(got_theirs) >= 30:
            break
    mine, others = set(ours.assignment()), {(tp.topic, tp.partition) for tp in theirs.assignment()}
    assert mine and others and not mine & others and len(mine | others) == 3, (mine, others)
    values = {r.value for r in got_ours} | {r.value for r in got_theirs}
    assert values == {b"m%d" % i for i in range(30)}
    ours.commit_sync(timeout=5)
    theirs.commit()

    # kafka-python leaves; ours takes every partition over
    theirs.close()
    deadline = time.time() + 30
    while len(ours.assignment()) < 3 and time.time() < deadline:
        ours.poll(0.2)
    assert sorted(ours.assignment()) == [("t", 0), ("t", 1), ("t", 2)]
    ours.close()
