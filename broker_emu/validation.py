"""What the log checks before it appends a client's batch: Kafka's ``UnifiedLog.analyzeAndValidateRecords``
and ``LogValidator`` (storage/internals/log/LogValidator.java), so that nothing corrupt is stored.

In Kafka's order, each failure with Kafka's error code (and a message in its words):

1. base offset not 0 → INVALID_RECORD; batch larger than max.message.bytes → MESSAGE_TOO_LARGE;
   CRC-32C mismatch → CORRUPT_MESSAGE; compression id 5-7 → UNKNOWN_SERVER_ERROR (Kafka's
   ``CompressionType.forId`` throws IllegalArgumentException, which no handler maps).
2. ``LogValidator.validateBatch``: last offset delta, record count and the two together,
   control batches, an idempotent batch without a sequence → INVALID_RECORD.
3. The records, for the compression the client used (``validateMessagesAndAssignOffsets``):
   uncompressed batches are walked in place; compressed ones are decompressed and walked
   (data that does not decompress → UNKNOWN_SERVER_ERROR, as Kafka's "Failed to decompress
   record stream" KafkaException). Any structural fault (``broker_emu.record_scan``) →
   INVALID_RECORD with the reader's message.
4. Per record (``validateRecord``): a keyless record in a compacted topic → INVALID_RECORD; in
   a CreateTime topic a timestamp outside [now - message.timestamp.before.max.ms, now +
   message.timestamp.after.max.ms] → INVALID_TIMESTAMP; a producer-set LogAppendTime
   attribute where Kafka refuses it → INVALID_TIMESTAMP. Every record is checked and all its
   faults come back as record_errors (``processRecordErrors``), with Kafka's summary message.
5. The batch as stored: its max timestamp is what the records say, not what the header claims
   (``setMaxTimestamp``: a lying header is rewritten, CRC and all), LogAppendTime topics get
   the broker's time; a compressed batch whose offset deltas are not 0, 1, 2... or whose codec
   is not the topic's ``compression.type`` is rebuilt (``buildRecordsAndAssignOffsets``) and its
   new size checked against max.message.bytes again.

Deliberate differences: Kafka streams a compressed batch's records and needs no bound on their
decompressed size; the emulator decompresses a batch whole, so it bounds it by
``emu.decompressed.max.bytes`` (64 MiB) and answers MESSAGE_TOO_LARGE past it, rather than let a
small hostile batch expand into gigabytes. Kafka answers a few malformed-varint cases with
UNKNOWN_SERVER_ERROR (an IllegalArgumentException its reader lets through); the emulator answers
INVALID_RECORD for every malformed record.
"""

from __future__ import annotations

import struct

from broker_emu.record_scan import BadRecords, Buffer, Scan, scan, wrap64
from broker_emu.topic_config import LONG_MAX, LogRules
from client.protocol import compression as codecs
from client.protocol.crc import crc32c
from client.protocol.records import (
    HEADER,
    HEADER_SIZE,
    TIMESTAMP_LOG_APPEND,
    TRANSACTIONAL,
    BatchHeader,
    parse_batch_header,
    set_log_append_time,
)
from client.protocol.varint import write_varint, write_varlong

UNKNOWN_SERVER_ERROR, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_TIMESTAMP, INVALID_RECORD = -1, 2, 10, 32, 87
_ATTRS_AT, _CRC_AT, _MAX_TS_AT = 21, 17, 35
_I16 = struct.Struct(">h")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
_COPY_BELOW = 2048   # average record size under which the records section is copied to bytes


class AppendError(Exception):
    """The partition's answer to a batch the log refuses: Kafka's error code, its message and,
    for per-record faults, (batch index, message) pairs (``ProduceResponse.RecordError``)."""

    def __init__(self, code: int, message: str, record_errors: list[tuple[int, str]] | None = None):
        super().__init__(message)
        self.code, self.message, self.record_errors = code, message, record_errors or []


class Validated:
    """A batch ready for the log: its bytes (the client's, or rewritten), its header and its
    max timestamp."""

    __slots__ = ("batch", "header", "max_timestamp")

    def __init__(self, batch, header: BatchHeader, max_timestamp: int):
        self.batch, self.header, self.max_timestamp = batch, header, max_timestamp


