"""Every request body the consumer sends, one builder each, and the readers of their answers.

Pure functions of their arguments: no state, no I/O. The callers (the fetcher, the coordinator
client, the membership state machine) decide what to ask; this module only knows the shapes.
Fields left out take the schema's default (e.g. OffsetCommit's ``retention_time_ms`` = -1 for
v2-4), so a field a version lacks is never sent.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from client.consumer.records import TopicPartition
from client.errors import ErrorCode
from client.protocol.codec import decode_consumer_blob, encode_consumer_blob

SUBSCRIPTION_VERSION = 1   # topics + owned partitions: what every client since Kafka 2.4 reads
Body = dict[str, Any]


def _topics(tps: Iterable[TopicPartition]) -> list[str]:
    return sorted({tp.topic for tp in tps})


# -- the coordinator ---------------------------------------------------------------------------
def find_coordinator(group: str) -> Body:
    """FindCoordinator for a group: v0-3 read ``key``, v4+ (KIP-699) ``coordinator_keys``."""
    return {"key": group, "key_type": 0, "coordinator_keys": [group]}


def coordinator_entry(answer: Any) -> Any:
    """The answer's one coordinator (v4+ answers carry a list, earlier versions the fields)."""
    return answer.coordinators[0] if answer.get("coordinators") else answer


# -- offsets in the group ----------------------------------------------------------------------
def offset_commit(group: str, offsets: Mapping[TopicPartition, int], generation: int = -1, member_id: str = "",
                  instance_id: str | None = None) -> Body:
    """As a member of ``generation``, or (generation -1, no member id) as a consumer outside
    any group membership (assign mode), which the coordinator accepts for a group with no
    members."""
    return {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member_id,
            "group_instance_id": instance_id, "retention_time_ms": -1, "topics": [
                {"name": t, "partitions": [{"partition_index": tp.partition, "committed_offset": o,
                                            "committed_leader_epoch": -1, "committed_metadata": ""}
                                           for tp, o in offsets.items() if tp.topic == t]}
                for t in _topics(offsets)]}


def offset_commit_error(answer: Any) -> int:
    """The first partition error of an OffsetCommit answer (0: every offset was committed)."""
    for t in answer.topics:
        for p in t.partitions:
            if p.error_code:
                return p.error_code
    return 0


def offset_fetch(group: str, tps: list[TopicPartition], require_stable: bool = False) -> Body:
    """v0-7 read ``group_id``/``topics``, v8+ (KIP-709) ``groups``. ``require_stable`` (v7+, a
    read_committed consumer, KIP-447): offsets a transaction has not committed yet are not answered."""
    topics = [{"name": t, "partition_indexes": [tp.partition for tp in tps if tp.topic == t]} for t in _topics(tps)]
    return {"group_id": group, "topics": topics, "groups": [{"group_id": group, "topics": topics}],
            "require_stable": require_stable}


def offset_fetch_result(answer: Any) -> tuple[int, dict[TopicPartition, int | None]]:
    """(group error code, committed offset per partition; None where nothing is committed)."""
    grouped = bool(answer.get("groups"))
    topics = answer.groups[0].topics if grouped else answer.topics
    error = answer.groups[0].error_code if grouped else answer.get("error_code", 0)
    # a transaction's offsets not committed yet: retriable, as Java's UnstableOffsetCommitException
    if not error and any(p.error_code == ErrorCode.UNSTABLE_OFFSET_COMMIT for t in topics for p in t.partitions):
        error = ErrorCode.UNSTABLE_OFFSET_COMMIT
    return error, {TopicPartition(t.name, p.partition_index): (p.committed_offset if p.committed_offset >= 0 else None)
                   for t in topics for p in t.partitions}


# -- partition leaders -------------------------------------------------------------------------
def isolation(config: Mapping[str, Any]) -> int:
    return 1 if config.get("isolation.level") == "read_committed" else 0


def list_offsets(tps: list[TopicPartition], timestamp: int, isolation_level: int = 0) -> Body:
    """``timestamp`` -2: the log start offset, -1: the end (read_committed: the last stable
    offset), else the first offset at or after it."""
    return {"replica_id": -1, "isolation_level": isolation_level, "topics": [
        {"name": topic, "partitions": [{"partition_index": tp.partition, "current_leader_epoch": -1,
                                        "timestamp": timestamp} for tp in tps if tp.topic == topic]}
        for topic in _topics(tps)]}


