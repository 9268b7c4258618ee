"""Idempotent producers' state in one partition, kept from that partition's log — Kafka's
``ProducerStateManager`` and ``ProducerStateEntry`` (storage/internals/log).

Theory of operation
-------------------
Per producer id the partition remembers the epoch of the producer's latest batch and, for the
last five batches of that epoch (``NUM_BATCHES_TO_RETAIN``), their first and last sequence and
offsets. That is all idempotence needs:

- ``check`` (before an append, Kafka's ``ProducerAppendInfo.checkSequence`` and
  ``ProducerStateEntry.findDuplicateBatch``): an exact repeat of a remembered batch is a
  duplicate — answer with its original offset, append nothing; otherwise, in the same epoch
  the first sequence must follow the last one; a new epoch starts at sequence 0; a producer
  with no state here may start anywhere (KIP-360: its batches may all be gone).
- ``update`` (after the append): the batch joins the window; a new epoch empties it.
- ``truncate`` (the log lost its tail: a new leader that had less): the state must be what
  the remaining log says, or a retry of a truncated batch would be taken for a duplicate of
  something no longer there (acknowledged, never stored: a lost write). Kafka reloads the state
  from a snapshot below the truncation point and replays the log after it
  (``UnifiedLog.truncateTo`` → ``rebuildProducerState``). We have the batches in memory, so:
  producers whose remembered batches all lie below the new end keep their entry unchanged;
  the others are rebuilt from the batches left in the log, scanned back from the end; a
  producer with none left is forgotten (any sequence starts it again).
- The log start moving (size retention) changes nothing: Kafka's
  ``onLogStartOffsetIncremented`` keeps the in-memory entries, so a late retry of a batch
  retention already deleted is still recognised.
- ``remove_expired`` (``ProducerStateManager.removeExpiredProducers``, run every
  ``producer.id.expiration.check.interval.ms`` by broker_emu/producer_expiry.py): a producer with
  no transaction open here whose last batch's timestamp (its max timestamp, the producer's own
  clock under CreateTime) is ``producer.id.expiration.ms`` or more behind the broker's wall clock
  is forgotten, so a retry of its last batch after that is appended again, not recognised.

Difference kept from the emulator's earlier behaviour: a sequence older than the remembered
window answers DUPLICATE_SEQUENCE_NUMBER (pre-2.x brokers did; today's answer
OUT_OF_ORDER_SEQUENCE_NUMBER). Producers that send in order never reach it unless the batch is
really in the log, because the state follows the log.
"""

from __future__ import annotations

import struct
from collections import deque
from typing import TYPE_CHECKING, Iterable, Protocol, Sequence

from client.errors import ErrorCode

if TYPE_CHECKING:
    from client.protocol.records import BatchHeader

NUM_BATCHES_TO_RETAIN = 5
# producer id, producer epoch, base sequence: bytes 43-56 of a v2 batch header
_PRODUCER_FIELDS = struct.Struct(">qhi")
_PRODUCER_FIELDS_AT = 43
_ATTRIBUTES = struct.Struct(">h")
_ATTRIBUTES_AT = 21
_CONTROL = 0x20


class StoredBatchView(Protocol):
    """What the state reads of a batch the log holds (``broker_emu.log.StoredBatch``, which
    imports this module: the log owns the state)."""

    @property
    def base_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def raw(self) -> bytes | memoryview: ...
    @property
    def max_timestamp(self) -> int: ...


class BatchMetadata:
    """One remembered batch (Kafka's ``BatchMetadata``)."""

    __slots__ = ("first_seq", "last_seq", "first_offset", "last_offset")

    def __init__(self, first_seq: int, last_seq: int, first_offset: int, last_offset: int):
        self.first_seq, self.last_seq = first_seq, last_seq
        self.first_offset, self.last_offset = first_offset, last_offset

    def __repr__(self) -> str:
        return f"BatchMetadata(seq {self.first_seq}-{self.last_seq} at {self.first_offset}-{self.last_offset})"


class ProducerEntry:
    """A producer's state in one partition: its epoch, its last batches of that epoch and the
    timestamp of its last batch (``ProducerStateEntry.lastTimestamp``)."""

    __slots__ = ("epoch", "batches", "last_timestamp")

    def __init__(self, epoch: int, batches: Iterable[BatchMetadata] = (), last_timestamp: int = -1):
        self.epoch = epoch
        self.batches: deque[BatchMetadata] = deque(batches, maxlen=NUM_BATCHES_TO_RETAIN)
        self.last_timestamp = last_timestamp

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset

    def find_duplicate(self, first_seq: int, last_seq: int) -> BatchMetadata | None:
        return next((b for b in self.batches if b.first_seq == first_seq and b.last_seq == last_seq), None)


