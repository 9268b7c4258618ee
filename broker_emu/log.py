"""A partition's log: raw record batches as bytes, offsets, and reads by offset or timestamp.

Batches are stored as the client sent them, with only base offset and leader epoch stamped
(the CRC does not cover them); records are never decoded here.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from client.protocol.records import BatchHeader, set_base_offset


@dataclass(slots=True)
class StoredBatch:
    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


class PartitionLog:
    def __init__(self, retention_bytes: int = -1):
        self.batches: list[StoredBatch] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.size_bytes = 0
        self.retention_bytes = retention_bytes

    def append(self, batch: bytes, header: BatchHeader, leader_epoch: int, timestamp_override: int | None = None) -> tuple[int, int]:
        """Append one validated batch; returns (base offset, last offset)."""
        base = self.log_end_offset
        data = set_base_offset(batch, base, leader_epoch)
        last = base + header.last_offset_delta
        max_ts = header.max_timestamp if timestamp_override is None else timestamp_override
        self.batches.append(StoredBatch(base, last, max_ts, data))
        self._bases.append(base)
        self.log_end_offset = last + 1
        self.size_bytes += len(data)
        self._retain()
        return base, last

    def _retain(self) -> None:
        if self.retention_bytes < 0:
            return
        while len(self.batches) > 1 and self.size_bytes > self.retention_bytes:
            gone = self.batches.pop(0)
            self._bases.pop(0)
            self.size_bytes -= len(gone.data)
            self.log_start_offset = self.batches[0].base_offset

    def truncate_to(self, offset: int) -> None:
        """Drop everything at or above ``offset`` (a new leader that had less)."""
        while self.batches and self.batches[-1].base_offset >= offset:
            gone = self.batches.pop()
            self._bases.pop()
            self.size_bytes -= len(gone.data)
        if self.batches and self.batches[-1].last_offset >= offset:
            # a batch straddling the cut stays whole: replicas never split batches
            offset = self.batches[-1].last_offset + 1
        self.log_end_offset = max(min(self.log_end_offset, offset), self.log_start_offset)

    def read(self, offset: int, max_bytes: int, upto: int) -> bytes:
        """Whole batches from the one containing ``offset``, below ``upto`` (the high watermark
        for consumers). The first batch is returned even if larger than ``max_bytes`` (KIP-74)."""
        i = bisect.bisect_right(self._bases, offset) - 1
        i = max(i, 0)
        out, size = [], 0
        while i < len(self.batches):
            b = self.batches[i]
            if b.base_offset >= upto or b.last_offset < offset:
                if b.base_offset >= upto:
                    break
                i += 1
                continue
            if b.last_offset >= upto:
                break  # not fully committed yet: consumers see only below the high watermark
            if out and size + len(b.data) > max_bytes:
                break
            out.append(b.data)
            size += len(b.data)
            i += 1
        return b"".join(out)

    def bytes_between(self, offset: int, upto: int) -> int:
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        return sum(len(b.data) for b in self.batches[i:] if b.last_offset >= offset and b.last_offset < upto)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """First batch whose max timestamp >= ``timestamp``: (its base offset, max timestamp).

        Kafka answers with the first *record* offset; we answer at batch granularity without
        decoding records, which is exact for single-record batches and for timestamps that fall
        on batch boundaries (documented difference)."""
        for b in self.batches:
            if b.max_timestamp >= timestamp:
                return b.base_offset, b.max_timestamp
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        best = None
        for b in self.batches:
            if best is None or b.max_timestamp > best[1]:
                best = (b.last_offset, b.max_timestamp)
        return best
