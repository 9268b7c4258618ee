"""Chaos with our client, in virtual time: producers (client.AsyncProducer) and a consumer
(client.AsyncConsumer) on in-memory connections to an emulated cluster, under trio's MockClock
with autojump, so a run of tens of seconds of faults takes a fraction of a second and is a
function of its seed alone."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Protocol

import trio
import trio.testing

import client
from broker_emu.plants import Plant, arm
from broker_emu.runtime import open_cluster
from conformance.chaos.accounting import Sent, account, judged, record_value
from conformance.chaos.checker import check, judged_anomalies
from conformance.chaos.ctp_load import CTP_TOPIC, WORKERS, ctp_worker
from conformance.chaos.history import History, RecordedConsumer, RecordedProducer
from conformance.chaos.plan import Chaos, make_plan
from conformance.chaos.readback import SeedResult, committed, join
from conformance.chaos.txn_load import TXN_TOPIC, CommittedReader, consume_committed, produce_txns

TOPIC = "chaos"
CLUSTER_CONFIG = {"min.insync.replicas": 2, "replica.lag.time.max.ms": 2000}
PRODUCER_CONFIG = {"acks": "all", "enable.idempotence": True, "linger.ms": 5, "request.timeout.ms": 3000,
                   "delivery.timeout.ms": 120_000, "retry.backoff.ms": 50, "reconnect.backoff.ms": 50,
                   "metadata.max.age.ms": 5000, "socket.connection.setup.timeout.ms": 1000}
CONSUMER_CONFIG = {"auto.offset.reset": "earliest", "enable.auto.commit": False, "request.timeout.ms": 3000,
                   "fetch.max.wait.ms": 200, "metadata.max.age.ms": 5000, "default.api.timeout.ms": 10_000}
TXN_VERSION = "transaction.version"
SETTLE_S = 300.0   # after the chaos: how long (virtual) producers and the consumer get to finish


def run_seed(seed: int, *, duration: float = 8.0, partitions: int = 3, producers: int = 3, interval: float = 0.1,
             acks: str = "all", idempotence: bool = True, txn: bool = False, plant: str = "",
             say: Callable[[str], None] | None = None, progress: Callable[[str], None] | None = None) -> SeedResult:
    """One seed, in its own trio run with a virtual clock (``say`` gets each chaos action; a
    virtual-time seed is too short to need ``progress``). ``txn``: a transactional producer and
    a read_committed consumer too (conformance/chaos/txn_load.py); ``plant``: a planted bug
    (broker_emu/plants.py) in the cluster."""
    wall = time.perf_counter()
    clock = trio.testing.MockClock(autojump_threshold=0)
    settings = {"acks": acks, "enable.idempotence": idempotence}
    options = Options(seed, duration, partitions, producers, interval, settings, txn, plant)
    result = trio.run(_run, options, say, clock=clock)
    result.judged = judged(acks, idempotence)
    result.check = check(result.history)
    result.judged_anomalies = judged_anomalies(acks, idempotence)
    result.wall_s = time.perf_counter() - wall
    return result


class ChaosRun(Protocol):
    """A plan being applied: the emulator's (plan.Chaos) or Apache Kafka's (kafka_faults.KafkaChaos)."""

    async def run(self) -> None: ...

    async def heal_all(self) -> None: ...


@dataclass(frozen=True)
class Options:
    seed: int
    duration: float
    partitions: int
    producers: int
    interval: float
    settings: dict
    txn: bool = False
    plant: str = ""


async def _run(o: Options, say: Callable[[str], None] | None) -> SeedResult:
    # the transactional load runs on transaction version 1: under 2 the zombie's Produce (v12) is
    # refused by the coordinator's verification before the partition's epoch check, the one the
    # fenced-epoch plant skips (ProducerAppendInfo.checkProducerEpoch), so that bug would never show
    config = {**CLUSTER_CONFIG, "emu.seed": o.seed, **({TXN_VERSION: 1} if o.txn else {})}
    topics = [(TOPIC, o.partitions, 3)] + ([(TXN_TOPIC, o.partitions, 3), (CTP_TOPIC, o.partitions, 3)] if o.txn else [])
    async with open_cluster(3, topics=topics, config=config, listen=False) as cluster:
        if o.plant:
            cluster.plant = Plant(o.plant, o.seed)    # Python only: no request or config reaches it
            arm(cluster, cluster.plant, TOPIC)

        async def connect(node: int, host: str, port: int) -> trio.abc.Stream:
            return await cluster.open_connection(node if node >= 0 else -1 - node)   # bootstrap i is broker i

        bootstrap = {"bootstrap.servers": ",".join(f"broker{b}:9092" for b in sorted(cluster.brokers))}
        plan = make_plan(o.seed, TOPIC, o.duration, mean_gap=1.0)   # dense: virtual seconds are cheap
        chaos = Chaos(cluster, plan, say or (lambda line: None))
        sent: list[Sent] = []
        reader, txn_reader = Reader(), CommittedReader()
        start = trio.current_time()
        notes: list[str] = []
        history = History(trio.current_time)    # the virtual clock: a history replays with its seed
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_consume, bootstrap["bootstrap.servers"], connect, o.partitions, reader, history)
            if o.txn:
                nursery.start_soon(consume_committed, {**CONSUMER_CONFIG, **bootstrap}, connect,
                                   [TXN_TOPIC, CTP_TOPIC], o.partitions, txn_reader, history)
            async with trio.open_nursery() as work:
                _start_writers(work, o, chaos, bootstrap, connect, sent, notes, history)
            await _read_to_the_end(cluster, o, reader, txn_reader)
        log = committed(cluster, TOPIC)
        stored, consumer = join(reader.consumed, log)
        result = SeedResult(seed=o.seed, client="ours", accounting=account(sent, stored), consumer=consumer,
                            actions=plan.counts(), seconds=trio.current_time() - start, wall_s=0.0,
                            executed=plan.executed, notes=notes, history=history)
        if cluster.plant is not None:
            result.plant, result.plant_log = o.plant, list(cluster.plant.log)
        return result


def _start_writers(work: trio.Nursery, o: Options, chaos: ChaosRun, bootstrap: dict, connect, sent: list[Sent],
                   notes: list[str], history: History) -> None:
    work.start_soon(_chaos_then_heal, chaos)
    for i in range(o.producers):
        work.start_soon(_produce, i, o.seed, bootstrap["bootstrap.servers"], connect, o.partitions, o.duration,
                        o.interval, o.settings, sent, notes, history)
    if o.txn:   # transactions need acks=all and idempotence, whatever the other producers use
        work.start_soon(produce_txns, o.seed, {**PRODUCER_CONFIG, **bootstrap}, connect, o.partitions, o.duration,
                        o.interval * 2, history, notes)
        for name in WORKERS:   # consume-transform-produce: transactions that read (conformance/chaos/ctp_load.py)
            work.start_soon(ctp_worker, name, o.seed, {**PRODUCER_CONFIG, **bootstrap}, {**CONSUMER_CONFIG, **bootstrap},
                            connect, o.partitions, o.duration, o.interval * 2, history, notes)


async def _read_to_the_end(cluster, o: Options, reader: Reader, txn_reader: CommittedReader) -> None:
    """Once the writers are done and the chaos healed: the consumers read up to every
    partition's end (at most SETTLE_S), then stop."""
    reader.read_up_to({p.index: p.high_watermark for p in cluster.topics[TOPIC].partitions})
    if o.txn:
        txn_reader.ends = {(topic, p.index): p.high_watermark for topic in (TXN_TOPIC, CTP_TOPIC)
                           for p in cluster.topics[topic].partitions}
    with trio.move_on_after(SETTLE_S):
        await reader.reached.wait()
        if o.txn:
            await txn_reader.reached.wait()
    reader.stop.set()
    txn_reader.stop.set()


