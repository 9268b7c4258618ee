"""Clients in other languages (Java, Go): a small program per client, driven over stdin/stdout.

The program is started once per adapter (its start-up cost — a JVM, say — is paid once per run,
not per scenario) and answers one JSON line per JSON line it reads. Protocol (version 1):

    -> {"cmd": "hello"}
    <- {"client": "franz-go", "version": "v1.22.2", "operations": ["produce", ...],
        "settings": {"request_timeout": "kgo.RequestTimeoutOverhead", ...}}

    -> {"cmd": "run", "bootstrap": "127.0.0.1:9092,...", "client_id": "...",
        "config": {"request.timeout.ms": 1000, ...},          # Kafka's dotted names, scaled
        "steps": [{"kind": "produce", "args": {...}, "timeout_ms": 1000 | null}, ...]}
    <- {"outcomes": [{"operation": "produce", "ok": false, "elapsed_ms": 1003.2,
                      "error_type": "TimeoutException", "error_message": "...", "value": ...}, ...]}

    -> {"cmd": "quit"}          (or EOF: the program exits)

A run's answer may add ``"restart": true``: the program left a client behind (a call it could not
cancel, reported as an outcome) and exits after answering; the adapter ends it and starts a fresh
one for the next run, so nothing left behind reaches the next scenario's brokers.

Bytes in ``args`` (a record value) travel as ``{"$bytes": "<base64>"}``. The program builds its
clients for each ``run`` from ``config``, performs the steps in order, closes its clients and
answers; a step that fails is an outcome with ``ok: false`` (its client's exception name in
``error_type``), never a broken answer. ``elapsed_ms`` is measured in the program, around the
client's own call, so pipe latency is not part of it. Anything the program prints on stderr is kept
in ``out/adapters/<name>.log``.
"""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from conformance.adapters.base import RealTimeAdapter, RunEnv
from conformance.model import Operation, Outcome

PROTOCOL_VERSION = 1
HELLO_TIMEOUT_S = 120.0      # a cold JVM on a busy 2-core machine
ANSWER_SLACK_S = 120.0       # on top of the steps' own deadlines before the program counts as hung
LOG_DIR = Path("out/adapters")


def encode_args(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, dict):
        return {k: encode_args(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode_args(v) for v in value]
    return value


def decode_value(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$bytes"}:
        return base64.b64decode(value["$bytes"])
    if isinstance(value, dict):
        return {k: decode_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    return value


class AdapterProcessError(RuntimeError):
    """The program broke the protocol (died, hung, answered garbage): the run is an ERROR cell."""


class LineProtocolAdapter(RealTimeAdapter):
    """Subclasses set ``name`` and ``operations`` and say how to start their program."""

    def command(self) -> list[str] | None:
        """The argv that starts the program, or None when it is not built here."""
        raise NotImplementedError

    def not_built_reason(self) -> str:
        return f"the {self.name} adapter program is not built (bash dev/install-clients builds it)"

    def environment(self) -> dict[str, str] | None:
        """The program's environment (None: this process's)."""
        return None

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._hello: dict[str, Any] | None = None
        self._lock = threading.Lock()

    # -- the process -------------------------------------------------------------------------
    def available(self) -> tuple[bool, str]:
        if self.command() is None:
            return False, self.not_built_reason()
        try:
            self.hello()
        except AdapterProcessError as exc:
            return False, f"the {self.name} adapter program does not start: {exc}"
        return True, ""

    def client_version(self) -> str | None:
        """What the program said in its hello, once it has run (never starts it)."""
        return str(self._hello["version"]) if self._hello and self._hello.get("version") else None

    def hello(self) -> dict[str, Any]:
        if self._hello is None or self._proc is None or self._proc.poll() is not None:
            self._start()
            self._hello = self._call({"cmd": "hello"}, HELLO_TIMEOUT_S)
        return self._hello

    def _start(self) -> None:
        argv = self.command()
        if argv is None:
            raise AdapterProcessError(self.not_built_reason())
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        with open(LOG_DIR / f"{self.name}.log", "ab") as log:   # the child keeps its own descriptor
            self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                          env=self.environment())

    def _call(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise AdapterProcessError(f"{self.name} program exited ({proc.poll()}): {exc}; see {LOG_DIR}/{self.name}.log") from exc
        line = self._read_line(proc, timeout_s)
        try:
            answer = json.loads(line)
        except ValueError:
            raise AdapterProcessError(f"{self.name} program answered a line that is not JSON: {line[:200]!r}") from None
        if not isinstance(answer, dict):
            raise AdapterProcessError(f"{self.name} program answered {answer!r}")
        if "fatal" in answer:
            raise AdapterProcessError(f"{self.name} program: {answer['fatal']}")
        return answer

    def _read_line(self, proc: subprocess.Popen[bytes], timeout_s: float) -> bytes:
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        fd = proc.stdout.fileno()
        chunks = b""
        while not chunks.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(0.0, left))[0] if left > 0 else []
            if not ready:
                self.shutdown()
                raise AdapterProcessError(f"{self.name} program gave no answer within {timeout_s:.0f} s (killed)")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                code = proc.wait()
                raise AdapterProcessError(f"{self.name} program exited with {code}; see {LOG_DIR}/{self.name}.log")
            chunks += chunk
        return chunks

    def shutdown(self) -> None:
        proc, self._proc, self._hello = self._proc, None, None
        if proc is None:
            return
        try:
            if proc.poll() is None and proc.stdin is not None:
                proc.stdin.write(b'{"cmd": "quit"}\n')
                proc.stdin.close()
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout):   # closed here, not left to the collector (ResourceWarning)
            if pipe is not None and not pipe.closed:
                pipe.close()

    def request(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """One command outside ``run`` (the chaos driver's, conformance/chaos/kits.py), starting
        the program first if needed."""
        with self._lock:
            self.hello()
            return self._call(encode_args(message), timeout_s)

    # -- a run ---------------------------------------------------------------------------------
    def run_blocking(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        with self._lock:
            self.hello()
            request = {"cmd": "run", "bootstrap": env.bootstrap, "client_id": env.client_id,
                       "config": env.config,
                       "steps": [{"kind": s.kind, "args": encode_args(s.args),
                                  "timeout_ms": None if s.timeout_s is None else int(round(s.timeout_s * 1000))}
                                 for s in steps]}
            budget = sum((s.timeout_s or 60.0) for s in steps) * 3 + ANSWER_SLACK_S
            answer = self._call(request, budget)
            if answer.get("restart"):
                self.shutdown()
        outcomes = answer.get("outcomes")
        if not isinstance(outcomes, list) or len(outcomes) != len(steps):
            raise AdapterProcessError(f"{self.name} program answered {len(outcomes or [])} outcomes for {len(steps)} steps")
        return [Outcome(o["operation"], bool(o["ok"]), float(o["elapsed_ms"]) / 1000, o.get("error_type"),
                        o.get("error_message"), decode_value(o.get("value"))) for o in outcomes]
