"""A partition's log: raw record batches as bytes, offsets, and reads by offset or timestamp.

Batches are stored as the client sent them (once ``broker_emu.validation`` has checked them, as
Kafka's LogValidator does: nothing that a read path could trip over is ever appended), with base
offset and partition leader epoch stamped into a separate 16-byte head (the CRC covers neither
field, Kafka's DefaultRecordBatch), so records are not decoded on the fetch path. Per batch we keep its
offsets, its max timestamp (for ListOffsets) and a running byte total, so "how many bytes lie
between offset a and the high watermark" (DelayedFetch's min_bytes check) is two bisections, not
a scan.

Idempotent producers' state lives here too (``producers``, Kafka keeps its
``ProducerStateManager`` in ``UnifiedLog``), because it must follow the log: every append
updates it and every truncation rewinds it (see ``broker_emu.producer_state``).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable
from dataclasses import dataclass

from broker_emu.producer_state import ProducerStateManager
from broker_emu.validation import record_times
from client.protocol.records import BatchHeader

_STAMP = struct.Struct(">qii")  # base offset, batch length, partition leader epoch: bytes 0-15


@dataclass(slots=True)
class StoredBatch:
    """A batch as the client sent it (``raw``, never copied or mutated) and its first 16 bytes
    as the broker stamps them (``head``: base offset and leader epoch, outside the CRC). Copying
    a 1 MB batch only to change 12 bytes cost ~6% of produce throughput (benchmarks/broker)."""

    base_offset: int
    last_offset: int
    max_timestamp: int
    head: bytes
    raw: bytes | memoryview
    size: int
    seq: int = 0        # append order across every log sharing a LogMemory (oldest first)

    @property
    def leader_epoch(self) -> int:
        return _STAMP.unpack(self.head)[2]

    @property
    def data(self) -> bytes:
        """The stamped batch as one bytes object (a copy: for rare readers such as ListOffsets)."""
        return b"".join((self.head, self.raw[16:]))


def log_memory_budget(configured: int) -> int:
    """``emu.log.memory.bytes``: as configured (-1: no budget), or with 0, half of the memory
    the machine has available now (/proc/meminfo), at least 256 MiB; no budget where that is
    unknown."""
    if configured != 0:
        return configured
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return max(int(line.split()[1]) * 1024 // 2, 256 << 20)
    except OSError:
        pass
    return -1


class LogMemory:
    """Every partition log's bytes against one cluster-wide budget (``emu.log.memory.bytes``).

    The log lives in memory, and a test suite may write hundreds of MiB to one partition and
    read them back from the start: a per-partition cap would silently cut its head. So nothing
    is dropped until all logs together exceed the budget; then the oldest batches of the whole
    cluster go first (down to 90% of the budget, so this happens rarely), exactly as size
    retention drops them (the log start offset moves; a fetch below it is OFFSET_OUT_OF_RANGE),
    and ``on_evict`` says so (the cluster traces ``log_evicted`` and warns on stderr)."""

    def __init__(self, limit: int = -1, on_evict: Callable[[PartitionLog, int, int], None] | None = None):
        self.limit = limit          # bytes; -1: no budget
        self.used = 0
        self.seq = 0
        self.logs: list[PartitionLog] = []
        self.on_evict = on_evict

    def charge(self, n: int) -> None:
        self.used += n
        if 0 <= self.limit < self.used:
            self._evict()

    def _evict(self) -> None:
        target = self.limit * 9 // 10
        while self.used > target:
            candidates = [log for log in self.logs if len(log.batches) > 1]   # never a log's active batch
            if not candidates:
                return
            candidates.sort(key=lambda log: log.batches[0].seq)
            victim = candidates[0]
            next_seq = candidates[1].batches[0].seq if len(candidates) > 1 else None
            n, freed = 0, 0
            while (n < len(victim.batches) - 1 and self.used - freed > target
                   and (next_seq is None or victim.batches[n].seq < next_seq)):
                freed += victim.batches[n].size
                n += 1
            victim._drop_front(n)
            if self.on_evict is not None:
                self.on_evict(victim, freed, victim.log_start_offset)


class PartitionLog:
    def __init__(self, retention_bytes: int = -1, memory: LogMemory | None = None, name: str = ""):
        self.batches: list[StoredBatch] = []
        self._bases: list[int] = []
        self._lasts: list[int] = []
        self._cum: list[int] = []        # bytes from the first batch ever kept through batch i
        self._dropped = 0                # bytes of batches removed from the front (retention)
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.size_bytes = 0
        self.retention_bytes = retention_bytes
        self.producers = ProducerStateManager()
        self.name = name                 # "topic-partition", for what the memory budget reports
        self.memory = memory or LogMemory()
        self.memory.logs.append(self)

    def close(self) -> None:
        """The partition is gone (topic deleted): its bytes leave the budget."""
        self.memory.used -= self.size_bytes
        if self in self.memory.logs:
            self.memory.logs.remove(self)

    def append(self, batch: bytes | memoryview, header: BatchHeader, leader_epoch: int, max_timestamp: int | None = None) -> tuple[int, int]:
        """Append one validated batch (an idempotent one already checked against ``producers``)
        with the max timestamp validation found (the header's if not given); returns (base
        offset, last offset)."""
        base = self.log_end_offset
        # kept as given when immutable (bytes, or a read-only view of a request frame)
        raw = batch if type(batch) is bytes or (type(batch) is memoryview and batch.readonly) else bytes(batch)
        size = len(raw)
        head = _STAMP.pack(base, header.batch_length, leader_epoch)
        last = base + header.last_offset_delta
        max_ts = header.max_timestamp if max_timestamp is None else max_timestamp
        self.memory.seq += 1
        self.batches.append(StoredBatch(base, last, max_ts, head, raw, size, self.memory.seq))
        self._bases.append(base)
        self._lasts.append(last)
        self._cum.append((self._cum[-1] if self._cum else self._dropped) + size)
        self.log_end_offset = last + 1
        self.size_bytes += size
        if header.producer_id >= 0 and header.is_control:
            self.producers.end_txn(header.producer_id, header.producer_epoch, max_ts)
        elif header.producer_id >= 0:
            self.producers.update(header.producer_id, header.producer_epoch, header.base_sequence, base, last, max_ts)
        self._retain()
        self.memory.charge(size)
        return base, last

    def _retain(self) -> None:
        """Size-based retention (``retention.bytes``): drop whole batches from the front, never
        the active (last) one, and move the log start offset. Producer state is kept, as
        Kafka's ``onLogStartOffsetIncremented`` keeps it."""
        if self.retention_bytes < 0 or self.size_bytes <= self.retention_bytes:
            return
        n, size = 0, self.size_bytes
        while n < len(self.batches) - 1 and size > self.retention_bytes:
            size -= self.batches[n].size
            n += 1
        self._drop_front(n)

    def _drop_front(self, n: int) -> None:
        if n <= 0:
            return
        self._dropped = self._cum[n - 1]
        del self.batches[:n], self._bases[:n], self._lasts[:n], self._cum[:n]
        before, self.size_bytes = self.size_bytes, self._cum[-1] - self._dropped if self._cum else 0
        self.memory.used -= before - self.size_bytes
        self.log_start_offset = self.batches[0].base_offset if self.batches else self.log_end_offset

    def delete_before(self, offset: int) -> None:
        """DeleteRecords: the log starts at ``offset`` (possibly inside a batch, as Kafka's
        ``UnifiedLog.maybeIncrementLogStartOffset``); batches wholly below it are dropped."""
        if offset <= self.log_start_offset:
            return
        self._drop_front(self._first_index(offset))
        self.log_start_offset = max(self.log_start_offset, offset)

    def truncate_to(self, offset: int) -> list[StoredBatch]:
        """Drop everything at or above ``offset`` (a new leader that had less), and rewind the
        producer state to what is left (``UnifiedLog.truncateTo`` → ``rebuildProducerState``);
        the batches dropped, oldest first."""
        dropped: list[StoredBatch] = []
        while self.batches and self.batches[-1].base_offset >= offset:
            gone = self.batches.pop()
            dropped.append(gone)
            self._bases.pop()
            self._lasts.pop()
            self._cum.pop()
            self.size_bytes -= gone.size
            self.memory.used -= gone.size
        if self.batches and self.batches[-1].last_offset >= offset:
            offset = self.batches[-1].last_offset + 1  # a straddling batch stays whole
        self.log_end_offset = max(min(self.log_end_offset, offset), self.log_start_offset)
        self.producers.truncate(self.log_end_offset, self.batches)
        return dropped[::-1]

    def _first_index(self, offset: int) -> int:
        """Index of the batch holding ``offset`` (or the first after it)."""
        return bisect.bisect_left(self._lasts, offset)

    def end_of_batch(self, offset: int) -> int:
        """The offset after the batch holding ``offset`` (a share fetch sends whole batches)."""
        i = self._first_index(offset)
        return self.batches[i].last_offset + 1 if i < len(self.batches) else offset + 1

    def read(self, offset: int, max_bytes: int, upto: int, min_one: bool = True) -> bytes:
        """Whole batches from the one containing ``offset``, ending below ``upto`` (the high
        watermark for consumers), at most ``max_bytes`` — except that with ``min_one`` the
        first batch is returned even if larger, so a consumer can always progress (KIP-74)."""
        out: list[bytes | memoryview] = []
        size = 0
        for i in range(self._first_index(offset), len(self.batches)):
            b = self.batches[i]
            if b.last_offset >= upto:
                break  # consumers see only batches wholly below the high watermark
            if size + b.size > max_bytes and (out or not min_one):
                break
            out.append(b.head)
            out.append(memoryview(b.raw)[16:])
            size += b.size
        return b"".join(out)

    def bytes_between(self, offset: int, upto: int) -> int:
        """Bytes of the batches a read from ``offset`` below ``upto`` could return."""
        i = self._first_index(offset)
        j = bisect.bisect_left(self._lasts, upto)  # batches [i, j) end below upto
        if j <= i:
            return 0
        return self._cum[j - 1] - (self._cum[i - 1] if i > 0 else self._dropped)

    def offset_for_timestamp(self, timestamp: int, upto: int | None = None) -> StoredBatch | None:
        """The first batch (below ``upto``) whose max timestamp is >= ``timestamp``."""
        for b in self.batches:
            if upto is not None and b.last_offset >= upto:
                return None
            if b.max_timestamp >= timestamp:
                return b
        return None

    def record_for_timestamp(self, timestamp: int, upto: int | None = None) -> tuple[StoredBatch, int, int] | None:
        """(batch, offset, timestamp) of the first record (below ``upto``) whose timestamp is >=
        ``timestamp``. Batches whose max timestamp is smaller are skipped unread; inside one that
        may hold it, the records are read (ListOffsets is rare). A batch whose max timestamp
        exceeds its records' (Kafka can store one: a producer-set LogAppendTime batch in a
        CreateTime topic) yields nothing and the search goes on, as ``LogSegment.findOffsetByTimestamp``."""
        for b in self.batches:
            if upto is not None and b.last_offset >= upto:
                return None
            if b.max_timestamp >= timestamp:
                found = next(((b.base_offset + o, ts) for o, ts in record_times(b.data) if ts >= timestamp), None)
                if found is not None:
                    return b, found[0], found[1]
        return None

    def max_timestamp_batch(self, upto: int | None = None) -> StoredBatch | None:
        """The first batch (below ``upto``) carrying the largest max timestamp."""
        best = None
        for b in self.batches:
            if upto is not None and b.last_offset >= upto:
                break
            if best is None or b.max_timestamp > best.max_timestamp:
                best = b
        return best

    @staticmethod
    def max_timestamp_record(b: StoredBatch) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record of ``b`` whose timestamp is the batch's max
        timestamp (``RecordBatch.offsetOfMaxTimestamp``), or None if none has it."""
        return next(((b.base_offset + o, ts) for o, ts in record_times(b.data) if ts == b.max_timestamp), None)
