"""The producer's async face: ``async with client.open_producer(config) as p``.

``send()`` may block the caller at most max.block.ms: for the topic's metadata and for buffer
space (buffer.memory). Like Java's ``KafkaProducer.send``, a failure of that kind (the
max.block.ms timeout, a record too large) does not raise: it comes back as an already-failed
future (and through ``on_delivery``); nothing was enqueued. Only misuse raises (a closed
producer). After that the record belongs to the accumulator and the sender, and its future
completes exactly once within delivery.timeout.ms of its batch's creation (KIP-91).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import trio

from client.backoff import ExponentialBackoff
from client.config import producer_config
from client.errors import KafkaError
from client.exceptions import (
    MaxBlockTimeoutException,
    ProducerClosedError,
    RecordTooLargeException,
)
from client.metadata import ClusterMetadata, MetadataUpdater, PartitionInfo
from client.network import NetworkClient
from client.producer.accumulator import RecordAccumulator
from client.producer.batch import DeliveryFuture, RecordMetadata
from client.producer.partitioner import StickyPartitioner
from client.producer.sender import Sender
from client.producer.transactions import TransactionAbortedError, TransactionManager, TransactionStateError
from client.protocol.compression import codec_code
from client.protocol.records import Record
from client.transport import Connect
from kafka_common.wallclock import WallClock, system_ms

RECORD_OVERHEAD = 21   # bytes a record costs beyond key + value (length, attributes, deltas): an estimate
OnDelivery = Callable[[BaseException | None, RecordMetadata | None], None]


class AsyncProducer:
    def __init__(self, config: dict[str, Any], nursery: trio.Nursery, connect: Connect | None = None, *,
                 rng: random.Random | None = None, wall_clock: WallClock | None = None):
        self.config = c = producer_config(config)
        self.nursery = nursery
        self.rng = rng or random.Random(0)
        self.wall_clock = wall_clock or system_ms
        self.net = NetworkClient(c, nursery, connect, rng=self.rng)
        retry_backoff = ExponentialBackoff(c["retry.backoff.ms"], c["retry.backoff.max.ms"], self.rng)
        self.metadata = ClusterMetadata(c["metadata.max.age.ms"] / 1000, retry_backoff)
        self.updater = MetadataUpdater(self.net, self.metadata, c["allow.auto.create.topics"])
        self.accumulator = RecordAccumulator(batch_size=c["batch.size"], linger_s=c["linger.ms"] / 1000,
                                             delivery_timeout_s=c["delivery.timeout.ms"] / 1000,
                                             buffer_memory=c["buffer.memory"])
        self.sender = Sender(c, self.net, self.metadata, self.updater, self.accumulator,
                             codec_code(c["compression.type"]), retry_backoff)
        self.partitioner = StickyPartitioner(c["batch.size"], self.rng)
        self.txn = TransactionManager(c, self.net, self.sender, retry_backoff, nursery) if c["transactional.id"] else None
        self.sender.txn = self.txn
        self.closed = False

    async def start(self) -> None:
        await self.nursery.start(self.updater.run)
        await self.nursery.start(self.sender.run)

    # -- metadata --------------------------------------------------------------------------
    async def refresh_metadata(self, topics: Sequence[str]) -> None:
        """Fetch metadata for ``topics`` now (e.g. to warm up before timing a send)."""
        self.metadata.add_interest(topics)   # without waking the background refresher: one round
        await self.updater.refresh(topics)

    async def partitions_for(self, topic: str, timeout: float | None = None) -> list[PartitionInfo]:
        """The topic's partitions; waits at most ``timeout`` seconds (default max.block.ms) and
        raises MaxBlockTimeoutException after that, as Java's partitionsFor throws."""
        parts = self.metadata.partitions(topic)
        if parts:
            return parts
        ms = self.config["max.block.ms"] if timeout is None else int(timeout * 1000)
        return await self.updater.wait_for_topic(topic, trio.current_time() + ms / 1000, ms)

    # -- sending ---------------------------------------------------------------------------
    async def send(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int | None = None,
                   headers: Sequence[tuple[str, bytes | None]] | None = None, timestamp: int | None = None,
                   on_delivery: OnDelivery | None = None) -> DeliveryFuture:
        """Enqueue a record, blocking at most max.block.ms; returns its delivery future."""
        self._check_open()
        deadline = trio.current_time() + self.config["max.block.ms"] / 1000
        size = _size(key, value, headers)
        try:
            self._check_size(size)
            parts = self.metadata.partitions(topic)
            if not parts or (partition is not None and partition >= len(parts)):
                parts = await self._wait_for_partitions(topic, partition, deadline)
            if size > self.accumulator.free():  # a cancel scope per record costs more than the record
                await self._wait_for_memory(size, deadline)
        except KafkaError as exc:
            return _with_callback(DeliveryFuture.failed(exc), on_delivery)
        self._check_open()
        return self._append(topic, parts, value, key, partition, headers, timestamp, size, on_delivery)

    def send_nowait(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int | None = None,
                    headers: Sequence[tuple[str, bytes | None]] | None = None, timestamp: int | None = None,
                    on_delivery: OnDelivery | None = None) -> DeliveryFuture:
        """``send`` that never blocks: if metadata or buffer space is missing, the future fails
        at once (use ``can_send_nowait`` first, or ``send``)."""
        self._check_open()
        size = _size(key, value, headers)
        parts = self.metadata.partitions(topic)
        try:
            self._check_size(size)
            if not parts:
                raise KafkaError(f"no metadata for topic '{topic}' yet: send() waits for it up to max.block.ms")
            if size > self.accumulator.free():
                raise KafkaError(f"buffer.memory={self.config['buffer.memory']} is full: send() waits up to max.block.ms")
        except KafkaError as exc:
            return _with_callback(DeliveryFuture.failed(exc), on_delivery)
        return self._append(topic, parts, value, key, partition, headers, timestamp, size, on_delivery)

    def can_send_nowait(self, topic: str, size: int = 0) -> bool:
        return not self.closed and bool(self.metadata.partitions(topic)) and size + 4096 <= self.accumulator.free()

    def _append(self, topic: str, parts: list[PartitionInfo], value, key, partition, headers, timestamp, size: int,
                on_delivery: OnDelivery | None) -> DeliveryFuture:
        future, wake = self.append_record(topic, parts, value, key, partition, headers, timestamp, size,
                                          trio.current_time())
        if wake:
            self.sender.wake()
        return _with_callback(future, on_delivery) if on_delivery is not None else future

    def append_record(self, topic: str, parts: list[PartitionInfo], value, key, partition, headers, timestamp,
                      size: int, now: float, future_type: type[DeliveryFuture] = DeliveryFuture
                      ) -> tuple[DeliveryFuture, bool]:
        """Append under the accumulator's lock: safe from the blocking face's application thread
        too (``now`` is the network thread's trio clock, read there). Returns the future and
        whether the sender should be woken (a new or full batch); the caller wakes it."""
        with self.accumulator.lock:
            if self.closed:
                return future_type.failed(ProducerClosedError("cannot send after the producer is closed")), False
            if partition is None:
                available = [p.partition for p in parts if p.leader >= 0]
                partition = self.partitioner.partition(topic, key, size, available, len(parts))
            elif not 0 <= partition < len(parts):
                return future_type.failed(KafkaError(
                    f"partition {partition} of '{topic}' does not exist ({len(parts)} partitions)")), False
            record = Record(value, key, tuple(headers) if headers else (), timestamp if timestamp is not None else -1)
            return self.accumulator.append(topic, partition, record, size, now, self.wall_clock(), future_type)

    def _check_open(self) -> None:
        if self.closed:
            raise ProducerClosedError("cannot send after the producer is closed")

    def _check_size(self, size: int) -> None:
        for setting in ("max.request.size", "buffer.memory"):
            if size > self.config[setting]:
                raise RecordTooLargeException(f"the record is {size} bytes (serialized, estimated), larger than "
                                              f"{setting}={self.config[setting]}")

    async def _wait_for_partitions(self, topic: str, partition: int | None, deadline: float) -> list[PartitionInfo]:
        """The topic's partitions, and (as Java) the requested partition among them. (No outer
        cancel scope here: with two scopes expiring together trio hands the cancellation to the
        outer one, and wait_for_topic's own explanation would be lost.)"""
        ms = self.config["max.block.ms"]
        while True:
            parts = await self.updater.wait_for_topic(topic, deadline, ms)
            if partition is None or partition < len(parts):
                return parts
            if trio.current_time() >= deadline:
                raise MaxBlockTimeoutException(ms, f"partition {partition} of topic '{topic}' to exist "
                                                   f"(it has {len(parts)})")
            self.updater.request_update()
            await trio.sleep(min(self.config["retry.backoff.ms"] / 1000, deadline - trio.current_time()))

    async def _wait_for_memory(self, size: int, deadline: float) -> None:
        with trio.move_on_at(deadline):
            while size > self.accumulator.free():
                await self.sender.memory_freed.wait()
            return
        raise MaxBlockTimeoutException(self.config["max.block.ms"], f"{size} bytes of buffer.memory="
                                       f"{self.config['buffer.memory']} ({self.accumulator.free()} free)")

    # -- transactions (client.producer.transactions) ---------------------------------------------
    async def init_transactions(self, timeout: float | None = None) -> None:
        """Get the transactional id's producer id and epoch from its coordinator, fencing any
        earlier producer with the same id (and aborting its open transaction). Blocks at most
        ``timeout`` seconds, else max.block.ms."""
        await self._transactions().init_transactions(timeout)

    def begin_transaction(self) -> None:
        self._transactions().begin_transaction()

    async def send_offsets_to_transaction(self, offsets: dict[tuple[str, int], int], group_id: str,
                                          timeout: float | None = None) -> None:
        """Commit a consumer group's offsets ({(topic, partition): next offset}) with the transaction."""
        await self._transactions().send_offsets_to_transaction(offsets, group_id, timeout)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit. On TimeoutException call it again: it completes the same commit."""
        await self._transactions().commit_transaction(self.flush, timeout)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Drop the records not sent yet (their futures fail), wait for those in flight, then abort."""
        async def drop() -> None:
            self.accumulator.fail_queued(TransactionAbortedError("the transaction was aborted before this record was sent"))
            for outcome in self.accumulator.outcomes():
                await outcome.event.wait()

        await self._transactions().abort_transaction(drop, timeout)

    def _transactions(self) -> TransactionManager:
        self._check_open()
        if self.txn is None:
            raise TransactionStateError("transactions need transactional.id in the producer's configuration")
        return self.txn

    # -- flush and close -------------------------------------------------------------------
    async def flush(self) -> None:
        """Send everything buffered now (ignoring linger.ms) and wait until each record sent so
        far is delivered or failed."""
        outcomes = self.accumulator.outcomes()
        self.accumulator.flushing += 1
        self.sender.wake()
        try:
            for outcome in outcomes:
                await outcome.event.wait()
        finally:
            self.accumulator.flushing -= 1

    async def close(self, timeout: float | None = None) -> None:
        """Stop accepting records, give the buffered ones up to ``timeout`` seconds (None:
        until each is delivered or expired), then fail what is left and close connections."""
        self.closed = True
        self.accumulator.closing = True
        self.sender.wake()
        with trio.move_on_after(float("inf") if timeout is None else max(timeout, 0)):
            for outcome in self.accumulator.outcomes():
                await outcome.event.wait()
        self.close_now(f"the producer was closed (close(timeout={timeout})) before these were delivered")

    def close_now(self, why: str = "the producer was closed before these were delivered") -> None:
        with self.accumulator.lock:   # an append from another thread sees closed, or its batch is failed below
            self.closed = True
        for b in self.accumulator.batches():
            b.fail(ProducerClosedError(f"{len(b.records)} record(s) for {b.topic}-{b.partition} not delivered: {why}"))
        self.net.close()


def _size(key: bytes | None, value: bytes | None, headers) -> int:
    size = RECORD_OVERHEAD + len(key or b"") + len(value or b"")
    for k, v in headers or ():
        size += len(k) + len(v or b"") + 2
    return size


def _with_callback(future: DeliveryFuture, on_delivery: OnDelivery | None) -> DeliveryFuture:
    if on_delivery is not None:
        future.add_done_callback(lambda f: on_delivery(f.error, f.value))
    return future


@contextlib.asynccontextmanager
async def open_producer(config: dict[str, Any], connect: Connect | None = None, *, rng: random.Random | None = None,
                        wall_clock: WallClock | None = None) -> AsyncIterator[AsyncProducer]:
    """A running producer. Leaving the block normally closes it as ``close()`` does (waits for
    every record's outcome); leaving on an exception fails undelivered records at once."""
    async with trio.open_nursery() as nursery:
        producer = AsyncProducer(config, nursery, connect, rng=rng, wall_clock=wall_clock)
        await producer.start()
        try:
            yield producer
        except BaseException:
            producer.close_now("the block using the producer raised")
            raise
        else:
            await producer.close()
        finally:
            producer.close_now()
            nursery.cancel_scope.cancel()
