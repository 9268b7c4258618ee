"""Declarative message schemas: one description per API serves every version.

The generated modules in ``client.protocol.messages`` are written in these terms. A ``Field``
knows in which versions it exists, is nullable, or is tagged; ``build.py`` turns a ``Struct``
into a construct for one version.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from functools import cached_property
from typing import Any


class _Null:
    """Marks an explicit ``"default": "null"`` (distinct from "no default given")."""

    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()

INT_TYPES = {
    "int8": "b", "int16": "h", "int32": "i", "int64": "q",
    "uint16": "H", "uint32": "I", "float64": "d", "bool": "?",
}
VARLEN_TYPES = {"string", "bytes", "records", "uuid"}


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``hi=None`` means open-ended ("3+"), ``lo=None`` "none"."""

    lo: int | None
    hi: int | None

    @classmethod
    def parse(cls, text: str | None) -> "Versions":
        if text is None or text == "none" or text == "":
            return cls(None, None)
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            lo, hi = text.split("-")
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: int) -> bool:
        if self.lo is None:
            return False
        return self.lo <= version and (self.hi is None or version <= self.hi)


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # a primitive, "struct", "[]<primitive>" or "[]struct"
    versions: str = "0+"
    nullable: str | None = None
    tag: int | None = None
    tagged: str | None = None
    default: Any = None
    fields: tuple["Field", ...] = ()

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    def present_in(self, version: int) -> bool:
        return version in Versions.parse(self.versions)

    def nullable_in(self, version: int) -> bool:
        return version in Versions.parse(self.nullable)

    def tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in Versions.parse(self.tagged)

    def default_value(self) -> Any:
        """The value a field takes when absent from a version (Kafka's generator rules)."""
        if self.default is NULL:
            return None
        if self.default is not None:
            return self.default
        if self.is_array:
            return []
        t = self.element_type
        if t == "bool":
            return False
        if t in INT_TYPES:
            return 0.0 if t == "float64" else 0
        if t == "string":
            return ""
        if t == "bytes":
            return b""
        if t == "uuid":
            import uuid
            return uuid.UUID(int=0)
        return None  # records and structs


class _Versioned:
    versions: str
    flexible: str

    @cached_property   # read by the codec three times a request: parsed once
    def version_range(self) -> tuple[int, int]:
        v = Versions.parse(self.versions)
        assert v.lo is not None and v.hi is not None
        return v.lo, v.hi

    def is_flexible(self, version: int) -> bool:
        return version in Versions.parse(self.flexible)


@dataclass(frozen=True)
class Api(_Versioned):
    key: int
    name: str
    versions: str
    flexible: str
    request: tuple[Field, ...]
    response: tuple[Field, ...]
    latest_unstable: bool = False


@dataclass(frozen=True)
class DataType(_Versioned):
    """A versioned, non-RPC blob (the consumer protocol's subscription and assignment)."""

    name: str
    versions: str
    flexible: str
    fields: tuple[Field, ...] = dc_field(default=())
