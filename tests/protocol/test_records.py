import struct

import crc32c
import pytest
from hypothesis import given, settings, strategies as st

from client.protocol import records as R
from client.protocol.compression import CompressionError, compress, decompress
from client.protocol.varint import read_varlong, write_varint


def zz(n):
    """Zigzag varint, written out independently of client.protocol.varint."""
    u = (n << 1) ^ (n >> 63)
    out = bytearray()
    u &= (1 << 64) - 1
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def test_golden_single_record_batch():
    # one record: key b"k", value b"hello", one header ("h", b"1"), timestamp 1000
    rec_body = b"\x00" + zz(0) + zz(0) + zz(1) + b"k" + zz(5) + b"hello" + zz(1) + zz(1) + b"h" + zz(1) + b"1"
    record = zz(len(rec_body)) + rec_body
    after_crc = struct.pack(">hiqqqhii", 0, 0, 1000, 1000, -1, -1, -1, 1) + record
    crc = crc32c.crc32c(after_crc)
    batch_length = 4 + 1 + 4 + len(after_crc)  # epoch + magic + crc + rest
    golden = struct.pack(">qiibI", 0, batch_length, -1, 2, crc) + after_crc
    ours = R.encode_batch([R.Record(b"hello", b"k", [("h", b"1")], 1000)])
    assert ours == golden
    header, recs = R.decode_batch(golden)
    assert header.records_count == 1 and header.size == len(golden)
    assert recs == [R.Record(b"hello", b"k", [("h", b"1")], 1000, 0)]


records_st = st.lists(
    st.builds(R.Record,
              value=st.one_of(st.none(), st.binary(max_size=64)),
              key=st.one_of(st.none(), st.binary(max_size=16)),
              headers=st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3),
              timestamp=st.integers(0, 2**41)),
    min_size=1, max_size=20)


@given(records_st, st.sampled_from([0, 1, 2, 3, 4]), st.integers(-1, 2**40), st.integers(-1, 2**31 - 1))
@settings(max_examples=60, deadline=None)
def test_round_trip(recs, codec, pid, seq):
    batch = R.encode_batch(recs, compression=codec, producer_id=pid, producer_epoch=0 if pid >= 0 else -1, base_sequence=seq)
    header, out = R.decode_batch(batch)
    assert header.compression == codec and header.producer_id == pid and header.base_sequence == seq
    assert header.last_offset_delta == len(recs) - 1
    assert header.max_timestamp == max(r.timestamp for r in recs)
    assert [(r.key, r.value, list(r.headers), r.timestamp, r.offset) for r in out] == \
        [(r.key, r.value, list(r.headers), r.timestamp, i) for i, r in enumerate(recs)]


@given(st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=40), st.integers(0, 2**41))
@settings(max_examples=60, deadline=None)
def test_fast_path_is_byte_identical_to_the_general_encoder(values, ts):
    fast, _ = R.encode_records([R.Record(v, timestamp=ts) for v in values], ts)
    general = b"".join(R._encode_record(i, 0, None, v, ()) for i, v in enumerate(values))
    assert fast == general


def test_crc_mismatch_and_stamping():
    batch = R.encode_batch([R.Record(b"x", timestamp=5)])
    stamped = R.set_base_offset(batch, 1234, 7)
    h = R.parse_batch_header(stamped)
    assert (h.base_offset, h.partition_leader_epoch) == (1234, 7) and R.verify_crc(stamped)
    assert R.decode_batch(stamped)[1][0].offset == 1234
    flipped = bytearray(batch)
    flipped[-1] ^= 0xFF
    assert not R.verify_crc(bytes(flipped))
    with pytest.raises(R.CorruptRecordBatchError, match="CRC"):
        R.decode_batch(bytes(flipped))
    lat = R.set_log_append_time(batch, 99)
    assert R.verify_crc(lat) and R.parse_batch_header(lat).timestamp_type == 1 and R.parse_batch_header(lat).max_timestamp == 99


def test_iter_batches_stops_at_truncated_tail():
    a = R.encode_batch([R.Record(b"a", timestamp=1)])
    b = R.set_base_offset(R.encode_batch([R.Record(b"b", timestamp=1), R.Record(b"c", timestamp=1)]), 1, 0)
    buf = a + b + b[:30]
    assert [(pos, h.base_offset) for pos, h in R.iter_batches(buf)] == [(0, 0), (len(a), 1)]


def test_wrong_magic_and_short_batch_length():
    batch = bytearray(R.encode_batch([R.Record(b"a", timestamp=1)]))
    batch[16] = 1
    with pytest.raises(R.CorruptRecordBatchError, match="magic 1"):
        R.parse_batch_header(bytes(batch))
    short = bytearray(R.encode_batch([R.Record(b"a", timestamp=1)]))
    struct.pack_into(">i", short, 8, 10)
    with pytest.raises(R.CorruptRecordBatchError, match="shorter than a header"):
        R.parse_batch_header(bytes(short))


@given(st.binary(max_size=200), st.integers(0, 200))
@settings(max_examples=300, deadline=None)
def test_garbage_only_raises_the_documented_error(tail, cut):
    good = R.encode_batch([R.Record(b"value", b"key", [("h", None)], 77)] * 3)
    for data in (good[:cut] + tail, good[:61] + tail, tail):
        try:
            R.decode_batch(data, check_crc=False)
        except R.CorruptRecordBatchError:
            pass


def test_huge_claimed_count_is_refused_quickly():
    batch = bytearray(R.encode_batch([R.Record(b"v", timestamp=1)]))
    struct.pack_into(">i", batch, 57, 2**31 - 1)
    with pytest.raises(R.CorruptRecordBatchError, match="records_count"):
        R.decode_batch(bytes(batch), check_crc=False)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_compression_round_trip_and_bomb_limit(codec):
    data = b"abc" * 100_000
    assert decompress(codec, compress(codec, data)) == data
    with pytest.raises(CompressionError):
        decompress(codec, compress(codec, data), max_size=1000)


def test_raw_snappy_as_librdkafka_writes_it():
    import cramjam
    data = b"hello snappy " * 1000
    assert decompress(2, bytes(cramjam.snappy.compress_raw(data))) == data


def test_corrupt_compressed_data():
    with pytest.raises(CompressionError):
        decompress(4, b"not zstd at all")


@pytest.mark.parametrize("n", [0, -1, 1, 63, -64, 64, 8191, 8192, -8193, 2**31 - 1, -2**31, 2**63 - 1, -2**63])
def test_varint_edges(n):
    assert zz(n) == write_varint(n)
    assert read_varlong(write_varint(n), 0) == (n, len(write_varint(n)))
