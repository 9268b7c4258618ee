"""Size limits of issue 14 (STYLE.md, "Sizes"): no function over 60 lines, no file over 500.

Counts every function and method (nested ones too) from its ``def`` line (decorators excluded)
to its last line, and every ``.py`` file by its line count, in the packages broker_emu, client
and conformance. The generated message schemas (client/protocol/messages/) are left out: they
are written by tools/generate_messages.py from Kafka's JSON, not by hand.

Usage: python tools/check_sizes.py [ROOT]   exit status 1 when anything is over a limit.
"""

from __future__ import annotations

import ast
import pathlib
import sys

MAX_FUNCTION_LINES = 60
MAX_FILE_LINES = 500
PACKAGES = ("broker_emu", "client", "conformance")
GENERATED = ("client/protocol/messages/",)


def source_files(root: pathlib.Path) -> list[pathlib.Path]:
    files = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if not relative.startswith(GENERATED):
                files.append(path)
    return files


def offences(root: pathlib.Path, path: pathlib.Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    relative = path.relative_to(root).as_posix()
    found = []
    lines = len(text.splitlines())
    if lines > MAX_FILE_LINES:
        found.append(f"{relative}: {lines} lines (file limit {MAX_FILE_LINES})")
    for node in ast.walk(ast.parse(text, filename=relative)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(
                    f"{relative}:{node.lineno}: {node.name} is {length} lines "
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
