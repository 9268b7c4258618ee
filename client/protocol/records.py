"""Record batches, magic 2 (the only format current clients send; Kafka's ``DefaultRecordBatch`` and ``DefaultRecord``).

Layout (bytes from the batch start): base_offset int64 · batch_length int32 (bytes after this
field) · partition_leader_epoch int32 · magic int8 · crc uint32 (CRC-32C of bytes 21..end) ·
attributes int16 · last_offset_delta int32 · base_timestamp int64 · max_timestamp int64 ·
producer_id int64 · producer_epoch int16 · base_sequence int32 · records_count int32 · records.

The CRC leaves out base_offset, batch_length and partition_leader_epoch, so a broker stamps
offsets and the epoch without touching it: that is the emulator's hot path, and it never
decodes records (``parse_batch_header``, ``iter_batches``, ``set_base_offset``, ``verify_crc``).
Each record is a zigzag varint length then attributes, timestamp delta, offset delta, key,
value and headers (``client.protocol.varint``).

Encoding is the producer's hot path: records are appended to one bytearray using precomputed
varint bytes, with the common shape (no key, no headers, the batch's timestamp) on the
shortest path. Decoding is the consumer's: the records are read into columns
(``record_reader``; runs of same-layout records in bulk, ``record_runs``) that ``decode_batch``
turns into ``Record`` objects and the consumer into its own records. It never trusts a length:
every length and count is checked against the bytes present, and anything malformed raises
``CorruptRecordBatchError`` naming the batch's byte offset.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from client.protocol import compression as codecs
from client.protocol.crc import crc32c
from client.protocol.record_reader import MIN_RECORD, RecordColumns, read_records
from client.protocol.varint import (
    SMALL,
    SMALL_LIMIT,
    write_varint,
    write_varlong,
)

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_U32 = struct.Struct(">I")
_CRC_AT = 17
_ATTRS_AT = 21
_MAX_TS_AT = 35
COMPRESSION_MASK = 0x07
TIMESTAMP_LOG_APPEND = 0x08
TRANSACTIONAL = 0x10
CONTROL = 0x20


class CorruptRecordBatchError(ValueError):
    """A batch that cannot be read; ``offset`` is the batch's byte offset in the buffer."""

    def __init__(self, offset: int, reason: str):
        self.offset = offset
        self.reason = reason
        super().__init__(f"corrupt record batch at byte {offset}: {reason}")


class TruncatedBatchError(CorruptRecordBatchError):
    """The buffer ends inside a batch (normal at the end of a fetch response: KIP-74)."""


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """The whole batch in bytes (batch_length counts from after its own field)."""
        return self.batch_length + 12

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime."""
        return 1 if self.attributes & TIMESTAMP_LOG_APPEND else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta


@dataclass(slots=True)
class Record:
    """One record. ``timestamp`` is absolute ms (-1 when encoding: take the batch's base
    timestamp); ``offset`` is absolute once decoded (base_offset + offset_delta) and ignored
    when encoding (a record's offset delta is its index in the batch)."""

    value: bytes | None
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes | None]] = field(default_factory=tuple)
    timestamp: int = -1
    offset: int = 0


# -- the header, without decoding records --------------------------------------------------------

def parse_batch_header(buf, offset: int = 0) -> BatchHeader:
    """The header of the batch at ``offset``; checks magic and that the whole batch is present
    (``TruncatedBatchError`` if not)."""
    present = len(buf) - offset
    if present < HEADER_SIZE:
        if present >= 17 and buf[offset + 16] != 2:
            raise CorruptRecordBatchError(offset, f"magic {buf[offset + 16]} (only record batch v2 is supported)")
        raise TruncatedBatchError(offset, f"{present} bytes, a batch header needs {HEADER_SIZE}")
    header = BatchHeader._make(HEADER.unpack_from(buf, offset))
    if header.magic != 2:
        raise CorruptRecordBatchError(offset, f"magic {header.magic} (only record batch v2 is supported)")
    if header.batch_length < HEADER_SIZE - 12:
        raise CorruptRecordBatchError(offset, f"batch_length {header.batch_length} is shorter than a header")
    if header.batch_length + 12 > present:
        raise TruncatedBatchError(offset, f"batch of {header.size} bytes, only {present} present")
    return header


def iter_batches(buf) -> Iterator[tuple[int, BatchHeader]]:
    """(byte offset, header) for each whole batch; stops quietly at a truncated trailing batch,
    as consumers must (the broker cuts the last batch at the fetch's byte limit: KIP-74)."""
    pos = 0
    end = len(buf)
    while pos < end:
        try:
            header = parse_batch_header(buf, pos)
        except TruncatedBatchError:
            return
        yield pos, header
        pos += header.batch_length + 12


