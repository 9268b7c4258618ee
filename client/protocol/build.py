"""Turn a declarative schema (``client.protocol.schema``) into a compiled struct per version.

Structs are built once per (api, version, direction) and cached; ``compiled=False`` gives the
interpreted struct (tests check both paths agree).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from client.protocol.compiler import Compiled, Shape
from client.protocol.constructs import KArray, KBytes, KInt, KString, KStruct, KUuid
from client.protocol.messages import ALL_APIS
from client.protocol.schema import INT_TYPES, Field
from client.protocol.wire import Message


def field_construct(f: Field, version: int, flexible: bool) -> Shape:
    nullable = f.nullable_in(version)
    if f.is_array:
        element = _element(f, version, flexible, nullable=False)
        return KArray(f.name, element, compact=flexible, nullable=nullable)
    return _element(f, version, flexible, nullable)


def _element(f: Field, version: int, flexible: bool, nullable: bool) -> Shape:
    t = f.element_type
    if t in INT_TYPES:
        return KInt(INT_TYPES[t])
    if t == "string":
        return KString(f.name, compact=flexible, nullable=nullable)
    if t in ("bytes", "records"):
        return KBytes(f.name, compact=flexible, nullable=nullable, records=t == "records")
    if t == "uuid":
        return KUuid()
    if t == "struct":
        return struct_construct(f.fields, version, flexible, nullable=nullable)
    raise ValueError(f"unknown field type {f.type!r} for {f.name}")


def default_of(f: Field) -> Any:
    """Default value of a field; a struct's default is the struct of its fields' defaults."""
    if f.type == "struct" and f.default is None and not f.nullable:
        return Message({sub.name: default_of(sub) for sub in f.fields})
    return f.default_value()


def struct_construct(fields: tuple[Field, ...], version: int, flexible: bool, nullable: bool = False) -> KStruct:
    wire_fields, absent = [], {}
    tagged: list[tuple[int, str, Any, Any]] = []
    for f in fields:
        tag = f.tag if flexible and f.tagged_in(version) else None
        if tag is not None:
            tagged.append((tag, f.name, field_construct(f, version, True), default_of(f)))
        elif f.present_in(version):
            wire_fields.append((f.name, field_construct(f, version, flexible), default_of(f)))
        else:
            absent[f.name] = default_of(f)
    tagged.sort(key=lambda item: item[0])
    return KStruct(wire_fields, absent, tagged if flexible else None, nullable=nullable)


@lru_cache(maxsize=None)
def message_construct(api_key: int, version: int, direction: str, compiled: bool = True) -> Shape | Compiled:
    """The body construct of one API version; ``direction`` is "request" or "response"."""
    api = ALL_APIS[api_key]
    fields = api.request if direction == "request" else api.response
    con = struct_construct(fields, version, api.is_flexible(version))
    return con.compile() if compiled else con


@lru_cache(maxsize=None)
def data_construct(name: str, version: int, compiled: bool = True) -> Shape | Compiled:
    """Constructs for the consumer protocol's versioned blobs."""
    from client.protocol import messages

    data = getattr(messages, name)
    con = struct_construct(data.fields, version, data.is_flexible(version))
    return con.compile() if compiled else con
