"""The blocking face: ``client.Producer(config)`` for ordinary Python code.

A network thread runs trio and the async producer; the application thread appends records to
the producer's accumulator itself, under its lock (as Java's application threads do), and waits
on ``RecordFuture``s, which read like ``concurrent.futures.Future`` (``result(timeout)``,
``exception``, ``done``, ``add_done_callback``) and share one outcome per batch. The application
thread never waits past its own deadline, whatever the network thread does:

- ``send()`` returns at once when the topic's metadata and buffer space are there (the record is
  appended without a round trip; the network thread is woken once per new or full batch). Otherwise it waits at most max.block.ms — measured on the
  application thread too, so a stuck network thread cannot hold it longer — and on expiry
  returns an already-failed future (MaxBlockTimeoutException, Java's behaviour); the record is
  then guaranteed not to be enqueued later (the two threads settle that under a lock).
- ``flush(timeout)`` and ``close(timeout)`` take seconds; ``flush`` returns how many records
  are still undelivered (confluent-kafka's convention); ``close`` then fails them.
- If the network thread has died, every call fails at once with NetworkThreadDied.
``on_delivery(error, metadata)`` runs once per record, on the network thread (as Java runs
callbacks on its I/O thread): keep it short.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Self

import trio

from client.config import producer_config
from client.errors import KafkaError, TimeoutException
from client.exceptions import MaxBlockTimeoutException, NetworkThreadDied
from client.metadata import PartitionInfo
from client.producer.async_producer import (
    AsyncProducer,
    OnDelivery,
    _size,
    open_producer,
)
from client.producer.batch import DeliveryFuture, Outcome, RecordMetadata
from client.producer.txn_errors import RETRIABLE, classed
from client.protocol.records import Record
from client.transport import Connect
from kafka_common.trio_thread import TrioThread

GRACE_S = 0.05   # the network thread's own max.block.ms timer fires first; this is only a backstop


class _Handover:
    """One slow-path send: whoever settles it first (enqueued / given up) wins."""

    __slots__ = ("lock", "settled", "state")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state = "pending"
        self.settled = threading.Event()

    def settle(self, state: str) -> bool:
        with self.lock:
            if self.state != "pending":
                return False
            self.state = state
        self.settled.set()
        return True


class RecordFuture(DeliveryFuture):
    """A record's future for the blocking face: ``concurrent.futures.Future``'s reading methods
    over the batch's shared outcome (``result(timeout)`` raises TimeoutError when it is not done
    in time). Callbacks run on the network thread, or at once on the caller's if already done."""

    __slots__ = ()

    def result(self, timeout: float | None = None) -> RecordMetadata:
        o = self._outcome
        if not o.thread_event.wait(timeout):
            raise TimeoutError(f"the record's delivery did not complete within {timeout} s")
        if o.error is not None:
            raise o.error
        return o.metadata(self._index)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if not self._outcome.thread_event.wait(timeout):
            raise TimeoutError(f"the record's delivery did not complete within {timeout} s")
        return self._outcome.error

    def cancel(self) -> bool:
        return False   # a record handed to the producer cannot be taken back

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return not self.done()


