"""Fetch v4-17, ListOffsets v1-10 and OffsetForLeaderEpoch v2-4 (SEMANTICS.md §1.9, §2.4).

Fetch answers at once when max_wait_ms <= 0, when min_bytes are available, or when any
partition has an error; otherwise a DelayedFetch waits in the purgatory and wakes early when the
high watermark moves enough bytes into view, or when a partition changes leader. Consumers only
see records below the high watermark. Fetch sessions (KIP-227) are declined: session_id is
always 0, so clients keep sending full fetches.
"""

from __future__ import annotations

from typing import Any

from broker_emu.purgatory import DelayedOperation
from broker_emu.registry import handles
from client.protocol import ApiKey
from client.protocol.records import decode_batch

UNKNOWN_TOPIC, OFFSET_OUT_OF_RANGE, NOT_LEADER = 3, 1, 6
FETCH_SESSION_ID_NOT_FOUND, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_ID = 70, 74, 75, 100


def _resolve(cluster, version: int, t) -> tuple[str | None, Any]:
    if version >= 13:
        topic = cluster.topic_by_id(t.topic_id)
        return (topic.name if topic else None), t.topic_id
    return t.topic, None


def _epoch_error(p, current_leader_epoch: int) -> int:
    if current_leader_epoch < 0 or current_leader_epoch == p.leader_epoch:
        return 0
    return FENCED_LEADER_EPOCH if current_leader_epoch < p.leader_epoch else UNKNOWN_LEADER_EPOCH


