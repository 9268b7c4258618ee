"""DescribeLogDirs (v1-5): each broker has one log directory — in memory, so its path is a name
(``/broker-emu/broker-<id>``) and its total and usable bytes are the cluster's log memory budget
(``emu.log.memory.bytes``) and what is left of it. For every replica the broker holds:
its bytes (the leader's log, or the part a follower has copied) and its lag behind the high
watermark (ReplicaManager.describeLogDirs / getLogEndOffsetLag)."""

from __future__ import annotations

from typing import Any

from broker_emu.context import RequestContext
from broker_emu.registry import handles
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

LONG_MAX = (1 << 63) - 1


@handles(ApiKey.DESCRIBE_LOG_DIRS, 1, 5)
async def describe_log_dirs(ctx: RequestContext, req: Message) -> dict[str, Any]:
    cluster, me = ctx.cluster, ctx.broker_id
    wanted = None if req.topics is None else {(t.topic, p) for t in req.topics for p in t.partitions}
    topics = []
    for name, topic in sorted(cluster.topics.items()):
        parts = [_replica(p, me) for p in topic.partitions
                 if me in p.replicas and (wanted is None or (name, p.index) in wanted)]
        if parts:
            topics.append({"name": name, "partitions": parts})
    memory = cluster.log_memory
    total = memory.limit if memory.limit >= 0 else LONG_MAX
    return {"throttle_time_ms": 0, "error_code": E.NONE, "results": [
        {"error_code": E.NONE, "log_dir": f"/broker-emu/broker-{me}", "topics": topics, "total_bytes": total,
         "usable_bytes": max(total - memory.used, 0), "is_cordoned": False}]}


def _replica(p: Any, broker: int) -> dict[str, Any]:
    leo = p.leo_of(broker)
    start = p.log.log_start_offset if broker == p.leader else max(p.follower_log_start.get(broker, 0), p.log.log_start_offset)
    return {"partition_index": p.index, "partition_size": p.log.bytes_between(start, leo),
            "offset_lag": max(p.high_watermark - leo, 0), "is_future_key": False}
