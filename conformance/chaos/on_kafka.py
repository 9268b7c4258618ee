"""Chaos with our client against Apache Kafka 4.4 (``broker-emu chaos --broker kafka``): the same
producers, consumer, transactional load, history and checker as the virtual-time run
(conformance/chaos/ours.py), in real time over TCP, with a 3-node Kafka
(conformance/realkafka) behind our proxy (broker_emu/proxy) and the part of the chaos plan a
real cluster can be given (conformance/chaos/kafka_faults.py).

Each seed gets a cluster of its own (formatted, started, stopped), as a Jepsen test does: a seed
that killed a node cannot leave the next one a cluster still recovering. The clients reach
Kafka only through the proxy, whose wire faults they meet; the operator's calls (the admin's
reassignments and elections, the final read-back of the logs) go straight to Kafka. What the
logs hold at the end is read with plain Fetch requests (conformance/chaos/kafka_readback.py),
with each batch's producer id and epoch, and the accounting and the consumer check compare
against that, as they compare against the emulator's logs.
"""

from __future__ import annotations

import contextlib
import time
from typing import Callable, Iterator

import trio

import client
from broker_emu.proxy.proxy import open_proxy
from conformance.chaos.accounting import Sent, Stored, account, judged
from conformance.chaos.checker import check, judged_anomalies
from conformance.chaos.ctp_load import CTP_TOPIC
from conformance.chaos.history import History
from conformance.chaos.kafka_faults import KAFKA_KINDS, KafkaChaos
from conformance.chaos.kafka_readback import committed_on_kafka
from conformance.chaos.ours import (
    CLUSTER_CONFIG,
    CONSUMER_CONFIG,
    TOPIC,
    Options,
    Reader,
    _consume,
    _start_writers,
)
from conformance.chaos.plan import Plan, make_plan
from conformance.chaos.readback import SeedResult, join
from conformance.chaos.txn_load import TXN_TOPIC, CommittedReader, consume_committed

READ_UP_S = 120.0     # after the writers: how long the consumers get to reach every partition's end
START_S = 240.0       # three JVMs starting on a loaded 2-core machine
PROGRESS_S = 10.0


def kafka_config() -> dict[str, object]:
    """The chaos set-up's broker settings (min.insync.replicas=2, a 2 s replica lag), as the
    emulator runs them (conformance/chaos/ours.py); everything else is Kafka's default."""
    from conformance.realkafka.config import HARNESS

    return {**HARNESS, **CLUSTER_CONFIG}


@contextlib.contextmanager
def fresh_kafka(partitions: int, txn: bool) -> Iterator:
    """A seed's own 3-node cluster (formatted, started; stopped at the end) with the workload's
    topics, replicated three times."""
    from conformance.realkafka.cluster import apache_kafka_cluster

    with apache_kafka_cluster(brokers=3, config=kafka_config(), timeout=START_S) as kafka:
        for topic in [TOPIC] + ([TXN_TOPIC, CTP_TOPIC] if txn else []):
            kafka.create_topic(topic, partitions, 3)
        yield kafka


def failed_seed(seed: int, client_name: str, exc: BaseException) -> SeedResult:
    """A seed that could not finish (a cluster that did not start, a node that did not come back)
    is an error of that seed; the next one runs."""
    why = _innermost(exc)
    return SeedResult(seed=seed, client=client_name, accounting=account([], []),
                      consumer={"consumer_missed": 0, "consumer_wrong": 0, "consumer_examples": []}, actions={},
                      seconds=0.0, wall_s=0.0, notes=[f"error: {why}"], error=why)


