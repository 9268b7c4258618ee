"""The dev/ scripts that download or build (build-adapters/go, build-adapters/java, install-kafka)
write into $BROKER_EMU_CACHE when it is set (relative: to where they are run from), else into the
checkout's .cache, as conformance/cache_dir.py answers. Run on a copy of the checkout's inputs,
with stand-ins for go, java and mvn that record where they were told to write."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INPUTS = ("dev/build-adapters/go", "dev/build-adapters/java", "dev/install-kafka", "dev/kafka/pom.xml",
          "conformance/adapters/go", "conformance/adapters/java")

GO = """case "$1" in
  version) echo "go version go1.26.8 linux/amd64" ;;
  build) echo "GOMODCACHE=$GOMODCACHE GOCACHE=$GOCACHE out=$3" >> "$CALLS"
         for p in franzgo-adapter sarama-adapter kfake; do echo '#!/bin/sh' > "$3/$p"; chmod +x "$3/$p"; done ;;
esac"""
JAVA = 'echo \'openjdk version "17.0.15" 2025-04-15\' >&2'
MVN = """echo "mvn $*" >> "$CALLS"
for a in "$@"; do
  case "$a" in
    -Dadapter.out=*) mkdir -p "${a#*=}" && touch "${a#*=}/java-adapter.jar" ;;
    -DoutputDirectory=*) touch "${a#*=}/kafka_2.13-4.4.0.jar" ;;
  esac
done"""


@pytest.fixture
def checkout(tmp_path) -> Path:
    copy = tmp_path / "checkout"
    for name in INPUTS:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy2)(ROOT / name, copy / name)
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, body in (("go", GO), ("java", JAVA), ("mvn", MVN)):
        (stubs / name).write_text(f"#!/bin/bash\n{body}\n")
        (stubs / name).chmod(0o755)
    return copy


def _run(checkout: Path, script: str, cwd: Path, cache: str | None) -> tuple[str, str]:
    calls = checkout.parent / "calls"
    calls.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("BROKER_EMU_CACHE", "CI")}
    env.update(PATH=f"{checkout.parent / 'stubs'}{os.pathsep}{env['PATH']}", CALLS=str(calls))
    if cache is not None:
        env["BROKER_EMU_CACHE"] = cache
    out = subprocess.run(["bash", str(checkout / script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout, calls.read_text() if calls.exists() else ""


@pytest.mark.parametrize("where", ["default", "variable"])
def test_the_go_adapters_are_built_into_the_cache(checkout, tmp_path, where):
    cache = checkout / ".cache" if where == "default" else tmp_path / "elsewhere" / "cache"
    (tmp_path / "elsewhere").mkdir()
    said, calls = _run(checkout, "dev/build-adapters/go", tmp_path / "elsewhere", None if where == "default" else "cache")
    assert calls.split() == [f"GOMODCACHE={cache / 'gomod'}", f"GOCACHE={cache / 'gobuild'}", f"out={cache / 'adapters' / 'go'}/"]
    assert sorted(p.name for p in (cache / "adapters" / "go").iterdir() if p.name[0] != ".") == [
        "build.log", "franzgo-adapter", "kfake", "sarama-adapter"]
    assert said.startswith("build-adapters/go: built ") and said.rstrip().endswith(f"into {cache / 'adapters' / 'go'}")


@pytest.mark.parametrize("where", ["default", "variable"])
def test_the_java_adapter_and_kafka_are_put_into_the_cache(checkout, tmp_path, where):
    cache = checkout / ".cache" if where == "default" else tmp_path / "c"
    _, calls = _run(checkout, "dev/build-adapters/java", tmp_path, None if where == "default" else str(tmp_path / "c"))
    assert f"-Dmaven.repo.local={cache / 'm2'} -Dadapter.out={cache / 'adapters' / 'java'} " in calls
    assert (cache / "adapters" / "java" / "java-adapter.jar").is_file()
    said, calls = _run(checkout, "dev/install-kafka", tmp_path, None if where == "default" else str(tmp_path / "c"))
    assert f"-DoutputDirectory={cache / 'kafka' / '4.4.0' / 'lib'} -Dmaven.repo.local={cache / 'm2'}" in calls
    assert f"Apache Kafka 4.4.0 in {cache / 'kafka' / '4.4.0' / 'lib'} (1 jars" in said
