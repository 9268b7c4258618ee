"""CPU used while a benchmark case runs, split into the broker's and the client's (Linux /proc).

Why it is measured: on a 2-core machine the broker and the producer share the cores, so a
throughput ratio alone cannot say whether a broker was slow or the client was saturated. At
100 B the producer's Python thread is busy all of the time whatever the broker (the ratio is
then the client's, not the broker's); at 10 KB the broker's CPU per megabyte decides it.

The broker's CPU is that of its processes (``broker-emu serve``, kfake, Kafka's JVMs), or of the
threads of this process whose names start with a prefix (librdkafka's mock runs as "rdk:mock"
threads inside the producer's process). The client's is every other thread of this process, and
its busiest thread is reported apart: near 1.0 core means the client set the pace.
Where /proc is missing, ``CpuMeter.stop`` gives None and the report leaves the figures out.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_seconds(stat: str) -> tuple[str, float]:
    """(name, user + system seconds) from a /proc .../stat line (the name may hold spaces)."""
    name = stat[stat.index("(") + 1:stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2:].split()
    return name, (int(fields[11]) + int(fields[12])) / _TICK


def thread_seconds(pid: int) -> dict[int, tuple[str, float]]:
    """Each live thread of ``pid``: thread id -> (name, CPU seconds so far)."""
    out: dict[int, tuple[str, float]] = {}
    try:
        tids = os.listdir(PROC / str(pid) / "task")
    except OSError:
        return out
    for tid in tids:
        try:
            out[int(tid)] = _stat_seconds((PROC / str(pid) / "task" / tid / "stat").read_text())
        except (OSError, ValueError):
            continue   # the thread ended between the listing and the read
    return out


def process_seconds(pids: list[int]) -> float:
    """CPU seconds so far of the processes (all their threads); an ended one counts 0."""
    total = 0.0
    for pid in pids:
        try:
            total += _stat_seconds((PROC / str(pid) / "stat").read_text())[1]
        except (OSError, ValueError):
            pass
    return total


@dataclass(frozen=True)
class CpuUse:
    """Cores used over a measured span (CPU seconds / wall seconds)."""

    broker: float
    client: float
    busiest_client_thread: float

    def as_dict(self) -> dict[str, float]:
        return {"broker": self.broker, "client": self.client, "busiest_client_thread": self.busiest_client_thread}


def split_threads(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]],
                  broker_prefix: str | None) -> tuple[float, float, float]:
    """CPU seconds between two ``thread_seconds`` samples: (broker threads, client threads,
    the busiest client thread). A thread born in between counts from 0; one that ended in
    between is lost (a benchmark's threads live through its measured span)."""
    broker = client = busiest = 0.0
    for tid, (name, seconds) in after.items():
        used = seconds - before.get(tid, (name, 0.0))[1]
        if broker_prefix is not None and name.startswith(broker_prefix):
            broker += used
        else:
            client += used
            busiest = max(busiest, used)
    return broker, client, busiest


class CpuMeter:
    """Measures one span: ``start()``, the work, ``stop()``. The broker is ``broker_pids``
    (other processes) and/or this process's threads named ``broker_prefix...``."""

    def __init__(self, broker_pids: list[int], broker_prefix: str | None = None):
        self.broker_pids, self.broker_prefix = broker_pids, broker_prefix
        self._start: tuple[float, dict[int, tuple[str, float]], float] | None = None

    def start(self) -> None:
        self._start = (time.perf_counter(), thread_seconds(os.getpid()), process_seconds(self.broker_pids))

    def stop(self) -> CpuUse | None:
        if self._start is None or not PROC.is_dir():
            return None
        t0, threads0, broker0 = self._start
        wall = time.perf_counter() - t0
        threads = thread_seconds(os.getpid())
        if not threads or wall <= 0:
            return None
        in_threads, client, busiest = split_threads(threads0, threads, self.broker_prefix)
        broker = in_threads + process_seconds(self.broker_pids) - broker0
        return CpuUse(broker / wall, client / wall, busiest / wall)
