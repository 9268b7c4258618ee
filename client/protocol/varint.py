"""Variable-length integers.

Two kinds, never to be mixed up (Kafka's protocol/types/Type.java and utils/ByteUtils.java):

- *unsigned* varints: KIP-482 compact lengths, counts and tagged-field headers in the protocol
  (``read_uvarint`` / ``write_uvarint``, the names the frame codec imports);
- *zigzag* signed varints (int32) and varlongs (int64): the numbers inside record batches
  (``read_varint`` / ``write_varint``, ``read_varlong`` / ``write_varlong``; Kafka's
  ``ByteUtils.readVarint`` etc.).

Readers take a buffer (bytes, bytearray or memoryview) and a position and return
``(value, new_position)``. They are bounded: at most 5 bytes for a 32-bit value, 10 for a 64-bit
one, and a zigzag value must fit its width. Truncated, overlong or out-of-range input raises
``ValueError`` (the record and frame decoders turn it into their own error naming the offset).
Writers raise ``ValueError`` for a value the type cannot hold.
"""

from __future__ import annotations

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_UINT32_MAX = (1 << 32) - 1
_UINT64_MAX = (1 << 64) - 1
_LIMIT = {5: _UINT32_MAX, 10: _UINT64_MAX}  # max_bytes -> largest value that width may carry


def read_uvarint(buf, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Unsigned varint at ``pos``: (value, position after it). At most ``max_bytes`` bytes."""
    try:
        byte = buf[pos]
    except IndexError:
        raise ValueError(f"truncated varint at {pos}") from None
    if byte < 0x80:  # one byte: nearly every length and count
        return byte, pos + 1
    value = byte & 0x7F
    shift = 7
    end = pos + max_bytes
    pos += 1
    while pos < end:
        try:
            byte = buf[pos]
        except IndexError:
            raise ValueError(f"truncated varint at {pos}") from None
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            limit = _LIMIT.get(max_bytes, _UINT64_MAX)
            if value > limit:  # Java would silently drop the high bits; we refuse them
                raise ValueError(f"varint at {end - max_bytes} does not fit {limit.bit_length()} bits")
            return value, pos
        shift += 7
    raise ValueError(f"varint longer than {max_bytes} bytes at {end - max_bytes}")


def read_uvarlong(buf, pos: int) -> tuple[int, int]:
    """Unsigned 64-bit varint (at most 10 bytes)."""
    return read_uvarint(buf, pos, 10)


def write_uvarint(n: int) -> bytes:
    """Unsigned varint bytes of ``n`` (LEB128 shape: low 7-bit group first)."""
    if n < 0:
        raise ValueError(f"unsigned varint cannot hold {n}")
    if n < 0x80:
        return _BYTE[n]
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_BYTE = [bytes((i,)) for i in range(128)]


def zigzag(n: int) -> int:
    """Signed -> unsigned (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...), for 64-bit two's complement."""
    return ((n << 1) ^ (n >> 63)) & _UINT64_MAX


def unzigzag(u: int) -> int:
    return (u >> 1) ^ -(u & 1)


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Zigzag signed 32-bit varint (at most 5 bytes)."""
    raw, end = read_uvarint(buf, pos, 5)
    return (raw >> 1) ^ -(raw & 1), end


def read_varlong(buf, pos: int) -> tuple[int, int]:
    """Zigzag signed 64-bit varlong (at most 10 bytes)."""
    raw, end = read_uvarint(buf, pos, 10)
    return (raw >> 1) ^ -(raw & 1), end


# Small values are by far the most common inside records (lengths, deltas, -1 for null), so
# their encodings are precomputed: index ``n + _SMALL_BIAS`` holds the bytes of ``n``.
_SMALL_BIAS = 64
SMALL_LIMIT = 16384  # records.py indexes ``SMALL[n + 64]`` directly for -64 <= n < SMALL_LIMIT
SMALL: list[bytes] = []


def _write_zigzag(n: int) -> bytes:
    return write_uvarint(zigzag(n))


def _small_table() -> list[bytes]:
    """The table, written column by column: calling ``_write_zigzag`` 16,448 times took 7 ms of
    every process's start (the emulator's included), a loop over the values 3 ms, this 1.5
    (tests/client/protocol/test_records.py checks every entry). The zigzag value of n is 2n for
    n >= 0 and -2n - 1 below; every one below 2 * SMALL_LIMIT fits three varint bytes, whose low
    byte (even, continuation bit set) cycles through 64 values as n counts up."""
    one = bytes(range(127, 0, -2)) + bytes(range(0, 128, 2))   # -64..63: a single byte
    low = bytes(range(0x80, 0x100, 2))
    # 64..8191: u = 2n in [128, 16384), two bytes; the second is n >> 6
    two = bytearray(2 * (8192 - 64))
    two[0::2] = low * 127
    two[1::2] = b"".join(bytes((k,)) * 64 for k in range(1, 128))
    # 8192..16383: u = 2n in [16384, 32768), three bytes
    three = bytearray(3 * (SMALL_LIMIT - 8192))
    three[0::3] = low * 128
    three[1::3] = b"".join(bytes((k & 0x7F | 0x80,)) * 64 for k in range(128, 256))
    three[2::3] = b"".join(bytes((k >> 7,)) * 64 for k in range(128, 256))
    b2, b3 = bytes(two), bytes(three)   # slices of bytes are bytes (of a bytearray, bytearrays)
    return ([one[i:i + 1] for i in range(128)] + [b2[i:i + 2] for i in range(0, len(b2), 2)]
            + [b3[i:i + 3] for i in range(0, len(b3), 3)])


SMALL.extend(_small_table())
assert SMALL[-1 + _SMALL_BIAS] == _write_zigzag(-1) and SMALL[-1] == _write_zigzag(SMALL_LIMIT - 1)


def write_varint(n: int) -> bytes:
    """Zigzag signed 32-bit varint bytes of ``n``."""
    if -_SMALL_BIAS <= n < SMALL_LIMIT:
        return SMALL[n + _SMALL_BIAS]
    if not _INT32_MIN <= n <= _INT32_MAX:
        raise ValueError(f"varint cannot hold {n} (int32)")
    return _write_zigzag(n)


def write_varlong(n: int) -> bytes:
    """Zigzag signed 64-bit varlong bytes of ``n``."""
    if -_SMALL_BIAS <= n < SMALL_LIMIT:
        return SMALL[n + _SMALL_BIAS]
    if not _INT64_MIN <= n <= _INT64_MAX:
        raise ValueError(f"varlong cannot hold {n} (int64)")
    return _write_zigzag(n)
