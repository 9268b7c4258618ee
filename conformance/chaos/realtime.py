"""Chaos with a third-party client, in real time: one driver for every client kit.

The emulated cluster listens on loopback in its own thread (``run_cluster_in_thread``), the
chaos plan runs on that thread, each producer runs in a thread of its own and one consumer reads
along (assigned to every partition from the beginning). What differs between clients — how a
record is sent and its outcome learnt, how the consumer polls — is a ``Kit``
(conformance/chaos/kits.py); what a seed did is judged by the same accounting as the
virtual-time run (conformance/chaos/accounting.py).

With a ``History`` (``broker-emu chaos --history DIR``), every kit's operations are recorded as
our client's are (conformance/chaos/history.py), on the wall clock: each send when it is handed
to the client and when the client reports its outcome (``Sent.settle``, from the client's own
callback), each poll with the records it returned; the same checker then judges them.

Every kit mirrors the virtual-time run's settings in its own client's names: acks=all,
idempotence, a 5 ms linger, a 3 s request timeout, a 120 s delivery timeout where the client has
one, 50 ms retry and reconnect back-offs, metadata refreshed every 5 s.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Callable, ContextManager, Iterable, Iterator, Protocol

from broker_emu.plants import Plant, arm
from broker_emu.runtime import run_cluster_in_thread
from conformance.chaos.accounting import Sent, Stored, account, judged, record_value
from conformance.chaos.checker import check, judged_anomalies
from conformance.chaos.ctp_load import CTP_TOPIC
from conformance.chaos.history import INFO, OK, History, Read, detail
from conformance.chaos.ours import CLUSTER_CONFIG, TOPIC, TXN_VERSION
from conformance.chaos.plan import Chaos, Plan, make_plan
from conformance.chaos.readback import SeedResult, committed, join
from conformance.chaos.realtime_txn import TxnKit, TxnLoad
from conformance.chaos.txn_load import TXN_TOPIC

SETTLE_S = 150.0          # after the chaos: how long producers get to learn every record's outcome
READ_UP_S = 60.0          # then how long the consumer gets to reach every partition's high watermark


class ChaosProducer(Protocol):
    def send(self, record: Sent, value: bytes) -> None:
        """Hand the record to the client; its outcome (``record.offset`` or ``record.error``)
        is filled in when the client reports it. Raising is a failure of this record."""

    def wait(self, seconds: float) -> None:
        """Let the client work for ``seconds`` (serve its callbacks)."""

    def finish(self, settle_s: float) -> None:
        """Flush: return when every record has its outcome or ``settle_s`` passed; close."""


class ChaosConsumer(Protocol):
    def poll(self, timeout_s: float) -> Iterable[tuple[int, int, bytes | None]]:
        """Records read: (partition, offset, value)."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class Kit:
    name: str                                                     # `broker-emu chaos --client`
    available: Callable[[], tuple[bool, str]]
    producer: Callable[[int, str, list[str], dict], ChaosProducer]   # (index, bootstrap, errors, settings)
    consumer: Callable[[str, int, list[str]], ChaosConsumer]      # (bootstrap, partitions, errors)
    txn: TxnKit | None = None          # the transactional workload's (``--txn``), if the client has one


class Target(Protocol):
    """Where a seed's clients write: a cluster, the chaos applied to it, and what its logs hold at
    the end. ``on_emulator`` here; Apache Kafka behind the proxy in conformance/chaos/on_kafka.py."""

    bootstrap: str       # what the clients connect to
    plan: Plan

    def run_chaos(self) -> None:
        """Blocking: apply the plan, then heal every fault (every node up and answering)."""

    def ends(self, topics: list[str]) -> dict[tuple[str, int], int]:
        """The high watermark of every partition of ``topics``."""

    def log(self) -> dict[tuple[int, int], Stored]:
        """Every record below the high watermark of the default workload's topic."""

    def plant_log(self) -> list:
        """What a planted bug did (empty without one)."""


# (seed, partitions, duration, txn, plant, say) -> a target, started
TargetOpener = Callable[[int, int, float, bool, str, Callable[[str], None]], ContextManager[Target]]


class _Emulated:
    def __init__(self, tc, plan: Plan, say: Callable[[str], None]) -> None:
        self.tc, self.plan, self.cluster = tc, plan, tc.cluster
        self.bootstrap = tc.bootstrap
        self.chaos = Chaos(self.cluster, plan, say)

    def run_chaos(self) -> None:
        self.tc.acall(_chaos_then_heal, self.chaos)

    def ends(self, topics: list[str]) -> dict[tuple[str, int], int]:
        return self.tc.call(lambda: {(t, p.index): p.high_watermark for t in topics
                                     for p in self.cluster.topics[t].partitions})

    def log(self) -> dict[tuple[int, int], Stored]:
        return self.tc.call(committed, self.cluster, TOPIC)

    def plant_log(self) -> list:
        return self.tc.call(lambda: list(self.cluster.plant.log) if self.cluster.plant is not None else [])


