"""DeleteGroups and OffsetDelete against the coordinator's groups (Kafka 4.x
``GroupCoordinatorShard.deleteGroups``, ``OffsetMetadataManager.deleteOffsets``, and each group
type's ``validateDeleteGroup`` / ``validateOffsetDelete`` / ``isSubscribedToTopic``).

- A group is deleted, with its committed and pending transactional offsets, only when it has no
  members (NON_EMPTY_GROUP otherwise; GROUP_ID_NOT_FOUND for an unknown or Dead one).
- Offsets of a topic the group is subscribed to cannot be deleted while it has members
  (GROUP_SUBSCRIBED_TO_TOPIC per partition); a classic group whose members do not use the consumer
  protocol type refuses the whole request (NON_EMPTY_GROUP). Deleting an offset that is not there
  is not an error.
"""

from __future__ import annotations

from collections.abc import Callable

from broker_emu.groups.consumer_state import ConsumerGroup, ConsumerMember
from broker_emu.groups.failover import Failover
from broker_emu.groups.state import DEAD, EMPTY, Group
from broker_emu.groups.store import AnyGroup, GroupStore
from broker_emu.groups.txn_offsets import TxnOffsets
from client.errors import ErrorCode as E
from client.protocol.codec import decode_consumer_blob
from client.protocol.errors import CorruptFrameError

Subscribed = Callable[[ConsumerMember], frozenset[str]]
"""The topics a consumer-group member subscribes to (``ConsumerGroups.subscribed``)."""


class Deletion:
    def __init__(self, store: GroupStore, failover: Failover, txn: TxnOffsets,
                 forget_timers: Callable[[str], None], subscribed: Subscribed) -> None:
        self._store, self._failover, self._txn = store, failover, txn
        self._forget_timers, self._subscribed = forget_timers, subscribed

    def delete_groups(self, group_ids: list[str], *, broker_id: int, now: float) -> list[tuple[str, int]]:
        out = []
        for group_id in dict.fromkeys(group_ids):   # KafkaApis: groupsNames.distinct
            error = self._failover.validate(group_id, broker_id) or self._delete_group_error(group_id, now)
            if error is None:
                self._store.drop(group_id)
                self._txn.forget_group(group_id)
                self._forget_timers(group_id)
            out.append((group_id, error or E.NONE))
        return out

    def _delete_group_error(self, group_id: str, now: float) -> int | None:
        g = self._failover.group(group_id, now)
        if g is None or g.state == DEAD:
            return E.GROUP_ID_NOT_FOUND
        return E.NON_EMPTY_GROUP if g.members else None

    def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]], *, broker_id: int,
                       now: float) -> tuple[int, list[tuple[str, list[tuple[int, int]]]]]:
        """(top-level error, [(topic, [(partition, error)])]) for the partitions that exist."""
        error = self._failover.validate(group_id, broker_id)
        g = self._failover.group(group_id, now) if error is None else None
        if error is None and (g is None or g.state == DEAD):
            error = E.GROUP_ID_NOT_FOUND
        if error is None and isinstance(g, Group) and g.state != EMPTY and g.protocol_type != "consumer":
            error = E.NON_EMPTY_GROUP
        if error is not None or g is None:
            return error or E.GROUP_ID_NOT_FOUND, []
        subscribed = self._group_topics(g)
        out = []
        for topic, partitions in topics:
            if topic in subscribed:
                out.append((topic, [(p, int(E.GROUP_SUBSCRIBED_TO_TOPIC)) for p in partitions]))
                continue
            for p in partitions:
                g.offsets.pop((topic, p), None)
                self._txn.forget_partition(group_id, topic, p)
            out.append((topic, [(p, int(E.NONE)) for p in partitions]))
        return E.NONE, out

    def _group_topics(self, g: AnyGroup) -> set[str]:
        """The topics its members subscribe to (ClassicGroup: from their consumer-protocol
        subscriptions; ConsumerGroup: names and regex matches)."""
        if isinstance(g, ConsumerGroup):
            return set().union(*(self._subscribed(m) for m in g.members.values()))
        topics: set[str] = set()
        for m in g.members.values():
            for _, metadata in m.protocols[:1]:
                try:
                    topics.update(decode_consumer_blob("CONSUMER_PROTOCOL_SUBSCRIPTION", metadata)[1]["topics"])
                except CorruptFrameError:   # unreadable metadata subscribes to nothing
                    continue
        return topics
