"""Which third-party clients we drive, whether they are installed, and how to run one.

Every client runs in a child process (``drive_python.py``, ``drive_kafkajs.js`` or kcat itself)
against a ``CaptureListener``; the child prints one JSON line saying whether its record was
acknowledged. ``bash dev/install-clients`` installs them all; ``require_client`` skips or
fails a test when one is missing.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

# pip distribution names, as dev/install-clients pins them
PYTHON_CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka")
ALL_CLIENTS = (*PYTHON_CLIENTS, "kcat", "kafkajs")

# A child that has not finished by then is killed and the run fails: every client is driven
# with client-side timeouts of a few seconds, so this only trips on a hang.
CHILD_TIMEOUT_S = 15


def installed_version(name: str) -> str | None:
    """The installed version of a client, or None if it is not usable here."""
    if name in PYTHON_CLIENTS:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None
    if name == "kcat":
        return _kcat_version()
    if name == "kafkajs":
        manifest = REPO / "node_modules" / "kafkajs" / "package.json"
        if shutil.which("node") is None or not manifest.is_file():
            return None
        return str(json.loads(manifest.read_text())["version"])
    raise ValueError(f"unknown client {name!r}")


def _kcat_version() -> str | None:
    kcat = shutil.which("kcat")
    if kcat is None:
        return None
    # "Version 1.7.1 (JSON, ..., librdkafka 2.0.2 builtin.features=...)"
    out = subprocess.run([kcat, "-V"], capture_output=True, text=True, timeout=10, check=False).stdout
    for line in out.splitlines():
        if line.startswith("Version "):
            words = line.split()
            librdkafka = words[words.index("librdkafka") + 1] if "librdkafka" in words else "?"
            return f"{words[1]} (librdkafka {librdkafka})"
    return None


def require_client(name: str) -> str:
    """Return the installed version of client ``name``; if it is missing, fail under CI
    (``CI=true``) and skip elsewhere.

    CI must exercise every client (a green run that skipped them all would prove nothing), while
    a developer without apt or npm can still run the rest of the suite.
    """
    version = installed_version(name)
    if version is not None:
        return version
    missing(f"{name} is not installed (run: bash dev/install-clients)")


def require_adapter(adapter: Any) -> None:
    """A program of the line protocol (Java, Go) must be built: if ``adapter.available()`` says
    it is not, fail under CI and skip elsewhere, as ``require_client``."""
    ok, why = adapter.available()
    if not ok:
        missing(why)


def missing(reason: str) -> None:
    """Something a test needs is absent: a failure under ``CI=true``, a skip elsewhere."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@dataclass(frozen=True)
class ChildRun:
    """What a client process reported, plus its stderr for failure messages."""

    result: dict[str, Any]
    returncode: int
    stderr: str

    @property
    def delivered(self) -> bool:
        return bool(self.result.get("delivered"))


def command(name: str, port: int, topic: str, client_id: str, value: str, mode: str) -> tuple[list[str], str | None]:
    """The argv of the child process and what to feed its stdin."""
    if name in PYTHON_CLIENTS:
        return [sys.executable, str(HERE / "drive_python.py"), name, str(port), topic, client_id, value, mode], None
    if name == "kafkajs":
        return ["node", str(HERE / "drive_kafkajs.js"), str(port), topic, client_id, value, mode], None
    if name == "kcat":
        return _kcat_command(port, topic, client_id, mode), value + "\n"
    raise ValueError(f"unknown client {name!r}")


def _kcat_command(port: int, topic: str, client_id: str, mode: str) -> list[str]:
    request_ms, wait_ms = (1500, 2000) if mode == "first" else (4000, 5500)
    settings = {
        "client.id": client_id,
        "acks": "1",
        "linger.ms": "0",
        "message.timeout.ms": str(wait_ms),
        "socket.timeout.ms": str(request_ms),
        "api.version.request.timeout.ms": str(request_ms),
    }
    argv = ["kcat", "-P", "-b", f"127.0.0.1:{port}", "-t", topic, "-p", "0"]
    for key, val in settings.items():
        argv += ["-X", f"{key}={val}"]
    return argv


def run_client(name: str, port: int, topic: str, client_id: str, value: str, mode: str) -> ChildRun:
    argv, stdin = command(name, port, topic, client_id, value, mode)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}  # the child's warnings are not our tests'
    try:
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S,
                              cwd=REPO, env=env, check=False)
    except subprocess.TimeoutExpired as exc:  # run() has killed it; report instead of raising
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return ChildRun({"delivered": False, "error": f"killed after {CHILD_TIMEOUT_S} s"}, -9, stderr)
    if name == "kcat":
        result = _kcat_result(proc)
    else:
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        result = json.loads(lines[-1]) if lines else {"delivered": False, "error": "no result line"}
    return ChildRun(result, proc.returncode, proc.stderr)


def _kcat_result(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    # kcat -P exits 0 only when every message was delivered; it reports failures on stderr
    ok = proc.returncode == 0 and "ERROR" not in proc.stderr
    error = None if ok else f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
    return {"client": "kcat", "delivered": ok, "error": error}
