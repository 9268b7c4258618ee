"""Group APIs: FindCoordinator v0-6, JoinGroup v0-9, SyncGroup v0-5, Heartbeat v0-4,
LeaveGroup v0-5, OffsetCommit v2-9, OffsetFetch v1-9, ListGroups v0-5, DescribeGroups v0-5.
Advertised from v0 where Kafka still serves it: old librdkafka (Debian's kcat) needs it."""

from __future__ import annotations

from broker_emu.groups.coordinator import COORDINATOR_NOT_AVAILABLE, GroupError
from broker_emu.registry import handles
from client.protocol import ApiKey


def _find(ctx, key: str) -> dict:
    cluster = ctx.cluster
    node = cluster.coordinator_for(key)
    if node < 0:
        return {"error_code": COORDINATOR_NOT_AVAILABLE, "error_message": "no live broker", "node_id": -1, "host": "", "port": -1}
    b = cluster.brokers[node]
    return {"error_code": 0, "error_message": None, "node_id": b.id, "host": b.host, "port": b.port}


@handles(ApiKey.FIND_COORDINATOR, 0, 6)
async def find_coordinator(ctx, req):
    """Group and transaction keys map the same way (transactions are not emulated)."""
    if ctx.api_version >= 4:
        return {"throttle_time_ms": 0, "coordinators": [{"key": k, **_find(ctx, k)} for k in req.coordinator_keys]}
    return {"throttle_time_ms": 0, **_find(ctx, req.key)}


def _error(exc: GroupError, **extra) -> dict:
    return {"throttle_time_ms": 0, "error_code": exc.code, **extra}


@handles(ApiKey.JOIN_GROUP, 0, 9)
async def join_group(ctx, req):
    try:
        body = {"throttle_time_ms": 0, **await ctx.cluster.groups.join(ctx, req)}
    except GroupError as exc:
        body = _error(exc, generation_id=-1, member_id=req.member_id, leader="", protocol_name=None, members=[])
    if ctx.api_version < 7 and body.get("protocol_name") is None:
        body["protocol_name"] = ""  # nullable only from v7
    return body


@handles(ApiKey.SYNC_GROUP, 0, 5)
async def sync_group(ctx, req):
    try:
        return {"throttle_time_ms": 0, **await ctx.cluster.groups.sync(ctx, req)}
    except GroupError as exc:
        return _error(exc, assignment=b"")


@handles(ApiKey.HEARTBEAT, 0, 4)
async def heartbeat(ctx, req):
    try:
        return {"throttle_time_ms": 0, **ctx.cluster.groups.heartbeat(ctx, req)}
    except GroupError as exc:
        return _error(exc)


@handles(ApiKey.LEAVE_GROUP, 0, 5)
async def leave_group(ctx, req):
    try:
        return {"throttle_time_ms": 0, **ctx.cluster.groups.leave(ctx, req)}
    except GroupError as exc:
        return _error(exc, members=[])


@handles(ApiKey.OFFSET_COMMIT, 2, 9)
async def offset_commit(ctx, req):
    try:
        return ctx.cluster.groups.commit(ctx, req)
    except GroupError as exc:
        return {"throttle_time_ms": 0, "topics": [{"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": exc.code} for p in t.partitions]} for t in req.topics]}


@handles(ApiKey.OFFSET_FETCH, 1, 9)
async def offset_fetch(ctx, req):
    groups = ctx.cluster.groups
    if ctx.api_version >= 8:
        out = []
        for g in req.groups:
            try:
                groups.check_coordinator(ctx, g.group_id)
                out.append({"group_id": g.group_id, "topics": groups.fetch_offsets(g.group_id, g.topics), "error_code": 0})
            except GroupError as exc:
                out.append({"group_id": g.group_id, "topics": [], "error_code": exc.code})
        return {"throttle_time_ms": 0, "groups": out}
    try:
        groups.check_coordinator(ctx, req.group_id)
    except GroupError as exc:
        if ctx.api_version >= 2:
            return {"throttle_time_ms": 0, "topics": [], "error_code": exc.code}
        return {"topics": [{"name": t.name, "partitions": [{"partition_index": p, "committed_offset": -1, "metadata": "",
                                                            "error_code": exc.code} for p in t.partition_indexes]}
                           for t in req.topics or ()]}
    return {"throttle_time_ms": 0, "topics": groups.fetch_offsets(req.group_id, req.topics), "error_code": 0}


@handles(ApiKey.LIST_GROUPS, 0, 5)
async def list_groups(ctx, req):
    groups = ctx.cluster.groups
    states = set(req.states_filter or ())
    types = set(req.types_filter or ())
    out = []
    for g in groups.groups.values():
        if ctx.cluster.coordinator_for(g.group_id) != ctx.broker_id:
            continue
        if states and g.state not in states:
            continue
        if types and "classic" not in types:
            continue
        out.append({"group_id": g.group_id, "protocol_type": g.protocol_type or "", "group_state": g.state, "group_type": "classic"})
    return {"throttle_time_ms": 0, "error_code": 0, "groups": out}


@handles(ApiKey.DESCRIBE_GROUPS, 0, 5)
async def describe_groups(ctx, req):
    groups = ctx.cluster.groups
    out = []
    for gid in req.groups:
        try:
            groups.check_coordinator(ctx, gid)
        except GroupError as exc:
            out.append({"error_code": exc.code, "group_id": gid, "group_state": "", "protocol_type": "", "protocol_data": "", "members": []})
            continue
        g = groups.group(gid)
        if g is None:
            out.append({"error_code": 0, "group_id": gid, "group_state": "Dead", "protocol_type": "", "protocol_data": "", "members": []})
            continue
        members = [{"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                    "client_host": m.client_host, "member_metadata": m.metadata_for(g.protocol_name or ""),
                    "member_assignment": m.assignment} for m in g.members.values()]
        out.append({"error_code": 0, "group_id": gid, "group_state": g.state, "protocol_type": g.protocol_type or "",
                    "protocol_data": g.protocol_name or "", "members": members, "authorized_operations": -2147483648})
    return {"throttle_time_ms": 0, "groups": out}
