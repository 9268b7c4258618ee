"""InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit and the
transaction listings (DescribeTransactions, ListTransactions, DescribeProducers), as Kafka's
``KafkaApis`` hands them to the ``TransactionCoordinator`` (broker_emu.transactions.coordinator).

Versions: AddPartitionsToTxn 0-3 (clients' form), AddOffsetsToTxn 0-4, EndTxn 0-5 and
TxnOffsetCommit 0-5. EndTxn v5 and TxnOffsetCommit v5 are transaction version 2 (KIP-890 part 2),
whatever level the cluster finalized, as Kafka 4.4 decides it by the request's version alone: EndTxn
v5 bumps the epoch and answers the new producer id and epoch; TxnOffsetCommit v5 adds the group to
the transaction itself (the client sends no AddOffsetsToTxn). TxnOffsetCommit v6 (topic ids) is not
served.
"""

from __future__ import annotations

from typing import Any

import trio

from broker_emu.context import RequestContext
from broker_emu.registry import handles
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message


def _coordinator(ctx: RequestContext) -> Any:
    return ctx.cluster.txn


@handles(ApiKey.INIT_PRODUCER_ID, 0, 5)
async def init_producer_id(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Without a transactional id: an idempotent producer's id (or, v3+, its epoch bumped).
    With one: the coordinator's (NOT_COORDINATOR when this broker is not it)."""
    v = ctx.api_version
    pid, epoch = (req.producer_id, req.producer_epoch) if v >= 3 else (-1, -1)
    if req.transactional_id is None:
        pid, epoch = ctx.cluster.init_producer_id(pid, epoch)
        return {"throttle_time_ms": 0, "error_code": E.NONE, "producer_id": pid, "producer_epoch": epoch}
    txn = _coordinator(ctx)
    error = txn.not_coordinator(req.transactional_id, ctx.broker_id)
    if error is None:
        error, pid, epoch = txn.init_producer_id(req.transactional_id, req.transaction_timeout_ms, pid, epoch)
        if error == E.PRODUCER_FENCED and v < 4:
            error = E.INVALID_PRODUCER_EPOCH
    else:
        pid, epoch = -1, -1
    return {"throttle_time_ms": 0, "error_code": error, "producer_id": pid if error == E.NONE else -1,
            "producer_epoch": epoch if error == E.NONE else -1}


@handles(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 3)
async def add_partitions_to_txn(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """One error for every partition: unknown partitions UNKNOWN_TOPIC_OR_PARTITION and the rest
    OPERATION_NOT_ATTEMPTED, else the coordinator's verdict for all."""
    tid = req.v3_and_below_transactional_id
    wanted = [(t.name, p) for t in req.v3_and_below_topics for p in t.partitions]
    txn = _coordinator(ctx)
    unknown = {tp for tp in wanted if ctx.cluster.partition(*tp) is None}
    error = txn.not_coordinator(tid, ctx.broker_id)
    if error is None and not unknown:
        error, meta = txn.check_producer(tid, req.v3_and_below_producer_id, req.v3_and_below_producer_epoch, ctx.api_version)
        if meta is not None:
            txn.add_partitions(meta, set(wanted))
    results: dict[str, list[dict[str, int]]] = {}
    for topic, p in wanted:
        code = error if error is not None else (E.UNKNOWN_TOPIC_OR_PARTITION if (topic, p) in unknown else E.OPERATION_NOT_ATTEMPTED)
        results.setdefault(topic, []).append({"partition_index": p, "partition_error_code": code})
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
        {"name": t, "results_by_partition": parts} for t, parts in results.items()]}


@handles(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4)
async def add_offsets_to_txn(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """The group's __consumer_offsets partition joins the transaction (its marker will apply or
    drop the group's transactional offsets)."""
    txn = _coordinator(ctx)
    error = txn.not_coordinator(req.transactional_id, ctx.broker_id)
    if error is None:
        error, meta = txn.check_producer(req.transactional_id, req.producer_id, req.producer_epoch, ctx.api_version)
        if meta is not None:
            txn.add_group(meta, req.group_id)
    return {"throttle_time_ms": 0, "error_code": error}


@handles(ApiKey.END_TXN, 0, 5)
async def end_txn(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Answered once the coordinator has moved to PrepareCommit/PrepareAbort; the markers follow
    asynchronously (``emu.txn.marker.delay.ms``), and until they are written a retry or the next
    transaction's calls get CONCURRENT_TRANSACTIONS."""
    txn = _coordinator(ctx)
    error = txn.not_coordinator(req.transactional_id, ctx.broker_id)
    pid, epoch = -1, -1
    if error is None:
        error, pid, epoch = txn.end_txn(req.transactional_id, req.producer_id, req.producer_epoch, req.committed,
                                        ctx.api_version)
    return {"throttle_time_ms": 0, "error_code": error, "producer_id": pid, "producer_epoch": epoch}


@handles(ApiKey.TXN_OFFSET_COMMIT, 0, 5)
async def txn_offset_commit(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Sent to the group coordinator. The producer must be the transaction's current one; the
    offsets wait for the transaction's marker (broker_emu.groups.txn_offsets)."""
    v = ctx.api_version
    wanted = [(t.name, p) for t in req.topics for p in t.partitions]
    txn = _coordinator(ctx)
    error, meta = txn.check_producer(req.transactional_id, req.producer_id, req.producer_epoch, v)
    if v >= 5 and meta is not None:
        # version 2: the group coordinator adds the group to the transaction itself
        # (AddPartitionsToTxnManager.txnOffsetCommitRequestVersionToTransactionSupportedOperation)
        txn.add_group(meta, req.group_id, tv2=True)
    if error == E.CONCURRENT_TRANSACTIONS and v < 5:
        error = E.NONE   # the group coordinator does not see the transaction's state
    if error in (E.INVALID_PRODUCER_ID_MAPPING, E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH):
        error = E.INVALID_PRODUCER_EPOCH if v < 2 or error == E.INVALID_PRODUCER_ID_MAPPING else E.PRODUCER_FENCED
    if error:
        errors = [error] * len(wanted)
    else:
        errors = ctx.cluster.groups.txn_commit_offsets(
            group_id=req.group_id, producer_id=req.producer_id, broker_id=ctx.broker_id, now=trio.current_time(),
            offsets=[(t, p.partition_index, p.committed_offset, p.get("committed_leader_epoch", -1) if v >= 2 else -1,
                      p.committed_metadata) for t, p in wanted])
    topics: dict[str, list[dict[str, int]]] = {}
    for (topic, p), code in zip(wanted, errors):
        topics.setdefault(topic, []).append({"partition_index": p.partition_index, "error_code": code})
    return {"throttle_time_ms": 0, "topics": [{"name": t, "partitions": parts} for t, parts in topics.items()]}

