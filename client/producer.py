"""The producer (async face): accumulator, sender, delivery timeout (KIP-91), idempotence.

A record's life: ``send()`` may block up to max.block.ms for metadata; the record joins a batch
for its partition; the batch waits linger.ms (or until batch.size), goes out as a Produce with
timeout_ms = request.timeout.ms (the Java producer's choice, which makes the broker's purgatory
and the client's own request timeout race: SEMANTICS.md §2.3), and is retried on retriable
errors with exponential backoff. ``delivery.timeout.ms`` bounds all of it from the batch's
creation: at that deadline the batch fails once, wherever it is (accumulator, backoff or in
flight), with an error saying which side gave up last. Idempotent producers (the default)
stamp producer id, epoch and sequence once per batch, so a retry after REQUEST_TIMED_OUT or a
disconnect is de-duplicated by the broker.
"""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Sequence

import trio

from client.config import producer_config
from client.errors import KafkaError, TimeoutException, error_for_code
from client.network import Connect, NetworkClient
from client.partitioner import partition_for_key
from client.protocol import ApiKey
from client.protocol.compression import codec_code
from client.protocol.records import Record, encode_batch

RETRIABLE_REFRESH = {3, 5, 6, 74, 75}  # errors after which metadata is stale


@dataclass
class RecordMetadata:
    topic: str
    partition: int
    offset: int
    timestamp: int


class DeliveryFuture:
    """Completes once with RecordMetadata or an exception."""

    def __init__(self) -> None:
        self._event = trio.Event()
        self.value: RecordMetadata | None = None
        self.error: BaseException | None = None
        self._callbacks: list = []

    def add_done_callback(self, fn) -> None:
        """``fn(future)`` runs once, synchronously, when the future completes."""
        if self._event.is_set():
            fn(self)
        else:
            self._callbacks.append(fn)

    def _set(self, value: RecordMetadata | None = None, error: BaseException | None = None) -> bool:
        if self._event.is_set():
            return False
        self.value, self.error = value, error
        self._event.set()
        for fn in self._callbacks:
            fn(self)
        self._callbacks.clear()
        return True

    def done(self) -> bool:
        return self._event.is_set()

    async def get(self) -> RecordMetadata:
        await self._event.wait()
        if self.error is not None:
            raise self.error
        assert self.value is not None
        return self.value


@dataclass
class Batch:
    topic: str
    partition: int
    created: float
    deadline: float
    records: list[Record] = field(default_factory=list)
    futures: list[DeliveryFuture] = field(default_factory=list)
    size: int = 0
    attempts: int = 0
    sequence: int = -1
    payload: bytes | None = None          # frozen at the first attempt: retries resend the same bytes
    last_error: str = "it never left the accumulator"
    done: bool = False

    def fail(self, error: BaseException) -> None:
        if not self.done:
            self.done = True
            for f in self.futures:
                f._set(error=error)


