"""The built wheel, installed from PyPI's base dependencies only into a fresh virtual environment
outside the checkout, gives `broker-emu serve`, our client and the pytest plugin: no Spark, no
Java, no extra. Each step is timed (printed; `-s` shows them). Needs PyPI (the base dependencies,
setuptools for the build); pytest alone is added for the plugin's step."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "broker_emu", "client", "conformance", "kafka_common")

PRODUCE_CONSUME = """
import sys
from client import Consumer, Producer, TopicPartition
conf = {"bootstrap.servers": sys.argv[1]}
with Producer(conf) as p:
    p.send("t", b"from-the-wheel").result(10)
with Consumer({**conf, "group.id": "g"}) as c:
    c.assign([TopicPartition("t", 0)])
    c.seek_to_beginning()
    records = []
    for _ in range(20):
        records += c.poll(0.5)
        if records:
            break
print(",".join(r.value.decode() for r in records))
"""

PLUGIN_TEST = """
import pytest

@pytest.mark.kafka_cluster(brokers=1, topics=[("t", 1, 1)])
def test_the_fixture(kafka_cluster):
    from client import Producer
    with Producer({"bootstrap.servers": kafka_cluster.bootstrap}) as p:
        assert p.send("t", b"x").result(10).offset == 0
    assert kafka_cluster.trace(kind="send", api="Produce")
"""


class Steps:
    def __init__(self) -> None:
        self.took: dict[str, float] = {}

    def run(self, name: str, argv: list, cwd: Path, env: dict, timeout: float = 300) -> str:
        start = time.perf_counter()
        out = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        self.took[name] = time.perf_counter() - start
        assert out.returncode == 0, f"{name}: {out.stdout[-2000:]}\n{out.stderr[-2000:]}"
        return out.stdout


def _environment(tmp_path: Path) -> dict[str, str]:
    """No trace of the checkout or the test's own environment; the pip cache of the user stays."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "BROKER_EMU_CACHE",
                                                               "XDG_CACHE_HOME", "PYTHONSAFEPATH")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def _sources(tmp_path: Path) -> Path:
    """A copy of what the wheel is built from: no build/ left over in the checkout goes in."""
    src = tmp_path / "src"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    return src


def _with_kcat(bootstrap: str, work: Path, env: dict, steps: Steps) -> None:
    """A third-party client against the wheel's serve: kcat (dev/install-clients installs it on
    Debian; CI must have it)."""
    kcat = shutil.which("kcat")
    if kcat is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("kcat is not installed (bash dev/install-clients installs it on Debian)", pytrace=False)
        return
    steps.run("kcat produce", ["bash", "-c", f"echo from-kcat | {kcat} -P -b {bootstrap} -t t -p 0"], work, env, 60)
    read = steps.run("kcat consume", [kcat, "-C", "-b", bootstrap, "-t", "t", "-p", "0", "-e", "-q"], work, env, 60)
    assert read.split() == ["from-the-wheel", "from-kcat"], read


def _serve_and_use(venv: Path, work: Path, env: dict, steps: Steps) -> str:
    start = time.perf_counter()
    with subprocess.Popen([venv / "bin" / "broker-emu", "serve", "--brokers", "1", "--topic", "t:1:1"], cwd=work, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            steps.took["serve: bootstrap line"] = time.perf_counter() - start
            assert line.startswith("bootstrap="), line
            bootstrap = line.removeprefix("bootstrap=")
            got = steps.run("produce + consume (client)", [venv / "bin" / "python", "-c", PRODUCE_CONSUME, bootstrap],
                            work, env, 60)
            _with_kcat(bootstrap, work, env, steps)
            proc.terminate()
            assert proc.wait(timeout=15) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
    return got.strip()


@pytest.mark.slow
def test_the_wheel_installs_and_runs_outside_the_checkout(tmp_path):
    steps, env = Steps(), _environment(tmp_path)
    work = tmp_path / "elsewhere"
    work.mkdir()
    venv, wheels = tmp_path / "venv", tmp_path / "wheels"
    steps.run("build the wheel", [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, _sources(tmp_path)],
              work, env)
    (wheel,) = wheels.glob("broker_emu-*.whl")
    steps.run("create the venv", [sys.executable, "-m", "venv", venv], work, env)
    py = venv / "bin" / "python"
    steps.run("pip install the wheel", [py, "-m", "pip", "install", "-q", wheel], work, env)
    installed = steps.run("pip list", [py, "-m", "pip", "list", "--format=freeze"], work, env).lower()
    for absent in ("pyspark", "pytest", "pytest-trio", "hypothesis", "confluent-kafka", "kafka-python", "aiokafka"):
        assert f"\n{absent}==" not in f"\n{installed}", absent
    size_mb = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file()) / 1e6

    assert "serve" in steps.run("broker-emu --help", [venv / "bin" / "broker-emu", "--help"], work, env)
    assert "kip19." in steps.run("broker-emu explain --list", [venv / "bin" / "broker-emu", "explain", "--list"], work, env)
    assert _serve_and_use(venv, work, env, steps) == "from-the-wheel"

    # the cache of an installed package is the user's, and what is missing says dev/ is not there
    home = tmp_path / "home"
    where = steps.run("cache folder", [py, "-c", "from conformance.cache_dir import cache_dir; "
                                       "from conformance.adapters.go_clients import FranzGoAdapter; "
                                       "print(cache_dir()); print(FranzGoAdapter().available()[1])"],
                      work, {**env, "HOME": str(home)}).splitlines()
    assert where[0] == str(home / ".cache" / "broker-emu")
    assert "not in the installed package" in where[1]

    steps.run("pip install pytest", [py, "-m", "pip", "install", "-q", "pytest"], work, env)
    (work / "test_mine.py").write_text(PLUGIN_TEST)
    assert "1 passed" in steps.run("pytest with the plugin", [py, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                                              "test_mine.py"], work, env, 120)
    total = sum(steps.took.values())
    print(f"\nvenv after the base install: {size_mb:.0f} MB; steps (s): "
          + ", ".join(f"{k} {v:.1f}" for k, v in steps.took.items()) + f"; total {total:.1f}")
