"""Share group membership (KIP-932; Kafka's ``GroupMetadataManager.shareGroupHeartbeat``), sans-io.

A member joins with epoch 0 and the topics it subscribes to, heartbeats with the epoch it was
given, leaves with -1. The broker assigns: every change of members or of what they subscribe to
bumps the group epoch and recomputes the target with the ``simple`` assignor, and share groups
have no revocation step, so each member takes its new assignment and the group epoch at its next
heartbeat. A partition may go to several members, and its records are shared among them.

The assignment follows ``SimpleAssignor``'s homogeneous rule in outline: partitions spread over
the members subscribed to their topic; when a topic has fewer partitions than members, the
partitions go round again, so every member gets one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from client.errors import ErrorCode as E

LEAVE_EPOCH = -1
Assignment = dict[Any, list[int]]    # topic id -> partitions


@dataclass
class ShareMember:
    member_id: str
    epoch: int
    subscribed: list[str]
    client_id: str
    client_host: str
    rack_id: str | None = None
    assignment: Assignment = field(default_factory=dict)
    previous_epoch: int = -1        # a heartbeat at it is still accepted (an answer lost on the way)
    sent_epoch: int = -1            # the epoch whose assignment the member was last told
    timer: Any = None               # its session timeout


@dataclass
class ShareGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    # the share partitions the group coordinator has initialized state for (topic id -> partitions):
    # every partition of a topic a member subscribes to, and those AlterShareGroupOffsets set;
    # DeleteShareGroupOffsets removes a topic (GroupMetadataManager's initialized topics)
    initialized: dict[Any, set[int]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"


class HeartbeatError(Exception):
    def __init__(self, code: int, message: str | None):
        super().__init__(message)
        self.code, self.message = code, message


def validate(group_id: str, member_id: str, epoch: int, subscribed: list[str] | None) -> None:
    """``throwIfShareGroupHeartbeatRequestIsInvalid``."""
    if not group_id:
        raise HeartbeatError(E.INVALID_REQUEST, "GroupId can't be empty.")
    if not member_id:   # Kafka answers this one without a message
        raise HeartbeatError(E.INVALID_REQUEST, None)
    if epoch == 0 and not subscribed:
        raise HeartbeatError(E.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
    if epoch < LEAVE_EPOCH:
        raise HeartbeatError(E.INVALID_REQUEST, "MemberEpoch is invalid.")


def simple_assignment(members: dict[str, ShareMember], partitions_of: dict[str, tuple[Any, int]]) -> dict[str, Assignment]:
    """Member -> {topic id: partitions}. ``partitions_of``: topic name -> (topic id, count)."""
    out: dict[str, Assignment] = {m: {} for m in members}
    topics = sorted({t for m in members.values() for t in m.subscribed if t in partitions_of})
    for topic in topics:
        tid, count = partitions_of[topic]
        subs = sorted(m for m, member in members.items() if topic in member.subscribed)
        if not subs or not count:
            continue
        if len(subs) <= count:
            for p in range(count):
                out[subs[p % len(subs)]].setdefault(tid, []).append(p)
        else:
            for i, m in enumerate(subs):
                out[m].setdefault(tid, []).append(i % count)
    return out


def describe_assignment(assignment: Assignment, name_of: Any) -> list[dict[str, Any]]:
    return [{"topic_id": tid, "topic_name": name_of(tid), "partitions": sorted(ps)} for tid, ps in assignment.items()]


def wire_assignment(assignment: Assignment) -> dict[str, Any]:
    return {"topic_partitions": [{"topic_id": tid, "partitions": sorted(ps)} for tid, ps in assignment.items()]}
