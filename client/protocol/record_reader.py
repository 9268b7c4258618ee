"""Reading a batch's records section (Kafka's ``DefaultRecord`` layout) into columns, record by
record, with runs of same-layout records handed to ``record_runs``. Decoding never trusts a
length: every length and count is checked against the bytes present; malformed input raises
``ValueError`` or ``IndexError`` (which ``records.decode_columns`` reports as a corrupt batch).
"""

from __future__ import annotations

from typing import NamedTuple

from client.protocol.record_runs import read_run
from client.protocol.varint import read_varint, read_varlong

MIN_RECORD = 6  # attributes, timestamp delta, offset delta, key length, value length, header count (broker_emu.record_scan too)


class RecordColumns(NamedTuple):
    """A batch's records as columns of equal length: what a consumer builds its own record type
    from in one pass, without an intermediate object per record. Headers are tuples of
    (key, value) pairs: immutable, so a record without headers holds nothing the garbage
    collector must follow (a record of only numbers, bytes and tuples leaves its tracking at
    the first collection; a list per record kept every buffered record in every collection,
    measured at a third of a small-record consumer's time)."""

    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[tuple]


def _read_nullable(body: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_varint(body, pos)
    if n < 0:
        if n != -1:
            raise ValueError(f"negative length {n}")
        return None, pos
    if pos + n > len(body):
        raise ValueError(f"length {n} overruns the records")
    return body[pos:pos + n], pos + n


def _read_headers(body: bytes, pos: int, end: int) -> tuple[tuple, int]:
    count, pos = read_varint(body, pos)
    if count < 0 or 2 * count > end - pos:  # each header takes at least two bytes
        raise ValueError(f"header count {count} does not fit the record")
    headers = []
    for _ in range(count):
        hkey, pos = _read_nullable(body, pos)
        if hkey is None:
            raise ValueError("null header key")
        hval, pos = _read_nullable(body, pos)
        headers.append((hkey.decode("utf-8"), hval))
    return tuple(headers), pos


def read_records(body: bytes, count: int, base_offset: int, base_ts: int,
                 log_append_time: int | None) -> RecordColumns:
    """The records section; one- and two-byte varints (nearly all) inline, and where the next record
    starts like this one, the records repeating its layout in bulk (``record_runs.read_run``)."""
    columns = RecordColumns([], [], [], [], [])
    offsets, timestamps, keys, values, headers_column = columns
    n, pos, i, next_run = len(body), 0, 0, 0   # next_run: after a record whose layout gave no run, a few do not try
    while i < count:
        start = pos
        b = body[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif body[pos + 1] < 0x80:  # two bytes: records of 64 B to 8 KB
            raw = (b & 0x7F) | (body[pos + 1] << 7)
            length, pos = (raw >> 1) ^ -(raw & 1), pos + 2
        else:
            length, pos = read_varint(body, pos)
        end = pos + length
        if length < MIN_RECORD or end > n:
            raise ValueError(f"record length {length} at {pos} does not fit the records")
        b = body[pos + 1]  # after the (unused) attributes byte
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            ts_delta, pos = read_varlong(body, pos + 1)
        b = body[pos]
        if b < 0x80:
            offset_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        elif body[pos + 1] < 0x80:  # two bytes: records 64 to 8,191 of a batch
            raw = (b & 0x7F) | (body[pos + 1] << 7)
            offset_delta = (raw >> 1) ^ -(raw & 1)
            pos += 2
        else:
            offset_delta, pos = read_varint(body, pos)
        # inline: a null or short key, a value under 8 KB, no headers (the value must end on the headers count)
        kb = body[pos]
        q = pos + 1 + (kb >> 1) if kb < 0x80 and not kb & 1 else pos + 1   # after the key
        v = body[q]
        if (kb == 1 or q > pos + 1 or kb == 0) and body[end - 1] == 0 and not v & 1 and (
                (v < 0x80 and q + 2 + (v >> 1) == end) or
                (v >= 0x80 and body[q + 1] < 0x80 and q + 3 + (((v & 0x7F) | (body[q + 1] << 7)) >> 1) == end)):
            values.append(body[(q + 1 if v < 0x80 else q + 2):end - 1])
            keys.append(None if kb == 1 else body[pos + 1:q])
            headers_column.append(())
        else:
            _read_key_value_headers(body, pos, end, length, columns)
        offsets.append(base_offset + offset_delta)
        timestamps.append(base_ts + ts_delta if log_append_time is None else log_append_time)
        pos, i = end, i + 1
        if i >= next_run and i < count and end + 1 < n and body[end] == body[start] and body[end + 1] == body[start + 1]:
            run = read_run(body, start, end, offset_delta, count - i, base_offset, base_ts, log_append_time, columns)
            i += run
            pos += run * (end - start)
            next_run = i if run else i + 16
    if pos != n:
        raise ValueError(f"{n - pos} bytes after the last record")
    return columns


def _read_key_value_headers(body: bytes, pos: int, end: int, length: int, columns: RecordColumns) -> None:
    """The rest of the record ending at ``end`` (key, value, headers) onto ``columns``. Short
    keys and values are read inline; a slice past the record's end is caught by the
    ``pos != end`` check."""
    b = body[pos]
    if b == 1:
        key = None
        pos += 1
    elif b < 0x80 and not b & 1:
        pos += 1
        key = body[pos:pos + (b >> 1)]
        pos += b >> 1
    else:
        key, pos = _read_nullable(body, pos)
    b = body[pos]
    if b == 1:
        value = None
        pos += 1
    elif b < 0x80 and not b & 1:
        pos += 1
        value = body[pos:pos + (b >> 1)]
        pos += b >> 1
    elif b >= 0x80 and body[pos + 1] < 0x80 and not b & 1:  # two bytes: values of 64 B to 8 KB
        size = ((b & 0x7F) | (body[pos + 1] << 7)) >> 1
        pos += 2
        value = body[pos:pos + size]
        pos += size
    else:
        value, pos = _read_nullable(body, pos)
    if pos >= end:
        raise ValueError(f"key and value overrun the record ending at {end}")
    if body[pos] == 0:
        headers: tuple = ()
        pos += 1
    else:
        headers, pos = _read_headers(body, pos, end)
    if pos != end:
        raise ValueError(f"record ending at {end} used {pos - end + length} bytes, not {length}")
    columns.keys.append(key)
    columns.values.append(value)
    columns.headers.append(headers)
