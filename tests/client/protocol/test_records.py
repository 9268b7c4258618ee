"""Record batch v2: golden bytes written out from the layout (Kafka's ``DefaultRecordBatch``), round trips over
every codec, CRC coverage, the broker's offset stamping, truncation and garbage that may only
raise CorruptRecordBatchError, varint edges, and a differential check against kafka-python."""

import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.protocol import records as R
from client.protocol import varint as V
from tests.broker_emu.crafted import recrc
from tests.broker_emu.crafted import zigzag as zz  # written out independently of client.protocol.varint

# -- golden bytes ----------------------------------------------------------------------------------

def test_crc32c_is_castagnoli():
    assert crc32c.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (CRC-32 would be 0xCBF43926)


def test_golden_tiny_batch_typed_in_from_the_layout():
    # one record, no key, value b"v", no headers, timestamp 1000 ms; a fresh producer batch
    record = bytes([
        0x0E,        # length 7, zigzag -> 14: the 7 bytes below
        0x00,        # attributes
        0x00,        # timestamp delta 0
        0x00,        # offset delta 0
        0x01,        # key length -1 (null), zigzag -> 1
        0x02, 0x76,  # value length 1 (zigzag 2), b"v"
        0x00,        # header count 0
    ])
    after_crc = bytes.fromhex(
        "0000"                # attributes: no compression, CreateTime
        "00000000"            # last_offset_delta 0
        "00000000000003e8"    # base_timestamp 1000
        "00000000000003e8"    # max_timestamp 1000
        "ffffffffffffffff"    # producer_id -1
        "ffff"                # producer_epoch -1
        "ffffffff"            # base_sequence -1
        "00000001"            # records_count 1
    ) + record
    assert len(after_crc) == 40 + 8
    golden = bytes.fromhex(
        "0000000000000000"    # base_offset 0
        "00000039"            # batch_length 57 = 61 - 12 + 8
        "ffffffff"            # partition_leader_epoch -1
        "02"                  # magic 2
    ) + crc32c.crc32c(after_crc).to_bytes(4, "big") + after_crc
    assert R.encode_batch([R.Record(b"v", timestamp=1000)]) == golden
    header, records = R.decode_batch(golden)
    assert header == (0, 57, -1, 2, crc32c.crc32c(after_crc), 0, 0, 1000, 1000, -1, -1, -1, 1)
    assert header.size == len(golden) == 69
    assert records == [R.Record(b"v", None, (), 1000, 0)]


def test_golden_record_with_key_headers_and_negative_delta():
    # the second record is 1 ms older than the base: its timestamp delta is -1
    rec1_body = b"\x00" + zz(0) + zz(0) + zz(1) + b"k" + zz(5) + b"hello" + zz(1) + zz(1) + b"h" + zz(1) + b"1"
    rec2_body = b"\x00" + zz(-1) + zz(1) + zz(-1) + zz(-1) + zz(1) + zz(2) + b"h2" + zz(-1)
    body = zz(len(rec1_body)) + rec1_body + zz(len(rec2_body)) + rec2_body
    after_crc = struct.pack(">hiqqqhii", 0x10, 1, 1000, 1000, 42, 3, 7, 2) + body  # transactional
    golden = struct.pack(">qiibI", 0, 49 + len(body), -1, 2, crc32c.crc32c(after_crc)) + after_crc
    ours = R.encode_batch([R.Record(b"hello", b"k", [("h", b"1")], 1000), R.Record(None, None, [("h2", None)], 999)],
                          producer_id=42, producer_epoch=3, base_sequence=7, transactional=True)
    assert ours == golden
    header, recs = R.decode_batch(golden)
    assert header.is_transactional and not header.is_control and header.last_offset == 1
    assert recs == [R.Record(b"hello", b"k", (("h", b"1"),), 1000, 0), R.Record(None, None, (("h2", None),), 999, 1)]


# -- round trips -------------------------------------------------------------------------------------

