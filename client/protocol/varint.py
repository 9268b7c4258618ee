"""Variable-length integers.

Two kinds, never to be mixed up: *unsigned* varints (KIP-482 compact lengths and tagged-field
headers in the protocol) and *zigzag* signed varints/varlongs (numbers inside record batches).
Readers take a buffer and a position and return ``(value, new_position)``; they are bounded
(5 bytes for 32-bit, 10 for 64-bit) and raise ``ValueError`` on truncation or overlong input.
"""

from __future__ import annotations


def read_uvarint(buf, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    value = shift = 0
    start = pos
    end = min(len(buf), pos + max_bytes)
    while pos < end:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    if pos - start == max_bytes:
        raise ValueError(f"varint longer than {max_bytes} bytes")
    raise ValueError("truncated varint")


def write_uvarint(n: int) -> bytes:
    if n < 0:
        raise ValueError(f"unsigned varint cannot hold {n}")
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Zigzag signed 32-bit varint."""
    raw, pos = read_uvarint(buf, pos, 5)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf, pos: int) -> tuple[int, int]:
    """Zigzag signed 64-bit varlong."""
    raw, pos = read_uvarint(buf, pos, 10)
    return (raw >> 1) ^ -(raw & 1), pos


def zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


# Small zigzag values are by far the most common (lengths, deltas): precompute their bytes.
_SMALL = {n: write_uvarint(zigzag(n)) for n in range(-64, 8192)}


def write_varint(n: int) -> bytes:
    small = _SMALL.get(n)
    return small if small is not None else write_uvarint(zigzag(n) & 0xFFFFFFFFFFFFFFFF)


write_varlong = write_varint
