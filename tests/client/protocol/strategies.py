"""Hypothesis strategies derived from the codec's declarative schemas, one per (api, version,
direction), and the value a decode must give back for a generated message.

The strategy walks the ``Field`` tree of ``client.protocol.messages`` for one version: a field is
on the wire when it is present in that version (or tagged in a flexible one); nullable fields
may be None only in their nullable versions; numbers cover their type's whole range with the
edges weighted in. ``expected_decode`` states the decoding contract independently of the
codec's own default machinery: every field of the schema appears, absent ones with Kafka's
defaults (0, False, "", [], zero UUID, null records, a struct of its fields' defaults, or the
schema's explicit default).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from client.protocol.messages import (
    ALL_APIS,
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
)
from client.protocol.schema import NULL, Field

INT_BOUNDS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
ZERO_UUID = uuid.UUID(int=0)
BLOBS = {"subscription": CONSUMER_PROTOCOL_SUBSCRIPTION, "assignment": CONSUMER_PROTOCOL_ASSIGNMENT}

# (path, field) -> a strategy replacing the generic one, or None. ``path`` is the tuple of
# field names from the message root. Used by the kio differential test for fields whose values
# kio checks for meaning (error codes, timestamps).
Override = Callable[[tuple[str, ...], Field], "st.SearchStrategy | None"]


@dataclass(frozen=True)
class Options:
    sparse: bool = False  # leave out some fields: the encoder must fill their defaults
    unknown_tags: bool = False  # add tags the schema does not know: they must survive a round trip
    override: Override | None = None
    max_list: int = 3


def cases() -> Iterator[tuple[int, int, str]]:
    """Every (api_key, version, direction) the codec knows."""
    for key, api in sorted(ALL_APIS.items()):
        lo, hi = api.version_range
        for version in range(lo, hi + 1):
            for direction in ("request", "response"):
                yield key, version, direction


def case_id(case) -> str:
    key, version, direction = case
    return f"{ALL_APIS[key].name}-v{version}-{direction}"


def message_fields(key: int, direction: str) -> tuple[Field, ...]:
    api = ALL_APIS[key]
    return api.request if direction == "request" else api.response


def flexible(key: int, version: int) -> bool:
    return ALL_APIS[key].is_flexible(version)


def on_wire(f: Field, version: int, flex: bool) -> bool:
    return f.present_in(version) or (flex and f.tagged_in(version))


# -- values ------------------------------------------------------------------------------------

def _int(t: str) -> st.SearchStrategy:
    lo, hi = INT_BOUNDS[t]
    edges = sorted({lo, hi, 0, max(lo, -1), min(hi, 1)})
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi))


def scalar(t: str) -> st.SearchStrategy:
    if t in INT_BOUNDS:
        return _int(t)
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "string":
        # any Unicode scalar value (no surrogates: they are not encodable in UTF-8)
        return st.text(max_size=12)
    if t in ("bytes", "records"):
        return st.binary(max_size=24)
    if t == "uuid":
        return st.one_of(st.just(ZERO_UUID), st.uuids(allow_nil=True))
    raise ValueError(f"no strategy for type {t!r}")


def field_strategy(f: Field, version: int, flex: bool, path: tuple[str, ...], opts: Options,
                   depth: int = 0) -> st.SearchStrategy:
    special = opts.override(path, f) if opts.override else None
    if special is not None:
        base = special
    elif f.is_array:
        if f.element_type == "struct":
            elem = struct_strategy(f.fields, version, flex, path, opts, depth + 1)
        else:
            elem = scalar(f.element_type)
        base = st.lists(elem, max_size=max(opts.max_list - depth, 1))
    elif f.type == "struct":
        base = struct_strategy(f.fields, version, flex, path, opts, depth + 1)
    else:
        base = scalar(f.type)
    if f.nullable_in(version):
        return st.one_of(st.none(), base)
    return base


def _unknown_tags(fields: tuple[Field, ...]) -> st.SearchStrategy:
    first = max([f.tag for f in fields if f.tag is not None], default=-1) + 1
    tags = st.lists(st.integers(first, first + 200), unique=True, min_size=1, max_size=3).map(sorted)
    return tags.flatmap(lambda ts: st.tuples(*[st.tuples(st.just(t), st.binary(max_size=6)) for t in ts]).map(list))


def struct_strategy(fields: tuple[Field, ...], version: int, flex: bool, path: tuple[str, ...], opts: Options,
                    depth: int = 0) -> st.SearchStrategy:
    wire = {f.name: field_strategy(f, version, flex, path + (f.name,), opts, depth) for f in fields if on_wire(f, version, flex)}
    optional = {}
    if opts.sparse:
        # a records field not nullable in this version has no default to fall back on (Kafka's
        # generated write throws on null: ShareFetchResponse v1+), so it stays
        required = {n for n in wire for f in fields
                    if f.name == n and f.type == "records" and not f.nullable_in(version)}
        wire, optional = ({n: s for n, s in wire.items() if n in required},
                          {n: s for n, s in wire.items() if n not in required})
    if flex and opts.unknown_tags:
        optional["_unknown_tags"] = _unknown_tags(fields)
    return st.fixed_dictionaries(wire, optional=optional)


def message_strategy(key: int, version: int, direction: str, opts: Options = Options()) -> st.SearchStrategy:
    return struct_strategy(message_fields(key, direction), version, flexible(key, version), (), opts)


def blob_strategy(kind: str, version: int, opts: Options = Options()) -> st.SearchStrategy:
    data = BLOBS[kind]
    return struct_strategy(data.fields, version, data.is_flexible(version), (), opts)


# -- the decoding contract -----------------------------------------------------------------------

def default(f: Field) -> Any:
    """Kafka's default for a field (README of the message schemas, "default")."""
    if f.default is NULL:
        return None
    if f.default is not None:
        return f.default
    if f.is_array:
        return []
    t = f.type
    if t == "struct":
        return {sub.name: default(sub) for sub in f.fields}
    if t == "bool":
        return False
    if t == "float64":
        return 0.0
    if t in INT_BOUNDS:
        return 0
    if t == "string":
        return ""
    if t == "bytes":
        return b""
    if t == "uuid":
        return ZERO_UUID
    if t == "records":
        return None
    raise ValueError(t)