def fetch(config: Mapping[str, Any], positions: Mapping[TopicPartition, int]) -> Body:
    """A sessionless Fetch (session epoch -1) from ``positions``, one long poll of at most
    fetch.max.wait.ms on the broker."""
    return {"replica_id": -1, "max_wait_ms": config["fetch.max.wait.ms"], "min_bytes": config["fetch.min.bytes"],
            "max_bytes": config["fetch.max.bytes"], "isolation_level": isolation(config), "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": tp.topic, "partitions": [{"partition": tp.partition, "fetch_offset": offset,
                        "partition_max_bytes": config["max.partition.fetch.bytes"], "current_leader_epoch": -1}]}
                       for tp, offset in positions.items()]}


def telemetry_subscriptions() -> Body:
    """GetTelemetrySubscriptions with no instance id yet: the cluster assigns one (KIP-714)."""
    return {"client_instance_id": uuid.UUID(int=0)}


# -- group membership ---------------------------------------------------------------------------
def join_group(group: str, member_id: str, instance_id: str | None, session_timeout_ms: int, rebalance_timeout_ms: int,
               strategies: list[str], topics: list[str], reason: str | None = None) -> Body:
    """One protocol per assignor, in preference order, each carrying the same subscription."""
    metadata = encode_consumer_blob("CONSUMER_PROTOCOL_SUBSCRIPTION", SUBSCRIPTION_VERSION,
                                    {"topics": topics, "user_data": None, "owned_partitions": []})
    return {"group_id": group, "session_timeout_ms": session_timeout_ms, "rebalance_timeout_ms": rebalance_timeout_ms,
            "member_id": member_id, "group_instance_id": instance_id, "protocol_type": "consumer",
            "protocols": [{"name": s, "metadata": metadata} for s in strategies], "reason": reason}


def member_subscriptions(members: Iterable[Any]) -> dict[str, list[str]]:
    """The topics each member subscribed to, from a JoinGroup answer to the leader."""
    out = {}
    for m in members:
        _, sub = decode_consumer_blob("CONSUMER_PROTOCOL_SUBSCRIPTION", m.metadata)
        out[m.member_id] = list(sub.topics)
    return out


def member_assignments(plan: Mapping[str, Mapping[str, list[int]]]) -> list[Body]:
    """The leader's SyncGroup assignments: member id -> topic -> partitions."""
    return [{"member_id": member, "assignment": encode_consumer_blob("CONSUMER_PROTOCOL_ASSIGNMENT", 0, {
        "assigned_partitions": [{"topic": t, "partitions": ps} for t, ps in sorted(topics.items())], "user_data": None})}
        for member, topics in plan.items()]


def sync_group(group: str, generation: int, member_id: str, instance_id: str | None, protocol: str | None,
               assignments: list[Body]) -> Body:
    return {"group_id": group, "generation_id": generation, "member_id": member_id, "group_instance_id": instance_id,
            "protocol_type": "consumer", "protocol_name": protocol, "assignments": assignments}


def assigned_partitions(blob: bytes | None) -> list[TopicPartition]:
    """This member's partitions, from its SyncGroup answer (sorted)."""
    if not blob:
        return []
    _, assignment = decode_consumer_blob("CONSUMER_PROTOCOL_ASSIGNMENT", blob)
    return sorted(TopicPartition(a.topic, p) for a in assignment.assigned_partitions for p in a.partitions)


def heartbeat(group: str, generation: int, member_id: str, instance_id: str | None) -> Body:
    return {"group_id": group, "generation_id": generation, "member_id": member_id, "group_instance_id": instance_id}


def leave_group(group: str, member_id: str, instance_id: str | None, reason: str) -> Body:
    """v0-2 name one member (``member_id``), v3+ a list (KIP-345), v5+ with a reason (KIP-800)."""
    return {"group_id": group, "member_id": member_id,
            "members": [{"member_id": member_id, "group_instance_id": instance_id, "reason": reason}]}
