"""Records are validated on append as Kafka's LogValidator does: each rule answers its
partition alone with Kafka's error code, and nothing a read path cannot serve is stored.

Batches are built with ``tests.broker_emu.crafted`` (a correct CRC around whatever records section
the test wants) and sent through Produce v9 over the in-memory transport."""

from __future__ import annotations

import gzip

import pytest

from broker_emu.runtime import open_cluster
from broker_emu.trace import HANDLER_ERRORS
from client.protocol import compression as codecs
from client.protocol.records import Record, decode_batch, encode_batch, iter_batches, parse_batch_header
from tests.broker_emu.crafted import crafted_batch, record, zigzag
from tests.broker_emu.helpers import CREATE_TOPICS, FETCH, LIST_OFFSETS, PRODUCE, WireClient, fetch_body

NONE, UNKNOWN_SERVER_ERROR, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE = 0, -1, 2, 10
INVALID_TIMESTAMP, INVALID_CONFIG, INVALID_RECORD = 32, 40, 87
NOW = 1_700_000_000_000  # the cluster's wall clock at virtual time 0


def produce_request(records: bytes, topic: str = "t") -> dict:
    return {"acks": 1, "timeout_ms": 1000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}]}


def list_offsets_request(*timestamps: int, topic: str = "t") -> dict:
    return {"replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": ts} for ts in timestamps]}]}


async def send(records: bytes, topics=(("t", {}),), config=None, version: int = 9):
    """(partition answer, cluster) after producing ``records`` to t-0 of a 1-broker cluster."""
    async with open_cluster(1, listen=False, config=config) as cluster:
        for name, configs in topics:
            cluster.create_topic(name, 1, 1, configs=configs)
        w = WireClient(cluster.connect(0))
        r = await w.call(PRODUCE, version, produce_request(records))
        return r.responses[0].partition_responses[0], cluster


async def refused(records: bytes, code: int, **kw):
    part, cluster = await send(records, **kw)
    assert part.error_code == code, part.error_message
    assert cluster.partition("t", 0).log_end_offset == 0   # nothing stored
    assert part.base_offset == -1
    return part


# -- the known bugs ------------------------------------------------------------------

