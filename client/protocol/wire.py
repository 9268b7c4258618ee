"""Primitive readers and writers that compiled codec structs call.

Every reader bounds a claimed length by the bytes actually present before using it, so hostile
input can never make us allocate by a claimed size or loop on a claimed count.
"""

from __future__ import annotations

import struct
import uuid
from io import BytesIO
from typing import Any

from client.protocol.varint import write_uvarint as write_uvarint_bytes


class DecodeError(ValueError):
    """Raised inside decoding; the codec turns it into CorruptFrameError with the offset."""


class EncodeError(ValueError):
    """A value that cannot be written in the target version."""


class Message(dict):
    """A decoded message or struct: a dict with attribute access (``msg.topic_data``)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ZERO_UUID = uuid.UUID(int=0)


def read_exact(io: BytesIO, n: int) -> bytes:
    data = io.read(n)
    if len(data) != n:
        raise DecodeError(f"needed {n} bytes, {len(data)} left")
    return data


def remaining(io: BytesIO, this: dict) -> int:
    return this["_end"] - io.tell()


def read_uvarint(io: BytesIO) -> int:
    first = io.read(1)
    if first and first[0] < 0x80:  # lengths and counts below 127: the common case
        return first[0]
    io.seek(-len(first), 1)
    shift = 0
    value = 0
    for _ in range(5):
        b = io.read(1)
        if not b:
            raise DecodeError("truncated unsigned varint")
        byte = b[0]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
        shift += 7
    raise DecodeError("unsigned varint longer than 5 bytes")


def uvarint_bytes(n: int) -> bytes:
    if n < 0:
        raise EncodeError(f"unsigned varint cannot hold {n}")
    return write_uvarint_bytes(n)


_UVARINT_SMALL = [uvarint_bytes(i) for i in range(128)]


def write_uvarint(io: BytesIO, n: int) -> None:
    io.write(_UVARINT_SMALL[n] if 0 <= n < 128 else uvarint_bytes(n))


# -- lengths -----------------------------------------------------------------------------------

def _length(io: BytesIO, this: dict, compact: bool, wide: bool, nullable: bool, what: str) -> int:
    """Read a (possibly compact) length; -1 means null. Bounds it by the bytes present."""
    if compact:
        n = read_uvarint(io) - 1
    elif wide:
        n = _I32.unpack(read_exact(io, 4))[0]
    else:
        n = _I16.unpack(read_exact(io, 2))[0]
    if n < 0:
        if n == -1 and nullable:
            return -1
        raise DecodeError(f"invalid {what} length {n}")
    if n > this["_end"] - io.tell():
        raise DecodeError(f"{what} length {n} exceeds the {this['_end'] - io.tell()} bytes left")
    return n


def _write_length(io: BytesIO, n: int, compact: bool, wide: bool) -> None:
    if compact:
        write_uvarint(io, n + 1)
    elif wide:
        io.write(_I32.pack(n))
    else:
        io.write(_I16.pack(n))


# -- strings and bytes -------------------------------------------------------------------------

def read_string(io, this, compact: bool, nullable: bool):
    n = _length(io, this, compact, False, nullable, "string")
    if n < 0:
        return None
    if n > 0x7FFF:  # Kafka refuses these whatever the prefix could claim; so must we, or we accept what no peer would
        raise DecodeError(f"string length {n} is over Kafka's limit of 32767 bytes")
    try:
        return io.read(n).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"string is not UTF-8: {exc.reason}") from None


def write_string(io, value, compact: bool, nullable: bool, name: str):
    if value is None:
        if not nullable:
            raise EncodeError(f"{name} may not be null in this version")
        _write_length(io, -1, compact, False)
        return
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise EncodeError(f"{name} is {len(data)} bytes, over Kafka's string limit of 32767")
    _write_length(io, len(data), compact, False)
    io.write(data)


def read_bytes(io, this, compact: bool, nullable: bool):
    n = _length(io, this, compact, True, nullable, "bytes")
    if n < 0:
        return None
    return io.read(n)


def read_records(io, this, compact: bool, nullable: bool):
    """A records field; a zero-copy view of the frame when the caller asked for one (``_view``:
    the broker's produce path, where a 1 MB batch would otherwise be copied out of the frame)."""
    n = _length(io, this, compact, True, nullable, "records")
    if n < 0:
        return None
    view = this.get("_view")
    if view is None:
        return io.read(n)
    pos = io.tell()
    io.seek(pos + n)
    return view[pos:pos + n]


class ViewReader:
    """The part of ``BytesIO`` the parsers use (read, tell, seek), over a bytearray without
    copying it: ``BytesIO(bytearray)`` copies the whole buffer, and the broker receives a large
    frame straight into a bytearray of its size (broker_emu/socket_io.py) so as not to copy a
    megabyte batch twice. Each read copies only the field it reads."""

    __slots__ = ("_view", "_pos")

    def __init__(self, buffer: bytes | bytearray | memoryview):
        self._view = memoryview(buffer)
        self._pos = 0

    def read(self, n: int = -1) -> bytes:
        start = self._pos
        end = len(self._view) if n is None or n < 0 else min(start + n, len(self._view))
        self._pos = end
        return self._view[start:end].tobytes()

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = 0) -> int:
        self._pos = max(0, pos if whence == 0 else self._pos + pos if whence == 1 else len(self._view) + pos)
        return self._pos


def reader_of(frame: bytes | bytearray) -> BytesIO | ViewReader:
    """A reader over ``frame`` that does not copy it."""
    return BytesIO(frame) if type(frame) is bytes else ViewReader(frame)


SPLICE_MIN = 65_536   # a bytes value this large is not copied into a FrameIO (see there)