def validate_append(batch, header: BatchHeader, rules: LogRules, where: str, now_ms: int) -> Validated:
    """Check a client's batch (one, already parsed to ``header``) for the partition ``where``
    ("topic-index"); the batch to store, or ``AppendError``."""
    _check_batch(batch, header, rules, where)
    codec = header.compression
    target = codec if rules.compression is None else codecs.codec_code(rules.compression)
    body = _records_section(batch, header, rules.max_decompressed_bytes)
    if isinstance(body, memoryview) and len(body) < _COPY_BELOW * header.records_count:
        body = bytes(body)   # small records: strided slices of bytes beat those of a view by more than the copy
    try:
        found = scan(body, header.records_count, want_consecutive=codec != codecs.NONE, want_keyless=rules.compact)
    except BadRecords as exc:
        raise AppendError(INVALID_RECORD, f"{exc} in topic partition {where}") from None
    timestamps = _timestamps(body, header, found)
    _check_records(body, header, rules, where, now_ms, found, timestamps)
    max_ts = now_ms if rules.log_append_time else _max_timestamp(header, found, timestamps)
    in_place = codec == target and (codec == codecs.NONE or found.consecutive)
    if not in_place:
        return _rebuild(body, header, rules, target, max_ts, where)
    if rules.log_append_time:
        out = set_log_append_time(batch, now_ms)
        return Validated(out, header, max_ts)
    if header.attributes & TIMESTAMP_LOG_APPEND or header.max_timestamp != max_ts:
        return Validated(_restamp(batch, header.attributes & ~TIMESTAMP_LOG_APPEND, max_ts), header, max_ts)
    return Validated(batch, header, max_ts)


def _check_batch(batch, header: BatchHeader, rules: LogRules, where: str) -> None:
    """``analyzeAndValidateRecords`` and ``LogValidator.validateBatch`` (for a client's append)."""
    if header.base_offset != 0:
        raise AppendError(INVALID_RECORD, f"The baseOffset of the record batch in the append to {where} should be 0, "
                                          f"but it is {header.base_offset}")
    if header.size > rules.max_message_bytes:
        raise AppendError(MESSAGE_TOO_LARGE, f"The record batch size in the append to {where} is {header.size} bytes "
                                             f"which exceeds the maximum configured value of {rules.max_message_bytes}.")
    with memoryview(batch) as view:
        crc = crc32c(view[_ATTRS_AT:header.size])
    if crc != header.crc:
        raise AppendError(CORRUPT_MESSAGE, f"Record is corrupt (stored crc = {header.crc}, computed crc = {crc}) "
                                           f"in topic partition {where}.")
    if header.compression not in codecs.NAMES:
        raise AppendError(UNKNOWN_SERVER_ERROR, f"Unknown compression type id: {header.compression}")
    last = header.last_offset_delta
    if last + 1 <= 0:
        raise AppendError(INVALID_RECORD, f"Batch has an invalid offset range: [0, {last}] in topic partition {where}")
    if header.records_count <= 0:
        raise AppendError(INVALID_RECORD, f"Invalid reported count for record batch: {header.records_count} "
                                          f"in topic partition {where}")
    if last + 1 != header.records_count:
        raise AppendError(INVALID_RECORD, f"Inconsistent batch offset range [0, {last}] and count of records "
                                          f"{header.records_count} in topic partition {where}")
    if header.is_control:
        raise AppendError(INVALID_RECORD, f"Clients are not allowed to write control records in topic partition {where}")
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise AppendError(INVALID_RECORD, f"Invalid sequence number {header.base_sequence} in record batch with "
                                          f"producerId {header.producer_id} in topic partition {where}")


def _records_section(batch, header: BatchHeader, limit: int) -> Buffer:
    """The records section, decompressed and bounded by ``limit``; an uncompressed one is a view
    of the batch, not a copy."""
    body = memoryview(batch)[HEADER_SIZE:header.size]
    if header.compression == codecs.NONE:
        return body
    try:
        return codecs.decompress(header.compression, body, limit)
    except codecs.DecompressedTooLarge:
        raise AppendError(MESSAGE_TOO_LARGE, f"The {codecs.NAMES[header.compression]} records of this batch expand "
                                             f"to more than {limit} bytes (emu.decompressed.max.bytes)") from None
    except codecs.CompressionError as exc:
        raise AppendError(UNKNOWN_SERVER_ERROR, f"Failed to decompress record stream: {exc}") from None