def expected_decode(fields: tuple[Field, ...], version: int, flex: bool, value: dict) -> dict:
    """What decoding the encoding of ``value`` must give: every schema field, the given value
    where the field is on the wire in ``version``, its default otherwise; unknown tags kept."""
    out: dict[str, Any] = {}
    for f in fields:
        if on_wire(f, version, flex) and f.name in value:
            out[f.name] = _expected_value(f, version, flex, value[f.name])
        else:
            out[f.name] = default(f)
    if flex and value.get("_unknown_tags"):
        out["_unknown_tags"] = [tuple(item) for item in value["_unknown_tags"]]
    return out


def _expected_value(f: Field, version: int, flex: bool, v: Any) -> Any:
    if v is None or f.element_type != "struct":
        return list(v) if isinstance(v, (list, tuple)) else v
    if f.is_array:
        return [expected_decode(f.fields, version, flex, item) for item in v]
    return expected_decode(f.fields, version, flex, v)


def expected_message(key: int, version: int, direction: str, value: dict) -> dict:
    return expected_decode(message_fields(key, direction), version, flexible(key, version), value)


def expected_blob(kind: str, version: int, value: dict) -> dict:
    data = BLOBS[kind]
    return expected_decode(data.fields, version, data.is_flexible(version), value)


# -- bytes spelled out by hand (golden and hostile tests) ------------------------------------------
# Deliberately independent of the codec: each helper is the primitive encoding as Kafka's
# protocol/types/Type.java and ByteUtils (zigzag) describe it, nothing more.

def i8(v: int) -> bytes:
    return v.to_bytes(1, "big", signed=True)


def i16(v: int) -> bytes:
    return v.to_bytes(2, "big", signed=True)


def i32(v: int) -> bytes:
    return v.to_bytes(4, "big", signed=True)


def i64(v: int) -> bytes:
    return v.to_bytes(8, "big", signed=True)


def boolean(v: bool) -> bytes:
    return b"\x01" if v else b"\x00"


def uvarint(n: int) -> bytes:
    """Unsigned varint: 7 bits a byte, least significant group first, high bit = more follows."""
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def uuid_(n: int) -> bytes:
    return n.to_bytes(16, "big")


def str16(s: str | None) -> bytes:
    """Classic string: int16 length (-1 = null) + UTF-8."""
    if s is None:
        return i16(-1)
    data = s.encode()
    return i16(len(data)) + data


def bytes32(b: bytes | None) -> bytes:
    """Classic bytes/records: int32 length (-1 = null) + the bytes."""
    return i32(-1) if b is None else i32(len(b)) + b


def arr32(items: list[bytes] | None) -> bytes:
    """Classic array: int32 count (-1 = null) + the already-encoded elements."""
    return i32(-1) if items is None else i32(len(items)) + b"".join(items)


def cstr(s: str | None) -> bytes:
    """Compact string: uvarint(length + 1), 0 = null."""
    if s is None:
        return b"\x00"
    data = s.encode()
    return uvarint(len(data) + 1) + data


def cbytes(b: bytes | None) -> bytes:
    return b"\x00" if b is None else uvarint(len(b) + 1) + b


def carr(items: list[bytes] | None) -> bytes:
    """Compact array: uvarint(count + 1), 0 = null, + the already-encoded elements."""
    return b"\x00" if items is None else uvarint(len(items) + 1) + b"".join(items)


def tags(fields: dict[int, bytes] | None = None) -> bytes:
    """A tagged-field section: count, then (tag, size, value) in increasing tag order. No
    sorting here: the caller writes them in the order given, so disorder can be spelled out."""
    fields = fields or {}
    return uvarint(len(fields)) + b"".join(uvarint(t) + uvarint(len(v)) + v for t, v in fields.items())


NO_TAGS = b"\x00"


def request_header(key: int, version: int, correlation_id: int, client_id: str | None, v2: bool) -> bytes:
    """Request header v1 (v2 adds an empty tagged section; client_id keeps its int16 length)."""
    return i16(key) + i16(version) + i32(correlation_id) + str16(client_id) + (NO_TAGS if v2 else b"")
