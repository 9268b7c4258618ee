"""dev/setup installs Java only as root with apt-get; elsewhere it says in one line what campaigns
and Apache Kafka need and goes on (its ``ensure_java``, run here with stand-in commands)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)


def _ensure_java(tmp_path: Path, uid: int, apt: bool) -> tuple[subprocess.CompletedProcess, str]:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    calls = tmp_path / "calls"
    _stub(bin_, "id", f"echo {uid}")
    if apt:
        _stub(bin_, "apt-get", f'echo "apt-get $*" >> {calls}')
    script = 'set -euo pipefail; eval "$(/bin/sed -n "/^ensure_java()/,/^}/p" dev/setup)"; ensure_java; echo done'
    out = subprocess.run(["/bin/bash", "-c", script], cwd=ROOT, env={"PATH": str(bin_)}, capture_output=True,
                         text=True, timeout=30)
    return out, calls.read_text() if calls.exists() else ""


@pytest.mark.parametrize(("uid", "apt"), [(1000, True), (0, False)], ids=["not-root", "no-apt-get"])
def test_without_root_or_apt_get_it_says_how_to_get_java_and_goes_on(tmp_path, uid, apt):
    out, calls = _ensure_java(tmp_path, uid, apt)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1] == "done" and calls == ""
    assert len(lines) == 2 and "Java 17" in lines[0] and "campaigns" in lines[0] and "apt-get install" in lines[0]


def test_as_root_with_apt_get_it_installs_the_jre(tmp_path):
    out, calls = _ensure_java(tmp_path, 0, True)
    assert out.returncode == 0 and out.stdout == "done\n", out.stderr
    assert calls.splitlines() == ["apt-get update -qq", "apt-get install -y -qq openjdk-17-jre-headless"]
