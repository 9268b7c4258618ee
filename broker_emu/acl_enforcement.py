"""The authorizer's checks, asked by the pipeline before a handler runs, the way
KafkaApis asks them per API: a whole request refused (a group, a transactional id, the cluster)
gets that API's error answer; a request naming several topics, groups or keys runs with the ones
allowed, and the others come back with TOPIC_AUTHORIZATION_FAILED / GROUP_AUTHORIZATION_FAILED
in the same answer.

Which operation each API needs is KafkaApis' (and AclApis', GroupCoordinator's ...) as of
Kafka 4.x. Metadata filters its topics itself (handlers/metadata.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from broker_emu.acl_checks import any_topic_allows, authorized
from broker_emu.context import RequestContext
from broker_emu.handlers import error_response
from broker_emu.security import acls as A
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

Handler = Callable[[RequestContext, Any], Awaitable[Any]]
DENIED_CODE = {A.TOPIC: E.TOPIC_AUTHORIZATION_FAILED, A.GROUP: E.GROUP_AUTHORIZATION_FAILED,
               A.CLUSTER: E.CLUSTER_AUTHORIZATION_FAILED, A.TRANSACTIONAL_ID: E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}

# API -> (resource type, operation, the resource's name in the request) for a whole-request check
_cluster = (lambda body: A.CLUSTER_NAME)
_group = (lambda body: body["group_id"])
_share_group = (lambda body: body["group_id"] or "")   # ShareFetch / ShareAcknowledge: nullable
_txn = (lambda body: body["transactional_id"])
WHOLE: dict[int, tuple[int, int, Callable[[Any], str]]] = {
    ApiKey.JOIN_GROUP: (A.GROUP, A.READ, _group), ApiKey.SYNC_GROUP: (A.GROUP, A.READ, _group),
    ApiKey.HEARTBEAT: (A.GROUP, A.READ, _group), ApiKey.LEAVE_GROUP: (A.GROUP, A.READ, _group),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (A.GROUP, A.READ, _group), ApiKey.OFFSET_COMMIT: (A.GROUP, A.READ, _group),
    ApiKey.OFFSET_DELETE: (A.GROUP, A.DELETE, _group),
    # KafkaApis: READ on the share group, else GROUP_AUTHORIZATION_FAILED for the whole request
    ApiKey.SHARE_GROUP_HEARTBEAT: (A.GROUP, A.READ, _group), ApiKey.SHARE_FETCH: (A.GROUP, A.READ, _share_group),
    ApiKey.SHARE_ACKNOWLEDGE: (A.GROUP, A.READ, _share_group),
    # KafkaApis: READ on the group to alter share-group offsets, DELETE to delete them
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: (A.GROUP, A.READ, _group),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: (A.GROUP, A.DELETE, _group),
    ApiKey.ADD_OFFSETS_TO_TXN: (A.TRANSACTIONAL_ID, A.WRITE, _txn), ApiKey.END_TXN: (A.TRANSACTIONAL_ID, A.WRITE, _txn),
    ApiKey.TXN_OFFSET_COMMIT: (A.TRANSACTIONAL_ID, A.WRITE, _txn),
    ApiKey.CREATE_ACLS: (A.CLUSTER, A.ALTER, _cluster), ApiKey.DELETE_ACLS: (A.CLUSTER, A.ALTER, _cluster),
    ApiKey.DESCRIBE_ACLS: (A.CLUSTER, A.DESCRIBE, _cluster), ApiKey.ELECT_LEADERS: (A.CLUSTER, A.ALTER, _cluster),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (A.CLUSTER, A.ALTER, _cluster),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (A.CLUSTER, A.DESCRIBE, _cluster),
    ApiKey.DESCRIBE_LOG_DIRS: (A.CLUSTER, A.DESCRIBE, _cluster),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (A.CLUSTER, A.DESCRIBE_CONFIGS, _cluster),
    ApiKey.ALTER_CLIENT_QUOTAS: (A.CLUSTER, A.ALTER_CONFIGS, _cluster),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (A.CLUSTER, A.DESCRIBE, _cluster),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (A.CLUSTER, A.ALTER, _cluster),
}

# API -> (request list, its item's name, response list, resource type, operation): the items
# refused get the API's error answer for them alone, merged into the answer for the rest
SPLIT: dict[int, tuple[str, Callable[[Any], str | None], str, int, int]] = {
    ApiKey.PRODUCE: ("topic_data", lambda t: t["name"], "responses", A.TOPIC, A.WRITE),
    ApiKey.LIST_OFFSETS: ("topics", lambda t: t["name"], "topics", A.TOPIC, A.DESCRIBE),
    ApiKey.OFFSET_COMMIT: ("topics", lambda t: t["name"], "topics", A.TOPIC, A.READ),
    ApiKey.DELETE_TOPICS: ("topics", lambda t: t["name"], "responses", A.TOPIC, A.DELETE),
    ApiKey.DESCRIBE_GROUPS: ("groups", lambda g: g, "groups", A.GROUP, A.DESCRIBE),
}


async def call_authorized(ctx: RequestContext, body: Any, handler: Handler) -> Any:
    """Run ``handler`` on what the principal may do; answer the rest as Kafka refuses it."""
    refusal = _whole_request(ctx, body)
    if refusal is not None:
        return error_response(ctx.api_key, ctx.api_version, body, refusal)
    body, refused, response_key = _split_topics(ctx, body)
    response = await handler(ctx, body)
    after = AFTER.get(ctx.api_key)
    if after is not None and response is not None:
        response = after(ctx, body, response)
    if refused is None or response is None:
        return response
    response = dict(response)
    response[response_key] = list(response.get(response_key) or []) + list(refused.get(response_key) or [])
    return response


def _visible_groups(ctx: RequestContext, body: Any, response: Any) -> Any:
    """KafkaApis.handleListGroupsRequest: DESCRIBE on the cluster lists every group, otherwise
    only those the principal may DESCRIBE (a filter: refusals are not logged)."""
    if authorized(ctx, A.DESCRIBE, A.CLUSTER, A.CLUSTER_NAME, traced=False):
        return response
    response = dict(response)
    response["groups"] = [g for g in response.get("groups") or []
                          if authorized(ctx, A.DESCRIBE, A.GROUP, g["group_id"], traced=False)]
    return response


def _visible_transactions(ctx: RequestContext, body: Any, response: Any) -> Any:
    """KafkaApis.handleListTransactionsRequest: only the transactional ids the principal may DESCRIBE."""
    response = dict(response)
    response["transaction_states"] = [t for t in response.get("transaction_states") or []
                                      if authorized(ctx, A.DESCRIBE, A.TRANSACTIONAL_ID, t["transactional_id"])]
    return response


def _described_transactions(ctx: RequestContext, body: Any, response: Any) -> Any:
    """KafkaApis.handleDescribeTransactionsRequest: an id the principal may not DESCRIBE answers
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED; of the others, only the topics it may DESCRIBE."""
    from broker_emu.handlers.transaction_listings import refused_state

    states = []
    for state in response.get("transaction_states") or []:
        tid = state["transactional_id"]
        if not authorized(ctx, A.DESCRIBE, A.TRANSACTIONAL_ID, tid):
            state = refused_state(tid, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        else:
            state = {**state, "topics": [t for t in state.get("topics") or []
                                         if authorized(ctx, A.DESCRIBE, A.TOPIC, t["topic"])]}
        states.append(state)
    return {**response, "transaction_states": states}


def _described_producers(ctx: RequestContext, body: Any, response: Any) -> Any:
    """KafkaApis.handleDescribeProducersRequest: every partition of a topic the principal may not
    READ answers TOPIC_AUTHORIZATION_FAILED (an invalid topic name's own error comes first)."""
    topics = []
    for topic in response.get("topics") or []:
        parts = topic.get("partitions") or []
        invalid = any(p["error_code"] == E.INVALID_TOPIC_EXCEPTION for p in parts)
        if not invalid and not authorized(ctx, A.READ, A.TOPIC, topic["name"]):
            parts = [{"partition_index": p["partition_index"], "error_code": E.TOPIC_AUTHORIZATION_FAILED,
                      "error_message": "Topic authorization failed.", "active_producers": []} for p in parts]
        topics.append({**topic, "partitions": parts})
    return {**response, "topics": topics}


def _fetched_offsets(ctx: RequestContext, body: Any, response: Any) -> Any:
    """KafkaApis.fetchOffsetsForGroup / fetchAllOffsetsForGroup: offsets only of the topics the
    principal may DESCRIBE — the others it named answer TOPIC_AUTHORIZATION_FAILED per partition
    (after the allowed ones), the others of an all-topics fetch are left out. A group in error is
    answered as it is."""
    if ctx.api_version >= 8:
        # the handler answers the groups it was given in order (refused groups are merged later)
        groups = [g if g.get("error_code") else {**g, "topics": _offsets_seen(ctx, asked.get("topics"), g["topics"])}
                  for asked, g in zip(body.get("groups") or [], response.get("groups") or [])]
        return {**response, "groups": groups}
    if response.get("error_code"):
        return response
    return {**response, "topics": _offsets_seen(ctx, body.get("topics"), response.get("topics") or [])}


def _offsets_seen(ctx: RequestContext, asked: Any, topics: list[Any]) -> list[Any]:
    if asked is None:   # every committed offset of the group
        return [t for t in topics if authorized(ctx, A.DESCRIBE, A.TOPIC, t["name"], traced=False)]
    refused = [t for t in asked if not authorized(ctx, A.DESCRIBE, A.TOPIC, t["name"])]
    names = {t["name"] for t in refused}
    return [t for t in topics if t["name"] not in names] + [
        {"name": t["name"], "partitions": [{"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1,
                                            "metadata": "", "error_code": E.TOPIC_AUTHORIZATION_FAILED}
                                           for p in t["partition_indexes"]]} for t in refused]


# answers the authorizer filters after the handler (a filter or a per-item refusal of a listing)
AFTER: dict[int, Callable[[RequestContext, Any, Any], Any]] = {
    ApiKey.LIST_GROUPS: _visible_groups, ApiKey.LIST_TRANSACTIONS: _visible_transactions,
    ApiKey.DESCRIBE_TRANSACTIONS: _described_transactions, ApiKey.DESCRIBE_PRODUCERS: _described_producers,
    ApiKey.OFFSET_FETCH: _fetched_offsets,
}


def _whole_request(ctx: RequestContext, body: Any) -> int | None:
    api = ctx.api_key
    if api == ApiKey.PRODUCE and body.get("transactional_id") is not None:
        if not authorized(ctx, A.WRITE, A.TRANSACTIONAL_ID, body["transactional_id"]):
            return E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if api == ApiKey.INIT_PRODUCER_ID:
        txn = body.get("transactional_id")
        if txn is not None:
            return None if authorized(ctx, A.WRITE, A.TRANSACTIONAL_ID, txn) else E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        # KafkaApis.handleInitProducerIdRequest: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic
        if authorized(ctx, A.IDEMPOTENT_WRITE, A.CLUSTER, A.CLUSTER_NAME) or any_topic_allows(ctx, A.WRITE):
            return None
        return E.CLUSTER_AUTHORIZATION_FAILED
    if api == ApiKey.FIND_COORDINATOR and ctx.api_version < 4:
        resource = A.TRANSACTIONAL_ID if body.get("key_type") == 1 else A.GROUP
        return None if authorized(ctx, A.DESCRIBE, resource, body["key"]) else DENIED_CODE[resource]
    if api == ApiKey.OFFSET_FETCH and ctx.api_version < 8:
        return None if authorized(ctx, A.DESCRIBE, A.GROUP, body["group_id"]) else E.GROUP_AUTHORIZATION_FAILED
    if api == ApiKey.ADD_PARTITIONS_TO_TXN and ctx.api_version < 4:
        txn = body["v3_and_below_transactional_id"]
        return None if authorized(ctx, A.WRITE, A.TRANSACTIONAL_ID, txn) else E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if api == ApiKey.FETCH and body.get("replica_id", -1) >= 0:
        return None if authorized(ctx, A.CLUSTER_ACTION, A.CLUSTER, A.CLUSTER_NAME) else E.CLUSTER_AUTHORIZATION_FAILED
    rule = WHOLE.get(api)
    if rule is None:
        return None
    resource, operation, name_of = rule
    return None if authorized(ctx, operation, resource, name_of(body)) else DENIED_CODE[resource]


def _split_topics(ctx: RequestContext, body: Any) -> tuple[Any, Any, str]:
    """(the request for what is allowed, the error answer for the rest or None, the answer's
    list they share)."""
    rule = _split_rule(ctx, body)
    if rule is None:
        return body, None, ""
    key, target_of, response_key, operation = rule
    items = body.get(key) or []
    # an item naming nothing the authorizer knows (a topic id no topic has, a config resource type
    # it does not cover) is the handler's to answer, as Kafka checks names
    denied: dict[int, list[Any]] = {}
    for item in items:
        target = target_of(item)
        if target is not None and not authorized(ctx, operation, *target):
            denied.setdefault(DENIED_CODE[target[0]], []).append(item)
    if not denied:
        return body, None, response_key
    refused_items = [i for group in denied.values() for i in group]
    allowed = Message(body)
    allowed[key] = [i for i in items if i not in refused_items]
    merged: dict[str, Any] = {response_key: []}
    for code, group in denied.items():
        refused = Message(body)
        refused[key] = group
        merged[response_key] += list(error_response(ctx.api_key, ctx.api_version, refused, code).get(response_key) or [])
    return allowed, merged, response_key


Target = Callable[[Any], "tuple[int, str] | None"]


def _topic(name_of: Callable[[Any], str | None]) -> Target:
    return lambda item: None if (name := name_of(item)) is None else (A.TOPIC, name)


def _config_target(resource: Any) -> tuple[int, str] | None:
    """ConfigResource type -> what KafkaApis authorizes: a topic's configs on the topic, a group's
    on the group, a broker's (and its loggers') on the cluster; other types are the handler's to
    refuse."""
    kind = {2: A.TOPIC, 4: A.CLUSTER, 8: A.CLUSTER, 32: A.GROUP}.get(resource["resource_type"])
    if kind is None:
        return None
    return kind, A.CLUSTER_NAME if kind == A.CLUSTER else resource["resource_name"]


def _split_rule(ctx: RequestContext, body: Any) -> tuple[str, Target, str, int] | None:
    """(request list, item -> (resource type, name), response list, operation) for the APIs
    whose items are authorized one by one."""
    api, version = ctx.api_key, ctx.api_version
    if api in SPLIT:
        key, name_of, response_key, resource, operation = SPLIT[api]
        return key, (lambda i: None if (n := name_of(i)) is None else (resource, n)), response_key, operation
    if api == ApiKey.FETCH:
        return "topics", _topic(lambda t: _fetch_topic_name(ctx, t)), "responses", A.READ
    if api == ApiKey.CREATE_TOPICS:
        # KafkaApis.handleCreateTopicsRequest: CREATE on the cluster covers every topic
        if authorized(ctx, A.CREATE, A.CLUSTER, A.CLUSTER_NAME, traced=False):
            return None
        return "topics", _topic(lambda t: t["name"]), "topics", A.CREATE
    if api == ApiKey.DELETE_TOPICS and version < 6:
        return "topic_names", _topic(lambda n: n), "responses", A.DELETE
    if api == ApiKey.FIND_COORDINATOR and version >= 4:
        # KafkaApis.getCoordinator, per key: DESCRIBE on the group or the transactional id
        key_resource = {0: A.GROUP, 1: A.TRANSACTIONAL_ID}.get(body.get("key_type", 0))
        if key_resource is None:
            return None
        return "coordinator_keys", (lambda key: (key_resource, key)), "coordinators", A.DESCRIBE
    if api == ApiKey.OFFSET_FETCH and version >= 8:
        # KafkaApis.handleOffsetFetchRequest (batched): DESCRIBE on each group
        return "groups", (lambda g: (A.GROUP, g["group_id"])), "groups", A.DESCRIBE
    if api == ApiKey.CREATE_PARTITIONS:
        return "topics", _topic(lambda t: t["name"]), "results", A.ALTER
    if api == ApiKey.DELETE_RECORDS:
        return "topics", _topic(lambda t: t["name"]), "topics", A.DELETE
    if api == ApiKey.DESCRIBE_CONFIGS:
        return "resources", _config_target, "results", A.DESCRIBE_CONFIGS
    if api in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        return "resources", _config_target, "responses", A.ALTER_CONFIGS
    return None


def _fetch_topic_name(ctx: RequestContext, t: Any) -> str | None:
    if t.get("topic"):
        return t["topic"]
    topic = ctx.cluster.topic_by_id(t.get("topic_id"))
    return topic.name if topic else None