headers_st = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3)
records_st = st.lists(
    st.builds(R.Record,
              value=st.one_of(st.none(), st.binary(max_size=200)),
              key=st.one_of(st.none(), st.binary(max_size=16)),
              headers=headers_st,
              timestamp=st.integers(0, 2**41)),
    min_size=1, max_size=20)


@given(records_st, st.sampled_from([0, 1, 2, 3, 4]), st.integers(-1, 2**40), st.integers(-1, 2**31 - 1),
       st.booleans(), st.integers(-(2**31), 2**31 - 1))
@settings(max_examples=150, deadline=None)
def test_round_trip_every_codec(recs, codec, pid, seq, txn, epoch):
    batch = R.encode_batch(recs, compression=codec, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                           base_sequence=seq, transactional=txn, partition_leader_epoch=epoch)
    assert R.verify_crc(batch)
    header, out = R.decode_batch(batch)
    assert header.compression == codec and header.producer_id == pid and header.base_sequence == seq
    assert header.is_transactional is txn and header.partition_leader_epoch == epoch
    assert header.records_count == len(recs) and header.last_offset_delta == len(recs) - 1
    assert header.base_timestamp == recs[0].timestamp
    assert header.max_timestamp == max(r.timestamp for r in recs)
    assert [(r.key, r.value, list(r.headers), r.timestamp, r.offset) for r in out] == \
        [(r.key, r.value, list(r.headers), r.timestamp, i) for i, r in enumerate(recs)]


@given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=300)), st.one_of(st.none(), st.binary(max_size=40)),
                          headers_st, st.integers(-200, 70_000)), min_size=1, max_size=40),
       st.integers(200, 2**41))  # a negative record timestamp would mean "take the base"
@settings(max_examples=200, deadline=None)
def test_fast_encoder_is_byte_identical_to_the_straightforward_one(rows, base):
    recs = [R.Record(v, k, h, base + d) for v, k, h, d in rows]
    fast, max_ts = R.encode_records(recs, base)
    reference = b"".join(R._encode_record(i, d, k, v, h) for i, (v, k, h, d) in enumerate(rows))
    assert bytes(fast) == reference and max_ts == base + max(d for *_, d in rows)


def test_long_values_and_many_records_leave_the_precomputed_table():
    big = R.Record(b"x" * 70_000, b"k" * 20_000, [("h" * 17_000, b"y" * 16_400)], timestamp=5)
    recs = [R.Record(b"v", timestamp=5 + i * 1000) for i in range(20_000)] + [big]
    header, out = R.decode_batch(R.encode_batch(recs))
    assert out[-1] == R.Record(big.value, big.key, tuple(big.headers), 5, 20_000)
    assert out[19_999].timestamp == 5 + 19_999_000 and header.max_timestamp == 5 + 19_999_000


def test_timestamp_defaults_and_an_explicit_base():
    header, out = R.decode_batch(R.encode_batch([R.Record(b"a"), R.Record(b"b", timestamp=7)]))
    assert header.base_timestamp == 7 and [r.timestamp for r in out] == [7, 7]
    # an explicit base later than every record: deltas go negative, max_timestamp is the records' max
    header, out = R.decode_batch(R.encode_batch([R.Record(b"a", timestamp=5)], base_timestamp=10))
    assert (header.base_timestamp, header.max_timestamp, out[0].timestamp) == (10, 5, 5)


def test_log_append_time_batches_give_every_record_the_batch_time():
    batch = R.encode_batch([R.Record(b"a", timestamp=1), R.Record(b"b", timestamp=2)])
    stamped = R.set_log_append_time(batch, 99)
    header, out = R.decode_batch(stamped)
    assert header.timestamp_type == 1 and header.max_timestamp == 99 and R.verify_crc(stamped)
    assert [r.timestamp for r in out] == [99, 99]


def test_attribute_flags():
    header = R.parse_batch_header(R.encode_batch([R.Record(b"a")], compression="lz4", control=True, timestamp_type=1))
    assert header.attributes == 3 | 0x20 | 0x08 and header.is_control and header.timestamp_type == 1
    assert header.compression == 3


