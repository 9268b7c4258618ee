"""Size limits: no function over 60 lines of code, no file over 500, in the packages broker_emu,
client, conformance and kafka_common.

Only code counts: a line with nothing but a comment, part of a docstring, or blank is free. A
limit on all lines made comments the cheapest thing to cut, and comments that said *why* were
shortened to pass it; the limit is there to keep units small, not their explanations short.
A function counts from its ``def`` line (decorators excluded) to its last line, nested functions
inside it included. The generated message schemas (client/protocol/messages/) are left out: they
are written by tools/generate_messages.py from Kafka's JSON, not by hand.

Usage: python tools/check_sizes.py [ROOT]   exit status 1 when anything is over a limit.
"""

from __future__ import annotations

import ast
import io
import pathlib
import sys
import tokenize

MAX_FUNCTION_LINES = 60
MAX_FILE_LINES = 500
PACKAGES = ("broker_emu", "client", "conformance", "kafka_common")
GENERATED = ("client/protocol/messages/",)
_NOT_CODE = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
             tokenize.ENCODING, tokenize.ENDMARKER}


def source_files(root: pathlib.Path) -> list[pathlib.Path]:
    files = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if not relative.startswith(GENERATED):
                files.append(path)
    return files


def code_lines(text: str, tree: ast.AST) -> set[int]:
    """The numbers of the lines that hold code: some token that is not a comment, less the
    lines of every docstring (module, class, function)."""
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in _NOT_CODE:
            lines.update(range(token.start[0], token.end[0] + 1))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                lines.difference_update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return lines


def offences(root: pathlib.Path, path: pathlib.Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    relative = path.relative_to(root).as_posix()
    tree = ast.parse(text, filename=relative)
    code = code_lines(text, tree)
    found = []
    if len(code) > MAX_FILE_LINES:
        found.append(f"{relative}: {len(code)} lines of code (file limit {MAX_FILE_LINES})")
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = sum(1 for n in range(node.lineno, (node.end_lineno or node.lineno) + 1) if n in code)
            if length > MAX_FUNCTION_LINES:
                found.append(
                    f"{relative}:{node.lineno}: {node.name} is {length} lines of code "
                    f"(function limit {MAX_FUNCTION_LINES})"
                )
    return found


def main(argv: list[str]) -> int:
    root = pathlib.Path(argv[1] if len(argv) > 1 else ".").resolve()
    found = [line for path in source_files(root) for line in offences(root, path)]
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
