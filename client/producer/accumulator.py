"""The record accumulator (sans-io): per-partition queues of batches, readiness, delivery expiry.

No trio here; every method that needs the time takes ``now``. The sender asks ``ready(now)``
which partitions have a batch to send and when the next one will (linger.ms after the batch's
creation, or sooner when it is full; a retried batch after its retry backoff), takes batches
off the queues, and puts failed ones back at the **front** (a retry keeps its place ahead of
later records). ``expire(now)`` hands back every batch whose delivery deadline
(created + delivery.timeout.ms, KIP-91) has passed, wherever it is: still queued (it is removed)
or in flight (it stays tracked until its request ends; the request is not cancelled).
``next_deadline()`` is when the sender must next call ``expire``. At most one batch per
partition is in flight ("muted" partitions), which keeps order and sequence numbers simple.
buffer.memory counts the bytes of every batch not yet done.

One lock guards the queues: the blocking face's application thread appends directly (as Java's
application threads append to its RecordAccumulator under the deque's lock) while the network
thread drains; a hand-over of every record through the network thread cost more than the record.
It is re-entrant because failing a batch runs delivery callbacks, which may send again.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator

from client.producer.batch import DeliveryFuture, Outcome, ProducerBatch
from client.protocol.records import Record

TP = tuple[str, int]


class RecordAccumulator:
    def __init__(self, *, batch_size: int, linger_s: float, delivery_timeout_s: float, buffer_memory: int):
        self.batch_size = batch_size
        self.linger_s = linger_s
        self.delivery_timeout_s = delivery_timeout_s
        self.buffer_memory = buffer_memory
        self.queues: dict[TP, deque[ProducerBatch]] = {}
        self.in_flight: set[ProducerBatch] = set()
        self.muted: set[TP] = set()
        self.used = 0                  # bytes held by batches not yet done
        self.flushing = 0              # while > 0, linger is ignored (flush())
        self.closing = False           # close(): everything is ready at once
        self.lock = threading.RLock()

    # -- appending -------------------------------------------------------------------------
    def free(self) -> int:
        return self.buffer_memory - self.used

    def append(self, topic: str, partition: int, record: Record, size: int, now: float,
               wall_ms: int, future_type: type[DeliveryFuture] = DeliveryFuture) -> tuple[DeliveryFuture, bool]:
        """Add a record; returns its future and whether the partition's last batch is new or full
        (the sender should look at it now rather than at the linger it planned)."""
        with self.lock:
            queue = self.queues.get((topic, partition))
            if queue is None:
                queue = self.queues[(topic, partition)] = deque()
            batch = queue[-1] if queue else None
            new = batch is None or batch.payload is not None or batch.done or (
                batch.size + size > self.batch_size and bool(batch.records))
            if new:
                batch = ProducerBatch(topic, partition, now, now + self.delivery_timeout_s, wall_ms)
                queue.append(batch)
            assert batch is not None
            batch.records.append(record)
            batch.size += size
            self.used += size
            return batch.future(future_type), new or batch.size >= self.batch_size

    # -- draining --------------------------------------------------------------------------
    def _ready_at(self, batch: ProducerBatch, queue_len: int, leader_changed: Callable[[ProducerBatch], bool]) -> float:
        if batch.attempts:
            return float("-inf") if leader_changed(batch) else batch.retry_at   # KIP-951: no backoff for a new leader
        if queue_len > 1 or batch.size >= self.batch_size or self.flushing or self.closing:
            return float("-inf")
        return batch.created + self.linger_s

    def ready(self, now: float, leader_changed: Callable[[ProducerBatch], bool] = lambda b: False
              ) -> tuple[list[TP], float]:
        """Partitions whose head batch may go now, and the earliest time another one may."""
        ready, next_at = [], float("inf")
        with self.lock:
            for tp, queue in self.queues.items():
                while queue and queue[0].done:
                    self._drop(queue.popleft())
                if not queue or tp in self.muted:
                    continue
                at = self._ready_at(queue[0], len(queue), leader_changed)
                if at <= now:
                    ready.append(tp)
                else:
                    next_at = min(next_at, at)
        return ready, next_at

    def head(self, tp: TP) -> ProducerBatch | None:
        queue = self.queues.get(tp)
        return queue[0] if queue else None

    def take(self, tp: TP, node: int) -> ProducerBatch:
        """The partition's head batch, now in flight: nothing more is appended to it."""
        with self.lock:
            batch = self.queues[tp].popleft()
            batch.in_flight_to = node
            self.in_flight.add(batch)
            self.muted.add(tp)
            return batch

    def finished(self, batch: ProducerBatch) -> None:
        """Its request ended (answered, failed or timed out); the partition may send again."""
        with self.lock:
            batch.in_flight_to = None
            self.in_flight.discard(batch)
            self.muted.discard(batch.tp)
            if batch.done:
                self._drop(batch)

    def reenqueue(self, batch: ProducerBatch, retry_at: float) -> None:
        with self.lock:
            batch.retry_at = retry_at
            self.queues.setdefault(batch.tp, deque()).appendleft(batch)

    def _drop(self, batch: ProducerBatch) -> None:
        if batch.size:
            self.used -= batch.size
            batch.size = 0

    # -- expiry ----------------------------------------------------------------------------
    def expire(self, now: float) -> list[ProducerBatch]:
        """Batches past their delivery deadline and not yet done (the caller fails them)."""
        with self.lock:
            expired = [b for b in self._batches() if b.deadline <= now]
            for tp, queue in self.queues.items():
                if any(b.deadline <= now for b in queue):
                    self.queues[tp] = deque(b for b in queue if b.deadline > now)
            return expired

    def release_expired(self, batches: list[ProducerBatch]) -> None:
        with self.lock:
            for b in batches:
                if b not in self.in_flight:
                    self._drop(b)

    def fail_queued(self, error: BaseException) -> int:
        """Fail every batch not sent yet (an aborted transaction's); the in-flight ones finish."""
        with self.lock:
            queued = [b for queue in self.queues.values() for b in queue]
            for queue in self.queues.values():
                queue.clear()
            for b in queued:
                self._drop(b)
        return sum(1 for b in queued if b.fail(error))

    def next_deadline(self) -> float:
        with self.lock:
            return min((b.deadline for b in self._batches()), default=float("inf"))

    def batches(self) -> list[ProducerBatch]:
        """Every batch not yet done: queued, backing off, or in flight."""
        with self.lock:
            return list(self._batches())

    def _batches(self) -> Iterator[ProducerBatch]:
        for queue in self.queues.values():
            yield from (b for b in queue if not b.done)
        yield from (b for b in self.in_flight if not b.done)

    def outcomes(self) -> list[Outcome]:
        """The outcomes of every batch not yet done (what flush and close wait for)."""
        return [b.outcome for b in self.batches() if b.outcome is not None]

    def futures(self) -> list[DeliveryFuture]:
        return [f for b in self.batches() for f in b.futures()]

    def pending_records(self) -> int:
        return sum(len(b.records) for b in self.batches())
