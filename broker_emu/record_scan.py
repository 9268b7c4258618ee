"""Reading the records of a v2 batch without decoding keys and values: the structural checks of
Kafka's record reader (``DefaultRecord.readFrom``, ``DefaultRecordBatch.RecordIterator``) at the
speed the produce path needs.

Theory of operation
-------------------
``scan`` walks ``count`` records of a (decompressed) records section and raises ``BadRecords``
with Kafka's ``InvalidRecordException`` message at the first malformed one: a length that does
not fit, a varint longer than its type (5 bytes for int32, 10 for int64), a negative header count
or header key length, a record whose fields do not add up to its length, bytes left after the
last record or too few records. It reports per record what ``LogValidator`` goes on to check:
the timestamp delta, whether the offset deltas are 0, 1, 2... (a compressed batch can then be
kept as it is) and which records have no key (compacted topics).

Walking record by record in Python costs about a microsecond a record — as much as everything
else the emulator does for a 100-byte record. Producers write runs of records of one shape,
though: same length, same key and value lengths, same headers, timestamp and offset deltas of
the same width. So after reading one record the slow way, ``scan`` checks whether the next k
records have that shape with a few strided slices of the buffer (``body[a:b:S]``, all in C):
every length/count byte must equal the sample's, every varint continuation byte must have its
top bit set and every final byte must not. The longest prefix that passes is taken (its
timestamp deltas come from one more strided slice through a translation table, or, when wider
than a byte, from decoding only their distinct values), the next record is read the slow way,
and k grows while runs keep passing; where runs fail, records are read the slow way for a
stretch that doubles each time, so batches of mixed shapes pay little for the attempts. A
property test checks that the fast and slow paths agree on arbitrary input.

Kafka takes any negative key, value or header value length as null; ``scan`` refuses lengths
below -1 (our own reader and some clients' refuse them: such a record would poison every
consumer). Header keys are not checked as UTF-8, like Kafka (Java decodes them leniently).
"""

from __future__ import annotations

import sys

from client.protocol.record_reader import MIN_RECORD
from client.protocol.record_runs import OFFSET_BYTES, leading
from client.protocol.varint import read_varint, read_varlong

Buffer = bytes | memoryview   # a records section: bytes, or a view of the request (no copy)
_NEG_LIMIT = 1 << 63
_FAST_MIN = 4             # runs shorter than this are not worth the slicing
_FAST_MAX = 1 << 16


class BadRecords(ValueError):
    """Kafka's InvalidRecordException: the records section is malformed."""


def wrap64(n: int) -> int:
    """Java long arithmetic: ``n`` wrapped into int64."""
    return ((n + _NEG_LIMIT) & ((1 << 64) - 1)) - _NEG_LIMIT


class Scan:
    """What a walk over the records found. ``ts_deltas`` holds each record's timestamp delta
    only when asked for (slow); ``min_delta``/``max_delta`` are always kept."""

    __slots__ = ("count", "min_delta", "max_delta", "consecutive", "keyless", "ts_deltas", "offset_deltas", "records")

    def __init__(self) -> None:
        self.count = 0
        self.min_delta: int | None = None
        self.max_delta: int | None = None
        self.consecutive = True          # offset delta of record i is i
        self.keyless: list[int] | None = None   # indexes of records with a null key, when asked for
        self.ts_deltas: list[int] | None = None
        self.offset_deltas: list[int] | None = None
        self.records: list[tuple] | None = None  # (ts delta, key, value, headers) when collected

    def _delta(self, d: int) -> None:
        if self.max_delta is None or d > self.max_delta:
            self.max_delta = d
        if self.min_delta is None or d < self.min_delta:
            self.min_delta = d


# -- one record, the slow way -----------------------------------------------------------------------

def _varint(body, pos: int) -> tuple[int, int]:
    try:
        return read_varint(body, pos)
    except ValueError as exc:
        raise BadRecords(f"Found invalid record structure: {exc}") from None


