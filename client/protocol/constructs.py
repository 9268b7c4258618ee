"""Kafka's wire shapes (numbers, strings, bytes, uuids, arrays, structs), with compiled forms.

Each implements the interpreted path (``_parse``/``_build``) and emits source for the codec's
compiler (``_emitparse``/``_emitbuild``, ``client/protocol/compiler.py``); ``KStruct`` also merges
runs of fixed-width fields into one ``struct.unpack``. The two paths must agree byte for byte (tests/client/protocol checks it).
Context: ``this["_end"]`` is the absolute end of the buffer, used to bound claimed lengths.
"""

from __future__ import annotations

import struct
from typing import Any

from client.protocol import wire
from client.protocol.compiler import Shape
from client.protocol.wire import Message

_PRELUDE = """
from client.protocol import wire as _w
from client.protocol.wire import Message as _M
"""


def _struct_name(fmt: str) -> str:
    return "_S_" + fmt.replace("?", "B_").replace(">", "")


def _emit_struct(code, fmt: str) -> str:
    name = _struct_name(fmt)
    code.append(_PRELUDE)
    code.append(f"{name} = struct.Struct('>{fmt}')\n")
    return name


class KInt(Shape):
    """Fixed-width big-endian number or bool (struct format char ``fmt``)."""

    def __init__(self, fmt: str):
        super().__init__()
        self.fmt = fmt
        self.packer = struct.Struct(">" + fmt)
        self.size = self.packer.size

    def _parse(self, stream, context, path):
        return self.packer.unpack(wire.read_exact(stream, self.size))[0]

    def _build(self, obj, stream, context, path):
        stream.write(self.packer.pack(obj))
        return obj

    def _emitparse(self, code):
        s = _emit_struct(code, self.fmt)
        return f"{s}.unpack(_w.read_exact(io, {self.size}))[0]"

    def _emitbuild(self, code):
        s = _emit_struct(code, self.fmt)
        return f"io.write({s}.pack(obj))"


class KString(Shape):
    def __init__(self, name: str, compact: bool, nullable: bool):
        super().__init__()
        self.fname, self.compact, self.nullable = name, compact, nullable

    def _parse(self, stream, context, path):
        return wire.read_string(stream, context, self.compact, self.nullable)

    def _build(self, obj, stream, context, path):
        wire.write_string(stream, obj, self.compact, self.nullable, self.fname)
        return obj

    def _emitparse(self, code):
        code.append(_PRELUDE)
        return f"_w.read_string(io, this, {self.compact}, {self.nullable})"

    def _emitbuild(self, code):
        code.append(_PRELUDE)
        return f"_w.write_string(io, obj, {self.compact}, {self.nullable}, {self.fname!r})"


class KBytes(Shape):
    """``bytes`` and ``records`` (records stay opaque bytes: client.protocol.records reads them;
    a records field may decode as a memoryview of the frame, see ``wire.read_records``)."""

    def __init__(self, name: str, compact: bool, nullable: bool, records: bool = False):
        super().__init__()
        self.fname, self.compact, self.nullable, self.records = name, compact, nullable, records

    def _parse(self, stream, context, path):
        read = wire.read_records if self.records else wire.read_bytes
        return read(stream, context, self.compact, self.nullable)

    def _build(self, obj, stream, context, path):
        wire.write_bytes(stream, obj, self.compact, self.nullable, self.fname)
        return obj

    def _emitparse(self, code):
        code.append(_PRELUDE)
        read = "read_records" if self.records else "read_bytes"
        return f"_w.{read}(io, this, {self.compact}, {self.nullable})"

    def _emitbuild(self, code):
        code.append(_PRELUDE)
        return f"_w.write_bytes(io, obj, {self.compact}, {self.nullable}, {self.fname!r})"


class KUuid(Shape):
    def _parse(self, stream, context, path):
        return wire.read_uuid(stream)

    def _build(self, obj, stream, context, path):
        wire.write_uuid(stream, obj)
        return obj

    def _emitparse(self, code):
        code.append(_PRELUDE)
        return "_w.read_uuid(io)"

    def _emitbuild(self, code):
        code.append(_PRELUDE)
        return "_w.write_uuid(io, obj)"


