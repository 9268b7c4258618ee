"""``broker-emu serve`` as a subprocess for the fuzz campaign (benchmarks/fuzz.py): started,
watched (its trace through a named pipe, its stderr, its memory in /proc) and stopped."""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

from benchmarks.fuzz_frames import I32
from client.protocol.codec import decode_response, encode_request

API_VERSIONS = 18
SERVE_CONFIG = {
    # JoinGroup answers at once instead of after 3 s: pipelines keep moving
    "group.initial.rebalance.delay.ms": "0",
    # GetTelemetrySubscriptions is advertised, so it is fuzzed too (as the corpus cluster has it)
    "emu.telemetry": "true",
    # the valid Produce frames fill the log: keep it small, so peak memory shows what leaks
    "log.retention.bytes": str(4 << 20),
}


# -- the process -------------------------------------------------------------------------

CLOSE_REASON_DIGITS = re.compile(r"-?\d+")
HANDLER_ERROR_LOG = re.compile(r"^broker \d+: (.* failed on |connection \d+ failed)")


class TraceTap(threading.Thread):
    """Reads the emulator's JSONL trace from a named pipe to its end, keeping counts."""

    def __init__(self, path: str):
        super().__init__(daemon=True, name="trace-tap")
        self.path = path
        self.events = 0
        self.handler_errors: list[dict[str, Any]] = []
        self.handler_error_count = 0
        self.signatures: collections.Counter = collections.Counter()   # one per distinct bug, roughly
        self.close_reasons: collections.Counter = collections.Counter()
        self.anomalies = 0

    def run(self) -> None:
        with open(self.path, "rb", buffering=0) as pipe:
            try:
                import fcntl
                fcntl.fcntl(pipe.fileno(), 1031, 1 << 20)   # F_SETPIPE_SZ: fewer stalls of the writer
            except (OSError, ImportError):
                pass
            rest = b""
            while chunk := pipe.read(1 << 20):
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    self.line(line)

    def line(self, line: bytes) -> None:
        self.events += 1
        if b'"kind":"conn_close"' in line:
            details = json.loads(line).get("details", {})
            reason = details.get("reason", "").split(":")[0].split(" on ")[0].split(" (")[0]
            reason = CLOSE_REASON_DIGITS.sub("N", reason)
            self.close_reasons[f"{details.get('closed_by')}: {reason}"] += 1
        elif b'"kind":"handler_error"' in line:
            self.handler_error_count += 1
            event = json.loads(line)
            details = event.get("details", {})
            where = (details.get("at") or ["?"])[0]
            error = CLOSE_REASON_DIGITS.sub("N", details.get("error", "?"))[:100]
            signature = f"{event.get('api')}: {details.get('stage')}: {error} ({where})"
            self.signatures[signature] += 1
            if self.signatures[signature] <= 3:
                self.handler_errors.append(event)
        elif b'"kind":"request_anomaly"' in line:
            self.anomalies += 1


class LineTap(threading.Thread):
    """Drains a pipe of the subprocess line by line (stderr: counts handler errors logged)."""

    def __init__(self, stream, name: str):
        super().__init__(daemon=True, name=name)
        self.stream = stream
        self.tail: collections.deque[str] = collections.deque(maxlen=40)
        self.handler_errors = 0

    def run(self) -> None:
        for raw in self.stream:
            line = raw.decode(errors="replace").rstrip("\n")
            self.tail.append(line)
            if HANDLER_ERROR_LOG.match(line):
                self.handler_errors += 1


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak) in bytes, from /proc (psutil is not a dependency)."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    name, value, _unit = line.split()
                    out[name[:-1]] = int(value) * 1024
    except OSError:
        pass
    return out


class Emulator:
    """``broker-emu serve`` as a subprocess, with its trace, stderr and memory watched."""

    def __init__(self, workdir: Path, extra_config: dict[str, str] | None = None, root: str | None = None):
        self.fifo = str(workdir / "trace.fifo")
        os.mkfifo(self.fifo)
        self.tap = TraceTap(self.fifo)
        self.tap.start()    # opening a FIFO blocks until both ends are open
        config = {**SERVE_CONFIG, **(extra_config or {})}
        self.command = ["broker-emu", "serve", "--brokers", "3", "--topic", "t:3:3", "--control-port", "0",
                        "--trace", self.fifo] + [a for k, v in config.items() for a in ("--config", f"{k}={v}")]
        # ``root``: another checkout's emulator (python -m runs the package found in the cwd)
        self.proc = subprocess.Popen([sys.executable, "-m", "broker_emu", *self.command[1:]], cwd=root,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.stderr = LineTap(self.proc.stderr, "emulator-stderr")
        self.stderr.start()
        self.bootstrap, self.control = self._read_addresses()
        self.stdout = LineTap(self.proc.stdout, "emulator-stdout")
        self.stdout.start()
        self.cpu_seconds = 0.0

    def _read_addresses(self) -> tuple[str, str]:
        found: dict[str, str] = {}
        assert self.proc.stdout is not None
        while len(found) < 2:
            line = self.proc.stdout.readline().decode().strip()
            if not line:
                raise RuntimeError(f"broker-emu serve ended before printing its addresses: {list(self.stderr.tail)}")
            key, _, value = line.partition("=")
            if key in ("bootstrap", "control"):
                found[key] = value
        return found["bootstrap"], found["control"]

    @property
    def brokers(self) -> list[tuple[str, int]]:
        return [(h, int(p)) for h, p in (a.rsplit(":", 1) for a in self.bootstrap.split(","))]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def memory(self) -> dict[str, int]:
        return proc_status(self.proc.pid)

    def control_get(self, path: str) -> Any:
        from broker_emu.control.client import call
        return call(self.control, "GET", path, timeout=30)

    def cpu(self) -> float:
        """User + system CPU seconds of the emulator so far (/proc/PID/stat)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return self.cpu_seconds
        return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 1)

    def stop(self) -> int:
        if self.alive():
            self.cpu_seconds = self.cpu()
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.tap.join(30)
        self.stderr.join(5)
        self.stdout.join(5)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        return code


def advertised_versions(address: tuple[str, int]) -> dict[int, tuple[int, int]]:
    """The emulator's ApiVersions answer (v3), over the wire: what it serves is what is fuzzed."""
    with socket.create_connection(address, timeout=10) as s:
        s.sendall(encode_request(API_VERSIONS, 3, 1, "fuzz", {"client_software_name": "fuzz",
                                                               "client_software_version": "1"}))
        data = b""
        while len(data) < 4 or len(data) < 4 + I32.unpack_from(data, 0)[0]:
            chunk = s.recv(1 << 16)
            if not chunk:
                raise RuntimeError("the emulator closed the connection on ApiVersions")
            data += chunk
    _, body = decode_response(API_VERSIONS, 3, data[4:])
    return {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}


def topic_ids(emulator: Emulator) -> dict[str, uuid.UUID]:
    return {t["name"]: uuid.UUID(t["topic_id"]) for t in emulator.control_get("/cluster")["topics"]}
