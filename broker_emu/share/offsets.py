"""Share-group offsets for the admin (KIP-932's DescribeShareGroupOffsets, AlterShareGroupOffsets
and DeleteShareGroupOffsets; KIP-1226's lag), as Kafka 4.4's group coordinator answers them.

Kafka keeps a share partition's start offset in the share coordinator (``__share_group_state``)
and the group coordinator remembers which share partitions it has initialized. The emulator's
share partitions live in ``ShareCoordinator.partitions`` and the initialized set in
``ShareGroup.initialized``; a start offset set by AlterShareGroupOffsets replaces the share
partition's whole in-flight state, as Kafka's InitializeShareGroupState writes a fresh state
(with a new state epoch the leader's cached SharePartition is fenced by). What Kafka answers:

- describe (``GroupCoordinatorService.describeShareGroupOffsets``): no group check at all; a topic
  that does not exist comes back with the zero topic id and start offset -1, a partition without
  state with start offset -1 and leader epoch 0, and lag (v1) is the high watermark minus the start
  offset minus the records already acknowledged or archived past it
  (``computeShareGroupLagAndBuildResponse``), -1 while the start offset is -1. Both come from the
  share coordinator's copy of the state, which the leader writes when records are acknowledged,
  released or expire, with the start offset from before that change moved it: so a partition only
  fetched from shows no start offset yet, and one whose records were all acknowledged in one go
  still shows the old start offset, with those records counted as delivered. With a null topic
  list (``describeShareGroupAllOffsets``) every initialized share partition; an unknown group has
  none;
- alter (``GroupMetadataManager.alterShareGroupOffsets``): the group is made if it does not exist,
  NON_EMPTY_GROUP if it has members, GROUP_ID_NOT_FOUND if the id is another kind of group; a topic
  or partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION for that partition alone;
- delete (``GroupCoordinatorShard.initiateDeleteShareGroupOffsets``): GROUP_ID_NOT_FOUND for a
  group that does not exist or is not a share group, NON_EMPTY_GROUP while it has members; a topic
  that does not exist, or that the group has no state for, is UNKNOWN_TOPIC_OR_PARTITION for that
  topic; the others lose their state, so the next fetch starts again from
  ``share.auto.offset.reset``.
"""

from __future__ import annotations

import uuid
from typing import Any

from broker_emu.share.coordinator import ShareCoordinator
from broker_emu.share.groups import ShareGroup
from client.errors import ErrorCode as E

ZERO_UUID = uuid.UUID(int=0)
UNINITIALIZED = -1                  # PartitionFactory.UNINITIALIZED_START_OFFSET, and the lag's
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
NON_EMPTY_MESSAGE = "The group is not empty."


class OffsetsError(Exception):
    """A group-level refusal: the answer's top-level error code and message."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


# -- describe -------------------------------------------------------------------------------------
def describe(coord: ShareCoordinator, group_id: str, topics: list[dict[str, Any]] | None) -> dict[str, Any]:
    """One DescribeShareGroupOffsetsResponseGroup (without error: Kafka has none to give here)."""
    if topics is None:
        group = coord.groups.get(group_id)
        wanted = _initialized(coord, group_id, group)
        out = [_described_topic(coord, group_id, t, sorted(ps)) for t, ps in wanted]
    else:
        unknown = [t for t in topics if t["topic_name"] not in coord.cluster.topics]
        known = [t for t in topics if t["topic_name"] in coord.cluster.topics]
        out = [{"topic_name": t["topic_name"], "topic_id": ZERO_UUID, "partitions": [
            _partition(p, UNINITIALIZED, 0, UNINITIALIZED) for p in t["partitions"]]} for t in unknown]
        out += [_described_topic(coord, group_id, coord.cluster.topics[t["topic_name"]], list(t["partitions"]))
                for t in known]
    return {"group_id": group_id, "topics": out, "error_code": E.NONE, "error_message": None}


def _initialized(coord: ShareCoordinator, group_id: str, group: ShareGroup | None) -> list[tuple[Any, set[int]]]:
    """The group's initialized share partitions whose topic still exists, with those it fetched."""
    by_id: dict[Any, set[int]] = {tid: set(ps) for tid, ps in (group.initialized if group else {}).items()}
    for (g, _, index), sp in coord.partitions.items():
        if g == group_id:
            by_id.setdefault(sp.topic_id, set()).add(index)
    out = []
    for tid, partitions in by_id.items():
        topic = coord.cluster.topic_by_id(tid)
        if topic is not None:
            out.append((topic, partitions))
    return sorted(out, key=lambda tp: tp[0].name)


def _described_topic(coord: ShareCoordinator, group_id: str, topic: Any, partitions: list[int]) -> dict[str, Any]:
    return {"topic_name": topic.name, "topic_id": topic.topic_id,
            "partitions": [_described_partition(coord, group_id, topic, p) for p in partitions]}


