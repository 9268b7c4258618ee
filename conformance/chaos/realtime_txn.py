"""The transactional part of a real-time chaos seed (``broker-emu chaos --client NAME --txn``):
what conformance/chaos/txn_load.py and ctp_load.py do for our client in virtual time, with a
third-party client in real time, one thread per client.

- a transactional producer writes transactions of 1-4 records to ``chaos-txn``, commits about
  two in three and aborts the rest; in one transaction drawn per seed a successor with the same
  transactional.id initializes, and the fenced producer (a zombie) sends once more into its open
  transaction and tries to commit: both must fail. A producer that hits a fatal error is replaced
  (each life its own process in the history: ``txn-producer-1``, ``-2`` ...);
- two consume-transform-produce workers (``ctp-a``, ``ctp-b``), each a transactional producer
  and a read_committed consumer of ``chaos-ctp`` recorded as one process: a transaction sends to
  two partitions, polls until it read the other worker's record and DWELL_S passed (at most
  WAIT_S), sends one more and commits (one in four aborted), so the history has transactions
  that read, which the cycle classes need;
- a read_committed reader of both topics, reading along and then to the end, committing its
  offsets after each poll that returned records.

What differs between clients is a ``TxnKit`` (conformance/chaos/kits_txn.py): how a
transactional producer initializes, begins, sends, commits and aborts, and how its errors say
what to do next (``TxnError``), and how a read_committed consumer polls. The history is the same
as our client's (conformance/chaos/history.py) on the wall clock, judged by the same checker.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol

from conformance.chaos.ctp_load import ABORT_ONE_IN as CTP_ABORT_ONE_IN
from conformance.chaos.ctp_load import CTP_TOPIC, DWELL_S, WAIT_S, WORKERS
from conformance.chaos.history import INFO, OK, History, Op, Read, detail
from conformance.chaos.txn_load import ABORT_ONE_IN, TXN_ID, TXN_TOPIC

MAX_LIVES = 5
ATTEMPTS = 6               # a transaction call that timed out is made again (it completes the same end)
CALL_S = 10.0              # one init / commit / abort call's timeout
QUIET_S = 8.0              # the reader gives up on the end after reading nothing for this long


class TxnError(Exception):
    """A transactional call failed. ``retriable``: make the same call again; ``abortable``: the
    transaction must be aborted; ``fatal``: the producer is done (fenced, or broken)."""

    def __init__(self, message: str, *, retriable: bool = False, abortable: bool = False, fatal: bool = False):
        super().__init__(message)
        self.retriable, self.abortable, self.fatal = retriable, abortable, fatal


Outcome = Callable[[int | None, str | None], None]      # (offset, None) or (None, error)


class TxnProducer(Protocol):
    def init(self) -> None: ...
    def begin(self) -> None: ...
    def send(self, topic: str, partition: int, value: bytes, outcome: Outcome) -> None: ...
    def flush(self, timeout_s: float) -> None: ...
    def commit(self) -> None: ...
    def abort(self) -> None: ...
    def close(self) -> None: ...


class TxnConsumer(Protocol):
    def poll(self, timeout_s: float) -> Iterable[tuple[str, int, int, bytes | None]]: ...

    def positions(self) -> dict[tuple[str, int], int] | None:
        """The next offset to read per topic-partition, None if unknown now."""

    def commit(self, offsets: dict[tuple[str, int], int]) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class TxnKit:
    # (bootstrap, transactional.id, client.id) -> producer
    producer: Callable[[str, str, str], TxnProducer]
    # (bootstrap, topics, partitions, client.id, group.id) -> read_committed consumer, every partition from the start
    consumer: Callable[[str, list[str], int, str, str], TxnConsumer]


class Recorded:
    """A transactional producer with every call recorded as our client's recorder does."""

    def __init__(self, producer: TxnProducer, history: History, process: str, transactional_id: str):
        self.producer, self.history, self.process, self.tid = producer, history, process, transactional_id
        self.txn: int | None = None
        self.txns = 0

    def init(self) -> None:
        invocation = self.history.invoke(self.process, "init_txn", detail=detail(transactional_id=self.tid))
        self._call(invocation, self.producer.init, keep_detail=True)

    def begin(self) -> None:
        self.producer.begin()
        self.txns += 1
        self.txn = self.txns
        self.history.event(self.process, "begin", txn=self.txn)

    def send(self, topic: str, partition: int, value: bytes) -> None:
        invocation = self.history.invoke(self.process, "send", topic=topic, partition=partition, value=value,
                                         txn=self.txn)

        def outcome(offset: int | None, error: str | None) -> None:
            if error is None:
                self.history.complete(invocation, OK, offset=offset if offset is not None and offset >= 0 else None,
                                      value=value)
            else:
                self.history.complete(invocation, INFO, value=value, error=error)
        try:
            self.producer.send(topic, partition, value, outcome)
        except TxnError as exc:
            outcome(None, str(exc))
            raise

    def commit(self) -> None:
        self._end("commit_txn", self.producer.commit)

    def abort(self) -> None:
        self._end("abort_txn", self.producer.abort)

    def _end(self, f: str, call: Callable[[], None]) -> None:
        self._call(self.history.invoke(self.process, f, txn=self.txn), call)
        self.txn = None

    def _call(self, invocation: Op, call: Callable[[], None], keep_detail: bool = False) -> None:
        extra = {"detail": invocation.detail} if keep_detail else {}
        try:
            call()
        except TxnError as exc:
            self.history.complete(invocation, INFO, error=str(exc), **extra)
            raise
        self.history.complete(invocation, OK, **extra)


