"""Group APIs on the wire: FindCoordinator v0-6, JoinGroup v0-9, SyncGroup v0-5, Heartbeat v0-4,
LeaveGroup v0-5, OffsetCommit v2-9, OffsetFetch v1-9, ListGroups v0-5, DescribeGroups v0-5.

Each handler turns the decoded request (snake_case fields of Kafka's JSON schemas) into a call
on ``ctx.cluster.groups`` (a GroupCoordinator) and shapes the answer for the version asked;
version quirks live here, semantics in ``coordinator.py``. JoinGroup and SyncGroup may wait
(long polls); everything else answers at once. OffsetCommit v0-1 and OffsetFetch v0 are not
served (removed in Kafka 4.0, KIP-896; v0 offsets lived in ZooKeeper).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from broker_emu.context import RequestContext
from broker_emu.groups.coordinator import JoinRequest
from broker_emu.groups.offsets import offset_fields
from broker_emu.groups.state import Reply
from broker_emu.groups.txn_offsets import unstable_fields
from broker_emu.handlers import kafka_message
from broker_emu.handlers.authorized import GROUP_OPERATIONS, authorized_for
from broker_emu.registry import handles
from broker_emu.security.acls import GROUP
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2


def _now() -> float:
    return trio.current_time()


def _client_host(ctx: Any) -> str:
    """Kafka reports InetAddress.toString(): "/127.0.0.1"."""
    host = ctx.client_host or ""
    return host if host.startswith("/") else "/" + host


async def _parked(start: Callable[[Reply], None]) -> dict[str, Any]:
    """Run an operation that answers through a reply callable, now or later."""
    answer: dict[str, Any] = {}
    done = trio.Event()

    def reply(result: dict[str, Any]) -> None:
        answer.update(result)
        done.set()

    start(reply)
    await done.wait()
    return answer


# -- FindCoordinator ----------------------------------------------------------------------------------
def _broker(cluster: Any, node_id: int) -> Any:
    brokers = cluster.brokers
    return next(b for b in (brokers.values() if isinstance(brokers, dict) else brokers) if b.id == node_id)


def _coordinator(ctx: RequestContext, key_type: int, key: str) -> dict[str, Any]:
    """Groups map to a broker the way Kafka maps them to a __consumer_offsets partition leader,
    transactional ids to a __transaction_state partition's (broker_emu.transactions). Share groups
    (key type 2) are not emulated: INVALID_REQUEST, as a broker without a share coordinator answers.
    The error goes with Node.noNode() (``KafkaApis.getCoordinator``)."""
    cluster = ctx.cluster
    if key_type not in (GROUP_KEY, TRANSACTION_KEY):
        return {"error_code": E.INVALID_REQUEST, "node_id": -1, "host": "", "port": -1}
    if key_type == GROUP_KEY:
        cluster.ensure_offsets_topic()  # as Kafka creates __consumer_offsets on the first lookup
    txn = getattr(cluster, "txn", None)
    node = txn.coordinator_for(key) if key_type == TRANSACTION_KEY and txn is not None else cluster.coordinator_for(key)
    if node < 0:
        return {"error_code": E.COORDINATOR_NOT_AVAILABLE, "node_id": -1, "host": "", "port": -1}
    b = _broker(cluster, node)
    return {"error_code": E.NONE, "node_id": b.id, "host": b.host, "port": ctx.port_of(b)}


@handles(ApiKey.FIND_COORDINATOR, 0, 6)
async def find_coordinator(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """v0-3: one key; v4+: batched ``coordinator_keys``. key_type 0 group, 1 transaction.

    error_message as ``KafkaApis.handleFindCoordinatorRequest*`` fills it: v0-3 send
    Errors.message() — "NONE" on success, the error's default text otherwise (an error answer
    is ``FindCoordinatorResponse.prepareOldResponse``); v4+ set no message per key (the schema's
    "") unless the whole request fails, as an unknown key type does (``CoordinatorType.forId``
    throws; ``prepareErrorResponse`` then gives every key the error's default text)."""
    v = ctx.api_version
    key_type = req.get("key_type", GROUP_KEY) if v >= 1 else GROUP_KEY
    request_fails = key_type not in (GROUP_KEY, TRANSACTION_KEY, SHARE_KEY)
    if v >= 4:
        coordinators = []
        for k in req["coordinator_keys"]:
            found = _coordinator(ctx, key_type, k)
            message = kafka_message(found["error_code"]) if request_fails else ""
            coordinators.append({"key": k, **found, "error_message": message})
        return {"throttle_time_ms": 0, "coordinators": coordinators}
    found = _coordinator(ctx, key_type, req["key"])
    return {"throttle_time_ms": 0, **found, "error_message": kafka_message(found["error_code"]) if found["error_code"] else "NONE"}


# -- JoinGroup / SyncGroup / Heartbeat / LeaveGroup ----------------------------------------------------
@handles(ApiKey.JOIN_GROUP, 0, 9)
async def join_group(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """A long poll: answered when the join phase completes (all members rejoined or the rebalance
    timeout), at once for errors, MEMBER_ID_REQUIRED (v4+) and unchanged followers. v0 has no
    rebalance timeout: the session timeout is used, as Kafka does."""
    v = ctx.api_version
    join = JoinRequest(
        group_id=req["group_id"], member_id=req["member_id"],
        group_instance_id=req.get("group_instance_id") if v >= 5 else None,
        client_id=ctx.client_id or "", client_host=_client_host(ctx),
        session_timeout_ms=req["session_timeout_ms"],
        rebalance_timeout_ms=req["rebalance_timeout_ms"] if v >= 1 else req["session_timeout_ms"],
        protocol_type=req["protocol_type"], protocols=[(p["name"], bytes(p["metadata"])) for p in req["protocols"]],
        require_known_member_id=v >= 4, supports_skip_assignment=v >= 9)
    groups = ctx.cluster.groups
    result = await _parked(lambda reply: groups.join_group(join, reply, broker_id=ctx.broker_id, now=_now()))
    if result.get("error_code") == E.NOT_COORDINATOR:
        # Kafka: the coordinator runtime refuses the write; GroupCoordinatorService answers
        # new JoinGroupResponseData().setErrorCode(...), member id left "" (handleOperationException)
        result = {**result, "member_id": ""}
    body = {"throttle_time_ms": 0, "error_code": E.NONE, "generation_id": -1, "protocol_type": None,
            "protocol_name": None, "leader": "", "skip_assignment": False, "member_id": "", "members": []} | result
    if v < 7 and body["protocol_name"] is None:
        body["protocol_name"] = ""  # nullable only from v7
    return body


@handles(ApiKey.SYNC_GROUP, 0, 5)
async def sync_group(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Followers wait for the leader's assignment; members missing SyncGroup within the
    rebalance timeout are removed. v5+ must name protocol type and name (Kafka: else
    INCONSISTENT_GROUP_PROTOCOL)."""
    v = ctx.api_version
    protocol_type, protocol_name = (req.get("protocol_type"), req.get("protocol_name")) if v >= 5 else (None, None)
    if v >= 5 and (protocol_type is None or protocol_name is None):
        result: dict[str, Any] = {"error_code": E.INCONSISTENT_GROUP_PROTOCOL}
    else:
        assignments = {a["member_id"]: bytes(a["assignment"]) for a in req["assignments"]}
        groups = ctx.cluster.groups
        result = await _parked(lambda reply: groups.sync_group(
            group_id=req["group_id"], generation_id=req["generation_id"], member_id=req["member_id"],
            group_instance_id=req.get("group_instance_id") if v >= 3 else None, protocol_type=protocol_type,
            protocol_name=protocol_name, assignments=assignments, reply=reply, broker_id=ctx.broker_id, now=_now()))
    return {"throttle_time_ms": 0, "protocol_type": None, "protocol_name": None, "assignment": b""} | result


@handles(ApiKey.HEARTBEAT, 0, 4)
async def heartbeat(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Restarts the member's session; REBALANCE_IN_PROGRESS tells it to rejoin."""
    code = ctx.cluster.groups.heartbeat(
        group_id=req["group_id"], generation_id=req["generation_id"], member_id=req["member_id"],
        group_instance_id=req.get("group_instance_id") if ctx.api_version >= 3 else None,
        broker_id=ctx.broker_id, now=_now())
    return {"throttle_time_ms": 0, "error_code": code}


@handles(ApiKey.LEAVE_GROUP, 0, 5)
async def leave_group(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """v0-2: one member, its error is the top-level error; v3+: a batch (KIP-345), each member
    by member id or, for the admin client, by group.instance.id alone."""
    v = ctx.api_version
    leaving: list[tuple[str, str | None]] = [(req["member_id"], None)] if v <= 2 else [(m["member_id"], m.get("group_instance_id")) for m in req["members"]]
    top, errors = ctx.cluster.groups.leave_group(group_id=req["group_id"], members=leaving,
                                                 broker_id=ctx.broker_id, now=_now())
    if v <= 2:
        return {"throttle_time_ms": 0, "error_code": top or next((e for e in errors if e), E.NONE)}
    return {"throttle_time_ms": 0, "error_code": top, "members": [
        {"member_id": mid, "group_instance_id": iid, "error_code": e} for (mid, iid), e in zip(leaving, errors)]}


# -- OffsetCommit / OffsetFetch ------------------------------------------------------------------------
def _partition_exists(cluster: Any, topic: str, partition: int) -> bool:
    find = getattr(cluster, "partition", None)
    return True if find is None else find(topic, partition) is not None


@handles(ApiKey.OFFSET_COMMIT, 2, 9)
async def offset_commit(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Per partition: UNKNOWN_TOPIC_OR_PARTITION for partitions the cluster lacks (checked before
    the group, as KafkaApis does), else the group's verdict, else OFFSET_METADATA_TOO_LARGE."""
    v = ctx.api_version
    wanted = [(t["name"], p) for t in req["topics"] for p in t["partitions"]]
    known = [(t, p) for t, p in wanted if _partition_exists(ctx.cluster, t, p["partition_index"])]
    errors: list[int] = []
    if known:
        errors = ctx.cluster.groups.commit_offsets(
            group_id=req["group_id"], generation_id=req["generation_id_or_member_epoch"], member_id=req["member_id"],
            group_instance_id=req.get("group_instance_id") if v >= 7 else None, api_version=v,
            offsets=[(t, p["partition_index"], p["committed_offset"], p.get("committed_leader_epoch", -1) if v >= 6 else -1,
                      p["committed_metadata"]) for t, p in known], broker_id=ctx.broker_id, now=_now())
    verdict = {(t, p["partition_index"]): e for (t, p), e in zip(known, errors)}
    topics = []
    for t in req["topics"]:
        topics.append({"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"],
             "error_code": verdict.get((t["name"], p["partition_index"]), E.UNKNOWN_TOPIC_OR_PARTITION)}
            for p in t["partitions"]]})
    return {"throttle_time_ms": 0, "topics": topics}


def _fetch_one(ctx: Any, group_id: str, topics: Any, require_stable: bool = False,
               member: tuple[str | None, int] = (None, -1)) -> tuple[int, list[dict[str, Any]]]:
    wanted = None if topics is None else [(t["name"], list(t["partition_indexes"])) for t in topics]
    groups = ctx.cluster.groups
    error, found = groups.fetch_offsets(group_id=group_id, topics=wanted, broker_id=ctx.broker_id, now=_now(),
                                        member_id=member[0], member_epoch=member[1])

    def fields(t: str, p: int, c: Any) -> dict[str, Any]:
        # a transaction's offsets not yet committed (GroupMetadataManager: UNSTABLE_OFFSET_COMMIT)
        return unstable_fields() if require_stable and groups.unstable(group_id, t, p) else offset_fields(c)

    return error, [{"name": t, "partitions": [{"partition_index": p, **fields(t, p, c)} for p, c in parts]}
                   for t, parts in found]


@handles(ApiKey.OFFSET_FETCH, 1, 9)
async def offset_fetch(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """v1-7: one group (``topics`` null from v2 = all committed partitions); v8+: a batch of
    groups, each with its own error. A group error is per partition in v1, top-level after."""
    v = ctx.api_version
    if v >= 8:
        out = []
        for g in req["groups"]:
            member = (g.get("member_id"), g.get("member_epoch", -1)) if v >= 9 else (None, -1)
            error, topics = _fetch_one(ctx, g["group_id"], g["topics"], req.get("require_stable", False), member)
            out.append({"group_id": g["group_id"], "error_code": error, "topics": [] if error else topics})
        return {"throttle_time_ms": 0, "groups": out}
    error, topics = _fetch_one(ctx, req["group_id"], req["topics"], v >= 7 and req.get("require_stable", False))
    if error and v >= 2:
        return {"throttle_time_ms": 0, "error_code": error, "topics": []}
    if error:  # v1: the group error in every requested partition
        topics = [{"name": t["name"], "partitions": [{"partition_index": p, "committed_offset": -1, "metadata": "",
                                                      "error_code": error} for p in t["partition_indexes"]]}
                  for t in req["topics"] or ()]
    return {"throttle_time_ms": 0, "error_code": E.NONE, "topics": topics}


# -- ListGroups / DescribeGroups ------------------------------------------------------------------------
@handles(ApiKey.LIST_GROUPS, 0, 5)
async def list_groups(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """Groups this broker coordinates. v4+: ``states_filter``, v5+: ``types_filter`` (only
    "classic" groups exist here); both case-insensitive."""
    v = ctx.api_version
    found = ctx.cluster.groups.list_groups(
        broker_id=ctx.broker_id, states=list(req.get("states_filter") or ()) if v >= 4 else [],
        types=list(req.get("types_filter") or ()) if v >= 5 else [], now=_now())
    return {"throttle_time_ms": 0, "error_code": E.NONE, "groups": [
        {"group_id": g.group_id, "protocol_type": g.protocol_type or "", "group_state": g.state, "group_type": g.group_type}
        for g in found]}


@handles(ApiKey.DESCRIBE_GROUPS, 0, 5)
async def describe_groups(ctx: RequestContext, req: Message) -> dict[str, Any]:
    """An unknown group is described as Dead with error NONE (Kafka before DescribeGroups v6).
    v3+: ``authorized_operations`` when asked, for groups answered without error
    (``KafkaApis.handleDescribeGroupsRequest``; no authorizer: every group operation). A group
    in error is ``DescribeGroupsResponse.groupError``: empty state, protocol and members."""
    asked_ops = ctx.api_version >= 3 and req.get("include_authorized_operations")
    out = []
    for group_id in req["groups"]:
        error, summary = ctx.cluster.groups.describe_group(group_id, broker_id=ctx.broker_id, now=_now())
        ops = authorized_for(ctx, GROUP_OPERATIONS, bool(asked_ops) and not error, GROUP, group_id)
        out.append({"error_code": error, "group_id": group_id, **summary, "authorized_operations": ops})
    return {"throttle_time_ms": 0, "groups": out}
