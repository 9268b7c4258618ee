"""Offsets committed inside a transaction (TxnOffsetCommit): held apart per producer until the
transaction's marker reaches the group's ``__consumer_offsets`` partition, then applied on commit
or dropped on abort (Kafka: ``OffsetMetadataManager.replayTxnOffsetCommit`` / ``replayEndTransactionMarker``).
Until then an OffsetFetch with ``require_stable`` (a read_committed consumer's) answers those
partitions UNSTABLE_OFFSET_COMMIT, and the consumer retries."""

from __future__ import annotations

from typing import Any

from broker_emu.groups.offsets import OFFSET_METADATA_MAX_BYTES
from broker_emu.groups.state import CommittedOffset, Group
from client.errors import ErrorCode as E


class TxnOffsetsMixin:
    """Pending transactional offsets for GroupCoordinator (which provides validate/group)."""

    groups: dict[str, Group]
    txn_pending: dict[str, dict[int, dict[tuple[str, int], CommittedOffset]]]

    def txn_commit_offsets(self, *, group_id: str, producer_id: int, offsets: list[tuple[str, int, int, int, str | None]],
                           broker_id: int, now: float) -> list[int]:
        error = self.validate(group_id, broker_id, allow_empty=True)  # type: ignore[attr-defined]
        if error is not None:
            return [error] * len(offsets)
        if self.group(group_id, now) is None:  # type: ignore[attr-defined]
            self.groups[group_id] = Group(group_id, coordinator=broker_id, state_since=now)
        pending = self.txn_pending.setdefault(group_id, {}).setdefault(producer_id, {})
        errors: list[int] = []
        for topic, partition, offset, leader_epoch, metadata in offsets:
            if metadata is not None and len(metadata.encode()) > OFFSET_METADATA_MAX_BYTES:
                errors.append(E.OFFSET_METADATA_TOO_LARGE)
                continue
            pending[(topic, partition)] = CommittedOffset(offset, leader_epoch, metadata or "", now)
            errors.append(E.NONE)
        return errors

    def end_txn_offsets(self, group_id: str, producer_id: int, commit: bool, now: float | None = None) -> None:
        pending = self.txn_pending.get(group_id, {}).pop(producer_id, None)
        if not pending or not commit:
            return
        g = self.groups.get(group_id)
        if g is not None:
            g.offsets.update(pending)

    def unstable(self, group_id: str, topic: str, partition: int) -> bool:
        return any((topic, partition) in offsets for offsets in self.txn_pending.get(group_id, {}).values())


def unstable_fields() -> dict[str, Any]:
    return {"committed_offset": -1, "committed_leader_epoch": -1, "metadata": "", "error_code": E.UNSTABLE_OFFSET_COMMIT}