def test_header_keys_may_be_bytes_and_repeat():
    recs = [R.Record(b"a", headers=[("k", b"1"), (b"k", b"2"), (bytearray(b"k"), None)], timestamp=1)] * 2
    assert [r.headers for r in R.decode_batch(R.encode_batch(recs))[1]] == [(("k", b"1"), ("k", b"2"), ("k", None))] * 2
    with pytest.raises(TypeError):
        R.encode_batch([R.Record(b"a", headers=[(5, b"x")])])


def test_encoder_refuses_what_the_format_cannot_hold():
    with pytest.raises(ValueError, match="at least one record"):
        R.encode_batch([])
    with pytest.raises(ValueError, match="out of range"):
        R.encode_batch([R.Record(b"a")], base_sequence=2**31)
    with pytest.raises(ValueError, match="unknown compression"):
        R.encode_batch([R.Record(b"a")], compression=9)


# -- what the broker does without decoding records ---------------------------------------------------

def test_crc_covers_bytes_21_to_end_and_nothing_before():
    batch = R.encode_batch([R.Record(b"value", b"key", [("h", b"x")], 77), R.Record(None, timestamp=78)])
    for i in range(len(batch)):
        flipped = bytearray(batch)
        flipped[i] ^= 0x01
        if i >= 21:
            assert not R.verify_crc(bytes(flipped)), i
            with pytest.raises(R.CorruptRecordBatchError):
                R.decode_batch(bytes(flipped))
        elif i < 8 or 12 <= i < 16:
            assert R.verify_crc(bytes(flipped)), i  # base_offset and leader epoch are not covered


def test_crc_mismatch_error_names_the_offset():
    batch = bytearray(R.encode_batch([R.Record(b"x", timestamp=5)]))
    batch[-1] ^= 0xFF
    buf = R.encode_batch([R.Record(b"y", timestamp=5)]) + bytes(batch)
    with pytest.raises(R.CorruptRecordBatchError, match="CRC") as info:
        R.decode_batch(buf, 69)
    assert info.value.offset == 69 and "at byte 69" in str(info.value)


def test_set_base_offset_rewrites_only_offset_and_epoch():
    batch = R.encode_batch([R.Record(b"x", timestamp=5), R.Record(b"y", timestamp=6)])
    stamped = R.set_base_offset(batch, 1234, 7)
    assert stamped[8:12] == batch[8:12] and stamped[16:] == batch[16:]
    assert stamped[:8] == (1234).to_bytes(8, "big") and stamped[12:16] == (7).to_bytes(4, "big")
    h = R.parse_batch_header(stamped)
    assert (h.base_offset, h.partition_leader_epoch, h.last_offset) == (1234, 7, 1235) and R.verify_crc(stamped)
    assert [r.offset for r in R.decode_batch(stamped)[1]] == [1234, 1235]


def test_iter_batches_stops_cleanly_at_every_truncation_of_the_tail():
    a = R.encode_batch([R.Record(b"a", timestamp=1)])
    b = bytes(R.set_base_offset(R.encode_batch([R.Record(b"b", timestamp=1), R.Record(b"c", timestamp=1)]), 1, 0))
    for cut in range(len(b)):
        buf = a + b + b[:cut]
        assert [(pos, h.base_offset) for pos, h in R.iter_batches(buf)] == [(0, 0), (len(a), 1)]
        assert list(R.iter_batches(memoryview(buf))) == list(R.iter_batches(buf))


def test_iter_batches_raises_on_a_wrong_magic_in_the_middle():
    a = R.encode_batch([R.Record(b"a", timestamp=1)])
    bad = bytearray(a)
    bad[16] = 1
    with pytest.raises(R.CorruptRecordBatchError, match="magic 1") as info:
        list(R.iter_batches(a + bytes(bad) + a))
    assert info.value.offset == len(a) and not isinstance(info.value, R.TruncatedBatchError)


