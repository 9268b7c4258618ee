"""CRC-valid record batches with whatever records section, attributes and header fields a test
wants: the input of the record-validation tests (``LogValidator``'s rules) and of the property
test that feeds arbitrary bytes through Produce and then every read path."""

from __future__ import annotations

import crc32c

from client.protocol.records import HEADER, HEADER_SIZE


def crafted_batch(records: bytes, *, count: int = 1, attributes: int = 0, last_offset_delta: int | None = None,
                  base_timestamp: int = 1000, max_timestamp: int | None = None, producer_id: int = -1,
                  producer_epoch: int = -1, base_sequence: int = -1, base_offset: int = 0) -> bytes:
    """A magic-2 batch around ``records`` (taken as the on-wire records section, compressed or
    not) with a correct CRC-32C, so it passes every check that does not look inside."""
    header = bytearray(HEADER.pack(base_offset, HEADER_SIZE - 12 + len(records), -1, 2, 0, attributes,
                                   count - 1 if last_offset_delta is None else last_offset_delta, base_timestamp,
                                   base_timestamp if max_timestamp is None else max_timestamp,
                                   producer_id, producer_epoch, base_sequence, count))
    crc = crc32c.crc32c(records, crc32c.crc32c(bytes(header[21:])))
    header[17:21] = crc.to_bytes(4, "big")
    return bytes(header) + records


def recrc(batch: bytes | bytearray) -> bytes:
    """The batch with its CRC-32C recomputed, so a mutation inside it reaches the record reader."""
    out = bytearray(batch)
    out[17:21] = crc32c.crc32c(bytes(out[21:])).to_bytes(4, "big")
    return bytes(out)


def zigzag(n: int) -> bytes:
    """Kafka's zigzag varint (varlong) bytes of ``n``."""
    z = (n << 1) ^ (n >> 63)
    z &= (1 << 64) - 1
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def record(value: bytes | None = b"v", key: bytes | None = None, ts_delta: int = 0, offset_delta: int = 0,
           headers: list[tuple[bytes, bytes | None]] = (), attributes: int = 0) -> bytes:
    """One record as DefaultRecord writes it: length, attributes, deltas, key, value, headers."""
    body = bytearray([attributes])
    body += zigzag(ts_delta) + zigzag(offset_delta)
    for field in (key, value):
        body += zigzag(-1) if field is None else zigzag(len(field)) + field
    body += zigzag(len(headers))
    for hk, hv in headers:
        body += zigzag(len(hk)) + hk
        body += zigzag(-1) if hv is None else zigzag(len(hv)) + hv
    return zigzag(len(body)) + bytes(body)