def record_timestamp(header: BatchHeader, delta: int) -> int:
    """A record's timestamp as Kafka's reader gives it: the batch's max timestamp in a
    LogAppendTime batch, else base timestamp + delta in Java long arithmetic."""
    if header.attributes & TIMESTAMP_LOG_APPEND:
        return header.max_timestamp
    return wrap64(header.base_timestamp + delta)


def _timestamps(body: Buffer, header: BatchHeader, found: Scan) -> list[int] | None:
    """Every record's timestamp when min/max deltas cannot stand for them (a base timestamp so
    near the int64 limits that some record's would wrap); else None."""
    if header.attributes & TIMESTAMP_LOG_APPEND or found.min_delta is None or found.max_delta is None:
        return None
    lo, hi = header.base_timestamp + found.min_delta, header.base_timestamp + found.max_delta
    if -LONG_MAX - 1 <= lo and hi <= LONG_MAX:
        return None
    deltas = scan(body, header.records_count, per_record=True).ts_deltas or []
    return [wrap64(header.base_timestamp + d) for d in deltas]


def _max_timestamp(header: BatchHeader, found: Scan, timestamps: list[int] | None) -> int:
    """``maxBatchTimestamp``: the largest record timestamp, at least NO_TIMESTAMP (-1)."""
    if timestamps is not None:
        return max([-1, *timestamps])
    if header.attributes & TIMESTAMP_LOG_APPEND:
        return max(-1, header.max_timestamp)
    return max(-1, header.base_timestamp + (found.max_delta or 0))


def _check_records(body: Buffer, header: BatchHeader, rules: LogRules, where: str, now_ms: int, found: Scan,
                   timestamps: list[int] | None) -> None:
    """``validateRecord`` for every record: the key rule first, then the timestamp rules."""
    errors: dict[int, tuple[int, str]] = {}
    if rules.compact:
        for i in found.keyless or ():
            errors[i] = (INVALID_RECORD, f"Compacted topic cannot accept message without key in topic partition {where}")
    bad_times = _timestamp_errors(body, header, rules, now_ms, found, timestamps)
    for i, message in bad_times:
        errors.setdefault(i, (INVALID_TIMESTAMP, message))
    if not errors:
        return
    listed = [(i, message) for i, (_, message) in sorted(errors.items())]
    if any(code == INVALID_TIMESTAMP for code, _ in errors.values()):
        raise AppendError(INVALID_TIMESTAMP, "One or more records have been rejected due to invalid timestamp", listed)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in listed[:3])
    raise AppendError(INVALID_RECORD, f"One or more records have been rejected due to {len(listed)} record errors in "
                                      f"total, and only showing the first three errors at most: [{shown}]", listed)


def _timestamp_errors(body: Buffer, header: BatchHeader, rules: LogRules, now_ms: int, found: Scan,
                      timestamps: list[int] | None) -> list[tuple[int, str]]:
    """``validateTimestamp``: (record index, message) for each record it refuses."""
    count = header.records_count
    if header.attributes & TIMESTAMP_LOG_APPEND:
        ts = header.max_timestamp   # every record's timestamp
        if not rules.log_append_time and ts != -1:
            return [(i, _range_message(ts, i, rules, now_ms)) for i in range(count)] if _out_of_range(ts, rules, now_ms) else []
        return [(i, f"Invalid timestamp type in message with offset {i}. Producer should not set timestamp type to "
                    "LogAppendTime.") for i in range(count)]
    if rules.log_append_time or (rules.before_max_ms == LONG_MAX and rules.after_max_ms == LONG_MAX):
        return []
    if timestamps is None and found.min_delta is not None and found.max_delta is not None:
        lo, hi = header.base_timestamp + found.min_delta, header.base_timestamp + found.max_delta
        if not (_out_of_range(lo, rules, now_ms) or _out_of_range(hi, rules, now_ms) or lo <= -1 <= hi):
            return []  # every timestamp lies between two valid ones
    if timestamps is None:
        deltas = scan(body, count, per_record=True).ts_deltas or []
        timestamps = [wrap64(header.base_timestamp + d) for d in deltas]
    return [(i, _range_message(ts, i, rules, now_ms)) for i, ts in enumerate(timestamps)
            if ts != -1 and _out_of_range(ts, rules, now_ms)]