@contextlib.contextmanager
def on_emulator(seed: int, partitions: int, duration: float, txn: bool, plant: str,
                say: Callable[[str], None]) -> Iterator[Target]:
    """The emulated 3-broker cluster on loopback in its own thread, the plan drawn from every
    kind; a planted bug set before any client connects."""
    config = {**CLUSTER_CONFIG, "emu.seed": seed, **({TXN_VERSION: 1} if txn else {})}
    topics = [(TOPIC, partitions, 3)] + ([(TXN_TOPIC, partitions, 3), (CTP_TOPIC, partitions, 3)] if txn else [])
    with run_cluster_in_thread(brokers=3, topics=topics, config=config) as tc:
        cluster = tc.cluster
        assert cluster is not None   # started
        if plant:
            planted = Plant(plant, seed)    # Python only, on the cluster's thread: no request or config reaches it
            tc.call(lambda: setattr(cluster, "plant", planted))
            tc.call(arm, cluster, planted, TOPIC)
        yield _Emulated(tc, make_plan(seed, TOPIC, duration, mean_gap=3.0), say)


def run_seed(kit: Kit, seed: int, *, duration: float = 60.0, partitions: int = 3, producers: int = 3,
             interval: float = 0.02, acks: str = "all", idempotence: bool = True,
             say: Callable[[str], None] | None = None, progress: Callable[[str], None] | None = None,
             progress_every: float = 10.0, history: bool = False, plant: str = "", txn: bool = False,
             target: TargetOpener = on_emulator) -> SeedResult:
    """One seed in real time (``say`` gets each chaos action, ``progress`` a line every
    ``progress_every`` seconds). ``acks`` and ``idempotence`` are the producers' settings
    (Kafka's names in ``settings``; each kit says them in its client's words). ``history``:
    record the clients' operations and check them (``SeedResult.history``, ``.check``).
    ``plant``: a planted bug (broker_emu/plants.py, not one that needs transactions: the kits
    send none) in the cluster, set before any client connects; it implies ``history``. ``txn``:
    the transactional load too (conformance/chaos/realtime_txn.py, the client's ``TxnKit``), on
    topics of its own; it implies ``history`` (only the history judges it). ``target``: where
    the cluster is (the emulator, or Apache Kafka: conformance/chaos/on_kafka.py)."""
    settings = {"acks": acks, "enable.idempotence": idempotence}
    say = say or (lambda line: None)
    progress = progress or (lambda line: None)
    wall = time.perf_counter()
    recorded = History(time.monotonic) if history or plant or txn else None
    with target(seed, partitions, duration, txn, plant, lambda line: say(f"seed {seed} {line}")) as where:
        sent: list[list[Sent]] = [[] for _ in range(producers)]
        consumed: dict[tuple[int, int], bytes | None] = {}
        stop_consumer = threading.Event()
        errors: list[str] = []
        threads = [threading.Thread(target=_guarded, args=(f"producer {i}", errors, _produce, kit, i, where.bootstrap,
                                                          partitions, duration, interval, settings, sent[i], recorded),
                                    name=f"chaos-producer-{i}") for i in range(producers)]
        chaos_thread = threading.Thread(target=where.run_chaos, name="chaos")
        reader = threading.Thread(target=_guarded, args=("consumer", errors, _consume, kit, where.bootstrap, partitions,
                                                         consumed, stop_consumer, recorded),
                                  name="chaos-consumer")
        for t in [chaos_thread, reader, *threads]:
            t.start()
        load = _txn_load(kit, seed, where.bootstrap, partitions, duration, interval, recorded, errors) if txn else None
        _report_until_done(seed, wall, threads + [chaos_thread] + (load.producers if load else []), sent, progress,
                           progress_every)
        ends = {p: end for (_, p), end in where.ends([TOPIC]).items()}
        if load is not None:
            load.read_to_the_end(where.ends([TXN_TOPIC, CTP_TOPIC]), READ_UP_S)
        deadline = time.monotonic() + READ_UP_S
        while time.monotonic() < deadline and reader.is_alive() and any(_upto(consumed, p) < end
                                                                        for p, end in ends.items()):
            time.sleep(0.2)
        stop_consumer.set()
        reader.join()
        log, plant_log, plan = where.log(), where.plant_log(), where.plan
    stored, consumer = join(dict(consumed), log)
    every = [s for per in sent for s in per]
    result = SeedResult(seed, kit.name, account(every, stored), consumer, plan.counts(),
                        time.perf_counter() - wall, time.perf_counter() - wall, plan.executed, errors,
                        judged(acks, idempotence))
    if recorded is not None:
        result.history, result.check = recorded, check(recorded)
        result.judged_anomalies = judged_anomalies(acks, idempotence)
    if txn and recorded is not None and not committed_any(recorded):
        # e.g. a program built before its transactional commands: the seed tested no transaction
        result.error = "the transactional load committed no transaction: " + "; ".join(errors[:2])
    result.plant, result.plant_log = plant, plant_log
    return result