def verify_crc(batch, offset: int = 0, header: BatchHeader | None = None) -> bool:
    """Whether the stored CRC-32C matches bytes 21..end of the batch at ``offset``."""
    header = header or parse_batch_header(batch, offset)
    with memoryview(batch) as view:
        return crc32c(view[offset + _ATTRS_AT: offset + header.size]) == header.crc


def set_base_offset(batch, base_offset: int, leader_epoch: int) -> bytearray:
    """Stamp the broker-assigned base offset (bytes 0-7) and leader epoch (bytes 12-15); the CRC
    does not cover them. Returns a bytearray: one copy of the batch, which the broker keeps."""
    out = bytearray(batch)
    _I64.pack_into(out, 0, base_offset)
    _I32.pack_into(out, 12, leader_epoch)
    return out


def set_log_append_time(batch, timestamp_ms: int) -> bytes:
    """LogAppendTime topics: set the timestamp type and max_timestamp, then recompute the CRC
    (it covers both; ``LogValidator`` does the same)."""
    out = bytearray(batch)
    _I16.pack_into(out, _ATTRS_AT, _I16.unpack_from(out, _ATTRS_AT)[0] | TIMESTAMP_LOG_APPEND)
    _I64.pack_into(out, _MAX_TS_AT, timestamp_ms)
    _U32.pack_into(out, _CRC_AT, crc32c(memoryview(out)[_ATTRS_AT:]))
    return bytes(out)


# -- encoding ------------------------------------------------------------------------------------

def _zz(n: int) -> bytes:
    """Zigzag varint bytes; ``SMALL[n + 64]`` is the precomputed answer for -64 <= n < SMALL_LIMIT."""
    return SMALL[n + 64] if -64 <= n < SMALL_LIMIT else write_varint(n)


_HEADER_KEYS: dict = {}  # header key -> its length varint + UTF-8 bytes; keys repeat ("traceparent")
_HEADER_KEYS_MAX = 1024


def _header_key(hkey) -> bytes:
    kb = hkey.encode("utf-8") if isinstance(hkey, str) else bytes(memoryview(hkey))  # not bytes(5)
    prefixed = _zz(len(kb)) + kb
    if len(_HEADER_KEYS) < _HEADER_KEYS_MAX and isinstance(hkey, (str, bytes)):
        _HEADER_KEYS[hkey] = prefixed
    return prefixed


def _header_bytes(headers) -> bytearray:
    small = SMALL
    count = len(headers)
    out = bytearray(small[count + 64] if count < SMALL_LIMIT else write_varint(count))
    for hkey, hval in headers:
        try:
            prefixed = _HEADER_KEYS.get(hkey) or _header_key(hkey)
        except TypeError:  # an unhashable key (bytearray): fine, just not cached
            prefixed = _header_key(hkey)
        out += prefixed
        if hval is None:
            out += b"\x01"  # zigzag(-1): null
        else:
            n = len(hval)
            out += small[n + 64] if n < SMALL_LIMIT else write_varint(n)
            out += hval
    return out


def encode_records(records: Sequence[Record], base_timestamp: int) -> tuple[bytearray, int]:
    """The records section (uncompressed), and the max timestamp.

    Hand-tuned (the producer's hot path): one bytearray, varints from the precomputed table,
    each record's size worked out before its bytes are appended, no per-record join. A property
    test proves it byte-identical to the straightforward ``_encode_record``.
    """
    out = bytearray()
    small = SMALL  # small[n + 64] = zigzag varint bytes of n, for -64 <= n < SMALL_LIMIT
    limit = SMALL_LIMIT
    max_ts = -(1 << 63)
    for i, r in enumerate(records):
        ts = r.timestamp
        if ts < 0:
            ts = base_timestamp
        max_ts = max(max_ts, ts)
        key = r.key
        value = r.value
        headers = r.headers
        d = ts - base_timestamp
        vts = small[d + 64] if -64 <= d < limit else write_varlong(d)
        voff = small[i + 64] if i < limit else write_varint(i)
        size = 3 + len(vts) + len(voff)  # attributes, ts delta, offset delta, and 1 byte per null
        if key is not None:
            kl = len(key)
            vkl = small[kl + 64] if kl < limit else write_varint(kl)
            size += len(vkl) + kl - 1
        if value is not None:
            vl = len(value)
            vvl = small[vl + 64] if vl < limit else write_varint(vl)
            size += len(vvl) + vl - 1
        hb: bytes | bytearray
        if headers:
            hb = _header_bytes(headers)
            size += len(hb)
        else:
            hb = b"\x00"
            size += 1
        out += small[size + 64] if size < limit else write_varint(size)
        out += b"\x00"  # attributes: unused
        out += vts
        out += voff
        if key is None:
            out += b"\x01"  # zigzag(-1): null
        else:
            out += vkl
            out += key
        if value is None:
            out += b"\x01"
        else:
            out += vvl
            out += value
        out += hb
    return out, max_ts


