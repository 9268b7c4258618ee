"""The repository stands alone: nothing tracked in it points at what a reader of the repository
cannot follow — planning documents kept beside it (DESIGN.md, STYLE.md, TARGETS.md, ../shared/)
or numbered issues of a tracker it does not contain. Links to public projects' issues (a URL,
or an upstream's own ``#1234``) are fine: they can be followed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POINTER = re.compile(r"\b(?:DESIGN|STYLE|TARGETS)\.md\b|\.\./shared/|\b[Ii]ssues?[- ]#?\d+(?:\.\d+)?\b")
THIS = Path(__file__).relative_to(ROOT).as_posix()


def tracked_text_files() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines()
            if f != THIS and f.rsplit(".", 1)[-1] in ("py", "md", "toml", "yaml", "yml", "js", "go", "java", "sh", "txt", "cfg")]


def test_nothing_points_outside_the_repository():
    found = []
    for name in tracked_text_files():
        path = ROOT / name
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if POINTER.search(line):
                found.append(f"{name}:{number}: {line.strip()[:120]}")
    assert not found, "\n".join(found)
