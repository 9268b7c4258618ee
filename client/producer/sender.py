"""The sender: the producer's background task that turns ready batches into Produce requests.

Each turn of its loop: fail every batch past its delivery deadline (KIP-91, wherever it is); if
idempotent, make sure we hold a producer id (InitProducerId; after a batch with a sequence
number failed, bump the epoch once nothing is in flight, so the broker does not wait for the
lost sequence: KIP-360); then, for each partition whose head batch is ready and whose leader is
known and connected, group batches per leader into one Produce (at most max.request.size
bytes, at most max.in.flight.requests.per.connection requests per broker) and send it. Then sleep
until the next delivery deadline, linger or retry-backoff expiry, or until woken (a new batch,
an answer, a connection, new metadata).

Produce carries ``timeout_ms = request.timeout.ms``, as the Java producer does. That makes the
broker's purgatory (REQUEST_TIMED_OUT at timeout_ms after the append) race the client's own
request timeout (request.timeout.ms after sending): the broker's clock starts later, so the
client usually gives up first, closes the connection and never sees the broker's answer
(Kafka's Sender.sendProduceRequests and DelayedProduce; docs/teaching shows both). Errors are
retried with exponential backoff (retry.backoff.ms ×2 ±20 % up to retry.backoff.max.ms, KIP-580) while the batch has time left
and attempts ≤ retries; a retriable error that arrives after the deadline is never retried (the
batch has already failed). Errors meaning stale metadata ask for a refresh; a new leader named
in the answer (KIP-951) is used at once, without backoff.
"""

from __future__ import annotations

from typing import Any, Callable

import trio

from client.backoff import ExponentialBackoff
from client.errors import ErrorCode, KafkaError, error_for_code, error_name
from client.exceptions import DeliveryTimeoutException, broker_request_timed_out_message
from client.metadata import STALE_METADATA_ERRORS, ClusterMetadata, MetadataUpdater
from client.network import NetworkClient
from client.producer.accumulator import RecordAccumulator
from client.producer.batch import ProducerBatch
from client.protocol import ApiKey
from client.protocol.records import encode_batch
from kafka_common.wakeup import Wakeup

# DUPLICATE_SEQUENCE_NUMBER: already written, so a success (Java does the same)
_WRITTEN = frozenset({ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER})