def _encode_record(offset_delta: int, ts_delta: int, key, value, headers) -> bytes:
    """One record, the straightforward way: the reference ``encode_records`` is tested against."""
    body = bytearray(b"\x00")  # attributes: unused
    body += write_varlong(ts_delta)
    body += write_varint(offset_delta)
    for field_ in (key, value):
        if field_ is None:
            body += b"\x01"
        else:
            body += _zz(len(field_))
            body += field_
    body += _header_bytes(headers) if headers else b"\x00"
    return _zz(len(body)) + body


def encode_batch(records: Sequence[Record], *, compression: int | str = 0, base_offset: int = 0,
                 base_timestamp: int | None = None, producer_id: int = -1, producer_epoch: int = -1,
                 base_sequence: int = -1, transactional: bool = False, partition_leader_epoch: int = -1,
                 timestamp_type: int = 0, control: bool = False,
                 compression_type: int | str | None = None) -> bytes:
    """A whole batch, CRC included.

    ``base_timestamp`` defaults to the first non-negative record timestamp (records with
    timestamp -1 take the base timestamp: pass one from your injected clock). ``compression``
    is a Kafka codec id or name (``compression_type`` is an alias). Producers leave base_offset
    0 and partition_leader_epoch -1; the broker stamps them.
    """
    if not records:
        raise ValueError("a record batch needs at least one record")
    codec = codecs.codec_code(compression_type if compression_type is not None else compression)
    if base_timestamp is None:
        base_timestamp = next((r.timestamp for r in records if r.timestamp >= 0), 0)
    body: bytes | bytearray
    body, max_ts = encode_records(records, base_timestamp)
    if codec:
        body = codecs.compress(codec, body)
    attrs = (codec | (TIMESTAMP_LOG_APPEND if timestamp_type else 0) | (TRANSACTIONAL if transactional else 0)
             | (CONTROL if control else 0))
    try:
        header = HEADER.pack(base_offset, HEADER_SIZE - 12 + len(body), partition_leader_epoch, 2, 0, attrs,
                             len(records) - 1, base_timestamp, max_ts, producer_id, producer_epoch,
                             base_sequence, len(records))
    except struct.error as exc:
        raise ValueError(f"record batch header field out of range: {exc}") from None
    crc = crc32c(body, crc32c(header[_ATTRS_AT:]))
    return b"".join((header[:_CRC_AT], _U32.pack(crc), header[_ATTRS_AT:], body))


# -- decoding ------------------------------------------------------------------------------------

def decode_batch(buf, offset: int = 0, *, check_crc: bool = True,
                 max_size: int = codecs.DEFAULT_MAX_SIZE) -> tuple[BatchHeader, list[Record]]:
    """The header and records of the batch at ``offset``. Records get absolute offsets; in a
    LogAppendTime batch every record takes the batch's max_timestamp, as Java's reader does.
    ``max_size`` bounds the decompressed size. Raises ``CorruptRecordBatchError`` (or its
    ``TruncatedBatchError``) and nothing else for bad input."""
    header, c = decode_columns(buf, offset, check_crc=check_crc, max_size=max_size)
    return header, list(map(Record, c.values, c.keys, c.headers, c.timestamps, c.offsets))


def decode_columns(buf, offset: int = 0, *, check_crc: bool = True,
                   max_size: int = codecs.DEFAULT_MAX_SIZE) -> tuple[BatchHeader, RecordColumns]:
    """``decode_batch``'s records as columns (the same checks, the same errors)."""
    header = parse_batch_header(buf, offset)
    if check_crc and not verify_crc(buf, offset, header):
        raise CorruptRecordBatchError(offset, "CRC-32C mismatch")
    with memoryview(buf) as view:
        body = bytes(view[offset + HEADER_SIZE: offset + header.size])
    if header.compression:
        try:
            body = codecs.decompress(header.compression, body, max_size)
        except codecs.CompressionError as exc:
            raise CorruptRecordBatchError(offset, str(exc)) from None
    count = header.records_count
    if count < 0 or count * (MIN_RECORD + 1) > len(body):  # so a count cannot force a big list
        raise CorruptRecordBatchError(offset, f"records_count {count} does not fit {len(body)} bytes")
    log_append_time = header.max_timestamp if header.attributes & TIMESTAMP_LOG_APPEND else None
    try:
        columns = read_records(body, count, header.base_offset, header.base_timestamp, log_append_time)
    except (ValueError, IndexError, UnicodeDecodeError) as exc:
        raise CorruptRecordBatchError(offset, f"bad record: {exc}") from None
    return header, columns