def _out_of_range(ts: int, rules: LogRules, now_ms: int) -> bool:
    """``recordHasInvalidTimestamp``, in Java long arithmetic (a bound of Long.MAX_VALUE never fires)."""
    diff = wrap64(now_ms - ts)
    return diff > rules.before_max_ms or wrap64(-diff) > rules.after_max_ms


def _range_message(ts: int, offset: int, rules: LogRules, now_ms: int) -> str:
    return (f"Timestamp {ts} of message with offset {offset} is out of range. The timestamp should be within "
            f"[{wrap64(now_ms - rules.before_max_ms)}, {wrap64(now_ms + rules.after_max_ms)}]")


def _restamp(batch, attributes: int, max_timestamp: int) -> bytes:
    """``DefaultRecordBatch.setMaxTimestamp``: new attributes and max timestamp, CRC recomputed."""
    out = bytearray(batch)
    _I16.pack_into(out, _ATTRS_AT, attributes)
    _I64.pack_into(out, _MAX_TS_AT, max_timestamp)
    _U32.pack_into(out, _CRC_AT, crc32c(memoryview(out)[_ATTRS_AT:]))
    return bytes(out)


def _rebuild(body: Buffer, header: BatchHeader, rules: LogRules, codec: int, max_ts: int, where: str) -> Validated:
    """``buildRecordsAndAssignOffsets``: the records again, offset deltas 0, 1, 2..., in the
    topic's codec, timestamp deltas from the first record's timestamp (``MemoryRecordsBuilder``)."""
    records = scan(body, header.records_count, collect=True).records or []
    times = [record_timestamp(header, r[0]) for r in records]
    base_ts = times[0]
    out = bytearray()
    for i, ((_, key, value, headers), ts) in enumerate(zip(records, times)):
        out += _record_bytes(i, wrap64(ts - base_ts), key, value, headers)
    section = codecs.compress(codec, out) if codec else bytes(out)
    attrs = codec | (TIMESTAMP_LOG_APPEND if rules.log_append_time else 0) | (header.attributes & TRANSACTIONAL)
    head = bytearray(HEADER.pack(0, HEADER_SIZE - 12 + len(section), -1, 2, 0, attrs, len(records) - 1, base_ts, max_ts,
                                 header.producer_id, header.producer_epoch, header.base_sequence, len(records)))
    _U32.pack_into(head, _CRC_AT, crc32c(section, crc32c(memoryview(head)[_ATTRS_AT:])))
    batch = bytes(head) + section
    if len(batch) > rules.max_message_bytes:
        raise AppendError(MESSAGE_TOO_LARGE, f"Message batch size is {len(batch)} bytes in append to partition {where} "
                                             f"which exceeds the maximum configured size of {rules.max_message_bytes}.")
    return Validated(batch, parse_batch_header(batch), max_ts)


def _record_bytes(offset_delta: int, ts_delta: int, key: bytes | None, value: bytes | None,
                  headers: list[tuple[bytes, bytes | None]]) -> bytes:
    body = bytearray(b"\x00")
    body += write_varlong(ts_delta)
    body += write_varint(offset_delta)
    for field in (key, value):
        body += b"\x01" if field is None else write_varint(len(field)) + field
    body += write_varint(len(headers))
    for hkey, hvalue in headers:
        body += write_varint(len(hkey)) + hkey
        body += b"\x01" if hvalue is None else write_varint(len(hvalue)) + hvalue
    return write_varint(len(body)) + bytes(body)


# -- reading stored batches (ListOffsets) ---------------------------------------------------------

def record_times(batch, max_size: int = codecs.DEFAULT_MAX_SIZE) -> list[tuple[int, int]]:
    """(offset delta, timestamp) of every record of a stored batch, without decoding keys or
    values. The batch passed ``validate_append``, so this cannot fail but for a limit lowered
    since; then it answers no records rather than raise."""
    header = parse_batch_header(batch)
    try:
        body = _records_section(batch, header, max(max_size, codecs.DEFAULT_MAX_SIZE))
        found = scan(body, header.records_count, per_record=True)
    except (AppendError, BadRecords):
        return []
    return [(o, record_timestamp(header, d)) for o, d in zip(found.offset_deltas or [], found.ts_deltas or [])]