class Producer:
    def __init__(self, config: dict[str, Any], connect: Connect | None = None, **producer_kwargs: Any):
        self._parsed = producer_config(config)   # a bad config fails here, on the caller's thread
        self._config, self._connect, self._kwargs = dict(config), connect, producer_kwargs
        self._error: BaseException | None = None
        self._producer: AsyncProducer | None = None
        self._clock: trio.abc.Clock | None = None
        self._waiting: set[Outcome] = set()               # slow-path sends the network thread has not appended
        self._lock = threading.Lock()
        self._memory = threading.Condition(self._lock)    # notified when the sender frees buffer.memory
        self._runner = TrioThread("broker-emu-producer-network", self._run, self._exited)
        self._runner.start()
        if self._error is not None:
            raise self._error

    # -- the network thread ------------------------------------------------------------------
    def _exited(self, error: BaseException | None) -> None:
        """Whatever ended the network thread is reported to every later call."""
        if error is not None:
            self._error = error if isinstance(error, KafkaError) else NetworkThreadDied(f"the network thread died: {error!r}")
        if self._error is None:
            self._error = NetworkThreadDied("the producer is closed (its network thread has stopped)")
        self._fail_pending()

    async def _run(self) -> None:
        async with open_producer(self._config, self._connect, **self._kwargs) as producer:
            async with trio.open_nursery() as self._nursery:
                self._clock = trio.lowlevel.current_clock()
                self._producer = producer
                producer.sender.memory_listeners.append(self._notify_memory)
                await self._runner.until_stopped()
                self._nursery.cancel_scope.cancel()
            producer.close_now("the producer was closed before these were delivered")

    def _fail_pending(self) -> None:
        """The network thread is gone: fail every record it will never deliver."""
        error = self._error or NetworkThreadDied("the producer closed before delivery")
        producer = self._producer
        if producer is not None:
            with producer.accumulator.lock:
                producer.closed = True
                batches = producer.accumulator.batches()
            for b in batches:
                b.fail(error)
        with self._lock:
            waiting, self._waiting = self._waiting, set()
        for outcome in waiting:
            outcome.settle(error=error)

    def _check_alive(self) -> None:
        if not self._runner.is_alive() or self._runner.token is None:
            raise self._error or NetworkThreadDied("the producer's network thread is not running")

    def _call_soon(self, fn: Callable, *args: Any) -> None:
        try:
            self._runner.run_sync_soon(fn, *args)
        except trio.RunFinishedError:
            raise self._error or NetworkThreadDied("the producer's network thread stopped") from None

    # -- the application thread --------------------------------------------------------------
    def send(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int | None = None,
             headers: Sequence[tuple[str, bytes | None]] | None = None, timestamp: int | None = None,
             on_delivery: OnDelivery | None = None) -> RecordFuture:
        """Enqueue a record; blocks at most max.block.ms. Returns a future of its metadata."""
        self._check_alive()
        producer = self._producer
        assert producer is not None
        size = _size(key, value, headers)
        parts = producer.metadata.partitions(topic)
        if parts and size <= self._parsed["buffer.memory"] and size <= self._parsed["max.request.size"] and (
                partition is None or partition < len(parts)):
            future = self._send_known(producer, topic, parts, value, key, partition, headers, timestamp, size)
        else:
            future = self._send_slow((topic, value, key, partition, headers, timestamp, None))
        if on_delivery is not None:
            future.add_done_callback(lambda f: on_delivery(f.error, f.value))
        return future

    def _send_known(self, producer: AsyncProducer, topic: str, parts: list, value, key, partition, headers,
                    timestamp, size: int) -> RecordFuture:
        """Metadata known: wait here, not through the network thread, for buffer space, then
        append."""
        if not producer.can_send_nowait(topic, size):
            with self._lock:
                room = self._memory.wait_for(lambda: producer.can_send_nowait(topic, size) or producer.closed or
                                             not self._runner.is_alive(), timeout=self._parsed["max.block.ms"] / 1000)
            self._check_alive()
            if not room:
                return RecordFuture.failed(MaxBlockTimeoutException(
                    self._parsed["max.block.ms"], f"{size} bytes of buffer.memory={self._parsed['buffer.memory']} "
                    f"({producer.accumulator.free()} free)"))
        assert self._clock is not None
        future, wake = producer.append_record(topic, parts, value, key, partition, headers, timestamp, size,
                                              self._clock.current_time(), RecordFuture)
        if wake:
            self._call_soon(producer.sender.wake)
        if not self._runner.is_alive():
            self._fail_pending()   # appended as the network thread ended: fail it rather than leave it waiting
        assert isinstance(future, RecordFuture)
        return future

    def _send_slow(self, args: tuple) -> RecordFuture:
        """Metadata (or the partition) not known yet: the network thread waits for it, at most
        max.block.ms; so does this thread, on its own clock, and whoever gives up first wins."""
        placeholder = Outcome(args[0], -1, [Record(None)], -1)
        with self._lock:
            self._waiting.add(placeholder)
        handover = _Handover()
        self._call_soon(self._nursery.start_soon, self._post, args, placeholder, handover)
        if not handover.settled.wait(self._parsed["max.block.ms"] / 1000 + GRACE_S) and handover.settle("gave up"):
            self._settle_placeholder(placeholder, error=MaxBlockTimeoutException(
                self._parsed["max.block.ms"], f"the network thread to take the record for '{args[0]}' (measured on "
                f"the application thread: the network thread did not answer)"))
        return RecordFuture(placeholder, 0)

    def _settle_placeholder(self, placeholder: Outcome, metadata: RecordMetadata | None = None,
                            error: BaseException | None = None) -> None:
        with self._lock:
            self._waiting.discard(placeholder)
        if metadata is not None:
            placeholder.partition = metadata.partition
            placeholder.records = [Record(None, timestamp=metadata.timestamp)]
            placeholder.settle(base_offset=metadata.offset)
        else:
            placeholder.settle(error=error)

    def _notify_memory(self) -> None:
        with self._lock:
            self._memory.notify_all()

    async def _post(self, args: tuple, placeholder: Outcome, handover: _Handover) -> None:
        producer = self._producer
        assert producer is not None
        topic, value, key, partition, headers, _, _ = args
        try:
            await _ready_to_append(producer, topic, partition, _size(key, value, headers))
        except KafkaError as exc:
            if handover.settle("failed"):
                self._settle_placeholder(placeholder, error=exc)
            return
        if not handover.settle("enqueued"):
            return   # the application thread gave up first: never enqueue it

        def mirror(real: DeliveryFuture) -> None:
            self._settle_placeholder(placeholder, real.value, real.error)

        producer.send_nowait(*args).add_done_callback(mirror)

    def partitions_for(self, topic: str, timeout: float | None = None) -> list[PartitionInfo]:
        """The topic's partitions, fetching its metadata if they are not known yet (Java's
        ``partitionsFor``): waits at most ``timeout`` seconds, else max.block.ms, then raises
        MaxBlockTimeoutException. Also a warm-up: a send after it is not held for metadata."""
        return self._on_network_thread(self._live().partitions_for, topic, timeout)

    def flush(self, timeout: float | None = None) -> int:
        """Send everything buffered now and wait at most ``timeout`` seconds for every record
        sent so far; returns how many are still pending."""
        producer = self._producer
        outcomes = producer.accumulator.outcomes() if producer is not None else []
        with self._lock:
            outcomes += self._waiting
        if self._runner.is_alive() and producer is not None:
            try:
                self._call_soon(self._nursery.start_soon, producer.flush)
            except KafkaError:
                pass
        deadline = None if timeout is None else time.monotonic() + timeout
        for o in outcomes:
            o.thread_event.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return sum(len(o.records) for o in outcomes if not o.done())

    # -- transactions: the async face's calls, run on the network thread ------------------------
    def init_transactions(self, timeout: float | None = None) -> None:
        self._on_network_thread(self._live().init_transactions, timeout)

    def begin_transaction(self) -> None:
        self._check_alive()
        self._runner.run_sync(self._live().begin_transaction)

    def send_offsets_to_transaction(self, offsets: dict[tuple[str, int], int], group_id: str,
                                    timeout: float | None = None) -> None:
        self._on_network_thread(self._live().send_offsets_to_transaction, offsets, group_id, timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Wait for every record sent so far (they may still be on their way to the network
        thread), then commit; the whole call within ``timeout`` or max.block.ms."""
        limit = self._parsed["max.block.ms"] / 1000 if timeout is None else timeout
        start = time.monotonic()
        if self.flush(limit):
            raise classed(TimeoutException(f"commit_transaction: records of the transaction were not delivered "
                                           f"within {limit * 1000:.0f} ms; call it again to keep waiting"), RETRIABLE)
        self._on_network_thread(self._live().commit_transaction, max(limit - (time.monotonic() - start), 0.0))

    def abort_transaction(self, timeout: float | None = None) -> None:
        self._on_network_thread(self._live().abort_transaction, timeout)

    def _live(self) -> AsyncProducer:
        self._check_alive()
        assert self._producer is not None
        return self._producer

    def _on_network_thread(self, afn: Callable[..., Any], *args: Any) -> Any:
        try:
            return self._runner.run(afn, *args)
        except trio.RunFinishedError:
            raise self._error or NetworkThreadDied("the producer's network thread stopped") from None

    def close(self, timeout: float | None = None) -> None:
        """Flush for at most ``timeout`` seconds, then stop; records still undelivered fail
        with ProducerClosedError."""
        if self._runner.is_alive():
            self.flush(timeout)
            self._runner.stop(join_timeout=5)
        self._fail_pending()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _ready_to_append(producer: AsyncProducer, topic: str, partition: int | None, size: int) -> None:
    """What ``AsyncProducer.send`` blocks on (metadata, buffer space), without appending."""
    deadline = trio.current_time() + producer.config["max.block.ms"] / 1000
    producer._check_open()
    producer._check_size(size)
    parts = producer.metadata.partitions(topic)
    if not parts or (partition is not None and partition >= len(parts)):
        await producer._wait_for_partitions(topic, partition, deadline)
    await producer._wait_for_memory(size, deadline)