class FetchPlan:
    """The partitions of one fetch request, resolved once."""

    def __init__(self, ctx, req):
        self.ctx, self.req = ctx, req
        self.entries = []  # (topic name or None, topic id, partition request)
        for t in req.topics:
            name, tid = _resolve(ctx.cluster, ctx.api_version, t)
            for pr in t.partitions:
                self.entries.append((name, tid, pr))
        self.leaders = {(n, pr.partition): self._leader(n, pr.partition) for n, _, pr in self.entries}

    def _leader(self, name, index):
        p = self.ctx.cluster.partition(name, index) if name else None
        return (p.leader, p.leader_epoch) if p else None

    def partition_error(self, name, tid, pr) -> tuple[int, Any]:
        cluster = self.ctx.cluster
        if name is None:
            return (UNKNOWN_TOPIC_ID if self.ctx.api_version >= 13 else UNKNOWN_TOPIC), None
        p = cluster.partition(name, pr.partition)
        if p is None:
            return UNKNOWN_TOPIC, None
        if p.leader != self.ctx.broker_id:
            return NOT_LEADER, p
        err = _epoch_error(p, pr.current_leader_epoch)
        if err:
            return err, p
        if pr.fetch_offset < p.log.log_start_offset or pr.fetch_offset > p.log_end_offset:
            return OFFSET_OUT_OF_RANGE, p
        return 0, p

    def available_bytes(self) -> tuple[int, bool]:
        """(bytes visible to this fetch, whether any partition has an error)."""
        total, errored = 0, False
        for name, tid, pr in self.entries:
            err, p = self.partition_error(name, tid, pr)
            if err:
                errored = True
                continue
            total += min(p.log.bytes_between(pr.fetch_offset, p.high_watermark), pr.partition_max_bytes)
        return total, errored

    def changed(self) -> bool:
        return any(self._leader(n, pr.partition) != self.leaders[(n, pr.partition)] for n, _, pr in self.entries)

    def read(self) -> dict:
        budget = self.req.max_bytes if self.ctx.api_version >= 3 else 2**31 - 1
        by_topic: dict[Any, dict] = {}
        for name, tid, pr in self.entries:
            err, p = self.partition_error(name, tid, pr)
            part = {"partition_index": pr.partition, "error_code": err, "high_watermark": -1,
                    "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                    "preferred_read_replica": -1, "records": None}
            if p is not None and err in (0, OFFSET_OUT_OF_RANGE, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH):
                part.update(high_watermark=p.high_watermark, last_stable_offset=p.high_watermark,
                            log_start_offset=p.log.log_start_offset)
            if err == NOT_LEADER and p is not None and self.ctx.api_version >= 12:
                part["current_leader"] = {"leader_id": p.leader, "leader_epoch": p.leader_epoch}
            if err == 0:
                data = p.log.read(pr.fetch_offset, min(pr.partition_max_bytes, max(budget, 0)), p.high_watermark) if budget > 0 else b""
                budget -= len(data)
                part["records"] = data
            key = tid if self.ctx.api_version >= 13 else name
            by_topic.setdefault(key, {"topic": name or "", "topic_id": tid, "partitions": []})["partitions"].append(part)
        return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": list(by_topic.values())}


class DelayedFetch(DelayedOperation):
    def __init__(self, ctx, plan: FetchPlan, min_bytes: int, max_wait_ms: int):
        super().__init__(max_wait_ms / 1000.0)
        self.ctx, self.plan, self.min_bytes, self.max_wait_ms = ctx, plan, min_bytes, max_wait_ms

    def try_complete(self) -> bool:
        if self.plan.changed():
            return True
        available, errored = self.plan.available_bytes()
        return errored or available >= self.min_bytes

    def on_complete(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"purgatory": "fetch", "max_wait_ms": self.max_wait_ms, "min_bytes": self.min_bytes}


@handles(ApiKey.FETCH, 4, 17)
async def fetch(ctx, req):
    if ctx.api_version >= 7 and req.session_id != 0:
        return {"throttle_time_ms": 0, "error_code": FETCH_SESSION_ID_NOT_FOUND, "session_id": 0, "responses": []}
    plan = FetchPlan(ctx, req)
    available, errored = plan.available_bytes()
    if req.max_wait_ms > 0 and plan.entries and not errored and available < req.min_bytes:
        op = DelayedFetch(ctx, plan, req.min_bytes, req.max_wait_ms)
        keys = {(n, pr.partition) for n, _, pr in plan.entries}
        if not ctx.cluster.fetch_purgatory.try_complete_else_watch(op, keys):
            await op.done.wait()
    return plan.read()


# -- ListOffsets -----------------------------------------------------------------------------

def _first_record_at_or_after(p, timestamp: int) -> tuple[int, int] | None:
    for b in p.log.batches:
        if b.max_timestamp < timestamp or b.base_offset >= p.high_watermark:
            continue
        header, records = decode_batch(b.data, check_crc=False)  # rare lookups: exact answer
        if header.timestamp_type == 1:
            return b.base_offset, b.max_timestamp
        for r in records:
            if r.timestamp >= timestamp:
                return r.offset, r.timestamp
    return None


def _max_timestamp_record(p) -> tuple[int, int] | None:
    best = None
    for b in p.log.batches:
        if b.base_offset >= p.high_watermark:
            break
        if best is None or b.max_timestamp > best[1]:
            header, records = decode_batch(b.data, check_crc=False)
            r = max(records, key=lambda r: r.timestamp)
            best = (r.offset, r.timestamp) if header.timestamp_type == 0 else (b.last_offset, b.max_timestamp)
    return best


@handles(ApiKey.LIST_OFFSETS, 1, 10)
async def list_offsets(ctx, req):
    """Earliest (-2), latest (-1, the high watermark for read_uncommitted, as Kafka), max
    timestamp (-3, v7+) and by timestamp (first record at or after it)."""
    cluster = ctx.cluster
    topics = []
    for t in req.topics:
        parts = []
        for pr in t.partitions:
            p = cluster.partition(t.name, pr.partition_index)
            out = {"partition_index": pr.partition_index, "error_code": 0, "timestamp": -1, "offset": -1, "leader_epoch": -1}
            if p is None:
                out["error_code"] = UNKNOWN_TOPIC
            elif p.leader != ctx.broker_id:
                out["error_code"] = NOT_LEADER
            elif _epoch_error(p, pr.current_leader_epoch):
                out["error_code"] = _epoch_error(p, pr.current_leader_epoch)
            else:
                ts = pr.timestamp
                found = None
                if ts == -2:
                    found = (p.log.log_start_offset, -1)
                elif ts == -1:
                    found = (p.high_watermark, -1)
                elif ts == -3:
                    found = _max_timestamp_record(p) or (-1, -1)
                else:
                    found = _first_record_at_or_after(p, ts) or (-1, -1)
                out.update(offset=found[0], timestamp=found[1], leader_epoch=p.leader_epoch)
            parts.append(out)
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4)
async def offset_for_leader_epoch(ctx, req):
    """End offset of the requested leader epoch: the start of the next epoch, or the log end
    for the current one; unknown older epochs answer the earliest known epoch start."""
    cluster = ctx.cluster
    topics = []
    for t in req.topics:
        parts = []
        for pr in t.partitions:
            p = cluster.partition(t.topic, pr.partition)
            out = {"error_code": 0, "partition": pr.partition, "leader_epoch": -1, "end_offset": -1}
            if p is None:
                out["error_code"] = UNKNOWN_TOPIC
            elif p.leader != ctx.broker_id:
                out["error_code"] = NOT_LEADER
            elif pr.leader_epoch > p.leader_epoch:
                pass
            else:
                later = sorted((e, s) for e, s in p.epoch_starts.items() if e > pr.leader_epoch)
                epoch = max((e for e in p.epoch_starts if e <= pr.leader_epoch), default=pr.leader_epoch)
                out.update(leader_epoch=epoch, end_offset=later[0][1] if later else p.log_end_offset)
            parts.append(out)
        topics.append({"topic": t.topic, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