def retried(call: Callable[[], None]) -> None:
    """``call`` again while it fails retriably (a timed-out end completes the same end)."""
    for attempt in range(ATTEMPTS):
        try:
            call()
            return
        except TxnError as exc:
            if not exc.retriable or attempt == ATTEMPTS - 1:
                raise


def end(producer: Recorded, abort: bool) -> None:
    """Commit (or abort) the open transaction; a commit that fails abortably is aborted."""
    if not abort:
        try:
            retried(producer.commit)
            return
        except TxnError as exc:
            if not exc.abortable:
                raise
    retried(producer.abort)


def _close(producers: list[Recorded]) -> None:
    """Close each, whatever the others do (a producer left to the garbage collector serves its
    pending callbacks in whichever thread collects it)."""
    for p in producers:
        try:
            p.producer.close()
        except Exception:  # noqa: BLE001 - closing after a fatal error may fail; nothing is left to learn
            pass


class TxnLoad:
    """The threads of one seed's transactional load, and what they share."""

    def __init__(self, kit: TxnKit, seed: int, bootstrap: str, partitions: int, duration: float, interval: float,
                 history: History, notes: list[str]):
        self.kit, self.seed, self.bootstrap, self.partitions = kit, seed, bootstrap, partitions
        self.interval, self.history, self.notes = interval, history, notes
        self.duration = duration     # of each writer's transactions, from when its client started (a JVM takes seconds)
        self.ends: dict[tuple[str, int], int] | None = None     # set once the writers are done
        self.stop = threading.Event()
        self.producers: list[threading.Thread] = []
        self.reader: threading.Thread | None = None

    def start(self, guarded: Callable[..., None], errors: list[str]) -> None:
        self.producers = [threading.Thread(target=guarded, args=("txn producer", errors, self._transactions),
                                           name="chaos-txn-producer")]
        self.producers += [threading.Thread(target=guarded, args=(f"ctp-{name}", errors, self._ctp_worker, name),
                                            name=f"chaos-ctp-{name}") for name in WORKERS]
        self.reader = threading.Thread(target=guarded, args=("txn reader", errors, self._read_committed),
                                       name="chaos-txn-reader")
        for t in [self.reader, *self.producers]:
            t.start()

    # -- the transactional producer and its zombie ---------------------------------------------
    def _life(self, process: str, tid: str, lives: list[Recorded]) -> Recorded:
        producer = Recorded(self.kit.producer(self.bootstrap, tid, process), self.history, process, tid)
        lives.append(producer)
        return producer

    def _transactions(self, errors: list[str]) -> None:
        rng = random.Random(f"txn:{self.seed}")
        fence_in: int | None = rng.randint(2, 4)
        lives: list[Recorded] = []
        counter, txns = 0, 0
        producer = self._life("txn-producer-1", TXN_ID, lives)
        deadline: float | None = None      # duration from the first init that completed
        initialized = False
        try:
            while (deadline is None or time.monotonic() < deadline) and len(lives) <= MAX_LIVES:
                try:
                    if not initialized:
                        retried(producer.init)
                        initialized = True
                        deadline = deadline or time.monotonic() + self.duration
                    producer.begin()
                    txns += 1
                    partition = 0
                    for _ in range(rng.randint(1, 4)):
                        partition = counter % self.partitions
                        producer.send(TXN_TOPIC, partition, b"t0-%d" % counter)
                        counter += 1
                        time.sleep(self.interval * rng.uniform(0.8, 1.2))
                    if txns == fence_in:
                        fence_in = None
                        producer = self._fenced_by_a_successor(producer, partition, counter, lives)
                        counter += 1
                        continue
                    end(producer, abort=rng.randrange(ABORT_ONE_IN) == 0)
                except TxnError as exc:
                    if initialized and not exc.fatal and self._aborted(producer):
                        continue
                    self.notes.append(f"{producer.process}: {exc} (replaced)")
                    producer = self._life(f"txn-producer-{len(lives) + 1}", TXN_ID, lives)
                    initialized = False
        finally:
            _close(lives)

    def _aborted(self, producer: Recorded) -> bool:
        """After an error inside a transaction: abort it; False if even that failed."""
        if producer.txn is None:
            return True
        try:
            retried(producer.abort)
            return True
        except TxnError:
            return False

    def _fenced_by_a_successor(self, zombie: Recorded, partition: int, counter: int,
                               lives: list[Recorded]) -> Recorded:
        """A successor initializes while ``zombie`` is inside a transaction; the zombie sends
        once more to a partition already in its transaction and tries to commit: both must fail
        (Kafka's zombie fencing, ``TransactionCoordinator.handleInitProducerId``)."""
        successor = self._life(f"txn-producer-{len(lives) + 1}", TXN_ID, lives)
        retried(successor.init)
        try:
            zombie.send(TXN_TOPIC, partition, b"t0-%d" % counter)
            zombie.producer.flush(CALL_S)
            zombie.commit()
        except TxnError as exc:
            self.notes.append(f"{zombie.process}: fenced as it should be ({exc})")
        return successor

    # -- consume-transform-produce --------------------------------------------------------------
    def _ctp_worker(self, name: str, errors: list[str]) -> None:
        rng = random.Random(f"ctp:{name}:{self.seed}")
        other = b"ctp-" + WORKERS[1 - WORKERS.index(name)].encode()
        counter = 0
        lives: list[Recorded] = []
        deadline: float | None = None
        for life in range(1, MAX_LIVES + 1):
            process = f"ctp-{name}" + (f"-{life}" if life > 1 else "")
            producer = self._life(process, f"chaos-ctp-{name}", lives)
            consumer = self.kit.consumer(self.bootstrap, [CTP_TOPIC], self.partitions, f"{process}-reader",
                                         f"chaos-ctp-{name}")
            self._assigned(process, [CTP_TOPIC])
            try:
                retried(producer.init)
                deadline = deadline or time.monotonic() + self.duration
                while time.monotonic() < deadline:
                    try:
                        counter = self._ctp_transaction(producer, consumer, name, counter, other, rng)
                    except TxnError as exc:
                        if exc.fatal or not self._aborted(producer):
                            raise
                return
            except TxnError as exc:
                self.notes.append(f"{process}: {exc} (replaced)")
            finally:
                consumer.close()
                _close([producer])

    def _ctp_transaction(self, producer: Recorded, consumer: TxnConsumer, name: str, counter: int, other: bytes,
                         rng: random.Random) -> int:
        producer.begin()
        for partition in rng.sample(range(self.partitions), min(2, self.partitions)):
            producer.send(CTP_TOPIC, partition, b"ctp-%s-%d" % (name.encode(), counter))
            counter += 1
        start = time.monotonic()
        read_other = False
        while time.monotonic() < start + WAIT_S and not (read_other and time.monotonic() >= start + DWELL_S):
            records = self._poll(producer.process, consumer, 0.1, txn=producer.txn)
            read_other = read_other or any(v is not None and v.startswith(other) for _, _, _, v in records)
        producer.send(CTP_TOPIC, rng.randrange(self.partitions), b"ctp-%s-%d" % (name.encode(), counter))
        time.sleep(self.interval * rng.uniform(0.2, 0.6))
        end(producer, abort=rng.randrange(CTP_ABORT_ONE_IN) == 0)
        return counter + 1

    # -- reading ------------------------------------------------------------------------------------
    def _assigned(self, process: str, topics: list[str]) -> None:
        self.history.event(process, "assign", detail=detail(
            isolation="read_committed", partitions=[[t, p] for t in topics for p in range(self.partitions)]))

    def _poll(self, process: str, consumer: TxnConsumer, timeout_s: float, txn: int | None = None
              ) -> list[tuple[str, int, int, bytes | None]]:
        invocation = self.history.invoke(process, "poll", txn=txn)
        records = list(consumer.poll(timeout_s))
        self.history.complete(invocation, OK, records=[Read(t, p, o, None, v) for t, p, o, v in records])
        return records

    def _read_committed(self, errors: list[str]) -> None:
        topics = [TXN_TOPIC, CTP_TOPIC]
        consumer = self.kit.consumer(self.bootstrap, topics, self.partitions, "chaos-txn-reader", "chaos-txn-readers")
        self._assigned("txn-reader", topics)
        last_read = time.monotonic()
        try:
            while not self.stop.is_set():
                records = self._poll("txn-reader", consumer, 0.2)
                positions = consumer.positions() if records or self.ends is not None else None
                if records and positions:
                    self._commit(consumer, positions)
                    last_read = time.monotonic()
                if self.ends is not None and positions is not None:
                    behind = {tp: (positions.get(tp, 0), end) for tp, end in self.ends.items()
                              if positions.get(tp, 0) < end}
                    if not behind:
                        return
                    if time.monotonic() - last_read > QUIET_S:   # a position a marker ends never moves past it
                        self.notes.append(f"txn reader: nothing read for {QUIET_S:g} s, short of the end: {behind}")
                        return
        finally:
            consumer.close()

    def _commit(self, consumer: TxnConsumer, positions: dict[tuple[str, int], int]) -> None:
        committed = detail(offsets=sorted([t, p, o] for (t, p), o in positions.items()))
        invocation = self.history.invoke("txn-reader", "commit", detail=committed)
        try:
            consumer.commit(positions)
        except TxnError as exc:   # the next poll's commit covers it
            self.history.complete(invocation, INFO, error=str(exc), detail=committed)
            return
        self.history.complete(invocation, OK, detail=committed)

    def read_to_the_end(self, ends: dict[tuple[str, int], int], limit_s: float) -> None:
        """Once the writers are done and the chaos healed: the reader reads up to ``ends`` (at
        most ``limit_s``), then stops."""
        self.ends = ends
        if self.reader is not None:
            self.reader.join(limit_s)
        self.stop.set()
        if self.reader is not None:
            self.reader.join()
