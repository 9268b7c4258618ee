"""Request handlers, one module per API family (the group and transaction APIs too: their
coordinators live in groups/ and transactions/, below the cluster; their wire handlers here,
above it), each registering its APIs with ``@handles`` when first imported;
``broker_emu.handler_catalog.register_all()`` imports every one of them (the runtime calls it
at start). ``CloseConnection`` and ``KAFKA_INTERNAL_TOPICS`` live lower down (connection_close,
internal_topics) and are re-exported here for the handlers."""

from __future__ import annotations

import uuid
from typing import Any, Protocol

from broker_emu.connection_close import CloseConnection as CloseConnection
from broker_emu.internal_topics import KAFKA_INTERNAL_TOPICS as KAFKA_INTERNAL_TOPICS
from client.errors import ErrorCode
from client.protocol import ApiKey


def _partition_index(p: Any) -> int | None:
    if isinstance(p, int):
        return p
    for name in ("partition", "partition_index", "index"):
        if name in p:
            return p[name]
    return None


class NamedTopic(Protocol):
    @property
    def name(self) -> str: ...


class TopicIds(Protocol):
    """Topic ids to names: the cluster's topics, or those the proxy learnt from Metadata answers."""

    def topic_by_id(self, topic_id: uuid.UUID) -> NamedTopic | None: ...


def topics_of(cluster: TopicIds, api_key: int, body: Any) -> list[tuple[str, int | None]]:
    """(topic, partition) pairs a request names, for fault matching and the trace."""
    out: list[tuple[str, int | None]] = []
    for key in ("topic_data", "topics"):
        for t in body.get(key) or ():
            if isinstance(t, str):
                out.append((t, None))
                continue
            name = t.get("name") or t.get("topic")
            if not name and t.get("topic_id") is not None:
                topic = cluster.topic_by_id(t["topic_id"])
                name = topic.name if topic else None
            if not name:
                continue
            parts = t.get("partition_data") or t.get("partitions") or t.get("partition_indexes") or ()
            if not parts:
                out.append((name, None))
            for p in parts:
                out.append((name, _partition_index(p)))
    return out


def request_details(topics: list[tuple[str, int | None]], api_key: int, body: Any) -> dict[str, Any]:
    """What the trace says of a request on arrival (emulator and proxy alike): the topics it
    names and, for ConsumerGroupHeartbeat, the member epoch it carries (0 join, -1 leave, -2 a
    static member's temporary leave), which the kip848 contracts read on the wire; for the timed
    admin requests, their timeout_ms."""
    details: dict[str, Any] = {"topics": sorted({t for t, _ in topics})} if topics else {}
    if api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT and body is not None:
        details["member_epoch"] = body.get("member_epoch")
    elif api_key in TIMED_ADMIN and body is not None:
        details["timeout_ms"] = body.get("timeout_ms")   # the deadline the client gives the broker
    return details


# admin requests whose timeout_ms is a server-side deadline (the controller's, a purgatory's)
TIMED_ADMIN = frozenset(int(k) for k in (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS,
                                         ApiKey.DELETE_RECORDS, ApiKey.ELECT_LEADERS))


def error_codes(body: Any) -> list[int]:
    """Every non-zero error code anywhere in a response (for the trace). Iterative, and lists
    of scalars (replica ids, offsets) are skipped whole: this runs on every response."""
    found: list[int] = []
    stack = [body]
    while stack:
        v = stack.pop()
        items = v.items() if isinstance(v, dict) else (("", x) for x in v)
        for k, x in items:
            if k == "error_code" or k == "partition_error_code":   # the latter: AddPartitionsToTxn
                if x:
                    found.append(x)
            elif isinstance(x, dict) or (isinstance(x, list) and x and isinstance(x[0], (dict, list))):
                stack.append(x)
    return found


