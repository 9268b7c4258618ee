"""Kafka's record-batch compression codecs, via cramjam: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.

- gzip: one gzip stream (Java's GZIPOutputStream); several concatenated members are read too.
- snappy: the Java client and kafka-python write the xerial framing (magic ``\\x82SNAPPY\\x00``,
  int32 version, int32 min-compatible version, then int32-length-prefixed raw snappy blocks);
  librdkafka writes one raw snappy block. We read both and write xerial, which every client
  reads (Java's xerial SnappyInputStream also falls back to raw).
- lz4: the LZ4 *frame* format (Java's Lz4BlockOutputStream; cramjam writes independent 64 KB
  blocks with a content checksum, which Java's reader accepts).
- zstd: standard zstd frames.

Decompression is bounded by ``max_size`` (default 128 MiB) so a small hostile batch cannot
expand into gigabytes: gzip streams with a length cap, snappy checks each block's length
preamble before decompressing, lz4 and zstd decompress into a buffer that grows geometrically
up to ``max_size`` and fail when the data wants more. Every failure is a ``CompressionError``;
data that would expand past the limit raises its subclass ``DecompressedTooLarge`` (a bound, not
corruption: the broker answers it differently).
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
_XERIAL_HEADER = struct.Struct(">8sii")  # magic, version 1, min compatible version 1
_XERIAL_BLOCK = 32 * 1024  # the block size Java's xerial SnappyOutputStream uses
_I32 = struct.Struct(">i")
_FIRST_GUESS = 64 * 1024
_GROWTH = 8
# cramjam raises DecompressionError for bad data and OSError for a frame cut short
_CRAMJAM_ERRORS = (cramjam.DecompressionError, OSError, ValueError)
_NO_ROOM = "failed to write whole buffer"  # cramjam's error when the output buffer is full


class CompressionError(ValueError):
    """Unknown codec, data that does not decompress, or data that expands past the limit."""


class DecompressedTooLarge(CompressionError):
    """The data would expand past ``max_size``."""


def codec_code(name_or_code: str | int) -> int:
    """Kafka's codec id from an id or a ``compression.type`` name ("gzip", "none", ...)."""
    if isinstance(name_or_code, int):
        if name_or_code not in NAMES:
            raise CompressionError(f"unknown compression codec {name_or_code}")
        return name_or_code
    try:
        return CODES[name_or_code.lower()]
    except (KeyError, AttributeError):
        raise CompressionError(f"unknown compression type {name_or_code!r} (none, gzip, snappy, lz4, zstd)") from None


def compress(codec: int, data) -> bytes:
    """``data`` compressed as one block in the codec's Kafka format."""
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


def decompress(codec: int, data, max_size: int = DEFAULT_MAX_SIZE) -> bytes:
    """``data`` decompressed; ``CompressionError`` if corrupt or larger than ``max_size``."""
    if codec == NONE:
        out = bytes(data)
    elif codec == GZIP:
        out = _gunzip(data, max_size)
    elif codec == SNAPPY:
        out = _snappy_decompress(bytes(data), max_size)
    elif codec == LZ4:
        out = _bounded_into(cramjam.lz4.decompress_into, "lz4", data, max_size)
    elif codec == ZSTD:
        out = _bounded_into(cramjam.zstd.decompress_into, "zstd", data, max_size)
    else:
        raise CompressionError(f"unknown compression codec {codec}")
    if len(out) > max_size:
        raise DecompressedTooLarge(f"{NAMES[codec]} data expands to {len(out)} bytes, over the {max_size} limit")
    return out


def _bounded_into(decompress_into, name: str, data, max_size: int) -> bytes:
    """Decompress into a buffer of at most ``max_size`` bytes. cramjam streams into the buffer and
    fails once it is full, so a bomb costs at most ``max_size`` of memory and stops early."""
    cap = min(max_size, max(_FIRST_GUESS, len(data) * _GROWTH))
    while True:
        buf = bytearray(cap)
        try:
            n = decompress_into(data, buf)
        except _CRAMJAM_ERRORS as exc:
            if _NO_ROOM not in str(exc):  # corrupt, not short of room: a bigger buffer would not help
                raise CompressionError(f"{name} data does not decompress: {exc}") from None
            if cap < max_size:
                cap = min(max_size, cap * _GROWTH)
                continue
            raise DecompressedTooLarge(f"{name} data does not decompress within the {max_size}-byte limit") from None
        return bytes(memoryview(buf)[:n])


def _gunzip(data, max_size: int) -> bytes:
    out: list[bytes] = []
    total = 0
    rest = bytes(data)
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            chunk = d.decompress(rest, max_size - total + 1)
        except zlib.error as exc:
            raise CompressionError(f"gzip data does not decompress: {exc}") from None
        total += len(chunk)
        if total > max_size or d.unconsumed_tail:
            raise DecompressedTooLarge(f"gzip data expands beyond the {max_size}-byte limit")
        if not d.eof:
            raise CompressionError("gzip data is truncated")
        out.append(chunk)
        rest = d.unused_data
        if not rest:
            return b"".join(out)


def _xerial_compress(data) -> bytes:
    data = memoryview(data)
    parts = [_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1)]
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[start:start + _XERIAL_BLOCK]))
        parts.append(_I32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _raw_snappy(block: bytes, budget: int) -> bytes:
    try:
        # the raw format starts with the uncompressed length: check it before allocating
        claimed = cramjam.snappy.decompress_raw_len(block)
    except _CRAMJAM_ERRORS as exc:
        raise CompressionError(f"snappy data does not decompress: {exc}") from None
    if claimed > budget:
        raise DecompressedTooLarge(f"snappy block claims {claimed} bytes, over the remaining limit of {budget}")
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except _CRAMJAM_ERRORS as exc:
        raise CompressionError(f"snappy data does not decompress: {exc}") from None


def _snappy_decompress(data: bytes, max_size: int) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return _raw_snappy(data, max_size)
    if len(data) < _XERIAL_HEADER.size:
        raise CompressionError("truncated xerial snappy header")
    pos, out, total = _XERIAL_HEADER.size, [], 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise CompressionError("truncated xerial snappy block length")
        n = _I32.unpack_from(data, pos)[0]
        pos += 4
        if n < 0 or pos + n > len(data):
            raise CompressionError(f"xerial snappy block of {n} bytes overruns the data")
        block = _raw_snappy(data[pos:pos + n], max_size - total)
        total += len(block)
        out.append(block)
        pos += n
    return b"".join(out)