class Reader:
    """What the consumer read, and whether it has reached the partitions' ends (known once the
    producers are done and the chaos healed)."""

    def __init__(self) -> None:
        self.consumed: dict[tuple[int, int], bytes | None] = {}
        self.ends: dict[int, int] | None = None
        self.reached = trio.Event()
        self.stop = trio.Event()

    def read_up_to(self, ends: dict[int, int]) -> None:
        self.ends = ends
        self.check()

    def check(self) -> None:
        if self.ends is not None and all(self.upto(p) >= end for p, end in self.ends.items()):
            self.reached.set()

    def upto(self, partition: int) -> int:
        """The next offset after the highest record read from ``partition`` (0 if none)."""
        return max((o + 1 for (p, o) in self.consumed if p == partition), default=0)


async def _chaos_then_heal(chaos: ChaosRun) -> None:
    await chaos.run()
    await chaos.heal_all()   # then everything converges: producers finish, the consumer catches up


async def _produce(index: int, seed: int, bootstrap: str, connect, partitions: int, duration: float,
                   interval: float, settings: dict, sent: list[Sent], notes: list[str], history: History) -> None:
    import random

    config = {**PRODUCER_CONFIG, **settings, "bootstrap.servers": bootstrap, "client.id": f"chaos-producer-{index}"}
    async with client.open_producer(config, connect=connect, rng=random.Random(f"{seed}:{index}")) as ours:
        producer = RecordedProducer(ours, history, f"producer-{index}")
        deadline = trio.current_time() + duration
        n = 0
        while trio.current_time() < deadline:
            record = Sent(index, n, n % partitions)
            sent.append(record)
            await producer.send(TOPIC, record_value(index, n), partition=record.partition,
                                on_delivery=_outcome(record))
            n += 1
            await trio.sleep(interval * (1 + index / 2))   # unequal rates: someone writes while others are stuck
        with trio.move_on_after(SETTLE_S):   # every record has its outcome long before (delivery.timeout.ms)
            await producer.flush()
        if any(s.offset is None and s.error is None for s in sent if s.producer == index):
            notes.append(f"producer {index}: records without an outcome after {SETTLE_S:.0f}s of settling")


def _outcome(record: Sent):
    def on_delivery(error, meta) -> None:
        if error is not None:
            record.settle(error=f"{type(error).__name__}: {error}")
        else:
            record.settle(offset=meta.offset)
    return on_delivery


async def _consume(bootstrap: str, connect, partitions: int, reader: Reader, history: History) -> None:
    config = {**CONSUMER_CONFIG, "bootstrap.servers": bootstrap, "client.id": "chaos-consumer"}
    async with client.open_consumer(config, connect=connect) as ours:
        consumer = RecordedConsumer(ours, history, "consumer")
        consumer.assign([client.TopicPartition(TOPIC, p) for p in range(partitions)])
        while not reader.stop.is_set():
            for r in await consumer.poll(0.5):
                reader.consumed[r.partition, r.offset] = r.value
            reader.check()