def test_header_checks():
    batch = bytearray(R.encode_batch([R.Record(b"a", timestamp=1)]))
    batch[16] = 0
    with pytest.raises(R.CorruptRecordBatchError, match="magic 0"):
        R.parse_batch_header(bytes(batch))
    with pytest.raises(R.CorruptRecordBatchError, match="magic 0"):
        R.parse_batch_header(bytes(batch[:20]))  # an old-format message set is not mistaken for a cut batch
    short = bytearray(R.encode_batch([R.Record(b"a", timestamp=1)]))
    struct.pack_into(">i", short, 8, 10)
    with pytest.raises(R.CorruptRecordBatchError, match="shorter than a header"):
        R.parse_batch_header(bytes(short))
    long = bytearray(R.encode_batch([R.Record(b"a", timestamp=1)]))
    struct.pack_into(">i", long, 8, 2**31 - 1)
    with pytest.raises(R.TruncatedBatchError, match="only 69 present"):
        R.parse_batch_header(bytes(long))


# -- hostile input -----------------------------------------------------------------------------------

GOOD = R.encode_batch([R.Record(b"value", b"key", [("h", None), ("h2", b"v")], 77), R.Record(None, timestamp=80)] * 3)
GOOD_GZIP = R.encode_batch([R.Record(b"value", b"key", [("h", None)], 77)] * 5, compression=1)


def test_every_truncation_raises_truncated():
    for cut in range(len(GOOD)):
        with pytest.raises(R.TruncatedBatchError):
            R.decode_batch(GOOD[:cut])


@given(st.binary(max_size=200), st.integers(0, len(GOOD)), st.booleans())
@settings(max_examples=400, deadline=None)
def test_garbage_only_raises_the_documented_error(tail, cut, fix_crc):
    for data in (GOOD[:cut] + tail, GOOD[:61] + tail, tail, GOOD_GZIP[:max(cut, 61)] + tail):
        if fix_crc and len(data) >= 61:
            data = recrc(data)
        try:
            R.decode_batch(data)
        except R.CorruptRecordBatchError:
            pass


# records of 64 B .. 8 KB and values over 63 B take the decoder's two-byte varint branches
GOOD_LONG = R.encode_batch([R.Record(b"v" * 100, b"k" * 70, [("h" * 65, b"x" * 66)], 77), R.Record(b"w" * 64, timestamp=9)])


@given(st.sampled_from([GOOD, GOOD_LONG]), st.data())
@settings(max_examples=600, deadline=None)
def test_mutated_records_with_a_valid_crc_only_raise_the_documented_error(good, data_st):
    edits = data_st.draw(st.lists(st.tuples(st.integers(61, len(good) - 1), st.integers(0, 255)), min_size=1, max_size=6))
    data = bytearray(good)
    for pos, byte in edits:
        data[pos] = byte
    try:
        header, recs = R.decode_batch(recrc(data))
    except R.CorruptRecordBatchError:
        return
    assert len(recs) == header.records_count


@pytest.mark.parametrize("at, value, match", [
    (57, 2**31 - 1, "records_count"),  # a count cannot force a huge list
    (57, -5, "records_count"),
    (57, 7, "does not fit|bytes after|record"),
])
def test_hostile_counts_are_refused(at, value, match):
    batch = bytearray(GOOD)
    struct.pack_into(">i", batch, at, value)
    with pytest.raises(R.CorruptRecordBatchError, match=match):
        R.decode_batch(recrc(batch))


def _one_record_batch(record_body: bytes) -> bytes:
    body = zz(len(record_body)) + record_body
    after_crc = struct.pack(">hiqqqhii", 0, 0, 0, 0, -1, -1, -1, 1) + body
    return struct.pack(">qiibI", 0, 49 + len(body), -1, 2, crc32c.crc32c(after_crc)) + after_crc


