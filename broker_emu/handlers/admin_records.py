"""DeleteRecords (KIP-107): the leader moves its log start offset at once, then the answer waits in
a purgatory until every in-sync replica has moved its own, the low watermark
(``ReplicaManager.deleteRecords``, ``DelayedDeleteRecords``). A follower learns the new log start
on its next fetch, so a stalled follower holds the answer until ``timeout_ms``, when the partition
is answered REQUEST_TIMED_OUT while the deletion itself stays done: a server-side timeout."""

from __future__ import annotations

from typing import Any

from broker_emu.context import RequestContext
from broker_emu.handlers import KAFKA_INTERNAL_TOPICS
from broker_emu.purgatory import DelayedOperation
from broker_emu.registry import handles
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

HIGH_WATERMARK = -1   # DeleteRecordsRequest.HIGH_WATERMARK: delete up to the high watermark


class DelayedDeleteRecords(DelayedOperation):
    __slots__ = ("ctx", "waiting")

    def __init__(self, timeout_ms: int, waiting: dict[tuple[str, int], tuple[Any, int, dict]], ctx: RequestContext):
        super().__init__(timeout_ms / 1000.0)
        self.waiting = waiting   # (topic, partition) -> (partition, required offset, its answer)
        self.ctx = ctx           # the purgatory's trace events name the request (cluster._purgatory_event)

    def try_complete(self) -> bool:
        done = [k for k, (p, required, _) in self.waiting.items() if p.low_watermark >= required]
        for k in done:
            p, _, answer = self.waiting.pop(k)
            answer.update(low_watermark=p.low_watermark, error_code=E.NONE)
        return not self.waiting

    def on_expire(self) -> None:
        for _, _, answer in self.waiting.values():
            answer.update(low_watermark=-1, error_code=E.REQUEST_TIMED_OUT)

    def describe(self) -> dict[str, Any]:
        return {"purgatory": "delete_records", "timeout_ms": round(self.timeout_s * 1000),
                "partitions": sorted(f"{t}-{i}" for t, i in self.waiting)}


@handles(ApiKey.DELETE_RECORDS, 0, 2)
async def delete_records(ctx: RequestContext, req: Message) -> dict[str, Any]:
    topics, waiting = [], {}
    for t in req.topics:
        parts = []
        for pr in t.partitions:
            answer = {"partition_index": pr.partition_index, "low_watermark": -1, "error_code": E.NONE}
            p = _delete_one(ctx, t.name, pr.partition_index, pr.offset, answer)
            if p is not None:
                waiting[(t.name, pr.partition_index)] = (p, answer["low_watermark"], answer)
            parts.append(answer)
        topics.append({"name": t.name, "partitions": parts})
    if waiting:
        op = DelayedDeleteRecords(req.timeout_ms, waiting, ctx)
        if not ctx.cluster.delete_records_purgatory.try_complete_else_watch(op, set(waiting)):
            await op.wait()
    return {"throttle_time_ms": 0, "topics": topics}


def _delete_one(ctx: RequestContext, topic: str, index: int, offset: int, answer: dict) -> Any:
    """Apply the deletion on the leader; the partition if its answer must wait (its required
    low watermark put in ``answer``), else None with the error set."""
    cluster = ctx.cluster
    p = cluster.partition(topic, index)
    if topic in KAFKA_INTERNAL_TOPICS:
        answer["error_code"] = E.INVALID_TOPIC_EXCEPTION
    elif p is None:
        answer["error_code"] = E.UNKNOWN_TOPIC_OR_PARTITION
    elif p.leader != ctx.broker_id:
        answer["error_code"] = E.NOT_LEADER_OR_FOLLOWER
    else:
        required = p.high_watermark if offset == HIGH_WATERMARK else offset
        if required < 0 or required > p.high_watermark:
            answer["error_code"] = E.OFFSET_OUT_OF_RANGE
            return None
        p.log.delete_before(required)
        cluster.replication.log_start_moved(p)
        answer["low_watermark"] = max(required, p.log.log_start_offset)
        return p
    return None