# Errors.message() for the codes whose default message Kafka puts in a response's
# error_message (org.apache.kafka.common.protocol.Errors).
KAFKA_MESSAGES = {
    3: "This server does not host this topic-partition.",
    14: "The coordinator is loading and hence can't process requests.",
    15: "The coordinator is not available.",
    16: "This is not the correct coordinator.",
    42: "This most likely occurs because of a request being malformed by the client library or the message was sent "
        "to an incompatible broker. See the broker logs for more details.",
    80: "The preferred leader was not available.",
    83: "Eligible topic partition leaders are not available.",
    84: "Leader election not needed for topic partition.",
    29: "Topic authorization failed.",
    30: "Group authorization failed.",
    31: "Cluster authorization failed.",
    53: "Transactional Id authorization failed.",
    54: "Security features are disabled.",
    24: "The group id is invalid.",
    68: "The group is not empty.",
    69: "The group id does not exist.",
    85: "No partition reassignment is in progress.",
    100: "This server does not host this topic ID.",
}


def kafka_message(code: int) -> str:
    """``Errors.message()``: the error's default message (its name for codes not tabled here)."""
    if code in KAFKA_MESSAGES:
        return KAFKA_MESSAGES[code]
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error code {code}"


def error_response(api_key: int, version: int, request: Any, code: int) -> dict[str, Any]:
    """An injected error answer with no side effects: what Kafka sends when the whole request
    fails with that error (each API's ``<Api>Request.getErrorResponse``), the error repeated in
    every topic, partition, group or key the request names, with the fields Kafka fills beside
    it (docs/responses.md)."""
    api = ApiKey(api_key)
    build = _ERROR_BUILDERS.get(api)
    return build(version, request, code) if build else {"error_code": code}


def _produce_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # ProduceResponse.PartitionResponse(error): base offset, log append time and log start offset -1
    return {"responses": [{"name": t["name"], "partition_responses": [
        {"index": p["index"], "error_code": code, "base_offset": -1, "log_append_time_ms": -1, "log_start_offset": -1}
        for p in t["partition_data"]]} for t in request["topic_data"]]}


def _fetch_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # a read that failed with that error in every partition (ReplicaManager.createLogReadResult)
    return {"error_code": ErrorCode.NONE, "responses": [{"topic": t.get("topic", ""), "topic_id": t.get("topic_id"), "partitions": [
        error_partition(p["partition"], code, before_read=False) for p in t["partitions"]]} for t in request["topics"]]}


EMPTY_RECORDS = b""  # MemoryRecords.EMPTY: a record set of length 0


def error_partition(index: int, error: int, *, before_read: bool) -> dict[str, Any]:
    """A partition that cannot be read, as Kafka answers it. Partitions refused before the read
    (unknown topic, partition or topic id) get ``FetchResponse.partitionResponse``: high
    watermark -1 and the schema defaults, so an empty aborted-transactions list. Partitions whose
    read fails (not leader, fenced or unknown epoch, offset out of range) get
    ``ReplicaManager.createLogReadResult``: high watermark, last stable offset and log start
    offset all -1 (UnifiedLog.UnknownOffset), aborted transactions null. Either way
    ``KafkaApis``' createResponse passes the records through ``FetchResponse.recordsOrFail``, so
    they go out as MemoryRecords.EMPTY, length 0. A null record set (length -1) is not
    what Kafka sends and librdkafka rejects it ("invalid MessageSetSize -1"), dropping the whole
    response, so its consumer never sees OFFSET_OUT_OF_RANGE and never resets."""
    return {"partition_index": index, "error_code": error, "high_watermark": -1, "last_stable_offset": -1,
            "log_start_offset": -1, "aborted_transactions": [] if before_read else None,
            "preferred_read_replica": -1, "records": EMPTY_RECORDS}


def _list_offsets_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # KafkaApis.handleListOffsetRequestV1AndAbove's buildErrorResponse
    return {"topics": [{"name": t["name"], "partitions": [
        {"partition_index": p["partition_index"], "error_code": code, "offset": -1, "timestamp": -1, "leader_epoch": -1}
        for p in t["partitions"]]} for t in request["topics"]]}


def _metadata_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # KafkaApis.metadataResponseTopic(error, name, zero id, isInternal, no partitions); an
    # injected answer knows no brokers (the pipeline does not pass the cluster here)
    # (MetadataRequest.getErrorResponse: a null name, possible in v10+, becomes ""; since v13 the
    # error is also the answer's top-level ErrorCode, which older versions do not carry)
    return {"brokers": [], "error_code": code, "topics": [{"name": t["name"] or "", "topic_id": t.get("topic_id"), "error_code": code,
                                       "is_internal": t["name"] in KAFKA_INTERNAL_TOPICS, "partitions": []}
                                      for t in request.get("topics") or ()]}