class Sender:
    def __init__(self, config: dict, net: NetworkClient, metadata: ClusterMetadata, updater: MetadataUpdater,
                 accumulator: RecordAccumulator, codec: int, retry_backoff: ExponentialBackoff):
        self.config, self.net, self.metadata, self.updater = config, net, metadata, updater
        self.acc, self.codec, self.retry_backoff = accumulator, codec, retry_backoff
        self.idempotent = bool(config["enable.idempotence"])
        self.producer_id, self.producer_epoch = -1, -1
        self.need_epoch_bump = False
        self.sequences: dict[tuple[str, int], int] = {}
        self.sending: dict[int, int] = {}          # broker -> Produce requests out
        self._connecting: set[int] = set()
        self._init_running = False
        self._wake = Wakeup()
        self.memory_freed = trio.Event()
        self.memory_listeners: list[Callable[[], None]] = []   # e.g. the blocking face's application thread
        self.nursery: trio.Nursery | None = None
        self.txn: Any = None   # a TransactionManager when transactional.id is set
        updater.fetch_listeners.append(self.wake)

    def wake(self) -> None:
        self._wake.set()

    # -- the loop --------------------------------------------------------------------------
    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as self.nursery:
            task_status.started()
            while True:
                self._wake.new_cycle()
                now = trio.current_time()
                self._expire(now)
                wait_until = self.acc.next_deadline()
                if self._have_producer_id():
                    wait_until = min(wait_until, self._drain(now))
                await self._wake.sleep_until(wait_until)

    def _expire(self, now: float) -> None:
        expired = self.acc.expire(now)
        for b in expired:
            error = DeliveryTimeoutException(b.topic, b.partition, len(b.records), (now - b.created) * 1000,
                                             self.config["delivery.timeout.ms"], b.attempts, b.where(), b.last_error)
            b.fail(error)
            if self.txn is not None:
                self.txn.produce_failed(error)   # a record of the transaction is lost: it can only abort
            if self.idempotent and b.sequence >= 0:
                self.need_epoch_bump = True   # its sequence may never reach the broker
        if expired:
            self.acc.release_expired(expired)
            self._memory_freed()

    def _memory_freed(self) -> None:
        self.memory_freed.set()
        self.memory_freed = trio.Event()
        for listener in self.memory_listeners:
            listener()

    # -- producer id -----------------------------------------------------------------------
    def set_producer(self, producer_id: int, epoch: int) -> None:
        """An id and epoch from InitProducerId with a transactional id (the transaction manager's)."""
        self.producer_id, self.producer_epoch = producer_id, epoch
        self.sequences.clear()
        self.wake()

    def _have_producer_id(self) -> bool:
        if not self.idempotent:
            return True
        if self.txn is not None:
            return self.producer_id >= 0   # init_transactions gets it, from the transaction coordinator
        if self.producer_id >= 0 and not self.need_epoch_bump:
            return True
        if not self._init_running and not (self.need_epoch_bump and self.acc.in_flight):
            self._init_running = True
            assert self.nursery is not None
            self.nursery.start_soon(self._init_producer_id)
        return False

    async def _init_producer_id(self) -> None:
        """InitProducerId (any broker, non-transactional); with our current id and epoch when
        bumping the epoch, after which every partition's sequence restarts at 0."""
        attempts = 0
        try:
            while True:
                body = {"transactional_id": None, "transaction_timeout_ms": 60000,
                        "producer_id": self.producer_id, "producer_epoch": self.producer_epoch}
                try:
                    answer = await self.net.request(self.net.candidates()[0], ApiKey.INIT_PRODUCER_ID, body)
                    if answer.error_code:
                        raise error_for_code(answer.error_code, f"InitProducerId failed: {error_name(answer.error_code)}")
                except KafkaError as exc:   # retried; the batches expire meanwhile if it takes too long
                    for b in self.acc.batches():
                        b.last_error = f"waiting for a producer id: {exc}"
                    await trio.sleep(self.retry_backoff.backoff(attempts))
                    attempts += 1
                    continue
                self.producer_id, self.producer_epoch = answer.producer_id, answer.producer_epoch
                if self.need_epoch_bump:
                    self.sequences.clear()
                    for b in self.acc.batches():      # queued retries get new sequences
                        b.payload, b.sequence = None, -1
                    self.need_epoch_bump = False
                return
        finally:
            self._init_running = False
            self.wake()

    # -- draining --------------------------------------------------------------------------
    def _leader_changed(self, batch: ProducerBatch) -> bool:
        info = self.metadata.leader(batch.topic, batch.partition)
        return info is not None and info.leader_epoch > batch.leader_epoch_at_attempt >= 0

    def _drain(self, now: float) -> float:
        if self.txn is not None:
            self.txn.abort_undrained()
        ready, next_at = self.acc.ready(now, self._leader_changed)
        if ready and self.updater.update_due(now):
            return next_at   # woken when the Metadata request is out (NetworkClient.isReady)
        by_node: dict[int, list[tuple[str, int]]] = {}
        for tp in ready:
            if self.txn is not None and not self.txn.sendable(tp):
                continue   # woken once the partition is in the transaction (AddPartitionsToTxn)
            info = self.metadata.leader(*tp)
            if info is None or info.leader < 0:
                # No leader known: ask again, and look again after retry.backoff.ms — nothing else
                # wakes us when the answer names one (Java's sender loop runs again on any
                # response). Without this a partition offline until its leader restarted (same
                # leader epoch, no KIP-951 hint) waited for its batches' delivery timeout.
                self.updater.request_update()
                next_at = min(next_at, now + self.config["retry.backoff.ms"] / 1000)
                continue
            if not self.net.is_ready(info.leader):
                self._connect(info.leader)
                continue
            by_node.setdefault(info.leader, []).append(tp)
        limit = self.config["max.in.flight.requests.per.connection"]
        for node, tps in by_node.items():
            if self.net.in_flight(node) + self.sending.get(node, 0) >= limit:
                continue   # woken again when one of its requests ends
            batches: list[ProducerBatch] = []
            size = 0
            for tp in tps:
                head = self.acc.head(tp)
                if head is None or (batches and size + head.size > self.config["max.request.size"]):
                    continue
                size += head.size
                batches.append(self.acc.take(tp, node))
            self._send(node, batches, now)
        return next_at

    def _connect(self, node: int) -> None:
        if node in self._connecting:
            return
        self._connecting.add(node)

        async def attempt() -> None:
            try:
                await self.net.connection(node)
            except KafkaError:
                pass   # the network client backs off and asked for a metadata refresh
            finally:
                self._connecting.discard(node)
                self.wake()

        assert self.nursery is not None
        self.nursery.start_soon(attempt)

    def _stamp(self, batch: ProducerBatch) -> bytes:
        """Encode once per producer epoch: a retry resends the very same bytes (and sequence),
        which is what lets the broker recognise it as a duplicate."""
        if batch.payload is None or (self.idempotent and batch.producer_epoch != self.producer_epoch):
            if self.idempotent:
                batch.sequence = self.sequences.get(batch.tp, 0)
                self.sequences[batch.tp] = (batch.sequence + len(batch.records)) & 0x7FFFFFFF
                batch.producer_epoch = self.producer_epoch
            batch.payload = encode_batch(batch.records, compression=self.codec, base_timestamp=batch.base_timestamp,
                                         producer_id=self.producer_id if self.idempotent else -1,
                                         producer_epoch=self.producer_epoch if self.idempotent else -1,
                                         base_sequence=batch.sequence, transactional=self.txn is not None)
        return batch.payload

    def _send(self, node: int, batches: list[ProducerBatch], now: float) -> None:
        topics: dict[str, list[dict]] = {}
        for b in batches:
            b.attempts += 1
            info = self.metadata.leader(b.topic, b.partition)
            b.leader_epoch_at_attempt = info.leader_epoch if info else -1
            topics.setdefault(b.topic, []).append({"index": b.partition, "records": self._stamp(b)})
        body = {"transactional_id": self.txn.tid if self.txn is not None else None, "acks": self.config["acks"], "timeout_ms": self.config["request.timeout.ms"],
                "topic_data": [{"name": t, "partition_data": parts} for t, parts in topics.items()]}
        self.sending[node] = self.sending.get(node, 0) + 1
        assert self.nursery is not None
        self.nursery.start_soon(self._produce, node, batches, body)

    async def _produce(self, node: int, batches: list[ProducerBatch], body: dict) -> None:
        try:
            # a transactional producer of transaction version 1 stays below Produce v12, which
            # asks the broker to add the partition itself (KIP-890 part 2), as Java's does without it
            answer = await self.net.request(node, ApiKey.PRODUCE, body, expects_response=self.config["acks"] != 0,
                                            max_version=11 if self.txn is not None and not self.txn.tv2 else None)
        except KafkaError as exc:
            for b in batches:
                self._attempt_failed(b, exc)
        else:
            self._handle_answer(node, batches, answer)
        finally:
            self.sending[node] -= 1
            for b in batches:
                self.acc.finished(b)
            self._memory_freed()
            self.wake()

    # -- answers ---------------------------------------------------------------------------
    def _handle_answer(self, node: int, batches: list[ProducerBatch], answer: Any) -> None:
        if answer is None:  # acks=0: done once written, no offsets
            for b in batches:
                b.complete(-1)
            return
        self._learn_endpoints(answer)
        results = {(t.name, p.index): p for t in answer.responses for p in t.partition_responses}
        host, port = self.net.nodes.get(node, ("?", "?"))
        address = f"{host}:{port}"
        for b in batches:
            p = results.get(b.tp)
            if p is None:
                self._attempt_failed(b, KafkaError(f"broker {node} did not answer for {b.topic}-{b.partition}"))
                continue
            if p.error_code in _WRITTEN:
                b.complete(p.base_offset, p.get("log_append_time_ms", -1))
                continue
            if p.error_code in STALE_METADATA_ERRORS:
                self._maybe_new_leader(b, p)
            if p.error_code == ErrorCode.REQUEST_TIMED_OUT:
                message = broker_request_timed_out_message(node, address, b.topic, b.partition, self.config["request.timeout.ms"])
            else:
                detail = f": {p.error_message}" if p.get("error_message") else ""
                message = f"broker {node} at {address} answered {error_name(p.error_code)} for {b.topic}-{b.partition}{detail}"
            self._attempt_failed(b, error_for_code(p.error_code, message))

    def _learn_endpoints(self, answer: Any) -> None:
        for e in answer.get("node_endpoints") or ():
            self.net.nodes[e.node_id] = (e.host, e.port)
            self.metadata.brokers[e.node_id] = (e.host, e.port)

    def _maybe_new_leader(self, batch: ProducerBatch, p: Any) -> None:
        leader = p.get("current_leader")
        if leader is not None and self.metadata.update_leader(batch.topic, batch.partition, leader.leader_id,
                                                              leader.leader_epoch):
            self.updater.note_changed()
            return
        self.updater.request_update()

    def _attempt_failed(self, batch: ProducerBatch, error: KafkaError) -> None:
        batch.last_error = f"{type(error).__name__}: {error}"
        if self.txn is not None and not error.retriable:
            self.txn.produce_failed(error)
        if batch.done:
            return   # expired while in flight: the application was already told
        now = trio.current_time()
        if error.retriable and now < batch.deadline and batch.attempts <= self.config["retries"]:
            self.acc.reenqueue(batch, now + self.retry_backoff.backoff(batch.attempts - 1))
            return
        batch.fail(error)
        if self.txn is not None and error.retriable:
            self.txn.produce_failed(error)   # its budget spent: the transaction can only abort (KIP-1050)
        if self.idempotent and batch.sequence >= 0:
            self.need_epoch_bump = True
