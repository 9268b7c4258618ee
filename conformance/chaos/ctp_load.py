"""Consume-transform-produce transactions for ``broker-emu chaos --txn``: two workers (``ctp-a``
and ``ctp-b``), each a transactional producer (a transactional.id of its own) and a
read_committed consumer of the same topic, ``chaos-ctp``, recorded as one process, so a
transaction's polls and its sends are one node of the checker's dependency graph
(conformance/chaos/cycles.py). Without them a history has no transaction that reads: no
write-read edge, so no G1c could ever be seen.

Each transaction sends to two partitions, then polls until it has read a record of the other
worker and ``DWELL_S`` passed (or ``WAIT_S`` did), then sends one more record (what it read "transformed") and
commits, one in ``ABORT_ONE_IN`` aborted. Two workers writing several partitions at once order
their writes one way on one partition and the other way on another: G0, which Kafka allows
(writes are not isolated). What Kafka's read_committed forbids is a transaction reading another's
write before that one committed; a broker that lets it happen (the ``lso-at-high`` plant) makes
the two workers read each other's open writes, a cycle of write-read edges: G1c.
"""

from __future__ import annotations

import random
from contextlib import AsyncExitStack

import trio

import client
from client.errors import KafkaError
from conformance.chaos.history import History, RecordedConsumer, RecordedProducer
from conformance.chaos.txn_load import retried, try_end

CTP_TOPIC = "chaos-ctp"
WORKERS = ("a", "b")
WAIT_S = 1.0                # how long a transaction waits to read the other worker's records
DWELL_S = 0.3               # and at least how long it polls: so the two workers' transactions overlap
ABORT_ONE_IN = 4
MAX_LIVES = 4
READ_CONFIG = {"isolation.level": "read_committed", "enable.auto.commit": False, "auto.offset.reset": "earliest"}


async def ctp_worker(name: str, seed: int, config: dict, consumer_config: dict, connect, partitions: int,
                     duration: float, interval: float, history: History, notes: list[str]) -> None:
    """One worker's transactions until ``duration`` passed. A producer that hits a fatal error is
    replaced with a new life (its own process, ``ctp-a-2``; its consumer reads from the start)."""
    rng = random.Random(f"ctp:{name}:{seed}")
    deadline = trio.current_time() + duration
    other = b"ctp-" + WORKERS[1 - WORKERS.index(name)].encode()
    counter = 0
    for life in range(1, MAX_LIVES + 1):
        process = f"ctp-{name}" + (f"-{life}" if life > 1 else "")
        async with AsyncExitStack() as stack:
            producer, consumer = await _open(stack, process, name, seed, life, config, consumer_config, connect,
                                             partitions, history)
            try:
                await retried(producer.init_transactions)
                while trio.current_time() < deadline:
                    counter = await _transaction(producer, consumer, name, counter, other, rng, partitions, interval)
                return
            except KafkaError as exc:
                notes.append(f"{process}: {type(exc).__name__}: {exc} (replaced)")


async def _open(stack: AsyncExitStack, process: str, name: str, seed: int, life: int, config: dict,
                consumer_config: dict, connect, partitions: int, history: History
                ) -> tuple[RecordedProducer, RecordedConsumer]:
    tid = f"chaos-ctp-{name}"
    ours = await stack.enter_async_context(client.open_producer(
        {**config, "transactional.id": tid, "client.id": process, "max.block.ms": 10_000,
         "transaction.timeout.ms": 30_000}, connect=connect, rng=random.Random(f"{seed}:ctp:{name}:{life}")))
    producer = RecordedProducer(ours, history, process, transactional_id=tid)
    reader = await stack.enter_async_context(client.open_consumer(
        {**consumer_config, **READ_CONFIG, "client.id": f"{process}-reader"}, connect=connect))
    consumer = RecordedConsumer(reader, history, process, isolation="read_committed", in_txn=lambda: producer.txn)
    consumer.assign([client.TopicPartition(CTP_TOPIC, p) for p in range(partitions)])
    return producer, consumer


async def _transaction(producer: RecordedProducer, consumer: RecordedConsumer, name: str, counter: int,
                       other: bytes, rng: random.Random, partitions: int, interval: float) -> int:
    """Send to two partitions, poll until a record of ``other`` and DWELL_S (or WAIT_S), send one more,
    commit (or abort). Returns the worker's value counter."""
    producer.begin_transaction()
    for partition in rng.sample(range(partitions), min(2, partitions)):
        await producer.send(CTP_TOPIC, b"ctp-%s-%d" % (name.encode(), counter), partition=partition)
        counter += 1
    start = trio.current_time()
    give_up, read_other = start + WAIT_S, False
    while trio.current_time() < give_up and not (read_other and trio.current_time() >= start + DWELL_S):
        records = await consumer.poll(min(0.1, max(0.0, give_up - trio.current_time())))
        read_other = read_other or any(r.value is not None and r.value.startswith(other) for r in records)
    await producer.send(CTP_TOPIC, b"ctp-%s-%d" % (name.encode(), counter), partition=rng.randrange(partitions))
    counter += 1
    # jittered, as txn_load's: two ends at one virtual instant are not ordered by a history
    await trio.sleep(interval * rng.uniform(0.2, 0.6))
    if rng.randrange(ABORT_ONE_IN) == 0 or not await try_end(producer.commit_transaction):
        await retried(producer.abort_transaction)
    return counter
