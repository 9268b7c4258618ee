"""Offsets committed inside a transaction (TxnOffsetCommit): held apart per producer until the
transaction's marker reaches the group's ``__consumer_offsets`` partition, then applied on commit
or dropped on abort (Kafka: ``OffsetMetadataManager.replayTxnOffsetCommit`` / ``replayEndTransactionMarker``).
Until then an OffsetFetch with ``require_stable`` (a read_committed consumer's) answers those
partitions UNSTABLE_OFFSET_COMMIT, and the consumer retries."""

from __future__ import annotations

from typing import Any

from broker_emu.groups.failover import Failover
from broker_emu.groups.offsets import OFFSET_METADATA_MAX_BYTES
from broker_emu.groups.state import CommittedOffset, Group
from broker_emu.groups.store import GroupStore
from client.errors import ErrorCode as E

Pending = dict[tuple[str, int], CommittedOffset]


class TxnOffsets:
    """Pending transactional offsets: group -> producer id -> partition -> offset."""

    def __init__(self, store: GroupStore, failover: Failover) -> None:
        self._store, self._failover = store, failover
        self._pending: dict[str, dict[int, Pending]] = {}

    def txn_commit_offsets(self, *, group_id: str, producer_id: int, offsets: list[tuple[str, int, int, int, str | None]],
                           broker_id: int, now: float) -> list[int]:
        error = self._failover.validate(group_id, broker_id, allow_empty=True)
        if error is not None:
            return [error] * len(offsets)
        if self._failover.group(group_id, now) is None:
            self._store.put(Group(group_id, coordinator=broker_id, state_since=now))
        pending = self._pending.setdefault(group_id, {}).setdefault(producer_id, {})
        errors: list[int] = []
        for topic, partition, offset, leader_epoch, metadata in offsets:
            if metadata is not None and len(metadata.encode()) > OFFSET_METADATA_MAX_BYTES:
                errors.append(E.OFFSET_METADATA_TOO_LARGE)
                continue
            pending[(topic, partition)] = CommittedOffset(offset, leader_epoch, metadata or "", now)
            errors.append(E.NONE)
        return errors

    def end_txn_offsets(self, group_id: str, producer_id: int, commit: bool, now: float | None = None) -> None:
        pending = self._pending.get(group_id, {}).pop(producer_id, None)
        if not pending or not commit:
            return
        g = self._store.get(group_id)
        if g is not None:
            g.offsets.update(pending)

    def unstable(self, group_id: str, topic: str, partition: int) -> bool:
        return any((topic, partition) in offsets for offsets in self._pending.get(group_id, {}).values())

    def forget_group(self, group_id: str) -> None:
        """The group is deleted: its open transactions' offsets go with it."""
        self._pending.pop(group_id, None)

    def forget_partition(self, group_id: str, topic: str, partition: int) -> None:
        """OffsetDelete: a pending offset of the partition goes too."""
        for pending in self._pending.get(group_id, {}).values():
            pending.pop((topic, partition), None)


def unstable_fields() -> dict[str, Any]:
    return {"committed_offset": -1, "committed_leader_epoch": -1, "metadata": "", "error_code": E.UNSTABLE_OFFSET_COMMIT}