async def test_garbage_records_with_a_valid_crc_are_refused_and_list_offsets_answers(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        r = await w.call(PRODUCE, 9, produce_request(crafted_batch(b"\xff\x00garbage!", count=1, max_timestamp=5000)))
        part = r.responses[0].partition_responses[0]
        assert part.error_code == INVALID_RECORD and "Invalid record size" in part.error_message
        offs = await w.call(LIST_OFFSETS, 7, list_offsets_request(2000, -3, -1, -2))
        assert [(p.error_code, p.offset) for p in offs.topics[0].partitions] == [(0, -1), (0, -1), (0, 0), (0, 0)]


async def test_a_bad_codec_with_a_valid_crc_is_refused(autojump_clock):
    for codec in (5, 6, 7):  # CompressionType.forId throws: Kafka answers UNKNOWN_SERVER_ERROR
        part = await refused(crafted_batch(record(), attributes=codec), UNKNOWN_SERVER_ERROR)
        assert part.error_message == f"Unknown compression type id: {codec}"
    for codec in (1, 2, 3, 4):  # data that does not decompress: Kafka's "Failed to decompress record stream"
        part = await refused(crafted_batch(b"not compressed at all", attributes=codec), UNKNOWN_SERVER_ERROR)
        assert part.error_message.startswith("Failed to decompress record stream")


async def test_a_max_timestamp_out_of_range_is_rewritten_and_list_offsets_answers(autojump_clock):
    """The header claims 5000, the record says 1000: Kafka keeps the records' max
    (``setMaxTimestamp``, CRC recomputed), so a lookup by timestamp finds what is there."""
    before = HANDLER_ERRORS.count
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        r = await w.call(PRODUCE, 9, produce_request(crafted_batch(record(b"a"), base_timestamp=1000, max_timestamp=5000)))
        assert r.responses[0].partition_responses[0].error_code == NONE
        stored = cluster.partition("t", 0).log.batches[0]
        assert stored.max_timestamp == 1000
        header, records = decode_batch(stored.data)   # CRC checked: the rewrite kept it valid
        assert header.max_timestamp == 1000 and records[0].timestamp == 1000
        offs = await w.call(LIST_OFFSETS, 7, list_offsets_request(2000, 1000, -3))
        assert [(p.offset, p.timestamp) for p in offs.topics[0].partitions] == [(-1, -1), (0, 1000), (0, 1000)]
    assert HANDLER_ERRORS.count == before   # (the suite's conftest also fails any test with a handler_error)


async def test_create_topics_with_an_unparsable_size_or_min_isr_is_invalid_config(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        r = await w.call(CREATE_TOPICS, 7, {"timeout_ms": 1000, "topics": [
            {"name": "a", "num_partitions": 1, "replication_factor": 1, "configs": [{"name": "max.message.bytes", "value": "abc"}]},
            {"name": "b", "num_partitions": 1, "replication_factor": 1, "configs": [{"name": "min.insync.replicas", "value": "x"}]}]})
        assert [(t.error_code, t.error_message) for t in r.topics] == [
            (INVALID_CONFIG, "Invalid value abc for configuration max.message.bytes: Not a number of type INT"),
            (INVALID_CONFIG, "Invalid value x for configuration min.insync.replicas: Not a number of type INT")]
        assert not cluster.topics
        p = await w.call(PRODUCE, 9, produce_request(encode_batch([Record(b"v")]), topic="a"))
        assert p.responses[0].partition_responses[0].error_code == 3  # no such topic; the connection lives on


# -- batch-level rules (UnifiedLog.analyzeAndValidateRecords, LogValidator.validateBatch) -----------

async def test_batch_rules(autojump_clock):
    ok = record()
    await refused(crafted_batch(ok, base_offset=7), INVALID_RECORD)
    part = await refused(crafted_batch(record(b"x" * 300)), MESSAGE_TOO_LARGE, topics=[("t", {"max.message.bytes": "200"})])
    assert part.log_start_offset == -1  # RecordTooLargeException: UNKNOWN_LOG_APPEND_INFO
    bad_crc = bytearray(crafted_batch(ok))
    bad_crc[-1] ^= 1
    part = await refused(bytes(bad_crc), CORRUPT_MESSAGE)
    assert part.error_message.startswith("Record is corrupt (stored crc =")
    part = await refused(crafted_batch(ok, count=2, last_offset_delta=0), INVALID_RECORD)
    assert part.error_message.startswith("Inconsistent batch offset range [0, 0] and count of records 2")
    assert part.log_start_offset == 0   # a LogValidator refusal carries the log start offset
    await refused(crafted_batch(ok, count=0, last_offset_delta=0), INVALID_RECORD)
    await refused(crafted_batch(ok, count=1, last_offset_delta=-1), INVALID_RECORD)
    part = await refused(crafted_batch(ok, attributes=0x20), INVALID_RECORD)
    assert "control records" in part.error_message
    part = await refused(crafted_batch(ok, producer_id=5, producer_epoch=0, base_sequence=-1), INVALID_RECORD)
    assert part.error_message.startswith("Invalid sequence number -1 in record batch with producerId 5")


# -- the record reader (DefaultRecord.readFrom, DefaultRecordBatch.RecordIterator) ----------------

def raw_record(body: bytes, length: int | None = None) -> bytes:
    return zigzag(len(body) if length is None else length) + body


@pytest.mark.parametrize("records, count, reason", [
    (record() + record(offset_delta=1), 1, "records still remaining"),
    (record(), 2, "premature EOF"),
    (raw_record(b"\x00\x00\x00\x01\x01\x00", length=40), 1, "buffer has only"),
    (raw_record(b"\x00\x00\x00\x01") + b"\x00\x00\x00", 1, "at least 6"),
    (raw_record(b"\x00\x00\x00\x01\x01\x00\x00"), 1, "expected to read 7 bytes"),
    (raw_record(b"\x00\x00" + b"\xff" * 6 + b"\x01\x01\x00"), 1, "invalid record structure"),   # offset delta > 5 bytes
    (raw_record(b"\x00" + b"\xff" * 11 + b"\x00\x01\x01\x00"), 1, "invalid record structure"),  # timestamp delta > 10 bytes
    (raw_record(b"\x00\x00\x00\x01\x01\x01"), 1, "invalid number of record headers -1"),
    (raw_record(b"\x00\x00\x00\x01\x01\x14\x00"), 1, "larger than the remaining size"),
    (raw_record(b"\x00\x00\x00\x01\x01\x02\x03\x00"), 1, "negative header key size -2"),
    (raw_record(b"\x00\x00\x00\x03\x01\x00"), 1, "key length -2"),         # Kafka reads it as null: see record_scan
    (raw_record(b"\x00\x00\x00\x01\x0a\x00"), 1, "overruns"),
])
async def test_malformed_records_are_invalid_record(autojump_clock, records, count, reason):
    part = await refused(crafted_batch(records, count=count), INVALID_RECORD)
    assert reason in part.error_message and part.error_message.endswith("in topic partition t-0")


async def test_every_codec_is_walked_after_decompression(autojump_clock):
    good = record(b"ok", b"k", headers=[(b"h", None)])
    for codec in (1, 2, 3, 4):
        part, cluster = await send(crafted_batch(codecs.compress(codec, good), attributes=codec))
        assert part.error_code == NONE
        part = await refused(crafted_batch(codecs.compress(codec, good[:-1] + b"\x02"), attributes=codec), INVALID_RECORD)
        assert "header" in part.error_message


async def test_a_zip_bomb_is_refused_as_too_large_without_expanding(autojump_clock):
    bomb = gzip.compress(b"\x00" * (96 << 20), 9)   # 96 MiB of zeros in ~95 KB
    part = await refused(crafted_batch(bomb, attributes=1), MESSAGE_TOO_LARGE)
    assert "emu.decompressed.max.bytes" in part.error_message and str(64 << 20) in part.error_message
    small = codecs.compress(4, record(b"v" * 5000))
    part = await refused(crafted_batch(small, attributes=4), MESSAGE_TOO_LARGE, config={"emu.decompressed.max.bytes": 1000})
    assert "1000" in part.error_message


# -- per-record rules (LogValidator.validateRecord) -----------------------------------------------

async def test_compacted_topics_refuse_keyless_records_with_record_errors(autojump_clock):
    records = record(b"a", b"k") + record(b"b", None, offset_delta=1) + record(b"c", None, offset_delta=2)
    part = await refused(crafted_batch(records, count=3), INVALID_RECORD, topics=[("t", {"cleanup.policy": "compact"})])
    assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == [
        (1, "Compacted topic cannot accept message without key in topic partition t-0"),
        (2, "Compacted topic cannot accept message without key in topic partition t-0")]
    assert part.error_message.startswith("One or more records have been rejected due to 2 record errors in total")


async def test_timestamps_outside_before_and_after_max_ms_are_invalid_timestamp(autojump_clock):
    topic = {"message.timestamp.before.max.ms": "1000", "message.timestamp.after.max.ms": "500"}
    records = (record(ts_delta=0) + record(ts_delta=-2000, offset_delta=1) + record(ts_delta=1000, offset_delta=2)
               + record(ts_delta=-1 - NOW, offset_delta=3))   # NO_TIMESTAMP (-1) is never checked
    part = await refused(crafted_batch(records, count=4, base_timestamp=NOW, max_timestamp=NOW), INVALID_TIMESTAMP,
                         topics=[("t", topic)])
    assert part.error_message == "One or more records have been rejected due to invalid timestamp"
    assert [e.batch_index for e in part.record_errors] == [1, 2]
    assert part.record_errors[0].batch_index_error_message == (
        f"Timestamp {NOW - 2000} of message with offset 1 is out of range. The timestamp should be within "
        f"[{NOW - 1000}, {NOW + 500}]")
    part, _ = await send(crafted_batch(record(), base_timestamp=NOW - 999), topics=[("t", topic)])
    assert part.error_code == NONE
    legacy = {"message.timestamp.difference.max.ms": "10"}   # applies while before/after keep their defaults
    await refused(crafted_batch(record(), base_timestamp=NOW + 11), INVALID_TIMESTAMP, topics=[("t", legacy)])


async def test_a_producer_set_log_append_time(autojump_clock):
    part = await refused(crafted_batch(record(), attributes=0x08, max_timestamp=NOW), INVALID_TIMESTAMP,
                         topics=[("t", {"message.timestamp.type": "LogAppendTime"})])
    assert "Producer should not set timestamp type to LogAppendTime" in part.record_errors[0].batch_index_error_message
    await refused(crafted_batch(record(), attributes=0x08, max_timestamp=-1), INVALID_TIMESTAMP)
    # a CreateTime topic accepts it when the time is valid, and stores it as CreateTime (setMaxTimestamp)
    part, cluster = await send(crafted_batch(record(ts_delta=3), attributes=0x08, base_timestamp=10, max_timestamp=50))
    assert part.error_code == NONE
    header = parse_batch_header(cluster.partition("t", 0).log.batches[0].data)
    assert (header.timestamp_type, header.max_timestamp) == (0, 50)


async def test_produce_before_v8_has_no_record_errors_but_the_same_code(autojump_clock):
    part, _ = await send(crafted_batch(record(b"a"), count=1), topics=[("t", {"cleanup.policy": "compact"})], version=7)
    assert part.error_code == INVALID_RECORD


# -- what is stored ---------------------------------------------------------------------------------

async def test_valid_batches_of_every_codec_are_stored_byte_for_byte(autojump_clock):
    for codec in range(5):
        batch = encode_batch([Record(b"v%d" % i, key=b"k", headers=[("h", b"x")], timestamp=1000 + i) for i in range(300)],
                             compression=codec)
        part, cluster = await send(batch)
        assert part.error_code == NONE
        assert cluster.partition("t", 0).log.batches[0].raw == batch


async def test_a_compressed_batch_with_gaps_in_its_offset_deltas_is_rebuilt(autojump_clock):
    """LogValidator keeps a compressed batch in place only if its offset deltas are 0, 1, 2...;
    otherwise it rebuilds it (``buildRecordsAndAssignOffsets``)."""
    records = record(b"a", ts_delta=5) + record(b"b", offset_delta=7, ts_delta=2) + record(b"c", offset_delta=9)
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        r = await w.call(PRODUCE, 9, produce_request(crafted_batch(codecs.compress(1, records), count=3, attributes=1,
                                                                    base_timestamp=100, max_timestamp=200)))
        assert r.responses[0].partition_responses[0].error_code == NONE
        f = await w.call(FETCH, 12, fetch_body("t", 0, 0))
        data = f.responses[0].partitions[0].records
        header, got = decode_batch(data)
        assert header.compression == 1 and header.max_timestamp == 105
        assert [(r.offset, r.value, r.timestamp) for r in got] == [(0, b"a", 105), (1, b"b", 102), (2, b"c", 100)]


async def test_the_topic_compression_type_recompresses(autojump_clock):
    batch = encode_batch([Record(b"v%d" % i, timestamp=7) for i in range(10)])
    part, cluster = await send(batch, topics=[("t", {"compression.type": "zstd"})])
    assert part.error_code == NONE
    header, got = decode_batch(cluster.partition("t", 0).log.batches[0].data)
    assert header.compression == 4 and [r.value for r in got] == [b"v%d" % i for i in range(10)]
    part, cluster = await send(encode_batch([Record(b"v")], compression="lz4"), topics=[("t", {"compression.type": "uncompressed"})])
    assert parse_batch_header(cluster.partition("t", 0).log.batches[0].data).compression == 0


async def test_log_append_time_topics_stamp_the_broker_time(autojump_clock):
    part, cluster = await send(encode_batch([Record(b"v", timestamp=5)]), topics=[("t", {"message.timestamp.type": "LogAppendTime"})])
    assert (part.error_code, part.log_append_time_ms) == (NONE, NOW)
    data = cluster.partition("t", 0).log.batches[0].data
    assert [list(iter_batches(data))[0][1].max_timestamp] == [NOW] and decode_batch(data)[1][0].timestamp == NOW


async def test_big_batches_take_the_fast_path_and_keep_offsets_exact(autojump_clock):
    """10,000 records cross the 1-, 2- and 3-byte offset-delta widths; a compressed batch is kept
    in place only while every delta is its index."""
    records = [Record(b"x" * 20, timestamp=1000 + i % 50) for i in range(10_000)]
    big = {"max.message.bytes": str(10 << 20)}
    for codec in (0, 1):
        batch = encode_batch(records, compression=codec)
        part, cluster = await send(batch, topics=[("t", big)])
        assert part.error_code == NONE and cluster.partition("t", 0).log.batches[0].raw == batch
        assert cluster.partition("t", 0).log.batches[0].max_timestamp == 1049
    body = bytearray(b"".join(record(b"x" * 20, offset_delta=i) for i in range(10_000)))
    odd = bytearray(b"".join(record(b"x" * 20, offset_delta=i if i != 9000 else 9001) for i in range(10_000)))
    for section, kept in ((body, True), (odd, False)):
        batch = crafted_batch(codecs.compress(1, bytes(section)), count=10_000, attributes=1)
        part, cluster = await send(batch, topics=[("t", big)])
        assert part.error_code == NONE
        stored = cluster.partition("t", 0).log.batches[0]
        assert (stored.raw == batch) is kept
        assert [r.offset for r in decode_batch(stored.data)[1]] == list(range(10_000))