def run_seed(seed: int, *, duration: float = 30.0, partitions: int = 3, producers: int = 3, interval: float = 0.05,
             acks: str = "all", idempotence: bool = True, txn: bool = False, plant: str = "",
             say: Callable[[str], None] | None = None, progress: Callable[[str], None] | None = None) -> SeedResult:
    """One seed on a fresh 3-node Kafka (``say`` gets each chaos action, ``progress`` a line
    every 10 s). ``plant`` must be empty: a planted bug is the emulator's."""
    _refuse_a_plant(plant)
    wall = time.perf_counter()
    options = Options(seed, duration, partitions, producers, interval, {"acks": acks, "enable.idempotence": idempotence},
                      txn)
    try:
        with fresh_kafka(partitions, txn) as kafka:
            result = trio.run(_run, kafka, options, say or (lambda line: None), progress or (lambda line: None))
    except Exception as exc:  # noqa: BLE001 - an error of this seed, the next one runs
        result = failed_seed(seed, "ours", exc)
    result.judged = judged(acks, idempotence)
    result.check = check(result.history) if result.history is not None else None
    result.judged_anomalies = judged_anomalies(acks, idempotence)
    result.wall_s = time.perf_counter() - wall
    return result


def _refuse_a_plant(plant: str) -> None:
    if plant:
        raise ValueError("a planted bug lives in the emulator: Apache Kafka has none to plant")


def run_kit_seed(kit, seed: int, **params) -> SeedResult:
    """One seed of a third-party client's kit (conformance/chaos/realtime.py, the same driver as
    on the emulator) on a fresh 3-node Kafka behind the proxy; its history always recorded and
    checked (the checker is what judges a transactional load)."""
    from conformance.chaos.realtime import run_seed as run_kit

    _refuse_a_plant(params.get("plant", ""))
    wall = time.perf_counter()
    try:
        return run_kit(kit, seed, **{**params, "history": True}, target=kafka_target)
    except Exception as exc:  # noqa: BLE001 - an error of this seed, the next one runs
        result = failed_seed(seed, kit.name, exc)
        result.wall_s = time.perf_counter() - wall
        return result


class _OnKafka:
    """realtime.py's ``Target`` on a fresh Kafka: the clients reach it through the proxy (on a
    trio thread of its own); the chaos runs on the proxy's thread, its admin straight to Kafka;
    the logs are read back with plain Fetch requests straight from the leaders."""

    def __init__(self, kafka, proxy_thread, plan: Plan, partitions: int, say: Callable[[str], None]) -> None:
        self.kafka, self.proxy_thread, self.plan, self.partitions, self.say = kafka, proxy_thread, plan, partitions, say
        self.bootstrap = proxy_thread.bootstrap
        self.ports = {n.node_id: n.ports.broker_port for n in kafka.nodes}

    def run_chaos(self) -> None:
        self.proxy_thread.acall(self._chaos)

    async def _chaos(self) -> None:
        config = {"bootstrap.servers": self.kafka.bootstrap, "request.timeout.ms": 5000,
                  "default.api.timeout.ms": 15_000}
        async with client.open_admin(config) as admin:
            chaos = KafkaChaos(self.kafka, self.proxy_thread.cluster, admin, self.plan, self.say)
            await chaos.run()
            await chaos.heal_all()

    def ends(self, topics: list[str]) -> dict[tuple[str, int], int]:
        return {(topic, p): end for topic in topics
                for p, end in committed_on_kafka(self.ports, topic, self.partitions)[1].items()}

    def log(self) -> dict[tuple[int, int], Stored]:
        return committed_on_kafka(self.ports, TOPIC, self.partitions)[0]

    def plant_log(self) -> list:
        return []


@contextlib.contextmanager
def kafka_target(seed: int, partitions: int, duration: float, txn: bool, plant: str,
                 say: Callable[[str], None]) -> Iterator[_OnKafka]:
    """A fresh Kafka and the proxy in front of it; the plan drawn from what Kafka can be given."""
    from broker_emu.proxy.proxy import run_proxy_in_thread

    _refuse_a_plant(plant)
    with fresh_kafka(partitions, txn) as kafka, run_proxy_in_thread(kafka.bootstrap, seed=seed) as proxy_thread:
        plan = make_plan(seed, TOPIC, duration, mean_gap=3.0, kinds=KAFKA_KINDS)
        yield _OnKafka(kafka, proxy_thread, plan, partitions, say)


