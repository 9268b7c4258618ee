"""confluent-kafka, kafka-python and aiokafka against `broker-emu` on 3 brokers: acks=all
produce, read back by assign, group consumption with commits and a second member taking over,
earliest/latest/by-timestamp offsets, and a 900 KB message."""

import asyncio
import time

import pytest

from tests.realclients.conftest import require_client

pytestmark = [pytest.mark.realclient, pytest.mark.any_broker]   # passes on kfake too (--broker kfake)
BIG = b"B" * 900_000


def _leader_log_sizes(cluster):
    return cluster.call(lambda: {p.index: p.log_end_offset for p in cluster.cluster.topics["t"].partitions})


def test_confluent_kafka(cluster):
    require_client("confluent-kafka")
    from confluent_kafka import Consumer, Producer, TopicPartition

    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 2, "compression.type": "lz4",
                  "message.max.bytes": 1_000_000})
    reports = []
    for i in range(30):
        p.produce("t", value=b"m%d" % i, key=b"k%d" % i, timestamp=1_000 + i,
                  on_delivery=lambda err, msg: reports.append((err, msg.partition(), msg.offset())))
    p.produce("t", value=BIG, partition=0, timestamp=5_000, on_delivery=lambda err, msg: reports.append((err, msg.partition(), msg.offset())))
    assert p.flush(20) == 0
    assert len(reports) == 31 and all(err is None for err, _, _ in reports)
    assert sum(_leader_log_sizes(cluster).values()) == 31

    # read back partition 0 by assign
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "reader", "enable.auto.commit": False,
                  "fetch.message.max.bytes": 1_048_576})
    c.assign([TopicPartition("t", 0, 0)])
    values = _poll_values(c, _leader_log_sizes(cluster)[0])
    assert BIG in values
    low, high = c.get_watermark_offsets(TopicPartition("t", 0), timeout=5)
    assert (low, high) == (0, _leader_log_sizes(cluster)[0])
    by_time = c.offsets_for_times([TopicPartition("t", 0, 5_000)], timeout=5)[0]
    assert by_time.offset == high - 1  # the big message was the last one, at timestamp 5000
    c.close()

    # group: A consumes and commits, leaves; B takes over from the commits
    a = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    a.subscribe(["t"])
    got_a = _poll_values(a, 31)
    a.commit(asynchronous=False)
    a.close()
    for i in range(5):
        p.produce("t", value=b"after%d" % i)
    p.flush(10)
    b = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g", "auto.offset.reset": "earliest", "enable.auto.commit": False})
    b.subscribe(["t"])
    got_b = _poll_values(b, 5)
    b.close()
    assert len(got_a) == 31 and sorted(got_b) == [b"after%d" % i for i in range(5)]


def _poll_values(consumer, n, seconds=30):
    values, deadline = [], time.time() + seconds
    while len(values) < n and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            values.append(m.value())
    return values


def test_kafka_python(cluster):
    require_client("kafka-python")
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    p = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", compression_type="gzip", max_request_size=1_000_000)
    futures = [p.send("t", b"m%d" % i, timestamp_ms=1_000 + i) for i in range(20)]
    futures.append(p.send("t", BIG, partition=1, timestamp_ms=9_000))
    assert all(f.get(20).offset >= 0 for f in futures)
    c = KafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000, fetch_max_bytes=2_000_000)
    c.assign([TopicPartition("t", 1)])
    c.seek_to_beginning()
    values = [m.value for m in c]
    assert BIG in values
    end = c.end_offsets([TopicPartition("t", 1)])[TopicPartition("t", 1)]
    assert c.beginning_offsets([TopicPartition("t", 1)])[TopicPartition("t", 1)] == 0 and end == len(values)
    assert c.offsets_for_times({TopicPartition("t", 1): 9_000})[TopicPartition("t", 1)].offset == end - 1
    c.close()
    a = KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="kg", auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=4000, fetch_max_bytes=2_000_000)
    got_a = [m.value for m in a]
    a.commit()
    a.close()
    for i in range(3):
        p.send("t", b"after%d" % i).get(10)
    b = KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="kg", auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=4000)
    got_b = [m.value for m in b]
    b.close()
    p.close()
    assert len(got_a) == 21 and sorted(got_b) == [b"after0", b"after1", b"after2"]


def test_aiokafka(cluster):
    require_client("aiokafka")
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    async def main():
        p = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", compression_type="snappy", max_request_size=1_000_000)
        await p.start()
        for i in range(10):
            await p.send_and_wait("t", b"m%d" % i, partition=2, timestamp_ms=1_000 + i)
        await p.send_and_wait("t", BIG, partition=2, timestamp_ms=7_000)
        tp = TopicPartition("t", 2)
        c = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False, max_partition_fetch_bytes=1_000_000)
        await c.start()
        c.assign([tp])
        await c.seek_to_beginning(tp)
        values = []
        async with asyncio.timeout(20):
            while len(values) < 11:
                for msgs in (await c.getmany(timeout_ms=500)).values():
                    values += [m.value for m in msgs]
        assert values[-1] == BIG
        assert (await c.end_offsets([tp]))[tp] == 11 and (await c.beginning_offsets([tp]))[tp] == 0
        assert (await c.offsets_for_times({tp: 7_000}))[tp].offset == 10
        await c.stop()
        a = AIOKafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="ag", auto_offset_reset="earliest", enable_auto_commit=False)
        await a.start()
        got_a = []
        async with asyncio.timeout(20):
            while len(got_a) < 11:
                for msgs in (await a.getmany(timeout_ms=500)).values():
                    got_a += msgs
        await a.commit()
        await a.stop()
        for i in range(3):
            await p.send_and_wait("t", b"after%d" % i)
        b = AIOKafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="ag", auto_offset_reset="earliest", enable_auto_commit=False)
        await b.start()
        got_b = []
        async with asyncio.timeout(20):
            while len(got_b) < 3:
                for msgs in (await b.getmany(timeout_ms=500)).values():
                    got_b += [m.value for m in msgs]
        await b.stop()
        await p.stop()
        assert sorted(got_b) == [b"after0", b"after1", b"after2"]

    asyncio.run(main())
