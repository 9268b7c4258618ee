"""OffsetCommit and OffsetFetch against a group (Kafka: ``OffsetMetadataManager`` and
``ClassicGroup.validateOffsetCommit``).

Who may commit: a member of the current generation (the commit also keeps its session alive
while Stable or PreparingRebalance; during CompletingRebalance it gets REBALANCE_IN_PROGRESS),
or anybody with generation -1 while the group is Empty — consumers using assign() and the admin
client, whose first commit creates the group ("simple" group, no protocol type). Note: Kafka
accepts member commits during PreparingRebalance (the heartbeat tells the member to rejoin);
only CompletingRebalance is refused.

Offsets are kept in memory with the group and never expire (Kafka: offsets.retention.minutes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from broker_emu.groups.consumer_state import ConsumerGroup, stale_partitions
from broker_emu.groups.failover import Failover
from broker_emu.groups.state import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    CommittedOffset,
    Group,
)
from broker_emu.groups.store import GroupStore
from client.errors import ErrorCode as E

OFFSET_METADATA_MAX_BYTES = 4096  # Kafka: offset.metadata.max.bytes

# (topic, partition, committed_offset, committed_leader_epoch, committed_metadata or None)
OffsetToCommit = tuple[str, int, int, int, "str | None"]
# (group error, [(topic, [(partition, committed or None)])])
FetchedOffsets = tuple[int, list[tuple[str, list[tuple[int, "CommittedOffset | None"]]]]]


SessionTouch = Callable[[Group, str, float], None]
"""Restarts a classic member's session (``ClassicGroups.touch_session``)."""


class OffsetStore:
    """OffsetCommit / OffsetFetch over the groups' committed offsets. A commit with generation -1
    to a group nobody knows creates it (a "simple" group)."""

    def __init__(self, store: GroupStore, failover: Failover, touch_session: SessionTouch) -> None:
        self._store, self._failover, self._touch_session = store, failover, touch_session

    def commit_offsets(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                       offsets: list[OffsetToCommit], api_version: int, broker_id: int,
                       now: float) -> list[int]:
        """One error code per offset, in order."""
        error = self._failover.validate(group_id, broker_id, allow_empty=True)
        if error is not None:
            return [error] * len(offsets)
        g = self._failover.group(group_id, now)
        if g is None and generation_id >= 0:
            # Kafka 4.0: GROUP_ID_NOT_FOUND from v9; before, ILLEGAL_GENERATION for compatibility.
            return [E.GROUP_ID_NOT_FOUND if api_version >= 9 else E.ILLEGAL_GENERATION] * len(offsets)
        if g is None:
            g = self._store.put(Group(group_id, coordinator=broker_id, state_since=now))
        if isinstance(g, ConsumerGroup):
            error = consumer_commit_error(g, generation_id, member_id, api_version)
            if error is not None:
                return [error] * len(offsets)
            m = g.members.get(member_id)
            stale = stale_partitions(m, generation_id, [(o[0], o[1]) for o in offsets]) if m is not None else set()
            return [E.STALE_MEMBER_EPOCH if (o[0], o[1]) in stale else store_offset(g, o, now) for o in offsets]
        error = classic_commit_error(g, generation_id, member_id, group_instance_id)
        if error is not None:
            return [error] * len(offsets)
        if g.state in (STABLE, PREPARING_REBALANCE) and member_id in g.members:
            self._touch_session(g, member_id, now)
        return [store_offset(g, o, now) for o in offsets]

    def fetch_offsets(self, *, group_id: str, topics: Iterable[tuple[str, list[int]]] | None, broker_id: int,
                      now: float, member_id: str | None = None,
                      member_epoch: int = -1) -> FetchedOffsets:
        """(group error, [(topic, [(partition, committed or None)])]). ``topics`` None means every
        partition the group has an offset for. An unknown group is not an error: no offsets.
        OffsetFetch v9+ names the member of a consumer group, whose epoch must be current."""
        error = self._failover.validate(group_id, broker_id, allow_empty=True)
        if error is not None:
            return error, []
        g = self._failover.group(group_id, now)
        if isinstance(g, ConsumerGroup):
            error = consumer_fetch_error(g, member_id, member_epoch)
            if error is not None:
                return error, []
        stored = g.offsets if g is not None else {}
        if topics is None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(stored):
                by_topic.setdefault(topic, []).append(partition)
            topics = by_topic.items()
        return E.NONE, [(t, [(p, stored.get((t, p))) for p in parts]) for t, parts in topics]


def classic_commit_error(g: Group, generation_id: int, member_id: str, instance_id: str | None) -> int | None:
    if g.state == DEAD:
        return E.COORDINATOR_NOT_AVAILABLE
    if generation_id < 0 and g.state == EMPTY:
        return None
    if generation_id >= 0 or member_id or instance_id is not None:
        error = g.member_error(member_id, instance_id)
        if error is not None:
            return error
        if generation_id != g.generation_id:
            return E.ILLEGAL_GENERATION
    elif g.state != EMPTY:
        return E.UNKNOWN_MEMBER_ID  # no member id: only allowed while nobody is in the group
    return E.REBALANCE_IN_PROGRESS if g.state == COMPLETING_REBALANCE else None


def store_offset(g: Group | ConsumerGroup, o: OffsetToCommit, now: float) -> int:
    topic, partition, offset, leader_epoch, metadata = o
    if metadata is not None and len(metadata.encode()) > OFFSET_METADATA_MAX_BYTES:
        return E.OFFSET_METADATA_TOO_LARGE
    g.offsets[(topic, partition)] = CommittedOffset(offset, leader_epoch, metadata or "", now)
    return E.NONE


def consumer_commit_error(g: ConsumerGroup, epoch: int, member_id: str, api_version: int) -> int | None:
    """ConsumerGroup.validateOffsetCommit: epoch -1 commits only while the group has no members;
    a member must use OffsetCommit v9+; its epoch is then checked per partition
    (consumer_state.stale_partitions, KIP-1251)."""
    if epoch < 0 and not g.members:
        return None
    m = g.members.get(member_id)
    if m is None:
        return E.UNKNOWN_MEMBER_ID
    return E.UNSUPPORTED_VERSION if api_version < 9 else None


def consumer_fetch_error(g: ConsumerGroup, member_id: str | None, epoch: int) -> int | None:
    """ConsumerGroup.validateOffsetFetch: an admin (no member, epoch -1) may read; a member only
    with its current epoch."""
    if epoch < 0 and member_id is None:
        return None
    m = g.members.get(member_id or "")
    if m is None:
        return E.UNKNOWN_MEMBER_ID
    return E.STALE_MEMBER_EPOCH if epoch != m.member_epoch else None


def offset_fields(committed: CommittedOffset | None) -> dict[str, Any]:
    """Wire fields of one partition in an OffsetFetch answer (-1 / "" when nothing committed)."""
    if committed is None:
        return {"committed_offset": -1, "committed_leader_epoch": -1, "metadata": "", "error_code": E.NONE}
    return {"committed_offset": committed.offset, "committed_leader_epoch": committed.leader_epoch,
            "metadata": committed.metadata, "error_code": E.NONE}
