"""Client histories: every operation a chaos run's clients performed, as Jepsen records them
(an invocation, then its completion), so a checker can judge what the clients saw rather than
what the broker's log holds (conformance/chaos/checker.py).

An operation (``Op``) is one row: which client (``process``: ``producer-0``, ``consumer``...),
``type`` (``invoke``, then ``ok``, ``fail`` or ``info`` for the completion: ``info`` is Jepsen's
"indeterminate", the outcome is unknown), ``f`` (what it did) and ``time`` (seconds on the
injected clock: trio's virtual clock in a virtual-time run). A completion names its invocation
(``invoke``). What each ``f`` carries:

- ``send``: the invocation the topic, partition, key and value; the completion the offset
  (``ok``) or the error (``info``: a Kafka producer's error says nothing certain about the write);
  ``txn`` is the producer's transaction number when it sends inside one;
- ``poll``: the completion the records returned (``records``: topic, partition, offset, key,
  value), an empty list for an empty poll; ``txn`` when the consumer polls inside its process's
  transaction (a consume-transform-produce loop, conformance/chaos/ctp_load.py: the consumer is
  recorded under its producer's process, so what it read and what that transaction wrote are one
  node of the checker's dependency graph, conformance/chaos/cycles.py);
- ``assign`` / ``seek``: the consumer's partitions (``detail``: isolation level and partitions)
  or the offset it moved to — after them a consumer may legitimately jump;
- ``commit``: the offsets committed (``detail``), ``ok`` or ``info`` with the error;
- ``begin``, ``commit_txn``, ``abort_txn``: a transaction's begin and end, each with ``txn``;
- ``init_txn``: ``init_transactions`` (``detail``: the transactional.id): when it completes ok,
  every earlier producer with that id is fenced.

The recorders wrap our client (``client.AsyncProducer`` / ``AsyncConsumer``, the face the
virtual-time chaos kit drives; conformance/chaos/history_blocking.py wraps the blocking face)
and pass every call through unchanged. ``write_parquet`` stores a history beside the run's other
outputs, one row per operation (a poll's records a nested list), for the Spark checker over
many runs (conformance/chaos/checker_spark.py).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable

INVOKE, OK, FAIL, INFO = "invoke", "ok", "fail", "info"


@dataclass(frozen=True, slots=True)
class Read:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


@dataclass(slots=True)
class Op:
    index: int
    process: str
    type: str
    f: str
    time: float
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    key: bytes | None = None
    value: bytes | None = None
    error: str | None = None
    txn: int | None = None
    invoke: int | None = None                    # a completion: its invocation's index
    records: list[Read] | None = None            # a poll's completion
    detail: str | None = None                    # assign, seek, commit: JSON

    def describe(self) -> str:
        """One line for a witness: ``#12 producer-0 ok send chaos-1 @41 b'p0-7'``."""
        where = f" {self.topic}-{self.partition}" if self.topic is not None else ""
        at = f" @{self.offset}" if self.offset is not None else ""
        what = f" {self.value!r}" if self.value is not None else ""
        reads = f" [{', '.join(f'{r.partition}@{r.offset}={r.value!r}' for r in self.records)}]" if self.records else ""
        rest = "".join(f" {k}={v}" for k, v in (("txn", self.txn), ("error", self.error), ("detail", self.detail))
                       if v is not None)
        return f"#{self.index} t={self.time:.3f} {self.process} {self.type} {self.f}{where}{at}{what}{reads}{rest}"


class History:
    """Operations in the order they happened. ``clock`` gives seconds (trio.current_time in
    virtual time); thread-safe, so the blocking face's callbacks may record from the client's
    network thread."""

    def __init__(self, clock: Callable[[], float]):
        self.clock = clock
        self.ops: list[Op] = []
        self._lock = threading.Lock()

    def _add(self, process: str, type_: str, f: str, **fields: Any) -> Op:
        with self._lock:
            op = Op(len(self.ops), process, type_, f, self.clock(), **fields)
            self.ops.append(op)
            return op

    def invoke(self, process: str, f: str, **fields: Any) -> Op:
        return self._add(process, INVOKE, f, **fields)

    def complete(self, invocation: Op, type_: str, **fields: Any) -> Op:
        """The completion of ``invocation``: its topic, partition and transaction carried over."""
        keep = {"topic": invocation.topic, "partition": invocation.partition, "txn": invocation.txn}
        return self._add(invocation.process, type_, invocation.f, invoke=invocation.index, **{**keep, **fields})

    def event(self, process: str, f: str, type_: str = OK, **fields: Any) -> Op:
        """An operation that completes as it is invoked (assign, seek, begin): one row."""
        return self._add(process, type_, f, **fields)

    def completions(self) -> list[Op]:
        return [op for op in self.ops if op.type != INVOKE]


def describe_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def detail(**fields: Any) -> str:
    return json.dumps(fields, sort_keys=True)


# -- what both faces of our client record --------------------------------------------------------