@pytest.mark.parametrize("record_body, match", [
    (b"\x00\x00\x00" + zz(2**30) + b"k" + b"\x01\x00", "overruns"),               # key longer than the data
    (b"\x00\x00\x00\x01" + zz(-2) + b"\x00", "negative length"),                    # value length -2
    (b"\x00\x00\x00\x01" + zz(-65) + b"\x00", "negative length"),                   # two-byte negative length
    (b"\x00\x00\x00\x01" + zz(100) + b"abc\x00", "overrun the record"),             # two-byte length, short value
    (b"\x00\x00\x00\x01\x01" + zz(2**30) + b"\x00\x00", "header count"),             # header count far too big
    (b"\x00\x00\x00\x01\x01" + zz(1) + zz(-1) + b"\x01", "null header key"),
    (b"\x00\x00\x00\x01\x01" + zz(1) + zz(1) + b"\xff\x01", "utf-8"),              # header key not UTF-8
    (b"\x00\x00\x00\x01\x01\x00\x00\x00", "used 6 bytes, not 8"),                    # two stray bytes inside the record
    (b"\x00\x00\x00\x01\x01\x00", None),                                               # fine: the control case
    (b"\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f\x00\x01\x01\x00", "64 bits"),    # timestamp delta overlong
    (b"\x00\x00\xff\xff\xff\xff\x7f\x01\x01\x00", "32 bits"),                        # offset delta over int32
])
def test_hostile_records_name_what_is_wrong(record_body, match):
    batch = _one_record_batch(record_body)
    if match is None:
        assert R.decode_batch(batch)[1] == [R.Record(None, None, (), 0, 0)]
        return
    with pytest.raises(R.CorruptRecordBatchError, match=f"(?i){match}"):
        R.decode_batch(batch)


def test_decompression_bomb_is_refused_as_corrupt():
    batch = R.encode_batch([R.Record(b"\x00" * 2_000_000, timestamp=1)], compression=4)
    assert len(batch) < 1000
    with pytest.raises(R.CorruptRecordBatchError, match="limit"):
        R.decode_batch(batch, max_size=1_000_000)
    assert R.decode_batch(batch)[1][0].value == b"\x00" * 2_000_000


def test_empty_batch_after_compaction_decodes_to_no_records():
    after_crc = struct.pack(">hiqqqhii", 0, 4, 0, 0, 9, 0, 0, 0)  # records_count 0, kept for producer state
    batch = struct.pack(">qiibI", 10, 49, 0, 2, crc32c.crc32c(after_crc)) + after_crc
    header, recs = R.decode_batch(batch)
    assert recs == [] and header.last_offset == 14


# -- varints -----------------------------------------------------------------------------------------

INT32 = [0, -1, 1, 63, -64, 64, -65, 8191, 8192, -8193, 16383, 16384, 2**31 - 1, -(2**31)]
INT64 = INT32 + [2**31, -(2**31) - 1, 2**63 - 1, -(2**63)]


@pytest.mark.parametrize("n", INT32)
def test_varint_edges(n):
    assert V.write_varint(n) == zz(n)
    assert V.read_varint(zz(n), 0) == (n, len(zz(n)))
    assert V.read_varint(memoryview(b"\xaa" + zz(n) + b"\xbb"), 1) == (n, 1 + len(zz(n)))


def test_the_table_of_small_varints_holds_every_value_it_covers():
    """The table is written column by column (varint.py); every entry is checked here against
    an independent encoder, and is bytes (a bytearray slice would not hash or compare the same)."""
    assert len(V.SMALL) == V.SMALL_LIMIT + 64
    assert [n for n in range(-64, V.SMALL_LIMIT) if V.SMALL[n + 64] != zz(n) or type(V.SMALL[n + 64]) is not bytes] == []


@pytest.mark.parametrize("n", INT64)
def test_varlong_edges(n):
    assert V.write_varlong(n) == zz(n)
    assert V.read_varlong(zz(n), 0) == (n, len(zz(n)))
    assert len(zz(n)) <= 10


@pytest.mark.parametrize("n", [2**31, -(2**31) - 1])
def test_varint_out_of_int32(n):
    with pytest.raises(ValueError, match="int32"):
        V.write_varint(n)
    with pytest.raises(ValueError, match="32 bits"):
        V.read_varint(zz(n), 0)
    assert V.read_varlong(zz(n), 0) == (n, 5)


