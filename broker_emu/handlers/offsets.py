"""ListOffsets v1-10 and OffsetForLeaderEpoch v2-4.

ListOffsets: earliest (-2) and earliest-local (-4) answer the log start offset; latest (-1) the
high watermark (read_uncommitted and, with no transactions, read_committed too); latest-tiered
(-5) answers -1 as a broker without tiered storage does; max timestamp (-3) and a timestamp
answer the record found over the whole log, or -1 if that record is not yet below the high
watermark (the broker filters by the last fetchable offset the same way). Finding a record
inside a batch reads that batch's record timestamps (``PartitionLog.record_for_timestamp``):
lookups are rare, and the answer must be the record's offset, not the batch's. Max timestamp
answers the first record of the batch with the largest max timestamp whose timestamp equals it
(``RecordBatch.offsetOfMaxTimestamp``; every record of a LogAppendTime batch does).

OffsetForLeaderEpoch: the end offset of the requested epoch from the partition's epoch history
(the start of the next epoch, or the log end for the current one), the way the broker's leader
epoch cache answers, after fencing on current_leader_epoch.
"""

from __future__ import annotations

from typing import Any

from broker_emu.context import RequestContext
from broker_emu.registry import handles
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
READ_COMMITTED = 1


def epoch_error(p, current_leader_epoch: int) -> int:
    """KIP-320 fencing: an older epoch is fenced, a newer one not known yet."""
    if current_leader_epoch < 0 or current_leader_epoch == p.leader_epoch:
        return E.NONE
    return E.FENCED_LEADER_EPOCH if current_leader_epoch < p.leader_epoch else E.UNKNOWN_LEADER_EPOCH


def lookup(p, timestamp: int, read_committed: bool = False) -> tuple[int, int, int]:
    """(offset, timestamp, leader epoch) for one ListOffsets partition; read_committed reads up
    to the last stable offset (``UnifiedLog.fetchOffsetByTimestamp`` with isolation READ_COMMITTED)."""
    log = p.log
    visible = p.last_stable_offset if read_committed else p.high_watermark
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return log.log_start_offset, -1, p.epoch_at(log.log_start_offset)
    if timestamp == LATEST:
        return visible, -1, p.leader_epoch
    if timestamp == LATEST_TIERED:
        return -1, -1, -1
    if timestamp == MAX_TIMESTAMP:
        b = log.max_timestamp_batch()
        found = log.max_timestamp_record(b) if b is not None else None
    else:
        hit = log.record_for_timestamp(timestamp)
        b, found = (hit[0], hit[1:]) if hit is not None else (None, None)
    if b is None or found is None or found[0] >= visible:
        return -1, -1, -1
    return found[0], found[1], b.leader_epoch


@handles(ApiKey.LIST_OFFSETS, 1, 10)
async def list_offsets(ctx: RequestContext, req: Message) -> dict[str, Any]:
    cluster = ctx.cluster
    topics = []
    for t in req.topics:
        parts = []
        for pr in t.partitions:
            p = cluster.partition(t.name, pr.partition_index)
            out = {"partition_index": pr.partition_index, "error_code": E.NONE, "timestamp": -1, "offset": -1, "leader_epoch": -1}
            if p is None:
                out["error_code"] = E.UNKNOWN_TOPIC_OR_PARTITION
            elif p.leader != ctx.broker_id:
                out["error_code"] = E.NOT_LEADER_OR_FOLLOWER
            elif epoch_error(p, pr.current_leader_epoch):
                out["error_code"] = epoch_error(p, pr.current_leader_epoch)
            else:
                offset, ts, epoch = lookup(p, pr.timestamp, req.isolation_level == READ_COMMITTED)
                out.update(offset=offset, timestamp=ts, leader_epoch=epoch)
            parts.append(out)
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


def end_offset_for_epoch(p, requested: int) -> tuple[int, int]:
    """(epoch, end offset) as the leader epoch cache answers it."""
    if requested < 0:
        return -1, -1
    if requested == p.leader_epoch:
        return requested, p.log_end_offset
    later = [(e, s) for e, s in sorted(p.epoch_starts.items()) if e > requested]
    if not later:
        return -1, -1
    earlier = [e for e in p.epoch_starts if e <= requested]
    # older than anything kept: the requested epoch and the start of the first later one
    return (max(earlier) if earlier else requested), later[0][1]


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4)
async def offset_for_leader_epoch(ctx: RequestContext, req: Message) -> dict[str, Any]:
    cluster = ctx.cluster
    topics = []
    for t in req.topics:
        parts = []
        for pr in t.partitions:
            p = cluster.partition(t.topic, pr.partition)
            out = {"error_code": E.NONE, "partition": pr.partition, "leader_epoch": -1, "end_offset": -1}
            if p is None:
                out["error_code"] = E.UNKNOWN_TOPIC_OR_PARTITION
            elif p.leader != ctx.broker_id:
                out["error_code"] = E.NOT_LEADER_OR_FOLLOWER
            elif epoch_error(p, pr.current_leader_epoch):
                out["error_code"] = epoch_error(p, pr.current_leader_epoch)
            else:
                out["leader_epoch"], out["end_offset"] = end_offset_for_epoch(p, pr.leader_epoch)
            parts.append(out)
        topics.append({"topic": t.topic, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