def _described_partition(coord: ShareCoordinator, group_id: str, topic: Any, index: int) -> dict[str, Any]:
    sp = coord.partitions.get((group_id, topic.name, index))
    if sp is None or sp.topic_id != topic.topic_id or sp.persisted is None or not 0 <= index < len(topic.partitions):
        return _partition(index, UNINITIALIZED, 0, UNINITIALIZED)
    start, complete = sp.persisted   # the share coordinator's copy, one write behind the leader
    p = coord.cluster.partition(topic.name, index)
    return _partition(index, start, p.leader_epoch, p.high_watermark - start - complete)


def _partition(index: int, start: int, leader_epoch: int, lag: int) -> dict[str, Any]:
    return {"partition_index": index, "start_offset": start, "leader_epoch": leader_epoch, "lag": lag,
            "error_code": E.NONE, "error_message": None}


# -- alter ----------------------------------------------------------------------------------------
def alter(coord: ShareCoordinator, group_id: str, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The AlterShareGroupOffsets responses; OffsetsError for the group-level refusals."""
    group = _share_group(coord, group_id, create=True)
    if group.members:
        raise OffsetsError(E.NON_EMPTY_GROUP, NON_EMPTY_MESSAGE)
    out = []
    for t in topics:
        topic = coord.cluster.topics.get(t["topic_name"])
        if topic is None:
            out.append({"topic_name": t["topic_name"], "topic_id": ZERO_UUID,
                        "partitions": [_unknown_partition(p["partition_index"]) for p in t["partitions"]]})
            continue
        partitions = []
        for p in t["partitions"]:
            index = p["partition_index"]
            if not 0 <= index < len(topic.partitions):
                partitions.append(_unknown_partition(index))
                continue
            _set_start(coord, group, topic, index, p["start_offset"])
            partitions.append({"partition_index": index, "error_code": E.NONE, "error_message": None})
        out.append({"topic_name": topic.name, "topic_id": topic.topic_id, "partitions": partitions})
    return out


def _unknown_partition(index: int) -> dict[str, Any]:
    return {"partition_index": index, "error_code": E.UNKNOWN_TOPIC_OR_PARTITION, "error_message": UNKNOWN_TOPIC_MESSAGE}


def _set_start(coord: ShareCoordinator, group: ShareGroup, topic: Any, index: int, start: int) -> None:
    """A fresh state at ``start``; a negative one is Kafka's uninitialized start offset, so the next
    fetch takes ``share.auto.offset.reset`` again."""
    group.initialized.setdefault(topic.topic_id, set()).add(index)
    key = (group.group_id, topic.name, index)
    old = coord.partitions.pop(key, None)
    if start >= 0:
        sp = coord.share_partition(group.group_id, topic.name, index)
        sp.start_offset = sp.end_offset = start
        sp.persisted = (start, 0)   # InitializeShareGroupState writes it
    coord.cluster.trace.emit("share_offsets_altered", details={
        "group": group.group_id, "topic": topic.name, "partition": index, "start_offset": start,
        "previous_start_offset": old.start_offset if old is not None else None})


# -- delete ---------------------------------------------------------------------------------------
def delete(coord: ShareCoordinator, group_id: str, topic_names: list[str]) -> list[dict[str, Any]]:
    """The DeleteShareGroupOffsets responses: the topics deleted first, then those refused."""
    group = _share_group(coord, group_id, create=False)
    if group.members:
        raise OffsetsError(E.NON_EMPTY_GROUP, NON_EMPTY_MESSAGE)
    done, refused = [], []
    for name in topic_names:
        topic = coord.cluster.topics.get(name)
        if topic is None:
            refused.append(_refused_topic(name, UNKNOWN_TOPIC_MESSAGE))
            continue
        partitions = group.initialized.pop(topic.topic_id, None)
        held = [k for k, sp in coord.partitions.items()
                if k[0] == group_id and k[1] == name and sp.topic_id == topic.topic_id]
        if partitions is None and not held:
            refused.append(_refused_topic(name, "There is no offset information to delete."))
            continue
        for key in held:
            del coord.partitions[key]
        coord.cluster.trace.emit("share_offsets_deleted", details={
            "group": group_id, "topic": name, "partitions": sorted(set(partitions or ()) | {k[2] for k in held})})
        done.append({"topic_name": name, "topic_id": topic.topic_id, "error_code": E.NONE, "error_message": None})
    return done + refused


def _refused_topic(name: str, message: str) -> dict[str, Any]:
    return {"topic_name": name, "topic_id": ZERO_UUID, "error_code": E.UNKNOWN_TOPIC_OR_PARTITION,
            "error_message": message}


def _share_group(coord: ShareCoordinator, group_id: str, *, create: bool) -> ShareGroup:
    """``getOrMaybeCreateShareGroup`` / ``shareGroup``: another kind of group by that id, or no
    group when one may not be made, is GROUP_ID_NOT_FOUND."""
    if group_id in coord.cluster.groups.groups:
        raise OffsetsError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
    group = coord.groups.get(group_id)
    if group is None:
        if not create:
            raise OffsetsError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        group = coord.groups[group_id] = ShareGroup(group_id)
    return group