def _offset_commit_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # OffsetCommitRequest.getErrorResponse: the error in every partition
    return {"topics": [{"name": t["name"], "partitions": [
        {"partition_index": p["partition_index"], "error_code": code} for p in t["partitions"]]} for t in request["topics"]]}


def _find_coordinator_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # FindCoordinatorResponse.prepareOldResponse / prepareErrorResponse: Node.noNode() and Errors.message()
    message = kafka_message(code)
    if version < 4:
        return {"error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}
    return {"coordinators": [{"key": k, "node_id": -1, "host": "", "port": -1, "error_code": code, "error_message": message}
                             for k in request.get("coordinator_keys") or []]}


def _offset_fetch_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # OffsetFetchRequest.getErrorResponse: v0-1 put the error in every requested partition (no
    # top-level error before v2), v2-7 a top-level error and no topics, v8+ one per group
    if version >= 8:
        return {"groups": [{"group_id": g["group_id"], "error_code": code, "topics": []} for g in request.get("groups") or []]}
    if version >= 2:
        return {"error_code": code, "topics": []}
    return {"topics": [{"name": t["name"], "partitions": [
        {"partition_index": i, "committed_offset": -1, "metadata": "", "error_code": code} for i in t["partition_indexes"]]}
        for t in request.get("topics") or ()]}


def _describe_groups_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # DescribeGroupsResponse.groupError: empty state, protocol and members; no authorized operations
    return {"groups": [{"group_id": g, "error_code": code, "group_state": "", "protocol_type": "", "protocol_data": "",
                        "members": []} for g in request["groups"]]}


def _delete_topics_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # DeleteTopicsRequest.getErrorResponse: names (v0-5) or names and ids (v6+), no message
    if version >= 6:
        return {"responses": [{"name": t.get("name"), "topic_id": t.get("topic_id"), "error_code": code}
                              for t in request.get("topics") or []]}
    return {"responses": [{"name": n, "error_code": code} for n in request.get("topic_names") or []]}


def _create_topics_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # CreateTopicsRequest.getErrorResponse: ApiError.fromThrowable leaves no message; the
    # schema defaults give no partitions, no replication factor and an empty config list
    return {"topics": [{"name": t["name"], "error_code": code, "error_message": None, "num_partitions": -1,
                        "replication_factor": -1, "configs": []} for t in request["topics"]]}


def _describe_configs_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # DescribeConfigsRequest.getErrorResponse: Errors.message() and no configs
    return {"results": [{"resource_type": r["resource_type"], "resource_name": r["resource_name"], "error_code": code,
                         "error_message": kafka_message(code), "configs": []} for r in request["resources"]]}


def _join_group_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # JoinGroupRequest.getErrorResponse: unknown generation, no protocol (null from v7), no leader or member id
    return {"error_code": code, "generation_id": -1, "protocol_type": None, "protocol_name": None if version >= 7 else "",
            "leader": "", "member_id": "", "members": []}


def _api_versions_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # ApiVersionsRequest.getErrorResponse: no api keys (only UNSUPPORTED_VERSION lists ApiVersions itself)
    return {"error_code": code, "api_keys": []}


def _create_acls_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # CreateAclsRequest.getErrorResponse: the error for every creation, with Errors.message()
    return {"results": [{"error_code": code, "error_message": kafka_message(code)} for _ in request["creations"]]}


def _delete_acls_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # DeleteAclsRequest.getErrorResponse: the error for every filter, nothing matched
    return {"filter_results": [{"error_code": code, "error_message": kafka_message(code), "matching_acls": []}
                               for _ in request["filters"]]}


def _describe_acls_error(version: int, request: Any, code: int) -> dict[str, Any]:
    return {"error_code": code, "error_message": kafka_message(code), "resources": []}


def _alter_client_quotas_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # AlterClientQuotasRequest.getErrorResponse: every entry with its entity and the error
    return {"entries": [{"error_code": code, "error_message": kafka_message(code), "entity": e["entity"]}
                        for e in request["entries"]]}


def _create_partitions_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # CreatePartitionsRequest.getErrorResponse: every topic with the error and Errors.message()
    return {"results": [{"name": t["name"], "error_code": code, "error_message": kafka_message(code)} for t in request["topics"]]}


def _delete_records_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # DeleteRecordsRequest.getErrorResponse: every partition, low watermark -1
    return {"topics": [{"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "low_watermark": -1,
                                                           "error_code": code} for p in t["partitions"]]}
                       for t in request["topics"]]}


