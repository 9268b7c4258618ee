"""Kafka's record-batch compression codecs, via cramjam: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.

Snappy: the Java client and kafka-python write the xerial framing (magic, version, then
length-prefixed raw blocks); librdkafka writes raw snappy. We read both and write xerial, which
every client reads. LZ4 is the LZ4 frame format. Decompression is bounded by ``max_size`` so a
small hostile batch cannot expand into gigabytes: gzip and snappy are checked before the memory
is taken (streaming / length header); lz4 and zstd after, which bounds what we keep.
"""

from __future__ import annotations

import struct
import zlib

import cramjam

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
CODES = {name: code for code, name in NAMES.items()}
DEFAULT_MAX_SIZE = 128 * 1024 * 1024
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_BLOCK = 32 * 1024


class CompressionError(ValueError):
    pass


def codec_code(name_or_code: str | int) -> int:
    if isinstance(name_or_code, int):
        if name_or_code not in NAMES:
            raise CompressionError(f"unknown compression codec {name_or_code}")
        return name_or_code
    try:
        return CODES[name_or_code.lower()]
    except KeyError:
        raise CompressionError(f"unknown compression type {name_or_code!r} (none, gzip, snappy, lz4, zstd)") from None


def compress(codec: int, data: bytes) -> bytes:
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise CompressionError(f"unknown compression codec {codec}")


def decompress(codec: int, data: bytes, max_size: int = DEFAULT_MAX_SIZE) -> bytes:
    try:
        if codec == NONE:
            out = bytes(data)
        elif codec == GZIP:
            out = _gunzip(data, max_size)
        elif codec == SNAPPY:
            out = _snappy_decompress(bytes(data), max_size)
        elif codec == LZ4:
            out = bytes(cramjam.lz4.decompress(data))
        elif codec == ZSTD:
            out = bytes(cramjam.zstd.decompress(data))
        else:
            raise CompressionError(f"unknown compression codec {codec}")
    except CompressionError:
        raise
    except Exception as exc:  # cramjam raises its own DecompressionError types
        raise CompressionError(f"{NAMES.get(codec, codec)} data does not decompress: {exc}") from None
    if len(out) > max_size:
        raise CompressionError(f"{NAMES[codec]} data expands to {len(out)} bytes, over the {max_size} limit")
    return out


def _gunzip(data: bytes, max_size: int) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = d.decompress(data, max_size + 1)
    if len(out) > max_size or d.unconsumed_tail:
        raise CompressionError(f"gzip data expands beyond the {max_size} limit")
    return out


def _xerial_compress(data: bytes) -> bytes:
    parts = [_XERIAL_MAGIC, struct.pack(">ii", 1, 1)]
    for start in range(0, len(data), _XERIAL_BLOCK) or [0]:
        block = bytes(cramjam.snappy.compress_raw(data[start:start + _XERIAL_BLOCK]))
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)
    return b"".join(parts)


def _raw_snappy(block: bytes, max_size: int) -> bytes:
    # the raw format starts with the uncompressed length as a varint: check it before allocating
    n = shift = 0
    for byte in block[:5]:
        n |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    if n > max_size:
        raise CompressionError(f"snappy block claims {n} bytes, over the {max_size} limit")
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_decompress(data: bytes, max_size: int) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return _raw_snappy(data, max_size)
    pos, out, total = 16, [], 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise CompressionError("truncated xerial snappy block length")
        n = struct.unpack_from(">i", data, pos)[0]
        pos += 4
        if n < 0 or pos + n > len(data):
            raise CompressionError(f"xerial snappy block of {n} bytes overruns the data")
        block = _raw_snappy(data[pos:pos + n], max_size - total)
        total += len(block)
        out.append(block)
        pos += n
    return b"".join(out)
