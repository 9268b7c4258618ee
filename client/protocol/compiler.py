"""The codec's own small compiler: a struct of ``client.protocol.constructs`` emits Python source
for reading and writing itself, and ``Shape.compile`` turns that source into two functions.

The codec used the ``construct`` library for this step alone (its ``Construct.compile``): every
field class here already wrote its own source, so construct contributed a base class and the
loop that joins the pieces. Importing it cost every process about a tenth of ``broker-emu
serve``'s start-up (construct's core, its debugger hook, pickle), for that loop.

The generated source is a module of its own: helper functions and tables first (each block once,
in the order first asked for), then ``parseall(io, this)`` and ``buildall(obj, io, this)``.
``this`` is the read's context (``this["_end"]``: the absolute end of the buffer, used to bound
claimed lengths), ``io`` the stream, ``obj`` the value written.
"""

from __future__ import annotations

import textwrap
from typing import Any, Callable


class CodeGen:
    """The source of one compiled struct, built up by the shapes' ``_emitparse``/``_emitbuild``."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self._seen: set[str] = set()
        self._ids = 0
        self.parsers: dict[int, str] = {}    # id(shape) -> the expression that reads it
        self.builders: dict[int, str] = {}   # id(shape) -> the statement that writes it

    def allocate_id(self) -> int:
        """A number for the names of one shape's helper functions."""
        self._ids += 1
        return self._ids

    def append(self, block: str) -> None:
        """Add a block of source (indented as it is written inline: it is dedented), unless an
        identical block is there already (the imports every field asks for, shared tables)."""
        text = textwrap.dedent("\n".join(line for line in block.splitlines() if line.strip()))
        if text not in self._seen:
            self._seen.add(text)
            self.blocks.append(text)

    def source(self) -> str:
        return "\n".join(self.blocks) + "\n"


class Compiled:
    """A compiled struct: ``parsefunc(io, this)`` reads one, ``buildfunc(obj, io, this)`` writes one
    (the codec calls these; an uncompiled shape is called through ``_parse``/``_build``)."""

    def __init__(self, parsefunc: Callable[..., Any], buildfunc: Callable[..., Any], source: str) -> None:
        self.parsefunc, self.buildfunc, self.source = parsefunc, buildfunc, source


class Shape:
    """A wire shape (a number, string, array, struct...): ``_parse``/``_build`` read and write it
    directly (the interpreted path the tests hold the compiled one to), ``_emitparse`` and
    ``_emitbuild`` give the source that does the same."""

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        raise NotImplementedError

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        raise NotImplementedError

    def _emitparse(self, code: CodeGen) -> str:
        raise NotImplementedError

    def _emitbuild(self, code: CodeGen) -> str:
        raise NotImplementedError

    def _compileparse(self, code: CodeGen) -> str:
        """The expression that reads this shape, its helpers emitted once per shape object."""
        if id(self) not in code.parsers:
            code.parsers[id(self)] = self._emitparse(code)
        return code.parsers[id(self)]

    def _compilebuild(self, code: CodeGen) -> str:
        if id(self) not in code.builders:
            code.builders[id(self)] = self._emitbuild(code)
        return code.builders[id(self)]

    def compile(self) -> Compiled:
        code = CodeGen()
        code.append("import struct")
        parse = self._compileparse(code)
        build = self._compilebuild(code)
        code.append(f"def parseall(io, this):\n    return {parse}\n")
        code.append(f"def buildall(obj, io, this):\n    {build}\n")
        source = code.source()
        namespace: dict[str, Any] = {"__name__": f"client.protocol.compiled_{id(self):x}"}
        exec(compile(source, f"<compiled {type(self).__name__}>", "exec"), namespace)
        return Compiled(namespace["parseall"], namespace["buildall"], source)
