"""The transactional part of a chaos run with our client (``broker-emu chaos --txn``): one
transactional producer writes short transactions to a topic of its own (``chaos-txn``), commits
about two in three and aborts the rest, while a read_committed consumer reads along and commits
its offsets — so a history holds transactions and commits, and the checker can tell an aborted
read (conformance/chaos/checker.py). The records are not in the accounting (which reads the
``chaos`` topic's log): the history alone judges them.

The topic shares the brokers, so broker-level faults (bounce, black hole, lost answers) reach
it; the partition-level ones (leader moves, truncation, stalls) are drawn for ``chaos`` only.
A transaction whose end fails is aborted, a producer that hits a fatal error replaced (its
successor's InitProducerId fences it); once per run a successor fences a producer in the middle
of a transaction, and the fenced one (a zombie) tries to send and commit once more. The history
says which transactions committed, which were aborted, and which ended unknown.
"""

from __future__ import annotations

import random
from contextlib import AsyncExitStack

import trio

import client
from client.errors import KafkaError, TimeoutException
from conformance.chaos.history import History, RecordedConsumer, RecordedProducer

TXN_TOPIC = "chaos-txn"
ABORT_ONE_IN = 3
TXN_ID = "chaos-txn"
TXN_CONFIG = {"transactional.id": TXN_ID, "client.id": "chaos-txn-producer", "max.block.ms": 10_000,
              "transaction.timeout.ms": 30_000}
READER_CONFIG = {"isolation.level": "read_committed", "group.id": "chaos-txn-readers", "client.id": "chaos-txn-reader"}
COMMIT_TIMEOUT_S = 5.0


async def produce_txns(seed: int, config: dict, connect, partitions: int, duration: float, interval: float,
                       history: History, notes: list[str]) -> None:
    """Transactions of 1-4 records, ``interval`` apart, until ``duration`` passed. Each producer
    (a *life*) is its own process in the history (``txn-producer-1``, ``-2`` ...); one
    transaction, drawn per seed, is interrupted by a successor: a new producer with the same
    transactional.id initializes (fencing the first, as a restarted application does), the first,
    now a zombie, tries one more send into its open transaction and its commit — which Kafka
    must refuse — and the successor carries on."""
    rng = random.Random(f"txn:{seed}")
    deadline = trio.current_time() + duration
    run = TxnRun(seed, config, connect, partitions, deadline, interval, history, notes, rng)
    async with AsyncExitStack() as stack:
        run.stack = stack
        producer = await run.new_producer()
        initialized = False
        while trio.current_time() < deadline and run.lives <= MAX_LIVES:
            outcome = await _session(run, producer, initialized)
            if outcome is None:
                return
            producer, initialized = outcome


MAX_LIVES = 5


class TxnRun:
    """What the transactional producers of one run share: the counter of values, the drawn
    transaction a successor interrupts, and the producers opened so far (closed at the end)."""

    def __init__(self, seed: int, config: dict, connect, partitions: int, deadline: float, interval: float,
                 history: History, notes: list[str], rng: random.Random):
        self.seed, self.config, self.connect, self.partitions = seed, config, connect, partitions
        self.deadline, self.interval, self.history, self.notes, self.rng = deadline, interval, history, notes, rng
        self.counter = 0
        self.lives = 0
        self.txns = 0
        self.fence_in: int | None = rng.randint(2, 4)
        self.stack: AsyncExitStack | None = None

    async def new_producer(self) -> RecordedProducer:
        assert self.stack is not None
        self.lives += 1
        ours = await self.stack.enter_async_context(client.open_producer(
            {**self.config, **TXN_CONFIG}, connect=self.connect, rng=random.Random(f"{self.seed}:txn:{self.lives}")))
        return RecordedProducer(ours, self.history, f"txn-producer-{self.lives}",
                                transactional_id=TXN_ID)

    def next_value(self) -> tuple[bytes, int]:
        n = self.counter
        self.counter += 1
        return b"t0-%d" % n, n % self.partitions


async def _session(run: TxnRun, producer: RecordedProducer, initialized: bool
                   ) -> tuple[RecordedProducer, bool] | None:
    """One producer's transactions. None when the run is over; else the producer to go on with
    and whether it is initialized: a successor (after the zombie episode) or a new one (after a
    fatal error: its InitProducerId fences this one)."""
    try:
        if not initialized:
            await retried(producer.init_transactions)
        while trio.current_time() < run.deadline:
            producer.begin_transaction()
            run.txns += 1
            partition = 0
            for _ in range(run.rng.randint(1, 4)):
                value, partition = run.next_value()
                await producer.send(TXN_TOPIC, value, partition=partition)
                # jittered: at round virtual times the commit and a consumer's long poll (fetch.max.wait.ms)
                # would often fall on one instant, and a history cannot order what happened at once
                await trio.sleep(run.interval * run.rng.uniform(0.8, 1.2))
            if run.txns == run.fence_in:
                run.fence_in = None
                return await _fenced_by_a_successor(run, producer, partition), True
            abort = run.rng.randrange(ABORT_ONE_IN) == 0
            if abort or not await try_end(producer.commit_transaction):
                await retried(producer.abort_transaction)
        return None
    except KafkaError as exc:
        run.notes.append(f"{producer.process}: {type(exc).__name__}: {exc} (replaced)")
        return await run.new_producer(), False


async def _fenced_by_a_successor(run: TxnRun, zombie: RecordedProducer, partition: int) -> RecordedProducer:
    """A successor initializes while ``zombie`` is inside a transaction; the zombie then sends
    once more to a partition already in its transaction (so the Produce itself must be fenced,
    not an AddPartitionsToTxn first) and tries to commit. Both must fail (Kafka's zombie fencing:
    ``TransactionCoordinator.handleInitProducerId`` bumps the epoch and aborts the open
    transaction; the partition then refuses the old epoch)."""
    successor = await run.new_producer()
    await retried(successor.init_transactions)
    value, _ = run.next_value()
    try:
        await zombie.send(TXN_TOPIC, value, partition=partition)
        await zombie.flush()
        await try_end(zombie.commit_transaction)
    except KafkaError as exc:
        run.notes.append(f"{zombie.process}: fenced as it should be ({type(exc).__name__})")
    return successor


async def try_end(call) -> bool:
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


async def retried(call) -> None:
    for attempt in range(10):
        try:
            await call()
            return
        except TimeoutException:
            if attempt == 9:
                raise


class CommittedReader:
    """Where the read_committed consumer stands, and whether it reached the partitions' ends
    (by topic and partition: it reads the consume-transform-produce topic too)."""

    def __init__(self) -> None:
        self.ends: dict[tuple[str, int], int] | None = None
        self.reached = trio.Event()
        self.stop = trio.Event()


async def consume_committed(config: dict, connect, topics: list[str], partitions: int, reader: CommittedReader,
                            history: History) -> None:
    """Assigned to every partition of ``topics``, read_committed; commits its positions after each
    poll that returned records (a failed commit is recorded and let be). It reads to the end, so
    every committed write is read by some poll (the checker's lost-write and unseen)."""
    tps = [client.TopicPartition(topic, p) for topic in topics for p in range(partitions)]
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
                    all(pos >= reader.ends[tp.topic, tp.partition] for pos, tp in zip(positions, tps)):
                reader.reached.set()


async def _positions(consumer: RecordedConsumer, tps: list) -> list[int] | None:
    try:
        return [await consumer.position(tp, COMMIT_TIMEOUT_S) for tp in tps]
    except KafkaError:
        return None
