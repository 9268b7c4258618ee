"""Kafka's record-batch codecs: round trips, the xerial snappy framing Java and kafka-python write
(and raw snappy from librdkafka), gzip members and truncation, and decompression bombs that must
fail without taking their expanded size in memory."""

import gzip
import os
import resource
import struct
import zlib

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.protocol.compression import (
    CODES,
    DEFAULT_MAX_SIZE,
    CompressionError,
    codec_code,
    compress,
    decompress,
)

CODECS = [0, 1, 2, 3, 4]
SAMPLES = [b"", b"x", b"abc" * 100_000, os.urandom(70_000), bytes(range(256)) * 300]
MiB = 1 << 20


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("data", SAMPLES, ids=["empty", "one", "repetitive", "random", "ramp"])
def test_round_trip(codec, data):
    packed = compress(codec, data)
    assert decompress(codec, packed) == data
    assert decompress(codec, bytearray(packed)) == data and decompress(codec, memoryview(packed)) == data
    if codec and len(data) > 1000 and data[:3] == b"abc":
        assert len(packed) < len(data) // 10


def test_codec_names_and_ids():
    assert CODES == {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
    assert codec_code("ZSTD") == 4 and codec_code(2) == 2
    for bad in ("brotli", 5, -1, None):
        with pytest.raises(CompressionError):
            codec_code(bad)
    with pytest.raises(CompressionError):
        compress(7, b"x")
    with pytest.raises(CompressionError):
        decompress(7, b"x")


# -- snappy: xerial framing (Java, kafka-python) and raw blocks (librdkafka) -------------------------

def xerial(blocks, version=1, compat=1):
    """The xerial framing written out by hand: magic, version, compat, [int32 length, raw block]..."""
    out = b"\x82SNAPPY\x00" + struct.pack(">ii", version, compat)
    for raw in blocks:
        packed = bytes(cramjam.snappy.compress_raw(raw))
        out += struct.pack(">i", len(packed)) + packed
    return out


def test_we_write_the_xerial_framing_in_32k_blocks():
    data = os.urandom(40_000) + b"z" * 60_000
    packed = compress(2, data)
    assert packed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, blocks = 16, []
    while pos < len(packed):
        n = struct.unpack_from(">i", packed, pos)[0]
        blocks.append(bytes(cramjam.snappy.decompress_raw(packed[pos + 4:pos + 4 + n])))
        pos += 4 + n
    assert [len(b) for b in blocks] == [32768, 32768, 32768, 1696] and b"".join(blocks) == data


def test_we_read_xerial_with_any_block_sizes_and_raw_snappy():
    parts = [b"hello " * 5000, b"", os.urandom(100), b"world" * 20_000]
    assert decompress(2, xerial(parts)) == b"".join(parts)
    assert decompress(2, xerial([])) == b""
    data = b"hello snappy " * 1000
    assert decompress(2, bytes(cramjam.snappy.compress_raw(data))) == data  # librdkafka's raw block


@pytest.mark.parametrize("data, match", [
    (b"\x82SNAPPY\x00\x00\x00", "truncated xerial snappy header"),
    (xerial([b"abc"])[:18], "truncated xerial snappy block length"),
    (xerial([b"abc" * 10])[:-2], "overruns"),
    (b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, -4), "overruns"),
    (xerial([]) + struct.pack(">i", 3) + b"\xff\xff\xff", "does not decompress"),
    (b"\xff\xff\xff\xff\xff\xff", "does not decompress"),
])
def test_broken_snappy(data, match):
    with pytest.raises(CompressionError, match=match):
        decompress(2, data)


def test_snappy_length_preamble_is_checked_before_allocating():
    claims_2gib = bytes([0x80, 0x80, 0x80, 0x80, 0x08]) + b"\x00" * 10  # varint 2**31, then junk
    with pytest.raises(CompressionError, match="claims 2147483648 bytes"):
        decompress(2, claims_2gib)
    with pytest.raises(CompressionError, match="remaining limit"):  # the budget is shared across blocks
        decompress(2, xerial([b"a" * 30_000, b"b" * 30_000]), max_size=50_000)
    assert len(decompress(2, xerial([b"a" * 30_000, b"b" * 20_000]), max_size=50_000)) == 50_000


# -- gzip ------------------------------------------------------------------------------------------

def test_gzip_members_truncation_and_garbage():
    assert decompress(1, gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"
    with pytest.raises(CompressionError, match="truncated"):
        decompress(1, gzip.compress(b"abc" * 1000)[:-10])
    with pytest.raises(CompressionError, match="does not decompress"):
        decompress(1, b"\x1f\x8b\x08\x00garbage-garbage")
    assert decompress(1, zlib.compress(b"x", wbits=31)) == b"x"


# -- limits ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_limit_is_exact(codec):
    packed = compress(codec, b"q" * 100_000)
    assert len(decompress(codec, packed, max_size=100_000)) == 100_000
    with pytest.raises(CompressionError, match="limit"):
        decompress(codec, packed, max_size=99_999)


def _bomb(codec: int, size: int) -> bytes:
    chunk = bytes(MiB)
    if codec == 1:
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(c.compress(chunk) for _ in range(size // MiB)) + c.flush()
    if codec == 2:
        return xerial([bytes(32768)] * (size // 32768))
    comp = {3: cramjam.lz4, 4: cramjam.zstd}[codec].Compressor()
    for _ in range(size // MiB):
        comp.compress(chunk)
    return bytes(comp.finish())


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_bombs_fail_without_taking_their_expanded_size(codec):
    bomb = _bomb(codec, 256 * MiB if codec == 4 else 64 * MiB)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    with pytest.raises(CompressionError, match="limit"):
        decompress(codec, bomb, max_size=4 * MiB)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 48, f"peak memory grew by {grown_mib:.0f} MiB for a 4 MiB limit"


def test_default_limit_is_128_mib():
    assert DEFAULT_MAX_SIZE == 128 * MiB


# -- garbage --------------------------------------------------------------------------------------

@given(st.sampled_from(CODECS[1:]), st.binary(max_size=300), st.integers(0, 400))
@settings(max_examples=300, deadline=None)
def test_garbage_raises_only_compression_error(codec, garbage, cut):
    for data in (garbage, compress(codec, b"some record bytes " * 20)[:cut] + garbage):
        try:
            decompress(codec, data, max_size=64 * 1024)
        except CompressionError:
            pass