class ProducerStateManager:
    __slots__ = ("producers",)

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self.producers)

    def entry(self, producer_id: int) -> ProducerEntry | None:
        return self.producers.get(producer_id)

    # -- appends --------------------------------------------------------------------------------
    def check(self, header: "BatchHeader") -> tuple[ErrorCode, BatchMetadata | None]:
        """(error, the remembered batch this one repeats, if any) for an idempotent batch."""
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return ErrorCode.NONE, None   # unknown here: any sequence starts it (KIP-360)
        if header.producer_epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH, None
        first = header.base_sequence
        if header.producer_epoch > entry.epoch or not entry.batches:   # a new epoch, or one a marker started
            return (ErrorCode.NONE if first == 0 else ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER), None
        duplicate = entry.find_duplicate(first, (first + header.last_offset_delta) & 0x7FFFFFFF)
        if duplicate is not None:
            return ErrorCode.NONE, duplicate
        if first == (entry.last_seq + 1) & 0x7FFFFFFF:
            return ErrorCode.NONE, None
        if first < entry.batches[0].first_seq:
            return ErrorCode.DUPLICATE_SEQUENCE_NUMBER, None
        return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, None

    def update(self, producer_id: int, epoch: int, first_seq: int, first_offset: int, last_offset: int,
               timestamp: int = -1) -> None:
        """A batch of this producer was appended at [first_offset, last_offset]; ``timestamp``
        is its max timestamp."""
        entry = self.producers.get(producer_id)
        if entry is None or entry.epoch != epoch:
            entry = self.producers[producer_id] = ProducerEntry(epoch)
        last_seq = (first_seq + last_offset - first_offset) & 0x7FFFFFFF
        entry.batches.append(BatchMetadata(first_seq, last_seq, first_offset, last_offset))
        entry.last_timestamp = timestamp

    def end_txn(self, producer_id: int, epoch: int, timestamp: int = -1) -> None:
        """A transaction marker: it carries no sequence, but a higher epoch (a fenced producer's
        abort) starts the producer afresh (``ProducerAppendInfo.appendEndTxnMarker``)."""
        entry = self.producers.get(producer_id)
        if entry is None or epoch > entry.epoch:
            entry = self.producers[producer_id] = ProducerEntry(epoch)
        entry.last_timestamp = timestamp

    def remove_expired(self, now_ms: int, expiration_ms: int, open_here: Iterable[int]) -> list[int]:
        """``removeExpiredProducers``: forget the producers without a transaction open here
        (``open_here``) whose last batch is ``expiration_ms`` or more old; their ids."""
        keep = set(open_here)
        gone = [pid for pid, e in self.producers.items() if pid not in keep and now_ms - e.last_timestamp >= expiration_ms]
        for pid in gone:
            del self.producers[pid]
        return gone

    # -- the log lost its tail ------------------------------------------------------------------
    def truncate(self, end_offset: int, batches: Sequence[StoredBatchView]) -> None:
        """The log now ends at ``end_offset`` and holds ``batches``: rewind every producer that
        had a batch at or above the end to what the remaining batches say."""
        stale = {pid for pid, e in self.producers.items() if e.batches and e.last_offset >= end_offset}
        for pid in stale:
            del self.producers[pid]
        if stale:
            self._rebuild(stale, batches)

    def _rebuild(self, wanted: set[int], batches: Sequence[StoredBatchView]) -> None:
        found: dict[int, ProducerEntry] = {}
        complete: set[int] = set()
        for b in reversed(batches):           # newest first: the window is the log's last batches
            if len(complete) == len(wanted):
                break
            fields = producer_fields(b)
            if fields is None or fields[0] not in wanted or fields[0] in complete:
                continue
            pid, epoch, first_seq = fields
            entry = found.get(pid)
            if entry is None:
                entry = found[pid] = ProducerEntry(epoch, last_timestamp=b.max_timestamp)
            elif entry.epoch != epoch:        # an older epoch: the window holds only the newest one
                complete.add(pid)
                continue
            last_seq = (first_seq + b.last_offset - b.base_offset) & 0x7FFFFFFF
            entry.batches.appendleft(BatchMetadata(first_seq, last_seq, b.base_offset, b.last_offset))
            if len(entry.batches) == NUM_BATCHES_TO_RETAIN:
                complete.add(pid)
        self.producers.update(found)

    def statistics(self) -> dict[int, dict]:
        return {pid: {"epoch": e.epoch, "last_sequence": e.last_seq if e.batches else -1,
                      "last_offset": e.last_offset if e.batches else -1, "batches": len(e.batches)}
                for pid, e in self.producers.items()}


def producer_fields(batch: StoredBatchView) -> tuple[int, int, int] | None:
    """(producer id, epoch, base sequence) of a stored idempotent data batch, else None. Read
    from the stored bytes (the client's header, untouched by the broker's stamp), only when
    state is rebuilt, so the append path keeps nothing extra per batch."""
    raw = batch.raw
    if _ATTRIBUTES.unpack_from(raw, _ATTRIBUTES_AT)[0] & _CONTROL:
        return None
    pid, epoch, seq = _PRODUCER_FIELDS.unpack_from(raw, _PRODUCER_FIELDS_AT)
    return (pid, epoch, seq) if pid >= 0 else None
