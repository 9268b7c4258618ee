"""DescribeTransactions, ListTransactions and DescribeProducers (KIP-664), as ``KafkaApis`` answers
them from the transaction coordinator's metadata and each partition's producer state."""

from __future__ import annotations

import re
from typing import Any

from broker_emu.context import RequestContext
from broker_emu.registry import handles
from broker_emu.topic_names import validate_topic_name
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

KNOWN_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
                "Dead", "PrepareEpochFence")


def refused_state(tid: str, error: int) -> dict[str, Any]:
    """A transaction state carrying only its id and an error: every other field zero, as
    TransactionCoordinator.handleDescribeTransactions leaves a fresh TransactionState."""
    return {"error_code": error, "transactional_id": tid, "transaction_state": "", "transaction_timeout_ms": 0,
            "transaction_start_time_ms": 0, "producer_id": 0, "producer_epoch": 0, "topics": []}


@handles(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0)
async def describe_transactions(ctx: RequestContext, req: Message) -> dict[str, Any]:
    txn = ctx.cluster.txn
    states = []
    for tid in req.transactional_ids:
        error = txn.not_coordinator(tid, ctx.broker_id)
        meta = txn.describe(tid) if error is None else None
        if error is None and meta is None:
            error = E.TRANSACTIONAL_ID_NOT_FOUND
        entry = refused_state(tid, error or E.NONE)
        if meta is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, index in sorted(meta.partitions):
                by_topic.setdefault(topic, []).append(index)
            entry.update(transaction_state=meta.state.value, transaction_timeout_ms=meta.timeout_ms,
                         transaction_start_time_ms=int(ctx.cluster.wall_ms() - (ctx.cluster.now_ms() - meta.start_ms))
                         if meta.start_ms >= 0 else -1,
                         producer_id=meta.producer_id, producer_epoch=meta.epoch,
                         topics=[{"topic": t, "partitions": ps} for t, ps in by_topic.items()])
        states.append(entry)
    return {"throttle_time_ms": 0, "transaction_states": states}


@handles(ApiKey.LIST_TRANSACTIONS, 0, 2)
async def list_transactions(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """The transactions this broker coordinates, filtered by state, producer id, v1+ age
    (duration_filter ms) and v2+ a transactional-id regex (Java regex, read as Python's)."""
    txn = ctx.cluster.txn
    v = ctx.api_version
    states_wanted = set(req.state_filters)
    pids = set(req.producer_id_filters)
    min_age = req.get("duration_filter", -1) if v >= 1 else -1
    pattern = req.get("transactional_id_pattern") if v >= 2 else None
    try:
        regex = re.compile(pattern) if pattern else None
    except re.error:
        return {"throttle_time_ms": 0, "error_code": E.INVALID_REQUEST, "unknown_state_filters": [], "transaction_states": []}
    now = ctx.cluster.now_ms()
    out = []
    for tid, meta in sorted(txn.txns.items()):
        if txn.coordinator_for(tid) != ctx.broker_id:
            continue
        if (states_wanted and meta.state.value not in states_wanted) or (pids and meta.producer_id not in pids):
            continue
        if min_age >= 0 and (meta.start_ms < 0 or now - meta.start_ms < min_age):
            continue
        if regex is not None and not regex.fullmatch(tid):
            continue
        out.append({"transactional_id": tid, "producer_id": meta.producer_id, "transaction_state": meta.state.value})
    return {"throttle_time_ms": 0, "error_code": E.NONE,
            "unknown_state_filters": sorted(s for s in states_wanted if s not in KNOWN_STATES), "transaction_states": out}


@handles(ApiKey.DESCRIBE_PRODUCERS, 0, 0)
async def describe_producers(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Each partition's active producers, from its leader's producer state."""
    topics = []
    for t in req.topics:
        parts = []
        try:                 # KafkaApis checks the name first (Topic.validate): InvalidTopicException
            validate_topic_name(t.name)
            invalid = None
        except ValueError as exc:
            invalid = str(exc)
        for index in t.partition_indexes:
            p = ctx.cluster.partition(t.name, index)
            entry: dict[str, Any] = {"partition_index": index, "error_code": E.NONE, "error_message": None, "active_producers": []}
            if invalid is not None:
                entry.update(error_code=E.INVALID_TOPIC_EXCEPTION, error_message=invalid)
            elif p is None:
                entry["error_code"] = E.UNKNOWN_TOPIC_OR_PARTITION
            elif p.leader != ctx.broker_id:
                entry["error_code"] = E.NOT_LEADER_OR_FOLLOWER
            else:
                entry["active_producers"] = [
                    {"producer_id": pid, "producer_epoch": s["epoch"], "last_sequence": s["last_sequence"],
                     "last_timestamp": -1, "coordinator_epoch": 0,
                     "current_txn_start_offset": p.txns.open_since(pid) if p.txns.open_since(pid) is not None else -1}
                    for pid, s in sorted(p.log.producers.statistics().items())]
            parts.append(entry)
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
