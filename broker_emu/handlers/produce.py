"""Produce v0-12 (Kafka's ProduceRequest.validateRecords, LogValidator, DelayedProduce).

acks=1: append and answer. acks=0: append, answer nothing; if any partition failed, close the
connection so the producer notices. acks=-1: append, then park a DelayedProduce in the
purgatory until the high watermark covers every appended offset; at the request's timeout_ms
(counted from after the append) unfinished partitions answer REQUEST_TIMED_OUT — the data stays
in the log. Idempotent producers: the partition's log keeps each producer's last 5 batches
(``broker_emu.producer_state``, Kafka's ProducerStateManager); an exact repeat answers with the
original offset and appends nothing. That state follows the log: a leader change that truncates
a batch also forgets its sequence, so the producer's retry is appended, not taken for a duplicate.

Every batch is validated before it reaches the log, as ``UnifiedLog.append`` and
``LogValidator`` do (``broker_emu.validation``): a refused batch answers its partition alone
with Kafka's code (CORRUPT_MESSAGE, INVALID_RECORD, INVALID_TIMESTAMP with record_errors,
MESSAGE_TOO_LARGE, ...), so nothing a read path cannot serve is ever stored.

Transactional batches open a transaction on the partition until the coordinator's marker
(``broker_emu.partition_txns``). Produce v12 is v11 for a producer of transaction version 2: its
partition joins the transaction through the leader (``produce_verification``, which also checks a
v11-and-below one was added, with ``transaction.partition.verification.enable``). v13 (topic ids)
is not served. LogAppendTime rewrites the batch CRC as Kafka does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker_emu import cluster_shape
from broker_emu.context import RequestContext
from broker_emu.handlers import KAFKA_INTERNAL_TOPICS, CloseConnection
from broker_emu.handlers.produce_verification import add_to_transaction
from broker_emu.plants import accept_fenced, before_append, duplicate_retry
from broker_emu.purgatory import DelayedOperation
from broker_emu.registry import handles
from broker_emu.topic_config import log_rules
from broker_emu.validation import AppendError, validate_append
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.records import CorruptRecordBatchError, TruncatedBatchError, parse_batch_header
from client.protocol.wire import Message

if TYPE_CHECKING:
    from broker_emu.cluster import Cluster

ADMIN_CLIENT_ID = "__admin_client"  # AdminUtils.ADMIN_CLIENT_ID: the one client id allowed to append to internal topics


class PartitionResult:
    __slots__ = ("topic", "index", "error", "base_offset", "required", "log_append_time", "message", "record_errors",
                 "in_log")

    def __init__(self, topic: str, index: int, error: int = E.NONE, base_offset: int = -1, message: str | None = None):
        self.topic, self.index, self.error, self.base_offset = topic, index, error, base_offset
        self.required = -1      # acks=all: HW must reach this
        self.log_append_time = -1
        self.message = message
        self.record_errors: list[tuple[int, str]] = []
        self.in_log = False     # refused by the log's validation: the answer carries the log start offset


class DelayedProduce(DelayedOperation):
    """Acks=all after the local append: each partition waits until the high watermark covers
    its last offset (``Partition.checkEnoughReplicasReachOffset``); the rest answer
    REQUEST_TIMED_OUT at expiry, with their base offsets."""

    __slots__ = ("ctx", "timeout_ms", "pending", "waiting")

    def __init__(self, ctx, timeout_ms: int, pending: list[PartitionResult]):
        super().__init__(max(timeout_ms, 0) / 1000.0)
        self.ctx = ctx
        self.timeout_ms = timeout_ms
        self.pending = pending
        for r in pending:
            r.error = E.REQUEST_TIMED_OUT  # what an unfinished partition answers at expiry
        self.waiting = list(pending)

    def try_complete(self) -> bool:
        cluster = self.ctx.cluster
        still = []
        for r in self.waiting:
            p = cluster.partition(r.topic, r.index)
            if p is None:
                r.error = E.UNKNOWN_TOPIC_OR_PARTITION
            elif p.leader != self.ctx.broker_id or not cluster.is_alive(self.ctx.broker_id):
                r.error = E.NOT_LEADER_OR_FOLLOWER
            elif p.high_watermark >= r.required:
                min_isr = log_rules(cluster, r.topic).min_insync_replicas
                r.error = E.NOT_ENOUGH_REPLICAS_AFTER_APPEND if len(p.isr) < min_isr else E.NONE
            else:
                still.append(r)
        self.waiting = still
        return not still

    def on_complete(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"purgatory": "produce", "timeout_ms": self.timeout_ms,
                "partitions": [{"topic": r.topic, "partition": r.index, "required_offset": r.required,
                                "error": r.error if self.completed else None} for r in self.pending]}


def legacy_to_v2(ctx, records: bytes | None) -> tuple[bytes | None, int, str | None]:
    """A Produce v0-2's magic 0/1 message set as the magic-2 batch a v2 log stores (LogValidator's
    up-conversion; a 3.x broker recompresses with the producer's codec, the emulator stores it
    uncompressed): (records, error, message)."""
    if not records or len(records) < 17 or records[16] >= 2:
        return records, E.NONE, None
    # imported by the first magic 0/1 message set, not by every serve's start: only clients
    # older than Kafka 0.11's message format send one
    from client.protocol.legacy_records import LegacyRecordError, to_batch_v2

    try:
        return to_batch_v2(bytes(records), ctx.cluster.config["emu.decompressed.max.bytes"]), E.NONE, None
    except LegacyRecordError as exc:
        return None, E.CORRUPT_MESSAGE if exc.corrupt else E.INVALID_RECORD, str(exc)


def parse_single_batch(ctx, records: bytes | None) -> tuple[int, Any, str | None]:
    """(error, header, message): the request-level checks (``ProduceRequest.validateRecords``),
    made before anything else — exactly one record batch of magic 2, zstd only from v7."""
    if not records:
        return E.INVALID_RECORD, None, "no record batch"
    try:
        header = parse_batch_header(records, 0)
    except TruncatedBatchError as exc:
        return E.CORRUPT_MESSAGE, None, str(exc)
    except CorruptRecordBatchError as exc:
        return E.INVALID_RECORD, None, str(exc)
    if header.size != len(records):
        # not counted: bytes after the first batch need not parse (ProduceRequest.validateRecords)
        return E.INVALID_RECORD, None, "more than one record batch where exactly one is allowed"
    if header.compression == 4 and ctx.api_version < 7:
        return E.UNSUPPORTED_COMPRESSION_TYPE, None, "zstd needs Produce v7+"
    return E.NONE, header, None


def check_sequence(cluster: Cluster, p, header) -> tuple[int, int | None]:
    """Idempotence: (error, original base offset if this batch is a duplicate). The epoch the
    coordinator last gave this producer fences older ones everywhere (an emulator shortcut: a
    Kafka partition only knows the epochs written to it); the rest is the partition's state."""
    current = cluster.producer_epochs.get(header.producer_id, header.producer_epoch)
    if current > header.producer_epoch:
        if cluster.plant is not None and accept_fenced(cluster, header, f"{p.topic}-{p.index}", current):
            return E.NONE, None   # a planted bug (broker_emu/plants.py): set from Python only, never by a request
        return E.INVALID_PRODUCER_EPOCH, None
    error, duplicate = p.log.producers.check(header)
    return int(error), duplicate.first_offset if duplicate is not None else None