def committed_any(history: History) -> bool:
    return any(op.f == "commit_txn" and op.type == OK for op in history.ops)


def _txn_load(kit: Kit, seed: int, bootstrap: str, partitions: int, duration: float, interval: float,
              history: History | None, errors: list[str]) -> TxnLoad:
    """The transactional producer, the consume-transform-produce workers and the read_committed
    reader, started (their transactions twice ``interval`` apart, as ours)."""
    assert history is not None and kit.txn is not None
    load = TxnLoad(kit.txn, seed, bootstrap, partitions, duration, interval * 2, history, errors)
    load.start(_guarded, errors)
    return load


def _guarded(who: str, errors: list[str], body: Callable[..., None], *args) -> None:
    """A client that raises out of its thread is a note of the seed, not a lost thread."""
    try:
        body(*args, errors)
    except Exception as exc:  # noqa: BLE001 - reported in the seed's notes
        errors.append(f"{who}: {type(exc).__name__}: {exc}")


async def _chaos_then_heal(chaos: Chaos) -> None:
    await chaos.run()
    await chaos.heal_all()


def _upto(consumed: dict, partition: int) -> int:
    return max((o + 1 for (p, o) in list(consumed) if p == partition), default=0)


def _report_until_done(seed: int, start: float, threads: list[threading.Thread], sent: list[list[Sent]],
                       say: Callable[[str], None], every: float) -> None:
    next_report = time.monotonic() + every
    while any(t.is_alive() for t in threads):
        time.sleep(0.2)
        if time.monotonic() < next_report:
            continue
        next_report += every
        records = [s for per in sent for s in list(per)]
        acked = sum(s.acked for s in records)
        failed = sum(s.error is not None for s in records)
        say(f"seed {seed}: {time.perf_counter() - start:5.0f}s, {len(records)} sent, {acked} acknowledged, "
            f"{failed} failed, {len(records) - acked - failed} waiting")


def _produce(kit: Kit, index: int, bootstrap: str, partitions: int, duration: float, interval: float,
             settings: dict, sent: list[Sent], history: History | None, errors: list[str]) -> None:
    producer = kit.producer(index, bootstrap, errors, settings)
    deadline = time.monotonic() + duration
    n = 0
    while time.monotonic() < deadline:
        record = Sent(index, n, n % partitions)
        value = record_value(index, n)
        if history is not None:
            record.on_outcome = _completion(history, f"producer-{index}", record, value)
        try:
            producer.send(record, value)
        except Exception as exc:  # noqa: BLE001 - the client refused this record: its failure
            record.settle(error=f"send raised {exc!r}")
        sent.append(record)
        n += 1
        producer.wait(interval * (1 + index / 2))   # unequal rates, as in the virtual-time run
    producer.finish(SETTLE_S)
    left = sum(1 for s in sent if s.offset is None and s.error is None)
    if left:
        errors.append(f"producer {index}: {left} records without an outcome after {SETTLE_S:.0f}s of flushing")


def _completion(history: History, process: str, record: Sent, value: bytes) -> Callable[[Sent], None]:
    """Record the send's invocation now; its completion when the client reports the outcome (an
    error is Jepsen's indeterminate ``info``: a failed Kafka send may still have been written; an
    acknowledgement without an offset, -1, is ``ok`` with none)."""
    invocation = history.invoke(process, "send", topic=TOPIC, partition=record.partition, value=value)

    def settled(r: Sent) -> None:
        if r.offset is not None:
            history.complete(invocation, OK, offset=r.offset if r.offset >= 0 else None, value=value)
        else:
            history.complete(invocation, INFO, value=value, error=r.error)
    return settled


def _consume(kit: Kit, bootstrap: str, partitions: int, consumed: dict, stop: threading.Event,
             history: History | None, errors: list[str]) -> None:
    consumer = kit.consumer(bootstrap, partitions, errors)
    if history is not None:   # every kit's consumer is assigned every partition from the beginning
        history.event("consumer", "assign", detail=detail(isolation="read_uncommitted",
                                                          partitions=[[TOPIC, p] for p in range(partitions)]))
    try:
        while not stop.is_set():
            invocation = history.invoke("consumer", "poll") if history is not None else None
            records = list(consumer.poll(0.2))
            if invocation is not None and history is not None:
                history.complete(invocation, OK, records=[Read(TOPIC, p, o, None, v) for p, o, v in records])
            for partition, offset, value in records:
                consumed[partition, offset] = value
    finally:
        consumer.close()
