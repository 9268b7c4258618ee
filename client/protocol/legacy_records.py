"""Message sets of magic 0 and 1 (Kafka before 0.11; ``LegacyRecord``, ``AbstractLegacyRecordBatch``),
read so a broker of a release that still accepted them can convert them to a magic-2 batch, as
``LogValidator.convertAndAssignOffsetsNonCompressed`` / ``validateMessagesAndAssignOffsetsCompressed``
do when the log's format is v2.

A message: offset int64 · size int32 · crc uint32 (CRC-32 of what follows) · magic int8 ·
attributes int8 (bits 0-2 the codec, bit 3 LogAppendTime in magic 1) · timestamp int64 (magic 1
only) · key bytes · value bytes. A compressed message's value is a whole message set of inner
messages (one level of nesting).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from client.protocol import compression as codecs
from client.protocol.records import Record, encode_batch

NO_TIMESTAMP = -1


class LegacyRecordError(ValueError):
    """``corrupt``: a CRC mismatch or a truncated message (CORRUPT_MESSAGE); otherwise an invalid
    record (INVALID_RECORD)."""

    def __init__(self, message: str, corrupt: bool = False):
        super().__init__(message)
        self.corrupt = corrupt


@dataclass(frozen=True)
class LegacyMessage:
    magic: int
    timestamp: int
    key: bytes | None
    value: bytes | None


def _bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    if pos + 4 > len(buf):
        raise LegacyRecordError("message truncated in a length", corrupt=True)
    (n,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    if n < 0:
        return None, pos
    if pos + n > len(buf):
        raise LegacyRecordError("message truncated in its key or value", corrupt=True)
    return buf[pos:pos + n], pos + n


def read_message_set(buf: bytes, max_size: int = codecs.DEFAULT_MAX_SIZE, nested: bool = False) -> list[LegacyMessage]:
    """Every message of a magic 0/1 set, compressed wrappers opened; LegacyRecordError when a
    message is corrupt or not magic 0/1."""
    out: list[LegacyMessage] = []
    pos = 0
    while pos < len(buf):
        if pos + 12 > len(buf):
            raise LegacyRecordError("message set truncated in a message header", corrupt=True)
        (size,) = struct.unpack_from(">i", buf, pos + 8)
        start, end = pos + 12, pos + 12 + size
        if size < 14 or end > len(buf):
            raise LegacyRecordError(f"message at byte {pos} claims {size} bytes", corrupt=True)
        (crc,) = struct.unpack_from(">I", buf, start)
        if zlib.crc32(buf[start + 4:end]) & 0xFFFFFFFF != crc:
            raise LegacyRecordError(f"message at byte {pos}: CRC mismatch", corrupt=True)
        magic, attributes = buf[start + 4], buf[start + 5]
        if magic not in (0, 1):
            raise LegacyRecordError(f"message at byte {pos} has magic {magic} in a magic 0/1 message set")
        body = start + 6
        timestamp = NO_TIMESTAMP
        if magic == 1:
            (timestamp,) = struct.unpack_from(">q", buf, body)
            body += 8
        key, body = _bytes(buf, body)
        value, body = _bytes(buf, body)
        codec = attributes & 0x07
        if codec:
            if nested:
                raise LegacyRecordError("a compressed message inside a compressed message")
            if codec not in (codecs.GZIP, codecs.SNAPPY, codecs.LZ4) or value is None:
                raise LegacyRecordError(f"compressed message with codec {codec} and value {value!r:.20}")
            try:
                inner = codecs.decompress(codec, value, max_size)
            except codecs.CompressionError as exc:
                raise LegacyRecordError(f"compressed message: {exc}", corrupt=True) from None
            out += read_message_set(inner, max_size, nested=True)
        else:
            out.append(LegacyMessage(magic, timestamp, key, value))
        pos = end
    if not out and not nested:
        raise LegacyRecordError("an empty message set")
    return out


def to_batch_v2(buf: bytes, max_size: int = codecs.DEFAULT_MAX_SIZE) -> bytes:
    """The magic-2 batch a v2-format log stores for this message set: the same keys, values and
    timestamps (magic 0's none stays NO_TIMESTAMP), uncompressed."""
    messages = read_message_set(buf, max_size)
    records = [Record(m.value, key=m.key, timestamp=m.timestamp) for m in messages]
    first = next((m.timestamp for m in messages if m.timestamp >= 0), NO_TIMESTAMP)
    return encode_batch(records, base_timestamp=first)