def append_partition(ctx, topic: str, index: int, records: bytes | None, acks: int) -> PartitionResult:
    cluster = ctx.cluster
    result = PartitionResult(topic, index)
    if topic in KAFKA_INTERNAL_TOPICS and ctx.client_id != ADMIN_CLIENT_ID:  # ReplicaManager.appendToLocalLog
        result.error, result.message = E.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {topic}"
        return result
    p = cluster.partition(topic, index)
    if p is None:
        result.error = E.UNKNOWN_TOPIC_OR_PARTITION
        return result
    if p.leader != ctx.broker_id:
        result.error = E.NOT_LEADER_OR_FOLLOWER
        return result
    if ctx.api_version < 3:
        records, error, message = legacy_to_v2(ctx, records)
        if error:
            result.error, result.message = error, message
            return result
    error, header, message = parse_single_batch(ctx, records)
    if error:
        result.error, result.message = error, message
        return result
    rules = log_rules(cluster, topic)
    min_isr = rules.min_insync_replicas
    if acks == -1 and len(p.isr) < min_isr:  # before anything is appended (Partition.appendRecordsToLeader)
        result.error, result.message = E.NOT_ENOUGH_REPLICAS, f"ISR {p.isr} smaller than min.insync.replicas {min_isr}"
        return result
    assert records is not None  # parse_single_batch refused an empty or null records field
    now = cluster.wall_ms()
    try:
        valid = validate_append(records, header, rules, f"{topic}-{index}", now)
    except AppendError as exc:
        result.error, result.message, result.record_errors = exc.code, exc.message, exc.record_errors
        result.in_log = exc.code not in (E.CORRUPT_MESSAGE, E.MESSAGE_TOO_LARGE)  # ReplicaManager.appendToLocalLog
        return result
    if header.producer_id >= 0:
        error, original = check_sequence(cluster, p, header)
        if error:
            result.error = error
            return result
        if original is not None and not duplicate_retry(cluster, header, f"{topic}-{index}", original):
            # an exact retry: answer with the first offset, append nothing
            result.base_offset = original
            result.required = original + header.last_offset_delta + 1
            return result
    if rules.log_append_time:
        result.log_append_time = now
    if cluster.plant is not None and before_append(cluster, p, valid.header, acks, result):
        return result   # a planted bug (broker_emu/plants.py): set from Python only, never by a request
    previous = p.log_end_offset
    base, last = p.log.append(valid.batch, valid.header, p.leader_epoch, valid.max_timestamp)
    if header.is_transactional:   # its transaction is open here until the coordinator's marker
        p.txns.batch_appended(header.producer_id, base)
    result.base_offset, result.required = base, last + 1
    if header.producer_id >= 0:  # the log updated the partition's producer state; the coordinator learns the epoch
        cluster.producer_epochs[header.producer_id] = max(cluster.producer_epochs.get(header.producer_id, 0), header.producer_epoch)
    cluster.after_append(p, previous)
    return result