def test_varlong_out_of_int64_and_overlong_input():
    for n in (2**63, -(2**63) - 1):
        with pytest.raises(ValueError, match="int64"):
            V.write_varlong(n)
    with pytest.raises(ValueError, match="longer than 5"):
        V.read_varint(b"\x80\x80\x80\x80\x80\x00", 0)
    with pytest.raises(ValueError, match="longer than 10"):
        V.read_varlong(b"\xff" * 10 + b"\x01", 0)
    with pytest.raises(ValueError, match="64 bits"):
        V.read_varlong(b"\xff" * 9 + b"\x7f", 0)


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff\xff", b"\x80\x80\x80\x80"])
def test_truncated_varints(data):
    for read in (V.read_varint, V.read_varlong, V.read_uvarint):
        with pytest.raises(ValueError, match="truncated"):
            read(data, 0)


@pytest.mark.parametrize("n, encoded", [(0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"),
                                        (300, b"\xac\x02"), (2**32 - 1, b"\xff\xff\xff\xff\x0f")])
def test_unsigned_varint(n, encoded):
    assert V.write_uvarint(n) == encoded
    assert V.read_uvarint(b"\x00" + encoded, 1) == (n, 1 + len(encoded))


def test_unsigned_varint_bounds():
    with pytest.raises(ValueError):
        V.write_uvarint(-1)
    with pytest.raises(ValueError, match="32 bits"):
        V.read_uvarint(b"\xff\xff\xff\xff\x1f", 0)
    assert V.read_uvarlong(V.write_uvarint(2**64 - 1), 0) == (2**64 - 1, 10)


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(n):
    data = V.write_varlong(n)
    assert data == zz(n) and V.read_varlong(data + b"\x00", 0) == (n, len(data))


# -- differential: kafka-python's record implementation, when it is installed ------------------------

def _kafka_python():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # kafka-python reads schemas via legacy importlib APIs
        return pytest.importorskip("kafka.record.default_records")


@given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=100)), st.one_of(st.none(), st.binary(max_size=20)),
                          headers_st, st.integers(0, 2**41)), min_size=1, max_size=10),
       st.sampled_from([0, 1]))
@settings(max_examples=100, deadline=None)
def test_kafka_python_reads_ours_and_we_read_theirs(rows, codec):
    kp = _kafka_python()
    builder = kp.DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                           producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i, (v, k, h, ts) in enumerate(rows):
        builder.append(i, timestamp=ts, key=k, value=v, headers=h)
    theirs = bytes(builder.build())
    # kafka-python writes partition_leader_epoch 0 where Java writes -1; otherwise byte-identical
    ours = R.encode_batch([R.Record(v, k, h, ts) for v, k, h, ts in rows], compression=codec, partition_leader_epoch=0)
    if codec == 0:
        assert ours == theirs
    expected = [(i, ts, k, v, list(h)) for i, (v, k, h, ts) in enumerate(rows)]
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in R.decode_batch(theirs)[1]] == expected
    batch = kp.DefaultRecordBatch(ours)
    assert batch.validate_crc()
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch] == expected


@given(st.lists(st.tuples(st.sampled_from([None, b"", b"k"]),
                          st.one_of(st.none(), st.integers(0, 70).map(bytes), st.sampled_from([8190, 8191, 8192, 9000]).map(bytes)),
                          st.sampled_from([(), (("h", b"v"),), (("h", None),)])), min_size=1, max_size=20))
def test_the_inline_common_record_path_agrees_with_the_general_reader(rows):
    """Null keys, values either side of the one- and two-byte length boundaries (64 B, 8 KB) and
    no headers take the decoder's inline path; anything else the general one. Both must read back
    exactly what was written."""
    recs = [R.Record(v, k, h) for k, v, h in rows]
    _, back = R.decode_batch(R.encode_batch(recs, base_timestamp=5))
    assert [(r.key, r.value, [(hk, hv) for hk, hv in r.headers]) for r in back] == \
        [(k, v, [(hk if isinstance(hk, str) else hk.decode(), hv) for hk, hv in h]) for k, v, h in rows]
