"""The transaction steps of the corpus sessions (python_clients.py): each client's transactional
producer commits one transaction with a group's offsets and aborts one, a read_committed consumer
reads them back, and kafka-python's admin lists and describes transactions and producers."""

from __future__ import annotations

import time
from typing import Any

TOPIC, GROUP, WAIT_S = "t", "txn-group", 8


def confluent(ck, base: dict) -> None:
    p = ck.Producer({**base, "transactional.id": "corpus-ck-tx", "linger.ms": 5})
    p.init_transactions(WAIT_S)
    meta = ck.Consumer({**base, "group.id": GROUP})
    for commit in (True, False):
        p.begin_transaction()
        p.produce(TOPIC, b"txn", partition=0)
        p.send_offsets_to_transaction([ck.TopicPartition(TOPIC, 0, 1)], meta.consumer_group_metadata(), WAIT_S)
        p.flush(WAIT_S)
        p.commit_transaction(WAIT_S) if commit else p.abort_transaction(WAIT_S)
    meta.close()
    c = ck.Consumer({**base, "group.id": GROUP, "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    c.subscribe([TOPIC])
    _until(lambda: c.poll(0.2) is not None)
    c.close()


def kafka_python(kafka, base: dict) -> None:
    from kafka.structs import OffsetAndMetadata, TopicPartition

    p = kafka.KafkaProducer(**base, transactional_id="corpus-kp-tx")
    p.init_transactions()
    for commit in (True, False):
        p.begin_transaction()
        p.send(TOPIC, b"txn", partition=0)
        p.send_offsets_to_transaction({TopicPartition(TOPIC, 0): OffsetAndMetadata(1, "", -1)}, GROUP)
        p.flush()
        p.commit_transaction() if commit else p.abort_transaction()
    p.close()
    c = kafka.KafkaConsumer(TOPIC, **base, group_id=GROUP, isolation_level="read_committed", auto_offset_reset="earliest")
    _until(lambda: bool(c.poll(200)))
    c.close()


def kafka_python_admin(kafka, base: dict) -> None:
    admin = kafka.KafkaAdminClient(**base)
    admin.list_transactions()
    admin.describe_transactions(["corpus-kp-tx"])
    admin.describe_producers([kafka.TopicPartition(TOPIC, 0)])
    admin.close()


async def aiokafka(ak, base: dict) -> None:
    from aiokafka.structs import TopicPartition

    p = ak.AIOKafkaProducer(**base, transactional_id="corpus-ak-tx")
    await p.start()
    try:
        for commit in (True, False):
            await p.begin_transaction()
            await p.send_and_wait(TOPIC, b"txn", partition=0)
            await p.send_offsets_to_transaction({TopicPartition(TOPIC, 0): 1}, GROUP)
            await (p.commit_transaction() if commit else p.abort_transaction())
    finally:
        await p.stop()
    c = ak.AIOKafkaConsumer(TOPIC, **base, group_id=GROUP, isolation_level="read_committed", auto_offset_reset="earliest")
    await c.start()
    try:
        await c.getmany(timeout_ms=2000)
    finally:
        await c.stop()


def ours(client, base: dict) -> None:
    with client.Producer({**base, "transactional.id": "corpus-ours-tx", "linger.ms": 5}) as p:
        p.init_transactions(WAIT_S)
        for commit in (True, False):
            p.begin_transaction()
            p.send(TOPIC, b"txn", partition=0).result(WAIT_S)
            p.send_offsets_to_transaction({(TOPIC, 0): 1}, GROUP, WAIT_S)
            p.commit_transaction(WAIT_S) if commit else p.abort_transaction(WAIT_S)
    c = client.Consumer({**base, "group.id": GROUP, "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    try:
        c.assign([(TOPIC, 0)])
        c.committed([(TOPIC, 0)], timeout=WAIT_S)
        _until(lambda: bool(c.poll(0.2)))
    finally:
        c.close()


def _until(done: Any, limit_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and not done():
        pass