def _varlong(body, pos: int) -> tuple[int, int]:
    try:
        return read_varlong(body, pos)
    except ValueError as exc:
        raise BadRecords(f"Found invalid record structure: {exc}") from None


def _field(body, pos: int, end: int, what: str) -> tuple[int, int, int]:
    """(length, start, position after) of a nullable key/value/header value."""
    b = body[pos] if pos < end else 0x80
    if b < 0x80:
        n = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        n, pos = _varint(body, pos)
    if n < -1:
        raise BadRecords(f"Found invalid record structure: {what} length {n}")
    start = pos
    if n > 0:
        pos += n
    if pos > end:
        raise BadRecords(f"Found invalid record structure: {what} overruns the record")
    return n, start, pos


class _Sample:
    """The shape of a record just read, for the fast path: its size, the positions of the bytes
    every record of that shape repeats (lengths, counts), where its varints are and how wide
    (a shape is only used when the timestamp delta takes at most 4 bytes, the offset delta 3)."""

    __slots__ = ("size", "literals", "continuations", "finals", "ts_at", "ts_width", "offset_at", "offset_width", "keyless")

    def __init__(self, size: int, literals: list[int], continuations: list[int], finals: list[int], ts_at: int,
                 ts_width: int, offset_at: int, offset_width: int, keyless: bool):
        self.size, self.literals, self.continuations, self.finals = size, literals, continuations, finals
        self.ts_at, self.ts_width, self.offset_at, self.offset_width = ts_at, ts_width, offset_at, offset_width
        self.keyless = keyless


def read_record(body, pos: int, n: int, scan: Scan, index: int, sample: bool = False) -> tuple[int, _Sample | None]:
    """Read the record at ``pos``; account for it in ``scan``; return the position after it and,
    if asked, its shape."""
    start = pos
    b = body[pos]
    if b < 0x80:
        size = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        size, pos = _varint(body, pos)
    if size > n - pos or size < MIN_RECORD:
        raise _size_error(size, n - pos)
    len_end = pos
    end = pos + size
    ts_at = pos + 1                     # after the (unused) attributes byte
    b = body[ts_at]
    if b < 0x80:
        ts_delta = (b >> 1) ^ -(b & 1)
        pos = ts_at + 1
    else:
        ts_delta, pos = _varlong(body, ts_at)
    off_at = pos
    b = body[pos] if pos < end else 0x80
    if b < 0x80:
        off_delta = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        off_delta, pos = _varint(body, pos)
    key_at = pos
    key_len, key_start, pos = _field(body, pos, end, "key")
    value_at = pos
    value_len, value_start, pos = _field(body, pos, end, "value")
    headers_at = pos
    if pos >= end:
        raise BadRecords("Found invalid record structure: no header count")
    b = body[pos]
    header_bounds: list[tuple[int, int, int, int, int]] = []   # key length at, key start, value length at...
    if b == 0:
        pos += 1
    else:
        pos = _read_headers(body, pos, end, header_bounds)
    if pos != end:
        raise BadRecords(f"Invalid record size: expected to read {size} bytes in record payload, but instead read "
                         f"{pos - len_end}")
    scan._delta(ts_delta)
    if off_delta != index:
        scan.consecutive = False
    if key_len < 0 and scan.keyless is not None:
        scan.keyless.append(index)
    if scan.ts_deltas is not None:
        scan.ts_deltas.append(ts_delta)
    if scan.offset_deltas is not None:
        scan.offset_deltas.append(off_delta)
    if scan.records is not None:
        scan.records.append((ts_delta, *_fields(body, key_start, key_len, value_start, value_len, header_bounds)))
    if not sample:
        return end, None
    return end, _sample_of(start, len_end, ts_at, off_at, key_at, key_start, value_at, value_start, headers_at,
                           header_bounds, end, key_len < 0)


