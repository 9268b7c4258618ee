"""A partition's transactions as its log sees them: which producers have a transaction open
here (from its first transactional batch), which finished ones are not yet replicated, and the
aborted ones a read_committed consumer must skip.

Kafka keeps this in ``ProducerStateManager`` (ongoing transactions, ``firstUnstableOffset``) and
the ``TransactionIndex`` (aborted transactions) of each log segment; the last stable offset is
``UnifiedLog.lastStableOffset``: the first offset of the earliest transaction that is open or whose
marker the high watermark has not passed yet, else the high watermark.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int      # the abort marker's offset


@dataclass
class PartitionTxns:
    ongoing: dict[int, int] = field(default_factory=dict)                   # producer id -> first offset
    ended: list[tuple[int, int, int]] = field(default_factory=list)        # (first offset, marker offset, producer id)
    aborted: list[AbortedTxn] = field(default_factory=list)

    def batch_appended(self, producer_id: int, base_offset: int) -> None:
        """A transactional batch: the producer's transaction here starts at its first one."""
        self.ongoing.setdefault(producer_id, base_offset)

    def marker_appended(self, producer_id: int, marker_offset: int, commit: bool) -> None:
        first = self.ongoing.pop(producer_id, None)
        if first is None:
            return   # nothing of this transaction was written here (Kafka writes the marker anyway)
        self.ended.append((first, marker_offset, producer_id))
        if not commit:
            self.aborted.append(AbortedTxn(producer_id, first, marker_offset))

    def last_stable_offset(self, high_watermark: int) -> int:
        self.ended = [e for e in self.ended if e[1] >= high_watermark]
        firsts = list(self.ongoing.values()) + [f for f, _, _ in self.ended]
        return min([high_watermark, *firsts])

    def truncate_to(self, offset: int) -> None:
        """The log lost everything from ``offset`` (a new leader that had less): a transaction
        whose first batch is gone is no longer here; one whose marker is gone is open again from
        its first batch, until the marker is written again (Kafka truncates each segment's
        ``TransactionIndex`` and rebuilds the producers' ongoing transactions from the log that is
        left: ``UnifiedLog.truncateTo`` -> ``rebuildProducerState``)."""
        self.ongoing = {pid: first for pid, first in self.ongoing.items() if first < offset}
        reopened = [(pid, first) for first, marker, pid in self.ended if marker >= offset and first < offset]
        reopened += [(a.producer_id, a.first_offset) for a in self.aborted
                     if a.last_offset >= offset and a.first_offset < offset]
        self.ended = [e for e in self.ended if e[1] < offset]
        self.aborted = [a for a in self.aborted if a.last_offset < offset]
        for pid, first in reopened:
            self.ongoing.setdefault(pid, first)

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions a fetch of [start, end) overlaps (``UnifiedLog.collectAbortedTransactions``)."""
        return [a for a in self.aborted if a.last_offset >= start and a.first_offset < end]

    def open_since(self, producer_id: int) -> int | None:
        return self.ongoing.get(producer_id)
