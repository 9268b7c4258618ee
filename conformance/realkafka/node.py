"""One Kafka node (a combined broker+controller JVM): format its storage, start it, pause and
resume it (SIGSTOP/SIGCONT), stop it (SIGTERM, then SIGKILL after a bound), read its RSS."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from conformance.realkafka.config import HOST, NodePorts

# Small heaps and a quick JIT: a node is up in a few seconds on 2 cores and stays well under 1 GB.
JVM_OPTS = ["-Xmx384m", "-Xms128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k",
            "-XX:MaxMetaspaceSize=160m", "-Djava.awt.headless=true"]
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:   # pragma: no cover - runs in the child between fork and exec
    """The JVM gets SIGKILL if the Python that started it dies without stopping it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


class KafkaNode:
    """A node's files live in ``directory``: server.properties, log4j2.properties, kafka.log
    (the JVM's stdout and stderr) and data/ (removed by ``stop(keep_data=False)``)."""

    def __init__(self, ports: NodePorts, directory: Path, java: str, lib: Path) -> None:
        self.ports = ports
        self.node_id = ports.node_id
        self.directory = directory
        self.java = java
        self.lib = lib
        self.proc: subprocess.Popen[bytes] | None = None
        self.paused = False

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.ports.broker_port}"

    @property
    def log_path(self) -> Path:
        return self.directory / "kafka.log"

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    def _java(self, main: str, *args: str) -> list[str]:
        return [self.java, *JVM_OPTS, f"-Dlog4j2.configurationFile={self.directory / 'log4j2.properties'}",
                "-cp", f"{self.lib}/*", main, *args]

    def format_command(self, cluster_id: str, features: Mapping[str, int] | None = None) -> list[str]:
        """StorageTool format; ``features``: a level per feature (``transaction.version=1``), else
        the release's defaults (Kafka 4.4: transaction.version 2)."""
        levels = [f"--feature={name}={level}" for name, level in (features or {}).items()]
        return self._java("kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
                          "--config", str(self.directory / "server.properties"), "--ignore-formatted", *levels)

    def start(self) -> None:
        """Start the JVM (storage must be formatted); returns at once."""
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError(f"node {self.node_id} is already running (pid {self.proc.pid})")
        main_thread = threading.current_thread() is threading.main_thread()
        with open(self.log_path, "ab") as log:   # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(
                self._java("kafka.Kafka", str(self.directory / "server.properties")),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.directory,
                start_new_session=True, preexec_fn=_die_with_parent if main_thread else None)
        self.paused = False

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def pause(self, wait: float = 5.0) -> None:
        """SIGSTOP: the JVM stops dead (no heartbeats, no fetches, sockets stay open). Returns
        once the kernel shows every thread stopped (signals are delivered asynchronously)."""
        self._signal(signal.SIGSTOP)
        self.paused = True
        self._wait_state(lambda s: s == "T", wait)

    def resume(self, wait: float = 5.0) -> None:
        """SIGCONT after ``pause``; returns once the process runs again."""
        self._signal(signal.SIGCONT)
        self.paused = False
        self._wait_state(lambda s: s != "T", wait)

    def state(self) -> str | None:
        """The process state letter from /proc (R, S, T for stopped, Z...), None if gone."""
        try:
            return Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return None

    def _wait_state(self, ok: Callable[[str | None], bool], wait: float) -> None:
        deadline = time.monotonic() + wait
        while not ok(self.state()) and time.monotonic() < deadline:
            time.sleep(0.01)

    def _signal(self, sig: int) -> None:
        if not self.running():
            raise RuntimeError(f"node {self.node_id} is not running")
        assert self.proc is not None
        os.kill(self.proc.pid, sig)

    def terminate(self) -> None:
        """Ask for a clean shutdown (SIGTERM), resuming a paused node first; returns at once."""
        if self.running():
            assert self.proc is not None
            if self.paused:
                os.kill(self.proc.pid, signal.SIGCONT)
                self.paused = False
            self.proc.terminate()

    def wait_stopped(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the JVM to exit; SIGKILL it after that. True when it
        exited by itself."""
        if self.proc is None:
            return True
        clean = True
        try:
            self.proc.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            clean = False
            self.proc.kill()
            self.proc.wait(timeout=10)
        return clean

    def stop(self, timeout: float = 20.0) -> bool:
        self.terminate()
        return self.wait_stopped(timeout)

    def rss_bytes(self) -> int | None:
        """Resident set size of the JVM (from /proc), or None when it is not running."""
        if not self.running():
            return None
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    def log_errors(self, limit: int = 5) -> list[str]:
        """The first ERROR lines of the node's log (why a node that exited did)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        return [line for line in text.splitlines() if "] ERROR " in line][:limit]

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def __repr__(self) -> str:
        state = "paused" if self.paused else ("running" if self.running() else "stopped")
        return f"KafkaNode(id={self.node_id}, bootstrap={self.bootstrap}, pid={self.pid}, {state})"


def wait_all(procs: list[subprocess.Popen[bytes]], deadline: float) -> None:
    """Wait for short-lived processes (storage formatting) until ``deadline`` (monotonic)."""
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