class KArray(Shape):
    def __init__(self, name: str, element: Shape, compact: bool, nullable: bool):
        super().__init__()
        self.fname, self.element, self.compact, self.nullable = name, element, compact, nullable

    def _parse(self, stream, context, path):
        n = wire.read_array_count(stream, context, self.compact, self.nullable)
        if n < 0:
            return None
        return [self.element._parse(stream, context, path) for _ in range(n)]

    def _build(self, obj, stream, context, path):
        if wire.write_array_count(stream, obj, self.compact, self.nullable, self.fname):
            for item in obj:
                self.element._build(item, stream, context, path)
        return obj

    def _emitparse(self, code):
        if isinstance(self.element, KInt):
            code.append(_PRELUDE)
            e = self.element
            return f"_w.read_int_array(io, this, {e.fmt!r}, {e.size}, {self.compact}, {self.nullable})"
        fid = code.allocate_id()
        elem = self.element._compileparse(code)
        code.append(f"""
            def parse_karray_{fid}(io, this):
                n = _w.read_array_count(io, this, {self.compact}, {self.nullable})
                if n < 0:
                    return None
                return [{elem} for _ in range(n)]
        """)
        return f"parse_karray_{fid}(io, this)"

    def _emitbuild(self, code):
        if isinstance(self.element, KInt):
            code.append(_PRELUDE)
            return f"_w.write_int_array(io, obj, {self.element.fmt!r}, {self.compact}, {self.nullable}, {self.fname!r})"
        fid = code.allocate_id()
        elem = self.element._compilebuild(code)
        code.append(f"""
            def build_karray_{fid}(obj, io, this):
                if _w.write_array_count(io, obj, {self.compact}, {self.nullable}, {self.fname!r}):
                    for obj in obj:
                        {elem}
        """)
        return f"build_karray_{fid}(obj, io, this)"


