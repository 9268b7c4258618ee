"""The blocking face: ``client.Producer(config)`` for ordinary Python code.

A network thread runs trio and the async producer; the application thread hands records over
and waits on ``concurrent.futures.Future``s. The application thread never waits past its own
deadline, whatever the network thread does:

- ``send()`` returns at once when the topic's metadata and buffer space are there (the record is
  handed over without a round trip). Otherwise it waits at most max.block.ms — measured on the
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

import concurrent.futures
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Self

import trio

from client.config import producer_config
from client.errors import KafkaError, TimeoutException
from client.exceptions import MaxBlockTimeoutException, NetworkThreadDied
from client.producer.async_producer import (
    AsyncProducer,
    OnDelivery,
    _size,
    open_producer,
)
from client.producer.batch import DeliveryFuture, RecordMetadata
from client.transport import Connect
from client.trio_thread import TrioThread

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


class Producer:
    def __init__(self, config: dict[str, Any], connect: Connect | None = None, **producer_kwargs: Any):
        self._parsed = producer_config(config)   # a bad config fails here, on the caller's thread
        self._config, self._connect, self._kwargs = dict(config), connect, producer_kwargs
        self._error: BaseException | None = None
        self._producer: AsyncProducer | None = None
        self._pending: set[concurrent.futures.Future] = set()
        self._lock = threading.Lock()
        self._posted = 0                                  # bytes handed over but not yet appended
        self._memory = threading.Condition(self._lock)    # notified when the sender frees buffer.memory
        self._handoff: list[tuple[tuple, concurrent.futures.Future, int]] = []
        self._drain_scheduled = False
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
                self._producer = producer
                producer.sender.memory_listeners.append(self._notify_memory)
                await self._runner.until_stopped()
                self._nursery.cancel_scope.cancel()
            producer.close_now("the producer was closed before these were delivered")

    def _fail_pending(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, set()
        for f in pending:
            if not f.done():
                f.set_exception(self._error or NetworkThreadDied("the producer closed before delivery"))

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
             on_delivery: OnDelivery | None = None) -> concurrent.futures.Future[RecordMetadata]:
        """Enqueue a record; blocks at most max.block.ms. Returns a Future of its metadata."""
        self._check_alive()
        result: concurrent.futures.Future = concurrent.futures.Future()
        result.add_done_callback(self._forget)
        args = (topic, value, key, partition, headers, timestamp, on_delivery)
        producer = self._producer
        assert producer is not None
        size = _size(key, value, headers)
        if producer.metadata.partitions(topic) and size <= producer.config["buffer.memory"]:
            return self._send_known(producer, args, result, size)
        with self._lock:
            self._pending.add(result)
        handover = _Handover()
        self._call_soon(self._nursery.start_soon, self._post, args, result, handover)
        if not handover.settled.wait(self._parsed["max.block.ms"] / 1000 + GRACE_S) and handover.settle("gave up"):
            result.set_exception(MaxBlockTimeoutException(
                self._parsed["max.block.ms"], f"the network thread to take the record for '{args[0]}' (measured on "
                f"the application thread: the network thread did not answer)"))
        return result

    def _send_known(self, producer: AsyncProducer, args: tuple, result: concurrent.futures.Future,
                    size: int) -> concurrent.futures.Future:
        """Metadata known: wait here, not through the network thread, for buffer space, then
        queue the record for the network thread. One wake-up drains many records (a trio
        wake-up per record would cost more than the record)."""
        with self._lock:
            self._pending.add(result)
            # the common case first: room now, no predicate closure, no thread checks
            room = producer.can_send_nowait(args[0], size + self._posted) or self._memory.wait_for(
                lambda: producer.can_send_nowait(args[0], size + self._posted) or producer.closed or
                not self._runner.is_alive(), timeout=self._parsed["max.block.ms"] / 1000)
            if room:
                self._posted += size
                self._handoff.append((args, result, size))
                wake, self._drain_scheduled = not self._drain_scheduled, True
        self._check_alive()
        if not room:
            result.set_exception(MaxBlockTimeoutException(
                self._parsed["max.block.ms"], f"{size} bytes of buffer.memory={self._parsed['buffer.memory']} "
                f"({producer.accumulator.free()} free)"))
        elif wake:
            self._call_soon(self._drain_handoff)
        return result

    def _notify_memory(self) -> None:
        with self._lock:
            self._memory.notify_all()

    def _drain_handoff(self) -> None:
        with self._lock:
            items, self._handoff = self._handoff, []
            self._drain_scheduled = False
            self._posted -= sum(size for _, _, size in items)
        for args, result, size in items:
            self._post_nowait(args, result, size)

    def _post_nowait(self, args: tuple, result: concurrent.futures.Future, size: int) -> None:
        producer = self._producer
        if producer is None or not producer.can_send_nowait(args[0], size):
            self._nursery.start_soon(self._post, args, result, None)   # the network thread waits, not the caller
            return
        self._link(producer.send_nowait(*args), result)

    async def _post(self, args: tuple, result: concurrent.futures.Future, handover: _Handover | None) -> None:
        producer = self._producer
        assert producer is not None
        topic, value, key, partition, headers, _, on_delivery = args
        try:
            await _ready_to_append(producer, topic, partition, _size(key, value, headers))
        except KafkaError as exc:
            if handover is None or handover.settle("failed"):
                result.set_exception(exc)
                if on_delivery:
                    on_delivery(exc, None)
            return
        if handover is not None and not handover.settle("enqueued"):
            return   # the application thread gave up first: never enqueue it
        self._link(producer.send_nowait(*args), result)

    def _forget(self, f: concurrent.futures.Future) -> None:
        with self._lock:
            self._pending.discard(f)

    @staticmethod
    def _link(delivery: DeliveryFuture, result: concurrent.futures.Future) -> None:
        def done(d: DeliveryFuture) -> None:
            if result.done():
                return
            if d.error is not None:
                result.set_exception(d.error)
            else:
                result.set_result(d.value)

        delivery.add_done_callback(done)

    def flush(self, timeout: float | None = None) -> int:
        """Send everything buffered now and wait at most ``timeout`` seconds for every record
        sent so far; returns how many are still pending."""
        with self._lock:
            pending = list(self._pending)
        if self._runner.is_alive() and self._producer is not None:
            try:
                self._call_soon(self._nursery.start_soon, self._producer.flush)
            except KafkaError:
                pass
        _, not_done = concurrent.futures.wait(pending, timeout=timeout)
        return len(not_done)

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
            raise TimeoutException(f"commit_transaction: records of the transaction were not delivered within "
                                   f"{limit * 1000:.0f} ms; call it again to keep waiting")
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
