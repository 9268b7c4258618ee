"""Which records of a Fetch answer the application sees, after Java's ``CompletedFetch``:
control batches (transaction markers) never; with ``isolation.level=read_committed``, not the
batches of aborted transactions either, which the answer's ``aborted_transactions`` (producer id,
first offset) lets the consumer recognise until each one's abort marker."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import compress, repeat
from typing import Any

from client.consumer.records import ConsumerRecord, record_from_row
from client.protocol.records import decode_columns, iter_batches


def visible_records(data: bytes, topic: str, partition: int, start: int, read_committed: bool,
                    aborted: Iterable[Any] | None) -> tuple[list[ConsumerRecord], int]:
    """(records at or after ``start`` the application may see, the offset after the last batch)."""
    pending = sorted((a.first_offset, a.producer_id) for a in aborted or ()) if read_committed else []
    aborted_pids: set[int] = set()
    out: list[ConsumerRecord] = []
    next_offset = start
    for pos, header in iter_batches(data):
        next_offset = max(next_offset, header.base_offset + header.last_offset_delta + 1)
        if read_committed and header.producer_id >= 0:
            while pending and pending[0][0] <= header.base_offset + header.last_offset_delta:
                aborted_pids.add(pending.pop(0)[1])
            if header.is_control:
                aborted_pids.discard(header.producer_id)   # past its abort marker, the producer's batches count again
            elif header.is_transactional and header.producer_id in aborted_pids:
                continue
        if header.is_control:
            continue
        _, c = decode_columns(data, pos)
        rows: Iterable[tuple] = zip(repeat(topic), repeat(partition), c.offsets, c.timestamps, c.keys, c.values,
                                    c.headers)
        if c.offsets and c.offsets[0] < start:   # the fetch began inside this batch
            rows = compress(rows, [offset >= start for offset in c.offsets])
        out.extend(map(record_from_row, rows))
    return out, next_offset