@handles(ApiKey.PRODUCE, 0, 12)
async def produce(ctx: RequestContext, req: Message) -> dict[str, Any] | None:
    cluster = ctx.cluster
    if ctx.api_version < 3 and not cluster.profile.legacy_produce:
        # Kafka 4.x advertises Produce v0-2 (for librdkafka, KAFKA-18659) and refuses them
        raise CloseConnection(f"Produce v{ctx.api_version} is not served by Kafka 4.x brokers (KIP-896)")
    acks = req.acks
    results: list[PartitionResult] = []
    for t in req.topic_data:
        for pd in t.partition_data:
            if acks not in (-1, 0, 1):
                results.append(PartitionResult(t.name, pd.index, E.INVALID_REQUIRED_ACKS))
                continue
            refused = await add_to_transaction(ctx, req.transactional_id, t.name, pd.index, pd.records)
            if refused is not None:
                results.append(PartitionResult(t.name, pd.index, refused[0], message=refused[1]))
            else:
                results.append(append_partition(ctx, t.name, pd.index, pd.records, acks))
    if acks == 0:
        failed = [r for r in results if r.error]
        if failed:
            raise CloseConnection(f"acks=0 produce failed on {failed[0].topic}-{failed[0].index} (error {failed[0].error})")
        return None
    if acks == -1:
        appended = [r for r in results if r.error == E.NONE and r.required >= 0]
        if appended:
            op = DelayedProduce(ctx, req.timeout_ms, appended)
            keys = [(r.topic, r.index) for r in appended]
            if not cluster.produce_purgatory.try_complete_else_watch(op, keys):
                if cluster_shape.VERIFY and getattr(ctx.connection, "in_reader", False):
                    # the reader took it for one that completes at once (Cluster.appends_replicate_at_once);
                    # the test suite checks fast paths so (cluster_shape.VERIFY), elsewhere it waits in the reader
                    raise AssertionError("an acks=all produce handled by the connection's reader has to wait")
                await op.wait()
    return build_response(cluster, ctx, results)


# Errors Kafka answers before anything reaches the log, or with LogAppendInfo.UNKNOWN_LOG_APPEND_INFO
# (KafkaApis.handleProduceRequest's PartitionResponse(error) for unknown topics and
# ProduceRequest.validateRecords; ReplicaManager.appendToLocalLog's "known exceptions";
# sendInvalidRequiredAcksResponse): log start offset -1 like the base offset. Other errors
# (NOT_ENOUGH_REPLICAS, sequence and epoch errors) carry the log start offset (processFailedRecord),
# and so does a partition that failed after its append (DelayedProduce keeps the append's info)
# or in the log's validation other than CRC and size (``in_log``: processFailedRecord).
NO_LOG_INFO = frozenset({E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_LEADER_OR_FOLLOWER, E.MESSAGE_TOO_LARGE, E.CORRUPT_MESSAGE, E.INVALID_REQUIRED_ACKS, E.INVALID_TOPIC_EXCEPTION,
                         E.UNSUPPORTED_COMPRESSION_TYPE, E.INVALID_RECORD})


def build_response(cluster: Cluster, ctx, results: list[PartitionResult]) -> dict:
    by_topic: dict[str, list] = {}
    leaders: set[int] = set()
    for r in results:
        p = cluster.partition(r.topic, r.index)
        entry: dict[str, Any] = {"index": r.index, "error_code": r.error, "base_offset": r.base_offset,
                 "log_append_time_ms": r.log_append_time,
                 "log_start_offset": -1 if p is None or (r.error in NO_LOG_INFO and r.required < 0 and not r.in_log)
                 else p.log.log_start_offset,
                 "record_errors": [{"batch_index": i, "batch_index_error_message": m} for i, m in r.record_errors],
                 "error_message": r.message if r.error else None}
        if r.error == E.NOT_LEADER_OR_FOLLOWER and p is not None and ctx.api_version >= 10:
            entry["current_leader"] = {"leader_id": p.leader, "leader_epoch": p.leader_epoch}
            leaders.add(p.leader)
        by_topic.setdefault(r.topic, []).append(entry)
    response = {"responses": [{"name": name, "partition_responses": parts} for name, parts in by_topic.items()],
                "throttle_time_ms": 0}
    if leaders:  # KIP-951: the endpoints of the leaders named above (KafkaApis.handleProduceRequest)
        response["node_endpoints"] = [{"node_id": b.id, "host": b.host, "port": ctx.port_of(b), "rack": b.rack}
                                      for b in cluster.live_brokers() if b.id in leaders]
    return response