class AsyncProducer:
    def __init__(self, config: dict[str, Any], nursery: trio.Nursery, connect: Connect | None = None):
        self.config = producer_config(config)
        self.nursery = nursery
        self.net = NetworkClient(self.config, nursery, connect, on_disconnect=lambda node: self._want_metadata.set())
        self.partitions: dict[str, list[tuple[int, int]]] = {}   # topic -> [(leader, epoch)]
        self.batches: dict[tuple[str, int], list[Batch]] = {}
        self._wake = trio.Event()
        self._want_metadata = trio.Event()
        self._round_robin = itertools.count()
        self.producer_id, self.producer_epoch = -1, -1
        self.sequences: dict[tuple[str, int], int] = {}
        self.codec = codec_code(self.config["compression.type"])
        self.closed = False
        self.metadata_at = float("-inf")

    # -- metadata ------------------------------------------------------------------------------
    def _any_node(self) -> int:
        known = [n for n in self.net.nodes if n >= 0] or list(self.net.nodes)
        return known[next(self._round_robin) % len(known)]

    async def refresh_metadata(self, topics: Sequence[str]) -> None:
        body = {"topics": [{"name": t} for t in topics], "allow_auto_topic_creation": self.config["allow.auto.create.topics"]}
        md = await self.net.request(self._any_node(), ApiKey.METADATA, body)
        self.apply_metadata(md)
        self.metadata_at = trio.current_time()

    def apply_metadata(self, md: Any) -> None:
        """Take a Metadata answer, ignoring any partition whose leader epoch is older than the
        one we know (a lagging broker's view must not move us back to an old leader)."""
        self.net.nodes.update({b.node_id: (b.host, b.port) for b in md.brokers})
        for t in md.topics:
            if t.error_code == 0 and t.partitions:
                known = self.partitions.get(t.name, [])
                fresh = []
                for p in sorted(t.partitions, key=lambda p: p.partition_index):
                    old = known[p.partition_index] if p.partition_index < len(known) else None
                    stale = old is not None and 0 <= p.leader_epoch < old[1]
                    fresh.append(old if stale else (p.leader_id, p.leader_epoch))
                self.partitions[t.name] = fresh
            elif t.error_code:
                self.partitions.pop(t.name, None)

    def _metadata_too_old(self) -> bool:
        return trio.current_time() - self.metadata_at >= self.config["metadata.max.age.ms"] / 1000

    async def _wait_for_metadata(self, topic: str, deadline: float) -> list[tuple[int, int]]:
        """max.block.ms: send() blocks at most this long for the topic's metadata."""
        last = "no answer yet"
        backoff = self.config["retry.backoff.ms"] / 1000
        while topic not in self.partitions:
            try:
                with trio.move_on_at(deadline):
                    await self.refresh_metadata([topic])
            except KafkaError as exc:
                last = str(exc)
            if topic in self.partitions:
                break
            if trio.current_time() >= deadline:
                raise TimeoutException(
                    f"send() blocked for max.block.ms={self.config['max.block.ms']} ms waiting for metadata of topic "
                    f"'{topic}' (client-side timeout; the topic is missing or its brokers unreachable; last: {last})")
            await trio.sleep(min(backoff, max(deadline - trio.current_time(), 0)))
        return self.partitions[topic]

    # -- sending -------------------------------------------------------------------------------
    async def send(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int | None = None,
                   headers: Sequence[tuple[str, bytes | None]] = (), timestamp: int | None = None) -> DeliveryFuture:
        if self.closed:
            raise KafkaError("the producer is closed")
        now = trio.current_time()
        await self._wait_for_metadata(topic, now + self.config["max.block.ms"] / 1000)
        return self.send_nowait(topic, value, key, partition, headers, timestamp)

    def send_nowait(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int | None = None,
                    headers: Sequence[tuple[str, bytes | None]] = (), timestamp: int | None = None) -> DeliveryFuture:
        """``send`` for a topic whose metadata is known (never blocks)."""
        if self.closed:
            raise KafkaError("the producer is closed")
        parts = self.partitions.get(topic)
        if parts is None:
            raise KafkaError(f"no metadata for topic '{topic}' yet: use send(), which waits up to max.block.ms")
        if partition is None:
            partition = partition_for_key(key, len(parts)) if key is not None else next(self._round_robin) % len(parts)
        elif not 0 <= partition < len(parts):
            raise KafkaError(f"partition {partition} of '{topic}' does not exist ({len(parts)} partitions)")
        record = Record(value, key, list(headers), timestamp if timestamp is not None else -1)
        size = len(value or b"") + len(key or b"") + 20
        if size > self.config["max.request.size"]:
            raise KafkaError(f"the record is {size} bytes, over max.request.size={self.config['max.request.size']}")
        future = DeliveryFuture()
        self._append(topic, partition, record, size, future)
        return future

    def _append(self, topic: str, partition: int, record: Record, size: int, future: DeliveryFuture) -> None:
        queue = self.batches.setdefault((topic, partition), [])
        now = trio.current_time()
        if not queue or queue[-1].payload is not None or queue[-1].size + size > self.config["batch.size"]:
            batch = Batch(topic, partition, now, now + self.config["delivery.timeout.ms"] / 1000)
            queue.append(batch)
            self.nursery.start_soon(self._expire_at_deadline, batch)
        queue[-1].records.append(record)
        queue[-1].futures.append(future)
        queue[-1].size += size
        self._wake.set()

    async def _expire_at_deadline(self, batch: Batch) -> None:
        """KIP-91: the batch fails at its delivery deadline wherever it is; told once."""
        await trio.sleep_until(batch.deadline)
        if batch.done:
            return
        batch.fail(TimeoutException(
            f"{len(batch.futures)} record(s) for {batch.topic}-{batch.partition} expired: delivery.timeout.ms="
            f"{self.config['delivery.timeout.ms']} ms passed since the batch was created, after {batch.attempts} "
            f"attempt(s); last: {batch.last_error}"))
        queue = self.batches.get((batch.topic, batch.partition), [])
        if batch in queue and batch.payload is None:
            queue.remove(batch)

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """The sender: drains ready batches, one in-flight batch per partition (ordering)."""
        task_status.started()
        linger = self.config["linger.ms"] / 1000
        busy: set[tuple[str, int]] = set()
        while True:
            self._wake = trio.Event()
            now = trio.current_time()
            next_due = float("inf")
            for tp, queue in list(self.batches.items()):
                while queue and queue[0].done:
                    queue.pop(0)
                if not queue or tp in busy:
                    continue
                batch = queue[0]
                due = batch.created + linger
                if due <= now or batch.size >= self.config["batch.size"] or len(queue) > 1:
                    busy.add(tp)
                    self.nursery.start_soon(self._deliver, batch, busy)
                else:
                    next_due = min(next_due, due)
            with trio.move_on_at(next_due):
                await self._wake.wait()

    async def _deliver(self, batch: Batch, busy: set) -> None:
        tp = (batch.topic, batch.partition)
        try:
            await self._attempts(batch)
        finally:
            queue = self.batches.get(tp, [])
            if batch in queue:
                queue.remove(batch)
            busy.discard(tp)
            self._wake.set()

    async def _attempts(self, batch: Batch) -> None:
        backoff = self.config["retry.backoff.ms"] / 1000
        while not batch.done:
            batch.attempts += 1
            try:
                with trio.move_on_at(batch.deadline):
                    outcome = await self._attempt(batch)
                    if outcome is None:
                        return
                    batch.last_error = outcome
            except KafkaError as exc:
                batch.last_error = f"{type(exc).__name__}: {exc}"
                if not getattr(exc, "retriable", False):
                    batch.fail(exc)
                    return
            if batch.done or trio.current_time() >= batch.deadline:
                return
            if batch.attempts > self.config["retries"]:
                batch.fail(KafkaError(f"gave up after {batch.attempts} attempt(s) (retries={self.config['retries']}); last: {batch.last_error}"))
                return
            await trio.sleep_until(min(trio.current_time() + backoff, batch.deadline))
            backoff = min(backoff * 2, self.config["retry.backoff.max.ms"] / 1000)

    async def _attempt(self, batch: Batch) -> str | None:
        """One Produce. Returns None when the batch completed, else why it should be retried."""
        if self._want_metadata.is_set() or batch.topic not in self.partitions or self._metadata_too_old():
            self._want_metadata = trio.Event()
            await self.refresh_metadata([batch.topic])
        if self.config["enable.idempotence"] and self.producer_id < 0:
            init = await self.net.request(self._any_node(), ApiKey.INIT_PRODUCER_ID,
                                          {"transactional_id": None, "transaction_timeout_ms": 60000})
            if init.error_code:
                raise error_for_code(init.error_code)
            self.producer_id, self.producer_epoch = init.producer_id, init.producer_epoch
        if batch.payload is None:
            tp = (batch.topic, batch.partition)
            idem = self.config["enable.idempotence"]
            batch.sequence = self.sequences.get(tp, 0) if idem else -1
            if idem:
                self.sequences[tp] = batch.sequence + len(batch.records)
            base_ts = 1_700_000_000_000 + int(batch.created * 1000)  # record times from trio's clock
            batch.payload = encode_batch(batch.records, compression=self.codec, base_timestamp=base_ts,
                                         producer_id=self.producer_id if idem else -1,
                                         producer_epoch=self.producer_epoch if idem else -1, base_sequence=batch.sequence)
        leader = self.partitions[batch.topic][batch.partition][0]
        if leader < 0:
            self._want_metadata.set()
            return "the partition has no leader"
        body = {"transactional_id": None, "acks": self.config["acks"], "timeout_ms": self.config["request.timeout.ms"],
                "topic_data": [{"name": batch.topic, "partition_data": [{"index": batch.partition, "records": batch.payload}]}]}
        answer = await self.net.request(leader, ApiKey.PRODUCE, body, expects_response=self.config["acks"] != 0)
        if answer is None:  # acks=0
            self._complete(batch, -1)
            return None
        part = answer.responses[0].partition_responses[0]
        if part.error_code in (0, 46):  # DUPLICATE_SEQUENCE_NUMBER: already written (Java treats it as success)
            self._complete(batch, part.base_offset)
            return None
        error = error_for_code(part.error_code, part.error_message)
        if part.error_code in RETRIABLE_REFRESH:
            self._want_metadata.set()
        if not error.retriable:
            batch.fail(error)
            return None
        side = "broker-side REQUEST_TIMED_OUT from the purgatory" if part.error_code == 7 else error.name
        return f"{side} from broker {leader}"

    def _complete(self, batch: Batch, base_offset: int) -> None:
        if batch.done:
            return
        batch.done = True
        for i, (record, future) in enumerate(zip(batch.records, batch.futures, strict=True)):
            future._set(RecordMetadata(batch.topic, batch.partition, base_offset + i if base_offset >= 0 else -1, record.timestamp))

    async def flush(self) -> None:
        for queue in list(self.batches.values()):
            for batch in list(queue):
                for f in batch.futures:
                    with contextlib.suppress(BaseException):
                        await f.get()

    def close(self) -> None:
        self.closed = True
        self.net.close()


@contextlib.asynccontextmanager
async def open_producer(config: dict[str, Any], connect: Connect | None = None) -> AsyncIterator[AsyncProducer]:
    async with trio.open_nursery() as nursery:
        producer = AsyncProducer(config, nursery, connect)
        await nursery.start(producer.run)
        try:
            yield producer
        finally:
            producer.close()
            nursery.cancel_scope.cancel()