class ProducerRecording:
    """The recording a producer wrapper does, whichever face it wraps."""

    def __init__(self, producer: Any, history: History, process: str, transactional_id: str | None = None):
        self.producer, self.history, self.process = producer, history, process
        self.transactional_id = transactional_id
        self.txn: int | None = None       # the open transaction's number
        self.txns = 0

    def _initializing(self) -> Op:
        return self.history.invoke(self.process, "init_txn", detail=detail(transactional_id=self.transactional_id))

    def _sending(self, topic: str, value: bytes | None, key: bytes | None, partition: int | None,
                 on_delivery: Callable[[Any, Any], None] | None) -> Callable[[Any, Any], None]:
        """Record the invocation; the delivery callback that records its completion."""
        invocation = self.history.invoke(self.process, "send", topic=topic, partition=partition, key=key, value=value,
                                         txn=self.txn)

        def delivered(error: Any, meta: Any) -> None:
            if error is not None:
                self.history.complete(invocation, INFO, key=key, value=value, error=describe_error(error))
            else:
                self.history.complete(invocation, OK, partition=meta.partition, offset=meta.offset, key=key,
                                      value=value)
            if on_delivery is not None:
                on_delivery(error, meta)
        return delivered

    def begin_transaction(self) -> None:
        self.producer.begin_transaction()
        self.txns += 1
        self.txn = self.txns
        self.history.event(self.process, "begin", txn=self.txn)

    def _ended(self, invocation: Op, error: BaseException | None) -> None:
        if error is not None:
            self.history.complete(invocation, INFO, error=describe_error(error))
        else:
            self.history.complete(invocation, OK)
            self.txn = None


class ConsumerRecording:
    """The recording a consumer wrapper does, whichever face it wraps."""

    def __init__(self, consumer: Any, history: History, process: str, isolation: str = "read_uncommitted",
                 in_txn: Callable[[], int | None] | None = None):
        self.consumer, self.history, self.process, self.isolation = consumer, history, process, isolation
        self.in_txn = in_txn      # the open transaction of the producer this consumer polls for, if any

    def _polling(self) -> Op:
        return self.history.invoke(self.process, "poll", txn=self.in_txn() if self.in_txn is not None else None)

    def assign(self, partitions: list[Any]) -> None:
        self.consumer.assign(partitions)
        self.history.event(self.process, "assign", detail=detail(
            isolation=self.isolation, partitions=[[tp.topic, tp.partition] for tp in partitions]))

    def seek(self, tp: Any, offset: int) -> None:
        self.consumer.seek(tp, offset)
        self.history.event(self.process, "seek", topic=tp.topic, partition=tp.partition, offset=offset)

    def _polled(self, invocation: Op, records: list[Any] | None, error: BaseException | None) -> None:
        if error is not None:
            self.history.complete(invocation, INFO, error=describe_error(error))
        else:
            self.history.complete(invocation, OK, records=reads(records or []))

    def _committing(self, offsets: dict[Any, int]) -> Op:
        committed = detail(offsets=sorted([tp[0], tp[1], o] for tp, o in offsets.items()))
        return self.history.invoke(self.process, "commit", detail=committed)

    def _committed(self, invocation: Op, error: BaseException | None) -> None:
        if error is not None:
            self.history.complete(invocation, INFO, error=describe_error(error), detail=invocation.detail)
        else:
            self.history.complete(invocation, OK, detail=invocation.detail)


# -- our client's async face ---------------------------------------------------------------------

class RecordedProducer(ProducerRecording):
    """``client.AsyncProducer`` with every send, delivery and transaction call recorded."""

    async def send(self, topic: str, value: bytes | None, *, key: bytes | None = None, partition: int | None = None,
                   on_delivery: Callable[[Any, Any], None] | None = None) -> Any:
        delivered = self._sending(topic, value, key, partition, on_delivery)
        return await self.producer.send(topic, value, key=key, partition=partition, on_delivery=delivered)

    async def flush(self) -> None:
        await self.producer.flush()

    async def init_transactions(self, timeout: float | None = None) -> None:
        invocation = self._initializing()
        try:
            await self.producer.init_transactions(timeout)
        except BaseException as exc:
            self._ended(invocation, exc)
            raise
        self.history.complete(invocation, OK, detail=invocation.detail)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        await self._end("commit_txn", self.producer.commit_transaction, timeout)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        await self._end("abort_txn", self.producer.abort_transaction, timeout)

    async def _end(self, f: str, call: Callable[..., Any], timeout: float | None) -> None:
        invocation = self.history.invoke(self.process, f, txn=self.txn)
        try:
            await call(timeout)
        except BaseException as exc:
            self._ended(invocation, exc)
            raise
        self._ended(invocation, None)


class RecordedConsumer(ConsumerRecording):
    """``client.AsyncConsumer`` with every assign, seek, poll and commit recorded."""

    async def poll(self, timeout: float = 0.0) -> list[Any]:
        invocation = self._polling()
        try:
            records = await self.consumer.poll(timeout)
        except BaseException as exc:
            self._polled(invocation, None, exc)
            raise
        self._polled(invocation, records, None)
        return records

    async def position(self, tp: Any, timeout: float | None = None) -> int:
        return await self.consumer.position(tp, timeout)

    async def commit_sync(self, offsets: dict[Any, int], timeout: float | None = None) -> None:
        invocation = self._committing(offsets)
        try:
            await self.consumer.commit_sync(offsets, timeout)
        except BaseException as exc:
            self._committed(invocation, exc)
            raise
        self._committed(invocation, None)


def reads(records: Iterable[Any]) -> list[Read]:
    return [Read(r.topic, r.partition, r.offset, r.key, r.value) for r in records]

