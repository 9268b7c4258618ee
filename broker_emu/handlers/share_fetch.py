"""ShareFetch v1-2 and ShareAcknowledge v1-2 (KIP-932; v2 adds KIP-1222's RENEW and the
acquisition lock in ShareAcknowledge's answer). Kafka's ``KafkaApis.handleShareFetchRequest`` /
``handleShareAcknowledgeRequest`` over ``SharePartitionManager`` and ``DelayedShareFetch``.

A request runs in the member's share session (``share/sessions.py``): a session error is the
answer's top-level error. Piggybacked acknowledgements are applied first, each partition all or
nothing, a refusal in the partition's acknowledge error. Then, unless the session is closing or the
request only renews (``is_renew_ack``, which acquires nothing), records are acquired from the
session's partitions, at most ``max_records`` in all, and locked for the group's
``share.record.lock.duration.ms`` on the cluster clock. With nothing to acquire and ``max_wait_ms``
above 0 the request long-polls in the fetch purgatory, as Fetch does, on the same keys: a new
record below the high watermark, a released or expired lock, or a leader change wakes it;
``min_bytes`` counts the new records' bytes (a redelivery counts as enough).
"""

from __future__ import annotations

from typing import Any

from broker_emu.context import RequestContext
from broker_emu.purgatory import DelayedOperation
from broker_emu.registry import handles
from broker_emu.share.partition import AckError, AckType, State
from broker_emu.share.sessions import FINAL_EPOCH, ShareSessionError
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message


def _member_error(req: Message) -> int:
    """``KafkaApis.isMemberIdValid``: set, not empty, at most 36 characters (a Uuid's length)."""
    member = req["member_id"]
    return E.NONE if member and len(member) <= 36 else E.INVALID_REQUEST


class Target:
    """One partition a request names: resolved, checked, and its share partition."""

    def __init__(self, ctx: RequestContext, topic_id: Any, index: int):
        self.topic_id, self.index = topic_id, index
        topic = ctx.cluster.topic_by_id(topic_id)
        self.name: str = topic.name if topic else ""
        # Any: only the targets without an error are read, and those have a partition
        self.partition: Any = ctx.cluster.partition(self.name, index) if self.name else None
        self.error: int = E.NONE
        if not self.name:
            self.error = E.UNKNOWN_TOPIC_ID
        elif self.partition is None:
            self.error = E.UNKNOWN_TOPIC_OR_PARTITION
        elif self.partition.leader != ctx.broker_id:
            self.error = E.NOT_LEADER_OR_FOLLOWER

    def leader(self) -> dict[str, int]:
        p = self.partition
        return {"leader_id": p.leader, "leader_epoch": p.leader_epoch} if p else {"leader_id": -1, "leader_epoch": -1}


def _acknowledge(ctx: RequestContext, group: str, member: str, topics: Any) -> dict[tuple[Any, int], tuple[int, str | None, Target]]:
    """Apply every partition's acknowledgement batches: (topic id, partition) -> (error, message)."""
    out: dict[tuple[Any, int], tuple[int, str | None, Target]] = {}
    lock_ms = ctx.cluster.share.lock_ms(group)
    for t in topics:
        for pr in t["partitions"]:
            batches = [(b["first_offset"], b["last_offset"], list(b["acknowledge_types"]))
                       for b in pr["acknowledgement_batches"]]
            if not batches:
                continue
            target = Target(ctx, t["topic_id"], pr["partition_index"])
            code: int = target.error
            message: str | None = None
            if not code and ctx.api_version < 2 and any(AckType.RENEW in types for _, _, types in batches):
                code, message = E.INVALID_REQUEST, "Renew acknowledgements need version 2"
            if not code:
                try:
                    ctx.cluster.share.share_partition(group, target.name, target.index).acknowledge(member, batches, lock_ms)
                except AckError as exc:
                    code, message = exc.code, exc.message
            out[(target.topic_id, target.index)] = (code, message, target)
    return out


class DelayedShareFetch(DelayedOperation):
    __slots__ = ("ctx", "group", "targets", "min_bytes", "max_wait_ms", "leaders")

    def __init__(self, ctx: RequestContext, group: str, targets: list[Target], min_bytes: int, max_wait_ms: int):
        super().__init__(max_wait_ms / 1000.0)
        self.ctx, self.group, self.targets, self.min_bytes, self.max_wait_ms = ctx, group, targets, min_bytes, max_wait_ms
        self.leaders = [t.partition.leader for t in targets]

    def try_complete(self) -> bool:
        if any(self._moved(t, was) for t, was in zip(self.targets, self.leaders)):
            return True   # a partition deleted, or led elsewhere now: answer with its error
        return _ready(self.ctx, self.group, self.targets, self.min_bytes)

    def _moved(self, target: Target, leader: int) -> bool:
        now: Any = self.ctx.cluster.partition(target.name, target.index)
        return now is not target.partition or now.leader != leader

    def describe(self) -> dict[str, Any]:
        return {"purgatory": "share_fetch", "group": self.group, "max_wait_ms": self.max_wait_ms,
                "min_bytes": self.min_bytes}