def _fields(body, key_start: int, key_len: int, value_start: int, value_len: int,
            header_bounds: list[tuple[int, int, int, int, int]]) -> tuple[bytes | None, bytes | None, list]:
    """A record's key, value and headers as bytes (for a rebuild)."""
    key = bytes(body[key_start:key_start + key_len]) if key_len >= 0 else None
    value = bytes(body[value_start:value_start + value_len]) if value_len >= 0 else None
    headers = [(bytes(body[ks:ks + kl]), bytes(body[vs:vs + vl]) if vl >= 0 else None)
               for _, ks, kl, vs, vl in header_bounds]
    return key, value, headers


def _size_error(size: int, remaining: int) -> BadRecords:
    if size > remaining:
        return BadRecords(f"Invalid record size: expected {size} bytes in record payload, but instead the buffer "
                          f"has only {remaining} remaining bytes.")
    return BadRecords(f"Invalid record size: expected to read {size} bytes in record payload, "
                      f"but a record takes at least {MIN_RECORD}")


def _read_headers(body, pos: int, end: int, bounds: list) -> int:
    count, pos = _varint(body, pos)
    if count < 0:
        raise BadRecords(f"Found invalid number of record headers {count}")
    if count > end - pos:
        raise BadRecords(f"Found invalid number of record headers. {count} is larger than the remaining size of the buffer")
    for _ in range(count):
        at = pos
        b = body[pos] if pos < end else 0x80
        if b < 0x80:
            key_len = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            key_len, pos = _varint(body, pos)
        if key_len < 0:
            raise BadRecords(f"Invalid negative header key size {key_len}")
        key_start = pos
        pos += key_len
        if pos > end:
            raise BadRecords("Found invalid record structure: header key overruns the record")
        value_len, value_start, pos = _field(body, pos, end, "header value")
        bounds.append((at, key_start, key_len, value_start, value_len))
    return pos


def _sample_of(start: int, len_end: int, ts_at: int, off_at: int, key_at: int, key_start: int, value_at: int,
               value_start: int, headers_at: int, header_bounds: list, end: int, keyless: bool) -> _Sample | None:
    ts_width, off_width = off_at - ts_at, key_at - off_at
    if ts_width > 4 or off_width > 3 or len(header_bounds) > 8:
        return None
    literal_ranges = [(start, len_end), (key_at, key_start), (value_at, value_start)]
    literal_ranges.append((headers_at, header_bounds[0][0] if header_bounds else end))
    for at, h_key_start, h_key_len, h_value_start, _ in header_bounds:
        literal_ranges.append((at, h_key_start))                          # the header key's length
        literal_ranges.append((h_key_start + h_key_len, h_value_start))   # the header value's length
    return _Sample(
        size=end - start,
        literals=[p - start for a, b in literal_ranges for p in range(a, b)],
        continuations=[p - start for p in (*range(ts_at, off_at - 1), *range(off_at, key_at - 1))],
        finals=[off_at - 1 - start, key_at - 1 - start],
        ts_at=ts_at - start, ts_width=ts_width, offset_at=off_at - start, offset_width=off_width, keyless=keyless)