def _alter_configs_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # (Incremental)AlterConfigsRequest.getErrorResponse: every resource with Errors.message()
    return {"responses": [{"error_code": code, "error_message": kafka_message(code), "resource_type": r["resource_type"],
                           "resource_name": r["resource_name"]} for r in request["resources"]]}


def _alter_scram_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # AlterUserScramCredentialsRequest.getErrorResponse: every user named, once, with the error
    users = dict.fromkeys([d["name"] for d in request["deletions"]] + [u["name"] for u in request["upsertions"]])
    return {"results": [{"user": u, "error_code": code, "error_message": kafka_message(code)} for u in users]}


def _add_partitions_to_txn_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # AddPartitionsToTxnRequest.getErrorResponse: below v4 every partition with the error, v4+ the top-level code
    if version >= 4:
        return {"error_code": code}
    return {"results_by_topic_v3_and_below": [{"name": t["name"], "results_by_partition": [
        {"partition_index": p, "partition_error_code": code} for p in t["partitions"]]}
        for t in request["v3_and_below_topics"]]}


def _txn_offset_commit_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # TxnOffsetCommitRequest.getErrorResponse: every partition it names with the error
    return {"topics": [{"name": t["name"], "partitions": [
        {"partition_index": p["partition_index"], "error_code": code} for p in t["partitions"]]}
        for t in request["topics"]]}


def _share_group_describe_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # ShareGroupDescribeRequest.getErrorResponse: every group with the error
    return {"groups": [{"group_id": g, "error_code": code} for g in request["group_ids"]]}


def _describe_share_group_offsets_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # DescribeShareGroupOffsetsResponse(throttle, groupIds, exception): every group with the error
    return {"groups": [{"group_id": g["group_id"], "error_code": code, "error_message": kafka_message(code)}
                       for g in request["groups"]]}


def _top_level_error(version: int, request: Any, code: int) -> dict[str, Any]:
    # Alter/DeleteShareGroupOffsetsRequest.getErrorResponse: the top-level error and its Errors message
    return {"error_code": code, "error_message": kafka_message(code)}


_ERROR_BUILDERS = {
    ApiKey.PRODUCE: _produce_error, ApiKey.FETCH: _fetch_error, ApiKey.LIST_OFFSETS: _list_offsets_error,
    ApiKey.METADATA: _metadata_error, ApiKey.OFFSET_COMMIT: _offset_commit_error,
    ApiKey.FIND_COORDINATOR: _find_coordinator_error, ApiKey.OFFSET_FETCH: _offset_fetch_error,
    ApiKey.DESCRIBE_GROUPS: _describe_groups_error, ApiKey.DELETE_TOPICS: _delete_topics_error,
    ApiKey.CREATE_TOPICS: _create_topics_error, ApiKey.DESCRIBE_CONFIGS: _describe_configs_error,
    ApiKey.JOIN_GROUP: _join_group_error, ApiKey.API_VERSIONS: _api_versions_error,
    ApiKey.CREATE_ACLS: _create_acls_error, ApiKey.DELETE_ACLS: _delete_acls_error,
    ApiKey.DESCRIBE_ACLS: _describe_acls_error, ApiKey.ALTER_CLIENT_QUOTAS: _alter_client_quotas_error,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_scram_error, ApiKey.CREATE_PARTITIONS: _create_partitions_error,
    ApiKey.DELETE_RECORDS: _delete_records_error, ApiKey.ALTER_CONFIGS: _alter_configs_error,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _alter_configs_error, ApiKey.SHARE_GROUP_DESCRIBE: _share_group_describe_error,
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn_error, ApiKey.TXN_OFFSET_COMMIT: _txn_offset_commit_error,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: _describe_share_group_offsets_error,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: _top_level_error, ApiKey.DELETE_SHARE_GROUP_OFFSETS: _top_level_error,
}

