"""One real-time run in a child process of its own, so that a client that crashes (a segfault in a
C library kills its process) or hangs (a call that never returns) costs that run — an error row
and a ``violation`` event carrying the child's last log lines — and never the Spark task, the
job or the other runs.

The child is ``python -m conformance.campaign.child``: the run and scale as JSON on stdin,
the rows as one JSON line on stdout; everything the client and the emulator log goes to stderr,
kept for the violation. Virtual-time runs (ours) stay in the task's process: they cannot hang in
real time and starting a process would cost more than the run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

LOG_TAIL = 4000          # characters of the child's stderr kept in a violation
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_limit_s(scale: float) -> float:
    """How long a real-time run may take before it counts as hung: the slowest scenarios wait
    out a 120 s delivery timeout (scaled) several times over; 10 minutes of real time, scaled,
    with a floor for the processes' start."""
    return max(60.0, 600.0 / max(scale, 1.0) * 3)


def execute_isolated(run: dict[str, Any], scale: float, limit_s: float | None = None) -> list[dict[str, Any]]:
    limit = limit_s if limit_s is not None else run_limit_s(scale)
    start = time.perf_counter()
    from conformance.campaign.client_versions import folder

    pinned = folder(run["client"])   # a pinned client version's own folder first: it shadows the installed one
    paths = [str(pinned)] if pinned is not None else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])}
    try:
        child = subprocess.run([sys.executable, "-m", "conformance.campaign.child"], cwd=ROOT, env=env,
                               input=json.dumps({"run": run, "scale": scale}), capture_output=True, text=True,
                               timeout=limit)
    except subprocess.TimeoutExpired as exc:
        logs = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return broken(run, f"hung: no result after {limit:.0f} s (killed)", logs, time.perf_counter() - start)
    if child.returncode == 0 and child.stdout.strip():
        try:
            return json.loads(child.stdout.strip().splitlines()[-1])
        except json.JSONDecodeError:
            pass
    how = (f"killed by signal {signal.Signals(-child.returncode).name}" if child.returncode < 0
           else f"exited with status {child.returncode}")
    return broken(run, f"crashed: the run's process {how}", child.stderr, time.perf_counter() - start)


def broken(run: dict[str, Any], why: str, logs: str, wall_s: float) -> list[dict[str, Any]]:
    """The rows of a run that ended without a result: an error run row and its violation."""
    base = {k: run[k] for k in ("run_id", "scenario", "family", "client", "params", "seed", "rep")}
    return [{**base, "record": "run", "status": "error", "message": why, "wall_s": wall_s, "simulated_s": 0.0},
            {**base, "record": "event", "t_ms": 0.0, "kind": "violation",
             "details": json.dumps({"contract": "run", "status": "error", "detail": why, "logs": logs[-LOG_TAIL:]})}]