def _ready(ctx: RequestContext, group: str, targets: list[Target], min_bytes: int) -> bool:
    new_bytes = 0
    for t in targets:
        sp = ctx.cluster.share.share_partition(group, t.name, t.index)
        hwm = t.partition.high_watermark
        if any(r.state is State.AVAILABLE for r in sp.records.values()):   # a redelivery is ready
            return True
        if hwm > sp.end_offset:
            new_bytes += max(t.partition.log.bytes_between(sp.end_offset, hwm), 1)
    return new_bytes > 0 and new_bytes >= min_bytes


def _acquire(ctx: RequestContext, group: str, member: str, targets: list[Target], req: Message) -> dict:
    share = ctx.cluster.share
    budget = req["max_records"] if req["max_records"] > 0 else 500
    lock_ms = share.lock_ms(group)
    max_locks = share.setting(group, "share.partition.max.record.locks")
    out = {}
    for t in targets:
        if budget <= 0:
            break
        sp = share.share_partition(group, t.name, t.index)
        acquired = sp.acquire(member, t.partition.high_watermark, budget, max_locks, lock_ms,
                              t.partition.log.log_start_offset, late_ms=ctx.lock_late_ms)
        if not acquired:
            continue
        budget -= sum(a["last_offset"] - a["first_offset"] + 1 for a in acquired)
        first, last = acquired[0]["first_offset"], max(a["last_offset"] for a in acquired)
        log = t.partition.log
        data = log.read(first, 2**31 - 1, log.end_of_batch(last))
        out[(t.topic_id, t.index)] = (data, acquired)
    return out


def _partition(index: int, target: Target, error: int = E.NONE, ack: tuple[int, str | None] | None = None,
               data: bytes = b"", acquired: list | None = None) -> dict[str, Any]:
    return {"partition_index": index, "error_code": error, "error_message": None,
            "acknowledge_error_code": ack[0] if ack else E.NONE, "acknowledge_error_message": ack[1] if ack else None,
            "current_leader": target.leader(), "records": data, "acquired_records": acquired or []}


def _answer(ctx: RequestContext, lock_ms: int, parts: dict[Any, list[dict[str, Any]]], leaders: set[int]) -> dict[str, Any]:
    nodes = [{"node_id": b.id, "host": b.host, "port": ctx.port_of(b), "rack": b.rack}
             for b in ctx.cluster.live_brokers() if b.id in leaders]
    return {"throttle_time_ms": 0, "error_code": E.NONE, "error_message": None, "acquisition_lock_timeout_ms": lock_ms,
            "responses": [{"topic_id": tid, "partitions": ps} for tid, ps in parts.items()], "node_endpoints": nodes}


def _top_error(code: int) -> dict[str, Any]:
    # ShareFetchResponse.of(error...): the code alone; the message KafkaApis logs does not go out
    return {"throttle_time_ms": 0, "error_code": code, "error_message": None, "acquisition_lock_timeout_ms": 0,
            "responses": [], "node_endpoints": []}


def _request_error(ctx: RequestContext, req: Message) -> dict[str, Any] | None:
    """``KafkaApis.handleShareFetchRequest``'s checks before the share session (a null group id,
    a member id that is not valid, a renewing fetch whose limits are not all 0: INVALID_REQUEST;
    Kafka logs why, the answer carries the code alone)."""
    if req["group_id"] is None or _member_error(req):
        return _top_error(E.INVALID_REQUEST)
    if ctx.api_version >= 2 and req["is_renew_ack"] and any(
            req[key] != 0 for key in ("max_bytes", "min_bytes", "max_records", "max_wait_ms")):
        return _top_error(E.INVALID_REQUEST)
    return None


def _targets(ctx: RequestContext, partitions: list[tuple[Any, int]]) -> tuple[dict[tuple[Any, int], Target], list[Target]]:
    targets = [Target(ctx, tid, i) for tid, i in partitions]
    return {(t.topic_id, t.index): t for t in targets if t.error}, [t for t in targets if not t.error]


