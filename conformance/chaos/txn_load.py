"""The transactional part of a chaos run with our client (``broker-emu chaos --txn``): one
transactional producer writes short transactions to a topic of its own (``chaos-txn``), commits
about two in three and aborts the rest, while a read_committed consumer reads along and commits
its offsets — so a history holds transactions and commits, and the checker can tell an aborted
read (conformance/chaos/checker.py). The records are not in the accounting (which reads the
``chaos`` topic's log): the history alone judges them.

The topic shares the brokers, so broker-level faults (bounce, black hole, lost answers) reach
it; the partition-level ones (leader moves, truncation, stalls) are drawn for ``chaos`` only.
A transaction whose end fails is aborted, a producer that hits a fatal error replaced (its
successor's InitProducerId fences it); the history says which transactions committed, which
were aborted, and which ended unknown.
"""

from __future__ import annotations

import random

import trio

import client
from client.errors import KafkaError, TimeoutException
from conformance.chaos.history import History, RecordedConsumer, RecordedProducer

TXN_TOPIC = "chaos-txn"
ABORT_ONE_IN = 3
TXN_CONFIG = {"transactional.id": "chaos-txn", "client.id": "chaos-txn-producer", "max.block.ms": 10_000,
              "transaction.timeout.ms": 30_000}
READER_CONFIG = {"isolation.level": "read_committed", "group.id": "chaos-txn-readers", "client.id": "chaos-txn-reader"}
COMMIT_TIMEOUT_S = 5.0


async def produce_txns(seed: int, config: dict, connect, partitions: int, duration: float, interval: float,
                       history: History, notes: list[str]) -> None:
    """Transactions of 1-4 records, ``interval`` apart, until ``duration`` passed."""
    rng = random.Random(f"txn:{seed}")
    deadline = trio.current_time() + duration
    counter = [0]
    lives = 0
    while trio.current_time() < deadline and lives < 5:
        lives += 1
        async with client.open_producer({**config, **TXN_CONFIG}, connect=connect,
                                        rng=random.Random(f"{seed}:txn:{lives}")) as ours:
            producer = RecordedProducer(ours, history, "txn-producer")
            if not await _session(producer, rng, counter, partitions, deadline, interval, notes):
                continue   # fatal: a new producer (its InitProducerId fences this one)
            return


async def _session(producer: RecordedProducer, rng: random.Random, counter: list[int], partitions: int,
                   deadline: float, interval: float, notes: list[str]) -> bool:
    """One producer's transactions; False when it hit a fatal error (it can only be closed)."""
    try:
        await _retried(producer.init_transactions)
        while trio.current_time() < deadline:
            producer.begin_transaction()
            for _ in range(rng.randint(1, 4)):
                n = counter[0]
                counter[0] += 1
                await producer.send(TXN_TOPIC, b"t0-%d" % n, partition=n % partitions)
                await trio.sleep(interval)
            abort = rng.randrange(ABORT_ONE_IN) == 0
            if abort or not await _try(producer.commit_transaction):
                await _retried(producer.abort_transaction)
        return True
    except KafkaError as exc:
        notes.append(f"txn-producer: {type(exc).__name__}: {exc} (replaced)")
        return False


async def _try(call) -> bool:
    """The end of a transaction, called again after a timeout (it completes the same end);
    False if it failed otherwise (the transaction must be aborted)."""
    for _ in range(10):
        try:
            await call()
            return True
        except TimeoutException:
            continue
        except KafkaError:
            return False
    return False


async def _retried(call) -> None:
    for attempt in range(10):
        try:
            await call()
            return
        except TimeoutException:
            if attempt == 9:
                raise


class CommittedReader:
    """Where the read_committed consumer stands, and whether it reached the partitions' ends."""

    def __init__(self) -> None:
        self.ends: dict[int, int] | None = None
        self.reached = trio.Event()
        self.stop = trio.Event()


async def consume_committed(config: dict, connect, partitions: int, reader: CommittedReader,
                            history: History) -> None:
    """Assigned to every partition of the topic, read_committed; commits its positions after each
    poll that returned records (a failed commit is recorded and let be)."""
    tps = [client.TopicPartition(TXN_TOPIC, p) for p in range(partitions)]
    async with client.open_consumer({**config, **READER_CONFIG}, connect=connect) as ours:
        consumer = RecordedConsumer(ours, history, "txn-reader", isolation="read_committed")
        consumer.assign(tps)
        while not reader.stop.is_set():
            records = await consumer.poll(0.5)
            positions = await _positions(consumer, tps) if records or reader.ends is not None else None
            if records and positions is not None:
                try:
                    await consumer.commit_sync(dict(zip(tps, positions)), COMMIT_TIMEOUT_S)
                except KafkaError:
                    pass   # recorded (info); the next poll's commit covers it
            if reader.ends is not None and positions is not None and \
                    all(pos >= reader.ends[tp.partition] for pos, tp in zip(positions, tps)):
                reader.reached.set()


async def _positions(consumer: RecordedConsumer, tps: list) -> list[int] | None:
    try:
        return [await consumer.position(tp, COMMIT_TIMEOUT_S) for tp in tps]
    except KafkaError:
        return None