class FrameIO(BytesIO):
    """A frame under construction whose large bytes values (record batches) are kept aside as
    they are instead of being copied in: ``parts()`` gives the frame as a list of buffers (the
    small writes between them, and the large values themselves) to send one after another.
    Copying a megabyte batch into the frame cost more than encoding it: every fresh large
    buffer is page faults."""

    def __init__(self) -> None:
        super().__init__()
        self.spliced: list[tuple[int, bytes]] = []   # (offset in this buffer, value)
        self.spliced_bytes = 0

    def splice(self, value: bytes) -> None:
        self.spliced.append((self.tell(), value))
        self.spliced_bytes += len(value)

    def parts(self) -> list[bytes]:
        """The frame (size prefix patched to count the spliced values too)."""
        buf = self.getbuffer()
        _I32.pack_into(buf, 0, len(buf) - 4 + self.spliced_bytes)
        del buf
        data = self.getvalue()
        if not self.spliced:
            return [data]
        parts: list[bytes] = []
        at = 0
        for offset, value in self.spliced:
            parts.append(data[at:offset])
            parts.append(value)
            at = offset
        parts.append(data[at:])
        return parts


def write_bytes(io, value, compact: bool, nullable: bool, name: str):
    if value is None:
        if not nullable:
            raise EncodeError(f"{name} may not be null in this version")
        _write_length(io, -1, compact, True)
        return
    _write_length(io, len(value), compact, True)
    if type(io) is FrameIO and type(value) is bytes and len(value) >= SPLICE_MIN:   # immutable: safe to send later
        io.splice(value)
    else:
        io.write(value)


def read_uuid(io) -> uuid.UUID:
    data = read_exact(io, 16)
    return _ZERO_UUID if data == bytes(16) else uuid.UUID(bytes=data)


def write_uuid(io, value) -> None:
    if value is None:
        value = _ZERO_UUID
    io.write(value.bytes if isinstance(value, uuid.UUID) else bytes(value))


# -- arrays ------------------------------------------------------------------------------------

def read_array_count(io, this, compact: bool, nullable: bool) -> int:
    """Element count, or -1 for null. Every element takes at least one byte on the wire, except
    all-absent structs, which Kafka never puts in arrays; so a count over the bytes left is corrupt."""
    return _length(io, this, compact, True, nullable, "array")


def read_int_array(io, this, fmt: str, size: int, compact: bool, nullable: bool):
    """An array of fixed-width numbers, read with one unpack."""
    n = _length(io, this, compact, True, nullable, "array")
    if n < 0:
        return None
    return list(struct.unpack(f">{n}{fmt}", read_exact(io, n * size)))


def write_int_array(io, value, fmt: str, compact: bool, nullable: bool, name: str) -> None:
    if write_array_count(io, value, compact, nullable, name):
        io.write(struct.pack(f">{len(value)}{fmt}", *value))


def write_array_count(io, value, compact: bool, nullable: bool, name: str) -> bool:
    """Write the count; returns False when the array is null (nothing more to write)."""
    if value is None:
        if not nullable:
            raise EncodeError(f"{name} may not be null in this version")
        _write_length(io, -1, compact, True)
        return False
    _write_length(io, len(value), compact, True)
    return True


# -- nullable structs (a presence byte, -1 = null) --------------------------------------------

def read_presence(io) -> bool:
    b = read_exact(io, 1)[0]
    if b == 0xFF:
        return False
    if b == 1:
        return True
    raise DecodeError(f"invalid nullable-struct marker {b}")


# -- tagged fields -----------------------------------------------------------------------------

def read_tagged(io, this, result: dict, known: dict) -> None:
    """Read a tagged-field section into ``result``; unknown tags are kept in ``_unknown_tags``."""
    count = read_uvarint(io)
    if count == 0:
        return
    if count > this["_end"] - io.tell():
        raise DecodeError(f"tagged field count {count} exceeds the bytes left")
    last = -1
    anomalies = this.get("_anomalies")
    for _ in range(count):
        tag = read_uvarint(io)
        if tag <= last:
            # Kafka's generated readers (MessageDataGenerator: a switch per tag) take tags in
            # any order, a repeated known tag overwriting the earlier value; a lenient decode
            # (the broker's) does the same and records it, a strict one refuses
            if anomalies is None:
                raise DecodeError(f"tagged fields out of order ({tag} after {last})")
            anomalies.append(f"tagged field {tag} after {last} (out of order or repeated)")
        last = max(last, tag)
        size = read_uvarint(io)
        if size > this["_end"] - io.tell():
            raise DecodeError(f"tagged field {tag} size {size} exceeds the bytes left")
        raw = io.read(size)
        entry = known.get(tag)
        if entry is None:
            result.setdefault("_unknown_tags", []).append((tag, raw))
            continue
        name, parse = entry
        sub = BytesIO(raw)
        value = parse(sub, {"_end": size, "_anomalies": anomalies} if anomalies is not None else {"_end": size})
        if sub.tell() != size:
            raise DecodeError(f"tagged field {name} (tag {tag}) has {size - sub.tell()} stray bytes")
        result[name] = value


def write_tagged(io, obj, known: tuple) -> None:
    """``known``: (tag, name, default, build) sorted by tag. Defaults are not written."""
    items = []
    for tag, name, default, build in known:
        value = obj.get(name, default)
        if value == default:
            continue
        sub = BytesIO()
        build(value, sub, None)
        items.append((tag, sub.getvalue()))
    unknown = obj.get("_unknown_tags")
    if unknown:
        items.extend(unknown)
        items.sort(key=lambda item: item[0])
    write_uvarint(io, len(items))
    for tag, raw in items:
        write_uvarint(io, tag)
        write_uvarint(io, len(raw))
        io.write(raw)