def _innermost(exc: BaseException) -> str:
    """The first leaf of a trio nursery's exception group: what really raised."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


async def _run(kafka, o: Options, say: Callable[[str], None], progress: Callable[[str], None]) -> SeedResult:
    ports = {n.node_id: n.ports.broker_port for n in kafka.nodes}
    admin_config = {"bootstrap.servers": kafka.bootstrap, "request.timeout.ms": 5000, "default.api.timeout.ms": 15_000}
    async with open_proxy(kafka.bootstrap, seed=o.seed) as proxy, client.open_admin(admin_config) as admin:
        bootstrap = {"bootstrap.servers": proxy.bootstrap}
        plan = make_plan(o.seed, TOPIC, o.duration, mean_gap=3.0, kinds=KAFKA_KINDS)
        chaos = KafkaChaos(kafka, proxy, admin, plan, lambda line: say(f"seed {o.seed} {line}"))
        sent: list[Sent] = []
        reader, txn_reader = Reader(), CommittedReader()
        notes: list[str] = []
        history = History(trio.current_time)     # trio's real clock
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_report, o.seed, start, sent, progress)
            nursery.start_soon(_consume, bootstrap["bootstrap.servers"], None, o.partitions, reader, history)
            if o.txn:
                nursery.start_soon(consume_committed, {**CONSUMER_CONFIG, **bootstrap}, None,
                                   [TXN_TOPIC, CTP_TOPIC], o.partitions, txn_reader, history)
            async with trio.open_nursery() as work:
                _start_writers(work, o, chaos, bootstrap, None, sent, notes, history)
            await _read_to_the_end(ports, o, reader, txn_reader, notes)
            nursery.cancel_scope.cancel()
        log, _ = await trio.to_thread.run_sync(committed_on_kafka, ports, TOPIC, o.partitions)
    stored, consumer = join(reader.consumed, log)
    return SeedResult(seed=o.seed, client="ours", accounting=account(sent, stored), consumer=consumer,
                      actions=plan.counts(), seconds=trio.current_time() - start, wall_s=0.0, executed=plan.executed,
                      notes=notes, history=history)


async def _read_to_the_end(ports: dict[int, int], o: Options, reader: Reader, txn_reader: CommittedReader,
                           notes: list[str]) -> None:
    """The writers are done and the chaos healed: the consumers read up to every partition's high
    watermark as Kafka reports it (at most READ_UP_S), then stop."""
    _, ends = await trio.to_thread.run_sync(committed_on_kafka, ports, TOPIC, o.partitions)
    reader.read_up_to(ends)
    if o.txn:
        txn_ends = {}
        for topic in (TXN_TOPIC, CTP_TOPIC):
            _, hw = await trio.to_thread.run_sync(committed_on_kafka, ports, topic, o.partitions)
            txn_ends.update({(topic, p): end for p, end in hw.items()})
        txn_reader.ends = txn_ends
    with trio.move_on_after(READ_UP_S) as waited:
        await reader.reached.wait()
        if o.txn:
            await txn_reader.reached.wait()
    if waited.cancelled_caught:
        notes.append(f"the consumers had not reached every partition's end after {READ_UP_S:.0f}s")
    reader.stop.set()
    txn_reader.stop.set()


async def _report(seed: int, start: float, sent: list[Sent], progress: Callable[[str], None]) -> None:
    while True:
        await trio.sleep(PROGRESS_S)
        acked = sum(s.acked for s in sent)
        failed = sum(s.error is not None for s in sent)
        progress(f"seed {seed}: {trio.current_time() - start:5.0f}s, {len(sent)} sent, {acked} acknowledged, "
                 f"{failed} failed, {len(sent) - acked - failed} waiting")
