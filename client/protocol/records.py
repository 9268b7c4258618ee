"""Record batches, magic 2 (the only format current clients send).

Layout (bytes from the batch start): base_offset int64 · batch_length int32 (bytes after this
field) · partition_leader_epoch int32 · magic int8 · crc uint32 (CRC-32C of bytes 21..end) ·
attributes int16 · last_offset_delta int32 · base_timestamp int64 · max_timestamp int64 ·
producer_id int64 · producer_epoch int16 · base_sequence int32 · records_count int32 · records.

The CRC leaves out base_offset, batch_length and partition_leader_epoch, so a broker stamps
offsets and the epoch without touching it: that is the emulator's hot path, and it never
decodes records. Records are zigzag varints (``client.protocol.varint``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple, Sequence

import crc32c

from client.protocol import compression
from client.protocol.varint import read_varint, read_varlong, write_varint

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
_OFFSET_EPOCH = struct.Struct(">q")
_I32 = struct.Struct(">i")
_CRC_AT = 17
_ATTRS_AT = 21
TIMESTAMP_LOG_APPEND = 0x08
TRANSACTIONAL = 0x10
CONTROL = 0x20


class CorruptRecordBatchError(ValueError):
    """A batch that cannot be read; says where."""

    def __init__(self, offset: int, reason: str):
        self.offset = offset
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
        return self.batch_length + 12

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def timestamp_type(self) -> int:
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
    value: bytes | None
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes | None]] = field(default_factory=tuple)
    timestamp: int = -1      # absolute ms; -1: now (the encoder's base timestamp)
    offset: int = 0          # absolute offset once decoded (base_offset + offset_delta)


def parse_batch_header(buf, offset: int = 0) -> BatchHeader:
    """The header of the batch at ``offset``; checks magic and that the whole batch is present."""
    if len(buf) - offset < HEADER_SIZE:
        if len(buf) - offset >= 17 and buf[offset + 16] != 2:
            raise CorruptRecordBatchError(offset, f"magic {buf[offset + 16]} (only record batch v2 is supported)")
        raise TruncatedBatchError(offset, f"{len(buf) - offset} bytes, a batch header needs {HEADER_SIZE}")
    header = BatchHeader._make(HEADER.unpack_from(buf, offset))
    if header.magic != 2:
        raise CorruptRecordBatchError(offset, f"magic {header.magic} (only record batch v2 is supported)")
    if header.batch_length < HEADER_SIZE - 12:
        raise CorruptRecordBatchError(offset, f"batch_length {header.batch_length} is shorter than a header")
    if offset + header.size > len(buf):
        raise TruncatedBatchError(offset, f"batch of {header.size} bytes, only {len(buf) - offset} present")
    return header


def iter_batches(buf) -> Iterator[tuple[int, BatchHeader]]:
    """(byte offset, header) for each whole batch; stops quietly at a truncated trailing batch."""
    pos = 0
    while pos < len(buf):
        try:
            header = parse_batch_header(buf, pos)
        except TruncatedBatchError:
            return
        yield pos, header
        pos += header.size


def verify_crc(batch, offset: int = 0, header: BatchHeader | None = None) -> bool:
    header = header or parse_batch_header(batch, offset)
    body = memoryview(batch)[offset + _ATTRS_AT: offset + header.size]
    return crc32c.crc32c(body) == header.crc


def set_base_offset(batch: bytes, base_offset: int, leader_epoch: int) -> bytearray:
    """Stamp the broker-assigned base offset and leader epoch (CRC unaffected). Returns a
    bytearray: one copy of the batch, which the broker keeps as is."""
    out = bytearray(batch)
    _OFFSET_EPOCH.pack_into(out, 0, base_offset)
    _I32.pack_into(out, 12, leader_epoch)
    return out


def set_log_append_time(batch: bytes, timestamp_ms: int) -> bytes:
    """LogAppendTime topics: set the timestamp type and max_timestamp, then recompute the CRC."""
    out = bytearray(batch)
    attrs = struct.unpack_from(">h", out, _ATTRS_AT)[0] | TIMESTAMP_LOG_APPEND
    struct.pack_into(">h", out, _ATTRS_AT, attrs)
    struct.pack_into(">q", out, 35, timestamp_ms)
    struct.pack_into(">I", out, _CRC_AT, crc32c.crc32c(bytes(out[_ATTRS_AT:])))
    return bytes(out)


# -- encoding ----------------------------------------------------------------------------------

def _encode_record(delta_index: int, ts_delta: int, key, value, headers) -> bytes:
    parts = [b"\x00", write_varint(ts_delta), write_varint(delta_index)]
    if key is None:
        parts.append(b"\x01")  # zigzag(-1)
    else:
        parts += (write_varint(len(key)), key)
    if value is None:
        parts.append(b"\x01")
    else:
        parts += (write_varint(len(value)), value)
    parts.append(write_varint(len(headers)))
    for hkey, hval in headers:
        kb = hkey.encode("utf-8")
        parts += (write_varint(len(kb)), kb)
        if hval is None:
            parts.append(b"\x01")
        else:
            parts += (write_varint(len(hval)), hval)
    body = b"".join(parts)
    return write_varint(len(body)) + body


def encode_records(records: Sequence[Record], base_timestamp: int) -> tuple[bytes, int]:
    """The records section, and the max timestamp. Fast path for the common record shape."""
    out = []
    append = out.append
    max_ts = base_timestamp
    for i, r in enumerate(records):
        ts = base_timestamp if r.timestamp < 0 else r.timestamp
        if ts > max_ts:
            max_ts = ts
        if not r.headers and r.key is None and r.value is not None and ts == base_timestamp and i < 8192:
            # no key, no headers, same timestamp: the body is attrs, 0, i, -1, len, value, 0
            value = r.value
            body_prefix = b"\x00\x00" + write_varint(i) + b"\x01" + write_varint(len(value))
            append(write_varint(len(body_prefix) + len(value) + 1))
            append(body_prefix)
            append(value)
            append(b"\x00")
        else:
            append(_encode_record(i, ts - base_timestamp, r.key, r.value, r.headers))
    return b"".join(out), max_ts


def encode_batch(records: Sequence[Record], *, compression_type: int | str = 0, base_offset: int = 0,
                 base_timestamp: int | None = None, producer_id: int = -1, producer_epoch: int = -1,
                 base_sequence: int = -1, transactional: bool = False, partition_leader_epoch: int = -1,
                 timestamp_type: int = 0, compression: int | str | None = None) -> bytes:
    """A whole batch. ``base_timestamp`` defaults to the first record's timestamp (records with
    timestamp -1 take the base timestamp; pass one explicitly, from your injected clock)."""
    if not records:
        raise ValueError("a record batch needs at least one record")
    codec = _codec(compression if compression is not None else compression_type)
    if base_timestamp is None:
        base_timestamp = next((r.timestamp for r in records if r.timestamp >= 0), 0)
    body, max_ts = encode_records(records, base_timestamp)
    if codec:
        body = _compress(codec, body)
    attrs = codec | (TIMESTAMP_LOG_APPEND if timestamp_type else 0) | (TRANSACTIONAL if transactional else 0)
    header = HEADER.pack(base_offset, HEADER_SIZE - 12 + len(body), partition_leader_epoch, 2, 0, attrs,
                         len(records) - 1, base_timestamp, max_ts, producer_id, producer_epoch,
                         base_sequence, len(records))
    crc = crc32c.crc32c(header[_ATTRS_AT:])
    crc = crc32c.crc32c(body, crc)
    return header[:_CRC_AT] + struct.pack(">I", crc) + header[_ATTRS_AT:] + body


def _codec(value: int | str) -> int:
    return compression.codec_code(value)


def _compress(codec: int, body: bytes) -> bytes:
    return compression.compress(codec, body)


# -- decoding ----------------------------------------------------------------------------------

def decode_batch(buf, offset: int = 0, *, check_crc: bool = True,
                 max_size: int = compression.DEFAULT_MAX_SIZE) -> tuple[BatchHeader, list[Record]]:
    header = parse_batch_header(buf, offset)
    if check_crc and not verify_crc(buf, offset, header):
        raise CorruptRecordBatchError(offset, "CRC-32C mismatch")
    body = bytes(memoryview(buf)[offset + HEADER_SIZE: offset + header.size])
    if header.compression:
        try:
            body = compression.decompress(header.compression, body, max_size)
        except compression.CompressionError as exc:
            raise CorruptRecordBatchError(offset, str(exc)) from None
    if header.records_count < 0 or header.records_count > len(body):
        raise CorruptRecordBatchError(offset, f"records_count {header.records_count} does not fit {len(body)} bytes")
    try:
        records = _decode_records(body, header)
    except (ValueError, IndexError, UnicodeDecodeError) as exc:
        raise CorruptRecordBatchError(offset, f"bad record: {exc}") from None
    return header, records


def _read_nullable(body: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_varint(body, pos)
    if n < 0:
        if n != -1:
            raise ValueError(f"negative length {n}")
        return None, pos
    if pos + n > len(body):
        raise ValueError(f"length {n} overruns the records")
    return body[pos:pos + n], pos + n


def _decode_records(body: bytes, header: BatchHeader) -> list[Record]:
    records, pos = [], 0
    for _ in range(header.records_count):
        length, pos = read_varint(body, pos)
        end = pos + length
        if length < 0 or end > len(body):
            raise ValueError(f"record length {length} overruns the records")
        pos += 1  # attributes, unused
        ts_delta, pos = read_varlong(body, pos)
        off_delta, pos = read_varint(body, pos)
        key, pos = _read_nullable(body, pos)
        value, pos = _read_nullable(body, pos)
        n_headers, pos = read_varint(body, pos)
        if n_headers < 0 or n_headers > end - pos:
            raise ValueError(f"header count {n_headers} does not fit the record")
        headers = []
        for _ in range(n_headers):
            hk, pos = _read_nullable(body, pos)
            if hk is None:
                raise ValueError("null header key")
            hv, pos = _read_nullable(body, pos)
            headers.append((hk.decode("utf-8"), hv))
        if pos != end:
            raise ValueError(f"record claims {length} bytes but used {length - (end - pos)}")
        records.append(Record(value, key, headers, header.base_timestamp + ts_delta, header.base_offset + off_delta))
    if pos != len(body):
        raise ValueError(f"{len(body) - pos} bytes after the last record")
    return records