def walk(body, pos: int, n: int, i: int, stop: int, result: Scan) -> int:
    """Read records ``i`` up to ``stop`` from ``pos`` the slow way, as one tight loop (the
    general path, about a microsecond a record); returns the position after them. Accepts and
    refuses exactly what ``read_record`` does."""
    lo = result.min_delta if result.min_delta is not None else _NEG_LIMIT
    hi = result.max_delta if result.max_delta is not None else -_NEG_LIMIT
    consecutive, keyless = result.consecutive, result.keyless
    ts_list, off_list = result.ts_deltas, result.offset_deltas
    try:
        while i < stop:
            if pos >= n:
                raise BadRecords("Incorrect declared batch size, premature EOF reached")
            b = body[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                size, pos = _varint(body, pos)
            if size > n - pos or size < MIN_RECORD:
                raise _size_error(size, n - pos)
            end = pos + size
            b = body[pos + 1]
            if b < 0x80:
                d = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                d, pos = _varlong(body, pos + 1)
            if d > hi:
                hi = d
            if d < lo:
                lo = d
            b = body[pos]
            if b < 0x80:
                o = (b >> 1) ^ -(b & 1)
                pos += 1
            elif body[pos + 1] < 0x80:                  # two bytes: offset deltas 64 to 8191
                o = (b & 0x7F) | (body[pos + 1] << 7)
                o = (o >> 1) ^ -(o & 1)
                pos += 2
            else:
                o, pos = _varint(body, pos)
            if o != i:
                consecutive = False
            if ts_list is not None:
                ts_list.append(d)
                off_list.append(o)  # type: ignore[union-attr]
            if keyless is not None and body[pos] == 1:   # a null key
                keyless.append(i)
            _skip_rest(body, pos, end, size)
            pos = end
            i += 1
    except IndexError:
        raise BadRecords("Found invalid record structure: the records end inside a record") from None
    if lo <= hi:   # at least one record
        result.min_delta, result.max_delta = lo, hi
    result.consecutive = consecutive
    return pos


def _skip_rest(body, pos: int, end: int, size: int) -> None:
    """Check the key, value and headers of the record ending at ``end`` (from ``pos``, its key)."""
    b = body[pos]                              # key
    if b == 1:
        pos += 1
    elif b < 0x80 and not b & 1:
        pos += 1 + (b >> 1)
    else:
        pos = _skip(body, pos, "key")
    if pos > end:
        raise BadRecords("Found invalid record structure: key overruns the record")
    b = body[pos]                              # value
    if b == 1:
        pos += 1
    elif b < 0x80 and not b & 1:
        pos += 1 + (b >> 1)
    elif b >= 0x80 and not b & 1 and body[pos + 1] < 0x80:
        pos += 2 + (((b & 0x7F) | (body[pos + 1] << 7)) >> 1)
    else:
        pos = _skip(body, pos, "value")
    if pos > end:
        raise BadRecords("Found invalid record structure: value overruns the record")
    if pos == end:
        raise BadRecords("Found invalid record structure: no header count")
    if body[pos] == 0:                          # no headers
        pos += 1
    else:
        pos = _read_headers(body, pos, end, [])
    if pos != end:
        raise BadRecords(f"Invalid record size: expected to read {size} bytes in record payload, but instead "
                         f"read {pos - end + size}")


def _skip(body, pos: int, what: str) -> int:
    """Past a nullable key or value given by a varint length."""
    n, pos = _varint(body, pos)
    if n < -1:
        raise BadRecords(f"Found invalid record structure: {what} length {n}")
    return pos + max(n, 0)


# -- runs of one shape, the fast way ----------------------------------------------------------------

_BYTE = [bytes((b,)) for b in range(256)]
_TOP_SET = bytes(0 if b >= 0x80 else 1 for b in range(256))    # translate: 0 where the byte continues a varint
_TOP_CLEAR = bytes(0 if b < 0x80 else 1 for b in range(256))   # 0 where it ends one
_ZIGZAG_ORDER = bytes(((b >> 1) ^ -(b & 1)) + 64 if b < 0x80 else 0 for b in range(256))  # one-byte delta + 64


def _run_deltas(body: Buffer, at: int, stop: int, size: int, width: int, scan: Scan) -> None:
    """The smallest and largest timestamp delta of a run: one-byte deltas through a translation
    table; wider ones by decoding only the distinct values (a batch spans few milliseconds)."""
    if width == 1:
        codes = bytes(body[at:stop:size]).translate(_ZIGZAG_ORDER)
        scan._delta(max(codes) - 64)
        scan._delta(min(codes) - 64)
        return
    words = bytearray(4 * len(range(at, stop, size)))
    for j in range(width):
        words[j::4] = bytes(body[at + j:stop:size])
    for word in set(memoryview(words).cast("I")):
        scan._delta(read_varlong(word.to_bytes(4, sys.byteorder), 0)[0])


def run_length(body: Buffer, pos: int, shape: _Sample, k: int) -> int:
    """How many of the next ``k`` records (from ``pos``) have ``shape``; every check is a
    strided slice, one byte position of all k records at once."""
    size = shape.size
    stop = pos + k * size
    sample = pos - size   # the record the shape was read from
    r = k
    for rel in shape.literals:
        r = min(r, leading(bytes(body[pos + rel:stop:size]), _BYTE[body[sample + rel]]))
        if r == 0:
            return 0
        stop = pos + r * size
    for rel in shape.continuations:
        r = min(r, leading(bytes(body[pos + rel:stop:size]).translate(_TOP_SET), b"\x00"))
        stop = pos + r * size
    for rel in shape.finals:
        r = min(r, leading(bytes(body[pos + rel:stop:size]).translate(_TOP_CLEAR), b"\x00"))
        stop = pos + r * size
    return r


def fast_run(body: Buffer, pos: int, shape: _Sample, k: int, scan: Scan, index: int, want_consecutive: bool) -> int:
    """Account for the longest run of ``shape`` among the next ``k`` records; returns its length."""
    r = run_length(body, pos, shape, k)
    if r == 0:
        return 0
    size = shape.size
    stop = pos + r * size
    _run_deltas(body, pos + shape.ts_at, stop, size, shape.ts_width, scan)
    if want_consecutive and scan.consecutive:
        for j in range(shape.offset_width):
            want = OFFSET_BYTES.expected(shape.offset_width, j, index, r)
            if want is None or bytes(body[pos + shape.offset_at + j:stop:size]) != want:
                scan.consecutive = False
                break
    if shape.keyless and scan.keyless is not None:
        scan.keyless.extend(range(index, index + r))
    return r


def scan(body: Buffer, count: int, *, want_consecutive: bool = False, want_keyless: bool = False,
         collect: bool = False, per_record: bool = False) -> Scan:
    """Walk ``count`` records filling ``body`` exactly; ``BadRecords`` if they do not.
    ``want_keyless`` lists the records without a key; ``collect`` keeps every record's fields
    (for a rebuild); ``per_record`` keeps every timestamp and offset delta; both take the slow
    path throughout."""
    result = Scan()
    if want_keyless:
        result.keyless = []
    n = len(body)
    if count < 0 or count > n // (MIN_RECORD + 1):   # so a count cannot make us loop for nothing
        raise BadRecords("Incorrect declared batch size, premature EOF reached")
    if collect:
        result.records = []
        pos = 0
        for i in range(count):
            if pos >= n:
                raise BadRecords("Incorrect declared batch size, premature EOF reached")
            pos, _ = read_record(body, pos, n, result, i)
    elif per_record:
        result.ts_deltas, result.offset_deltas = [], []
        pos = walk(body, 0, n, 0, count, result)
    else:
        pos = _scan_runs(body, n, count, result, want_consecutive)
    if pos != n:
        raise BadRecords("Incorrect declared batch size, records still remaining in file")
    result.count = count
    return result


def _scan_runs(body: Buffer, n: int, count: int, result: Scan, want_consecutive: bool) -> int:
    """Sample a record, take the run of records shaped like it, repeat; where runs fail, walk
    the slow way for a stretch that doubles with each failure."""
    pos, i, budget, misses = 0, 0, 64, 0
    while i < count:
        if count - i <= _FAST_MIN:
            return walk(body, pos, n, i, count, result)
        if pos >= n:
            raise BadRecords("Incorrect declared batch size, premature EOF reached")
        pos, shape = read_record(body, pos, n, result, i, sample=True)
        i += 1
        k = min(count - i, (n - pos) // shape.size, budget) if shape is not None else 0
        r = fast_run(body, pos, shape, k, result, i, want_consecutive) if shape is not None and k >= _FAST_MIN else 0
        pos += r * shape.size if shape is not None else 0
        i += r
        if r and r == k:
            budget, misses = min(budget * 8, _FAST_MAX), 0
            continue
        budget = max(8, 2 * r)
        if r < _FAST_MIN:   # records unlike each other: read a stretch the slow way before sampling again
            misses += 1
            stop = min(count, i + (8 << min(misses, 10)))
            pos = walk(body, pos, n, i, stop, result)
            i = stop
    return pos
