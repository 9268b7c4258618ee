"""A producer batch, and the futures its records' senders hold.

A batch is completed or failed exactly once; whoever comes second (a broker answer arriving
after the delivery timeout already failed the batch, say) is ignored, so the application is
told once (KIP-91: "the request may still complete later; the user is told once").
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Self

import trio

from client.protocol.records import Record


@dataclass(slots=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int          # -1 with acks=0 (no answer, no offset)
    timestamp: int       # the record's timestamp (CreateTime), or the broker's LogAppendTime


class Outcome:
    """How a batch ended, shared by the futures of its records (Java's ProduceRequestResult):
    a record's future is only (outcome, index), and its RecordMetadata is made when asked for.
    A trio.Event and a threading.Event per *batch*, not per record, serve the async face and
    the blocking face's application thread (a trio.Event per record cost more than encoding
    the record). Set once, on the network thread; read from any thread."""

    __slots__ = ("_callbacks", "_lock", "base_offset", "base_timestamp", "error", "event", "log_append_time",
                 "partition", "records", "thread_event", "topic")

    def __init__(self, topic: str, partition: int, records: list[Record], base_timestamp: int) -> None:
        self.topic, self.partition, self.records, self.base_timestamp = topic, partition, records, base_timestamp
        self.base_offset = -1
        self.log_append_time = -1
        self.error: BaseException | None = None
        self.event = trio.Event()
        self.thread_event = threading.Event()
        self._callbacks: list[tuple[DeliveryFuture, Callable[[DeliveryFuture], None]]] | None = []
        self._lock = threading.Lock()

    def done(self) -> bool:
        return self._callbacks is None

    def metadata(self, index: int) -> RecordMetadata:
        if self.log_append_time >= 0:
            ts = self.log_append_time
        else:
            ts = self.records[index].timestamp
            if ts < 0:
                ts = self.base_timestamp
        return RecordMetadata(self.topic, self.partition, self.base_offset + index if self.base_offset >= 0 else -1, ts)

    def add_callback(self, future: DeliveryFuture, fn: Callable[[DeliveryFuture], None]) -> None:
        with self._lock:
            if self._callbacks is not None:
                self._callbacks.append((future, fn))
                return
        fn(future)

    def settle(self, base_offset: int = -1, log_append_time: int = -1, error: BaseException | None = None) -> bool:
        """Record the outcome once; True the first time. Callbacks run here, on this thread."""
        with self._lock:
            callbacks = self._callbacks
            if callbacks is None:
                return False
            self.base_offset, self.log_append_time, self.error = base_offset, log_append_time, error
            self._callbacks = None
        self.thread_event.set()
        try:
            self.event.set()
        except RuntimeError:   # no trio run on this thread (the blocking face failing records after its run ended)
            pass
        for future, fn in callbacks:
            fn(future)
        return True


class DeliveryFuture:
    """Completes once with RecordMetadata or an exception. Callbacks run synchronously on
    completion (on the network thread for the blocking face)."""

    __slots__ = ("_index", "_outcome")

    def __init__(self, outcome: Outcome, index: int) -> None:
        self._outcome, self._index = outcome, index

    @classmethod
    def failed(cls, error: BaseException) -> Self:
        outcome = Outcome("", -1, [], -1)
        outcome.settle(error=error)
        return cls(outcome, 0)

    @property
    def error(self) -> BaseException | None:
        return self._outcome.error

    @property
    def value(self) -> RecordMetadata | None:
        o = self._outcome
        return o.metadata(self._index) if o.done() and o.error is None else None

    def add_done_callback(self, fn: Callable[[DeliveryFuture], None]) -> None:
        self._outcome.add_callback(self, fn)

    def done(self) -> bool:
        return self._outcome.done()

    async def wait(self) -> None:
        await self._outcome.event.wait()

    async def get(self) -> RecordMetadata:
        await self._outcome.event.wait()
        o = self._outcome
        if o.error is not None:
            raise o.error
        return o.metadata(self._index)


@dataclass(eq=False)
class ProducerBatch:
    topic: str
    partition: int
    created: float              # trio time of the first record: the delivery clock starts here
    deadline: float             # created + delivery.timeout.ms
    base_timestamp: int         # wall-clock ms (from the injected wall clock) for records without one
    records: list[Record] = field(default_factory=list)
    outcome: Outcome | None = None        # shared by the records' futures (made in __post_init__)
    size: int = 0               # bytes counted against batch.size and buffer.memory
    attempts: int = 0
    retry_at: float = float("-inf")      # retry backoff: not before this
    leader_epoch_at_attempt: int = -1    # KIP-951: a new leader skips the retry backoff
    sequence: int = -1
    producer_epoch: int = -1
    payload: bytes | None = None          # frozen at the first attempt: retries resend the same bytes
    in_flight_to: int | None = None       # broker id while a Produce carrying it is out
    unresolved: bool = False              # sent, and we never learnt whether it was written
    last_error: str | None = None
    done: bool = False

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    def where(self) -> str:
        if self.in_flight_to is not None:
            return f"in flight to broker {self.in_flight_to}"
        if self.attempts:
            return "waiting to be retried"
        return "still in the accumulator (never sent)"

    def __post_init__(self) -> None:
        self.outcome = Outcome(self.topic, self.partition, self.records, self.base_timestamp)

    def future(self, future_type: type[DeliveryFuture] = DeliveryFuture) -> DeliveryFuture:
        """The future of the record just appended."""
        assert self.outcome is not None
        return future_type(self.outcome, len(self.records) - 1)

    def futures(self) -> list[DeliveryFuture]:
        assert self.outcome is not None
        return [DeliveryFuture(self.outcome, i) for i in range(len(self.records))]

    def complete(self, base_offset: int, log_append_time: int = -1) -> bool:
        if self.done:
            return False
        self.done = True
        assert self.outcome is not None
        return self.outcome.settle(base_offset, log_append_time)

    def fail(self, error: BaseException) -> bool:
        if self.done:
            return False
        self.done = True
        assert self.outcome is not None
        return self.outcome.settle(error=error)
