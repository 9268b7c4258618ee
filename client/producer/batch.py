"""A producer batch, and the futures its records' senders hold.

A batch is completed or failed exactly once; whoever comes second (a broker answer arriving
after the delivery timeout already failed the batch, say) is ignored, so the application is
told once (KIP-91: "the request may still complete later; the user is told once").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from client.protocol.records import Record


@dataclass(slots=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int          # -1 with acks=0 (no answer, no offset)
    timestamp: int       # the record's timestamp (CreateTime), or the broker's LogAppendTime


class DeliveryFuture:
    """Completes once with RecordMetadata or an exception. Callbacks run synchronously on
    completion (on the network thread for the blocking face)."""

    __slots__ = ("_callbacks", "_event", "error", "value")

    def __init__(self) -> None:
        self._event = trio.Event()
        self.value: RecordMetadata | None = None
        self.error: BaseException | None = None
        self._callbacks: list[Callable[[DeliveryFuture], None]] = []

    @classmethod
    def failed(cls, error: BaseException) -> DeliveryFuture:
        f = cls()
        f._set(error=error)
        return f

    def add_done_callback(self, fn: Callable[[DeliveryFuture], None]) -> None:
        if self._event.is_set():
            fn(self)
        else:
            self._callbacks.append(fn)

    def _set(self, value: RecordMetadata | None = None, error: BaseException | None = None) -> bool:
        if self._event.is_set():
            return False
        self.value, self.error = value, error
        self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn(self)
        return True

    def done(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()

    async def get(self) -> RecordMetadata:
        await self._event.wait()
        if self.error is not None:
            raise self.error
        assert self.value is not None
        return self.value


@dataclass(eq=False)
class ProducerBatch:
    topic: str
    partition: int
    created: float              # trio time of the first record: the delivery clock starts here
    deadline: float             # created + delivery.timeout.ms
    base_timestamp: int         # wall-clock ms (from the injected wall clock) for records without one
    records: list[Record] = field(default_factory=list)
    futures: list[DeliveryFuture] = field(default_factory=list)
    size: int = 0               # bytes counted against batch.size and buffer.memory
    attempts: int = 0
    last_attempt: float = float("-inf")
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

    def complete(self, base_offset: int, log_append_time: int = -1) -> bool:
        if self.done:
            return False
        self.done = True
        for i, (record, future) in enumerate(zip(self.records, self.futures, strict=True)):
            ts = log_append_time if log_append_time >= 0 else (record.timestamp if record.timestamp >= 0 else self.base_timestamp)
            future._set(RecordMetadata(self.topic, self.partition, base_offset + i if base_offset >= 0 else -1, ts))
        return True

    def fail(self, error: BaseException) -> bool:
        if self.done:
            return False
        self.done = True
        for f in self.futures:
            f._set(error=error)
        return True
