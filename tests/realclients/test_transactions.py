"""Each client's transactional producer against the cluster: one transaction committed (6
records over the 3 partitions of t, and offset 7 of t-0 for a group, through
sendOffsetsToTransaction) and one aborted (6 records written, then aborted; offset 99). A
read_committed consumer then reads exactly the committed records, a read_uncommitted one all 12,
and the group's committed offset is 7. Runs on Kafka too (``--broker kafka``): the same
outcomes there are what makes the emulator's transactions believable."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from tests.realclients.conftest import require_client, run_node

pytestmark = [pytest.mark.realclient, pytest.mark.any_broker]
COMMITTED_OFFSET, ABORTED_OFFSET = 7, 99


def expected(prefix: str, kind: str) -> list[bytes]:
    return sorted(f"{prefix}-{kind}{i}".encode() for i in range(6))


def read_values(bootstrap: str, isolation: str, want: int, timeout: float = 15.0) -> list[bytes]:
    """Every record of t a consumer with ``isolation`` reads from the beginning (it stops
    ``want`` records in, or after a quiet second past that many)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{isolation}", "isolation.level": isolation,
                  "enable.auto.commit": False, "log_level": 0})
    c.assign([TopicPartition("t", p, 0) for p in range(3)])
    got: list[bytes] = []
    deadline, quiet_until = time.monotonic() + timeout, None
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                got.append(m.value())
            if len(got) >= want:
                quiet_until = quiet_until or time.monotonic() + 1.0   # anything more would be a bug
                if time.monotonic() > quiet_until:
                    break
    finally:
        c.close()
    return sorted(got)


def committed_offset(bootstrap: str, group: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed", "log_level": 0})
    try:
        return c.committed([TopicPartition("t", 0)], timeout=10)[0].offset
    finally:
        c.close()


def check(cluster, prefix: str, group: str) -> None:
    assert read_values(cluster.bootstrap, "read_committed", 6) == expected(prefix, "c")
    assert read_values(cluster.bootstrap, "read_uncommitted", 12) == sorted(expected(prefix, "c") + expected(prefix, "a"))
    assert committed_offset(cluster.bootstrap, group) == COMMITTED_OFFSET


def test_confluent_kafka(cluster):
    require_client("confluent-kafka")
    from confluent_kafka import Consumer, Producer, TopicPartition

    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "tx-ck", "log_level": 0})
    p.init_transactions(30)
    meta = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "txn-ck", "log_level": 0})
    for kind, offset in (("c", COMMITTED_OFFSET), ("a", ABORTED_OFFSET)):
        p.begin_transaction()
        for i in range(6):
            p.produce("t", f"ck-{kind}{i}".encode(), partition=i % 3)
        p.send_offsets_to_transaction([TopicPartition("t", 0, offset)], meta.consumer_group_metadata(), 30)
        if kind == "c":
            p.commit_transaction(30)
        else:
            assert p.flush(30) == 0   # librdkafka's abort drops what it has not sent yet
            p.abort_transaction(30)
    meta.close()
    check(cluster, "ck", "txn-ck")


def test_kafka_python(cluster):
    require_client("kafka-python")
    from kafka import KafkaProducer
    from kafka.structs import OffsetAndMetadata, TopicPartition

    p = KafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="tx-kp")
    p.init_transactions()
    for kind, offset in (("c", COMMITTED_OFFSET), ("a", ABORTED_OFFSET)):
        p.begin_transaction()
        for i in range(6):
            p.send("t", f"kp-{kind}{i}".encode(), partition=i % 3)
        p.send_offsets_to_transaction({TopicPartition("t", 0): OffsetAndMetadata(offset, "", -1)}, "txn-kp")
        if kind == "c":
            p.commit_transaction()
        else:
            p.flush()
            p.abort_transaction()
    p.close()
    check(cluster, "kp", "txn-kp")


def test_aiokafka(cluster):
    require_client("aiokafka")
    from aiokafka import AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="tx-aio")
        await p.start()
        try:
            for kind, offset in (("c", COMMITTED_OFFSET), ("a", ABORTED_OFFSET)):
                await p.begin_transaction()
                for i in range(6):
                    await p.send_and_wait("t", f"aio-{kind}{i}".encode(), partition=i % 3)
                await p.send_offsets_to_transaction({TopicPartition("t", 0): offset}, "txn-aio")
                await (p.commit_transaction() if kind == "c" else p.abort_transaction())
        finally:
            await p.stop()

    asyncio.run(run())
    check(cluster, "aio", "txn-aio")


def test_kafkajs(cluster):
    require_client("kafkajs")
    done = run_node("txn_kafkajs.js", cluster.bootstrap, "t", "txn-js", "js", timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"done": True}
    check(cluster, "js", "txn-js")


def test_ours_blocking(cluster):
    from client import Producer

    with Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "tx-ours"}) as p:
        p.init_transactions(30)
        for kind, offset in (("c", COMMITTED_OFFSET), ("a", ABORTED_OFFSET)):
            p.begin_transaction()
            sent = [p.send("t", f"ours-{kind}{i}".encode(), partition=i % 3) for i in range(6)]
            p.send_offsets_to_transaction({("t", 0): offset}, "txn-ours", 30)
            if kind == "c":
                p.commit_transaction(30)
            else:
                for f in sent:
                    f.result(30)
                p.abort_transaction(30)
    check(cluster, "ours", "txn-ours")


def test_our_consumer_reads_committed(cluster):
    """Our consumer, read_committed, reads what confluent-kafka's transactions committed."""
    require_client("confluent-kafka")
    from confluent_kafka import Producer

    from client import Consumer

    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "tx-ck2", "log_level": 0})
    p.init_transactions(30)
    for kind in ("c", "a"):
        p.begin_transaction()
        for i in range(6):
            p.produce("t", f"ck2-{kind}{i}".encode(), partition=i % 3)
        assert p.flush(30) == 0
        p.commit_transaction(30) if kind == "c" else p.abort_transaction(30)
    for isolation, want in (("read_committed", expected("ck2", "c")),
                            ("read_uncommitted", sorted(expected("ck2", "c") + expected("ck2", "a")))):
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "auto.offset.reset": "earliest", "isolation.level": isolation})
        try:
            c.assign([("t", p) for p in range(3)])
            got: list[bytes] = []
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and len(got) < len(want):
                got += [r.value for r in c.poll(0.2)]
            got += [r.value for r in c.poll(0.5)]   # and nothing more
        finally:
            c.close()
        assert sorted(got) == want, isolation


def test_java(cluster):
    """Apache Kafka's Java client 4.4 (the conformance adapter's program, its txn_commit_abort)."""
    import os

    from conformance.adapters.base import RunEnv
    from conformance.adapters.java_client import JavaAdapter
    from conformance.model import Operation

    java = JavaAdapter()
    ok, why = java.available()
    if not ok:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    try:
        (done,) = java.run_blocking((Operation("txn_commit_abort", {"topic": "t", "prefix": "java", "group": "txn-java"}, 60.0),),
                                    RunEnv(cluster.bootstrap, "java-txn", {}, 1.0))
    finally:
        java.shutdown()
    assert done.ok, f"{done.error_type}: {done.error_message}"
    check(cluster, "java", "txn-java")
