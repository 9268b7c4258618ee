"""Runs of records of one layout, read in bulk: the consumer's hot path for batches of
same-sized records (fixed-size payloads, a producer writing one message type).

A record batch is a sequence of variable-length records (``client.protocol.records``), so a
reader walks it one record at a time. But when consecutive records have the same size and the
same layout (the length, attributes, key length, value length and the empty headers count are
byte for byte the same, the offset deltas count up by one), every field sits at a fixed stride.
Then one strided slice per field checks the whole run in C (``body[first:stop:size]``), and the
keys, values, offsets and timestamps are taken with one comprehension each instead of a
per-record parse. A record that breaks the pattern ends the run; the caller's per-record reader
takes it from there, so the result is always what that reader gives (a property test holds
them equal).

Layouts read here (the common ones): a length of one or two bytes (records under 8 KB), a
timestamp delta of one or two bytes (within ±8 s of the batch's base timestamp), an offset delta
of up to three bytes (a batch's first million records), keys and values null or under 8 KB, no
headers.

The broker's validation walk (``broker_emu.record_scan``) checks runs the same way but only
validates (any shape, headers included; nothing extracted): the primitives both use live here
(``leading``, ``OFFSET_BYTES``).
"""

from __future__ import annotations

import re
from itertools import repeat
from typing import NamedTuple

_HIGH = re.compile(rb"[\x80-\xff]")   # a byte that continues a varint
_LOW = re.compile(rb"[\x00-\x7f]")    # a byte that ends one
_ZIGZAG = tuple((b >> 1) ^ -(b & 1) for b in range(128))   # one-byte zigzag varints, decoded
_DELTAS = {1: (0, 64), 2: (64, 8192), 3: (8192, 1 << 20)}   # the offset deltas each varint width carries


def leading(data: bytes, byte: bytes) -> int:
    """How many bytes at the start of ``data`` equal ``byte``."""
    return len(data) - len(data.lstrip(byte))