async def _fetch(ctx: RequestContext, group: str, member: str, partitions: list[tuple[Any, int]],
                 req: Message) -> tuple[dict[tuple[Any, int], Target], dict[tuple[Any, int], tuple[bytes, list]]]:
    """The session's partitions: (those in error, what was acquired), after the long poll."""
    errors, good = _targets(ctx, partitions)
    if not group:   # an empty group id passes KafkaApis' check; its share partitions cannot be set up
        for target in good:
            target.error = E.UNKNOWN_SERVER_ERROR
            errors[(target.topic_id, target.index)] = target
        return errors, {}
    if good and not errors and req["max_wait_ms"] > 0 and not _ready(ctx, group, good, req["min_bytes"]):
        op = DelayedShareFetch(ctx, group, good, req["min_bytes"], req["max_wait_ms"])
        if not ctx.cluster.fetch_purgatory.try_complete_else_watch(op, {t.partition.key for t in good}):
            await op.wait()
        errors, good = _targets(ctx, partitions)   # a leader that moved, a topic that went: their errors
    return errors, _acquire(ctx, group, member, good, req)


@handles(ApiKey.SHARE_FETCH, 1, 2)
async def share_fetch(ctx: RequestContext, req: Message) -> dict[str, Any]:
    group, member, epoch = req["group_id"] or "", req["member_id"], req["share_session_epoch"]
    refused = _request_error(ctx, req)
    if refused is not None:
        return refused
    named = [(t["topic_id"], p["partition_index"]) for t in req["topics"] for p in t["partitions"]]
    forgotten = [(t["topic_id"], i) for t in req["forgotten_topics_data"] for i in t["partitions"]]
    acknowledging = any(p["acknowledgement_batches"] for t in req["topics"] for p in t["partitions"])
    share = ctx.cluster.share
    try:
        session = share.sessions.for_fetch(ctx.broker_id, group, member, epoch, named, forgotten, acknowledging,
                                           conn=ctx.conn_id)
    except ShareSessionError as exc:
        return _top_error(exc.code)
    acks = _acknowledge(ctx, group, member, req["topics"])
    parts: dict[Any, list[dict[str, Any]]] = {}
    leaders: set[int] = set()
    fetched: dict[tuple[Any, int], tuple[bytes, list]] = {}
    errors: dict[tuple[Any, int], Target] = {}
    if session is None:
        share.session_closed(ctx.broker_id, group, member)
    elif not (ctx.api_version >= 2 and req["is_renew_ack"]):
        errors, fetched = await _fetch(ctx, group, member, session.partitions, req)
        if epoch == 0:   # the opening fetch answers for every partition of the session (a full context)
            fetched = {key: fetched.get(key, (b"", [])) for key in session.partitions if key not in errors}
    for key in list(acks) + list(errors) + list(fetched):
        if any(p["partition_index"] == key[1] for p in parts.get(key[0], [])):
            continue
        target = acks[key][2] if key in acks else errors.get(key) or Target(ctx, *key)
        ack = acks[key][:2] if key in acks else None
        data, acquired = fetched.get(key, (b"", []))
        if target.error == E.NOT_LEADER_OR_FOLLOWER:
            leaders.add(target.partition.leader)
        parts.setdefault(key[0], []).append(_partition(key[1], target, target.error if key in errors else E.NONE,
                                                       ack, data, acquired))
    return _answer(ctx, share.lock_ms(group), parts, leaders)


@handles(ApiKey.SHARE_ACKNOWLEDGE, 1, 2)
async def share_acknowledge(ctx: RequestContext, req: Message) -> dict[str, Any]:
    group, member, epoch = req["group_id"] or "", req["member_id"], req["share_session_epoch"]
    if req["group_id"] is None or _member_error(req):
        return _top_error(E.INVALID_REQUEST)
    share = ctx.cluster.share
    try:
        share.sessions.for_acknowledge(ctx.broker_id, group, member, epoch)
    except ShareSessionError as exc:
        return _top_error(exc.code)
    acks = _acknowledge(ctx, group, member, req["topics"])
    if epoch == FINAL_EPOCH:
        share.session_closed(ctx.broker_id, group, member)
    parts: dict[Any, list[dict[str, Any]]] = {}
    leaders: set[int] = set()
    for (tid, index), (code, message, target) in acks.items():
        if code == E.NOT_LEADER_OR_FOLLOWER:
            leaders.add(target.partition.leader)
        parts.setdefault(tid, []).append({"partition_index": index, "error_code": code, "error_message": message,
                                          "current_leader": target.leader()})
    answer = _answer(ctx, share.lock_ms(group), parts, leaders)
    if ctx.api_version < 2:
        answer["acquisition_lock_timeout_ms"] = 0
    return answer