class KStruct(Shape):
    """A Kafka struct in one version.

    ``fields``: (name, construct, default) on the wire in order; ``absent``: fields of the API not
    in this version, filled with their defaults when decoding so callers need no version checks;
    ``tagged``: (tag, name, construct, default) sorted by tag, or None in non-flexible versions;
    ``nullable``: a presence byte precedes the struct (Kafka's nullable struct fields).
    """

    def __init__(self, fields, absent: dict, tagged, nullable: bool = False):
        super().__init__()
        self.fields = list(fields)
        self.absent = dict(absent)
        self.tagged = tagged
        self.nullable = nullable

    # interpreted path -------------------------------------------------------------------
    def _parse(self, stream, context, path):
        if self.nullable and not wire.read_presence(stream):
            return None
        # defaults are copied: a caller may mutate a decoded message (the compiled path builds
        # them from literals, so it gets fresh objects the same way)
        result = Message({name: _fresh(value) for name, value in self.absent.items()})
        for name, con, _ in self.fields:
            result[name] = con._parse(stream, context, path)
        if self.tagged is not None:
            for _, name, _, default in self.tagged:
                result[name] = _fresh(default)
            known = {tag: (name, self._tag_parser(con)) for tag, name, con, _ in self.tagged}
            wire.read_tagged(stream, context, result, known)
        return result

    @staticmethod
    def _tag_parser(con):
        return lambda io, this: con._parse(io, this, "(tagged)")

    @staticmethod
    def _tag_builder(con):
        return lambda obj, io, this: con._build(obj, io, this, "(tagged)")

    def _build(self, obj, stream, context, path):
        if self.nullable:
            if obj is None:
                stream.write(b"\xff")
                return obj
            stream.write(b"\x01")
        for name, con, default in self.fields:
            con._build(obj.get(name, default), stream, context, path)
        if self.tagged is not None:
            known = tuple((t, n, d, self._tag_builder(c)) for t, n, c, d in self.tagged)
            wire.write_tagged(stream, obj, known)
        return obj

    # compiled path ----------------------------------------------------------------------
    def _runs(self):
        """Group consecutive fixed-width fields so one unpack reads them all."""
        run: list = []
        for name, con, default in self.fields:
            if isinstance(con, KInt):
                run.append((name, con, default))
                continue
            if run:
                yield "fixed", run
                run = []
            yield "one", (name, con, default)
        if run:
            yield "fixed", run

    def _emitparse(self, code):
        fid = code.allocate_id()
        code.append(_PRELUDE)
        lines, names = [], []
        for kind, item in self._runs():
            if kind == "fixed":
                fmt = "".join(con.fmt for _, con, _ in item)
                s = _emit_struct(code, fmt)
                targets = "".join(f"v_{name}, " for name, _, _ in item)
                lines.append(f"{targets}= {s}.unpack(_w.read_exact(io, {struct.calcsize('>' + fmt)}))")
                names += [name for name, _, _ in item]
            else:
                name, con, _ = item
                lines.append(f"v_{name} = {con._compileparse(code)}")
                names.append(name)
        absent = {**self.absent}
        if self.tagged is not None:
            absent.update({name: default for _, name, _, default in self.tagged})
        literal = ", ".join([f"{n!r}: {_literal(v)}" for n, v in absent.items()] + [f"{n!r}: v_{n}" for n in names])
        lines.append(f"r = _M({{{literal}}})")
        if self.tagged is not None:
            table = self._emit_tag_parsers(code, fid)
            lines.append(f"_w.read_tagged(io, this, r, {table})")
        lines.append("return r")
        head = ["if not _w.read_presence(io):", "    return None"] if self.nullable else []
        body = "\n".join("    " + line for line in head + lines)
        code.append(f"def parse_kstruct_{fid}(io, this):\n{body}\n")
        return f"parse_kstruct_{fid}(io, this)"

    def _emit_tag_parsers(self, code, fid) -> str:
        entries = []
        for tag, name, con, _ in self.tagged:
            code.append(f"def parse_tag_{fid}_{tag}(io, this):\n    return {con._compileparse(code)}\n")
            entries.append(f"{tag}: ({name!r}, parse_tag_{fid}_{tag})")
        code.append(f"TAGS_PARSE_{fid} = {{{', '.join(entries)}}}\n")
        return f"TAGS_PARSE_{fid}"

    def _emitbuild(self, code):
        fid = code.allocate_id()
        code.append(_PRELUDE)
        lines = ["o = obj"]
        if self.nullable:
            lines += ["if o is None:", "    io.write(b'\\xff')", "    return", "io.write(b'\\x01')"]
        for kind, item in self._runs():
            if kind == "fixed":
                fmt = "".join(con.fmt for _, con, _ in item)
                s = _emit_struct(code, fmt)
                args = ", ".join(f"o.get({n!r}, {_literal(d)})" for n, _, d in item)
                lines.append(f"io.write({s}.pack({args}))")
            else:
                name, con, default = item
                lines.append(f"obj = o.get({name!r}, {_literal(default)})")
                lines.append(con._compilebuild(code))
        if self.tagged is not None:
            entries = []
            for tag, name, con, default in self.tagged:
                code.append(f"def build_tag_{fid}_{tag}(obj, io, this):\n    {con._compilebuild(code)}\n")
                entries.append(f"({tag}, {name!r}, {_literal(default)}, build_tag_{fid}_{tag})")
            code.append(f"TAGS_BUILD_{fid} = ({''.join(e + ', ' for e in entries)})\n")
            lines.append(f"_w.write_tagged(io, o, TAGS_BUILD_{fid})")
        body = "\n".join("    " + line for line in lines)
        code.append(f"def build_kstruct_{fid}(obj, io, this):\n{body}\n")
        return f"build_kstruct_{fid}(obj, io, this)"


def _fresh(value: Any) -> Any:
    if isinstance(value, dict):
        return Message({k: _fresh(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    return value


def _literal(value: Any) -> str:
    """Source text that evaluates to a fresh copy of a default value."""
    if isinstance(value, dict):
        return "_M({" + ", ".join(f"{k!r}: {_literal(v)}" for k, v in value.items()) + "})"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if hasattr(value, "int") and type(value).__name__ == "UUID":
        return "_w._ZERO_UUID" if value.int == 0 else f"__import__('uuid').UUID(int={value.int})"
    return repr(value)