class OffsetBytes:
    """Byte ``j`` of the zigzag varints of 0, 1, 2, ... as one bytes object per (width, j): a run's
    offset deltas are consecutive iff each strided slice equals a slice of these."""

    def __init__(self) -> None:
        self._tables: dict[tuple[int, int], bytes] = {}

    def expected(self, width: int, j: int, first: int, count: int) -> bytes | None:
        lo, hi = _DELTAS[width]
        if first < lo or first + count > hi:
            return None
        table = self._tables.get((width, j))
        if table is None:
            table = self._tables[(width, j)] = self._build(width, j, hi)
        return table[first:first + count]

    @staticmethod
    def _build(width: int, j: int, hi: int) -> bytes:
        # zigzag(i) = 2i; byte j carries bits 7j..7j+6 of 2i, with the top bit set unless it is the last
        period = 1 << (7 * (j + 1) - 1)      # i's after which byte j's low bits repeat
        step = 1 << (7 * j - 1) if j else 1   # how many i's share one value of byte j
        top = 0 if j == width - 1 else 0x80
        one = b"".join(bytes(((((i * step) << 1) >> (7 * j)) & 0x7F | top,)) * step for i in range(period // step))
        return (one * (hi // period + 1))[:hi]


OFFSET_BYTES = OffsetBytes()


def _same_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes ``a`` and ``b`` (of one length) share."""
    if a == b:
        return len(a)
    lo, hi = 0, len(a)   # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _field(body: bytes, at: int) -> tuple[int, int]:
    """(length, bytes the length took) of the key or value whose length is at ``at``: -1 for
    null; (0, 0) for a layout this module does not read."""
    b = body[at]
    if b == 1:
        return -1, 1
    if b & 1:
        return 0, 0   # negative lengths other than -1 are malformed: the per-record reader says so
    if b < 0x80:
        return b >> 1, 1
    if body[at + 1] < 0x80:
        return ((b & 0x7F) | (body[at + 1] << 7)) >> 1, 2
    return 0, 0


class _Layout(NamedTuple):
    """Where a record's fields sit, relative to its start (the widths are varint bytes)."""

    width: int         # of the record's length
    ts_at: int
    ts_width: int
    delta_at: int
    delta_width: int
    key_at: int        # the key's length, then the key
    key_width: int
    key_size: int      # -1: null
    value_at: int
    value_width: int
    value_size: int


def _layout(body: bytes, start: int, size: int) -> _Layout | None:
    """The layout of the record at ``start`` if it is one this module reads."""
    width = 1 if body[start] < 0x80 else 2 if body[start + 1] < 0x80 else 0
    if not width:
        return None
    ts_at = width + 1   # after the attributes byte
    ts_width = 1 if body[start + ts_at] < 0x80 else 2 if body[start + ts_at + 1] < 0x80 else 0
    delta_at = ts_at + ts_width
    delta_width = next((w for w in (1, 2, 3) if body[start + delta_at + w - 1] < 0x80), 0)
    if not ts_width or not delta_width:
        return None
    key_at = delta_at + delta_width
    key_size, key_width = _field(body, start + key_at)
    if not key_width:
        return None
    value_at = key_at + key_width + max(key_size, 0)
    value_size, value_width = _field(body, start + value_at)
    if not value_width or value_at + value_width + max(value_size, 0) != size - 1 or body[start + size - 1] != 0:
        return None   # (the last byte: no headers)
    return _Layout(width, ts_at, ts_width, delta_at, delta_width, key_at, key_width, key_size, value_at, value_width,
                   value_size)


def _run_length(body: bytes, start: int, size: int, k: int, lay: _Layout, offset_delta: int) -> int:
    """How many of the ``k`` records after the one at ``start`` repeat its layout."""
    first = start + size
    stop = first + k * size
    m = k
    # bytes every record of the run shares with the template: the length, the attributes, the
    # key's and the value's lengths, the headers count
    for rel in (*range(lay.width), lay.width, *range(lay.key_at, lay.key_at + lay.key_width),
                *range(lay.value_at, lay.value_at + lay.value_width), size - 1):
        m = min(m, leading(body[first + rel:stop:size], body[start + rel:start + rel + 1]))
    # offset deltas counting up from the template's
    at = first + lay.delta_at
    for j in range(lay.delta_width):
        want = OFFSET_BYTES.expected(lay.delta_width, j, offset_delta + 1, k)
        m = min(m, _same_prefix(body[at + j:stop:size], want) if want is not None else 0)
    # timestamp deltas of the template's width
    at = first + lay.ts_at
    bad = (_HIGH if lay.ts_width == 1 else _LOW).search(body[at:stop:size], 0, m)
    if bad:
        m = bad.start()
    if lay.ts_width == 2:
        bad = _HIGH.search(body[at + 1:stop:size], 0, m)
        if bad:
            m = bad.start()
    return m


def read_run(body: bytes, start: int, end: int, offset_delta: int, most: int, base_offset: int, base_ts: int,
             log_append_time: int | None, columns: tuple[list, list, list, list, list]) -> int:
    """Reads the records after the one from ``start`` to ``end`` (already read, its offset delta
    ``offset_delta``) that repeat its layout, at most ``most`` of them, appending their fields to
    ``columns`` (offsets, timestamps, keys, values, headers). Returns how many it read."""
    size = end - start
    lay = _layout(body, start, size)
    if lay is None or offset_delta < 0:
        return 0
    k = min(most, (len(body) - end) // size, _DELTAS[lay.delta_width][1] - 1 - offset_delta)
    # a short look first: checking a long run costs in proportion to its length, and by chance
    # (mixed sizes) a record often starts like the one before it and then differs
    m = _run_length(body, start, size, min(k, 4), lay, offset_delta) if k > 0 else 0
    if m <= 0:
        return 0
    if m == 4 < k:
        m = _run_length(body, start, size, k, lay, offset_delta)
    offsets, timestamps, keys, values, headers = columns
    offsets.extend(range(base_offset + offset_delta + 1, base_offset + offset_delta + 1 + m))
    stop = end + m * size
    ts_low = body[end + lay.ts_at:stop:size]
    if log_append_time is not None:
        timestamps.extend(repeat(log_append_time, m))
    elif lay.ts_width == 2:
        timestamps.extend([base_ts + ((raw >> 1) ^ -(raw & 1)) for raw in
                           [(lo & 0x7F) | (hi << 7) for lo, hi in zip(ts_low, body[end + lay.ts_at + 1:stop:size])]])
    elif ts_low.count(ts_low[0]) == m:
        timestamps.extend(repeat(base_ts + _ZIGZAG[ts_low[0]], m))
    else:
        timestamps.extend(map(base_ts.__add__, map(_ZIGZAG.__getitem__, ts_low)))
    for out, field_size, at in ((keys, lay.key_size, lay.key_at + lay.key_width),
                                (values, lay.value_size, lay.value_at + lay.value_width)):
        if field_size < 0:
            out.extend(repeat(None, m))
        elif field_size == 0:
            out.extend(repeat(b"", m))
        else:
            out.extend([body[p:p + field_size] for p in range(end + at, stop + at, size)])
    headers.extend(repeat((), m))
    return m
