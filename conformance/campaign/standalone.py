"""A Spark standalone cluster on this machine's loopback — one master, one worker — started from
pyspark's own ``spark-class`` (no download, no Maven), so a campaign can run with
``--master spark://…`` as it would on a real cluster: tasks go to executor processes the worker
launches, not to the driver's local threads.

    python -m conformance.campaign.standalone [--cores N] [--memory 2g] [--logs DIR] MATRIX.yaml [campaign options]

starts the cluster, runs ``broker-emu campaign MATRIX.yaml --master spark://127.0.0.1:PORT ...``
and stops it. ``standalone_cluster()`` is the same as a context manager (tests use it).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

from conformance.campaign.cli import add_campaign

LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 120.0    # two JVMs starting on a busy 2-core machine


class StandaloneError(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def _spark_class() -> Path:
    import pyspark

    path = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if not path.is_file():
        raise StandaloneError(f"pyspark has no {path}: install the spark extra (dev/setup)")
    return path


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if re.search(pattern, text):
            return
        if proc.poll() is not None:
            raise StandaloneError(f"the Spark {what} exited ({proc.returncode}): {text[-2000:]}")
        time.sleep(0.3)
    raise StandaloneError(f"the Spark {what} did not start within {START_TIMEOUT_S:.0f} s: see {log}")


@contextlib.contextmanager
def standalone_cluster(cores: int = 4, memory: str = "2g", log_dir: str | None = None) -> Iterator[str]:
    """Yields the master's URL once the worker has registered; stops both JVMs on exit."""
    spark_class = _spark_class()
    logs = Path(log_dir or tempfile.mkdtemp(prefix="spark-standalone-"))
    logs.mkdir(parents=True, exist_ok=True)
    port, ui, worker_ui = _free_port(), _free_port(), _free_port()
    env = {**os.environ, "SPARK_LOCAL_IP": LOOPBACK, "SPARK_MASTER_HOST": LOOPBACK,
           "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
           "SPARK_DAEMON_MEMORY": "256m", "SPARK_NO_DAEMONIZE": "1"}
    url = f"spark://{LOOPBACK}:{port}"
    procs: list[subprocess.Popen] = []
    try:
        master_log = logs / "master.log"
        with open(master_log, "wb") as out:
            procs.append(subprocess.Popen([str(spark_class), "org.apache.spark.deploy.master.Master", "--host", LOOPBACK,
                                           "--port", str(port), "--webui-port", str(ui)], env=env, stdout=out,
                                          stderr=subprocess.STDOUT))
        _wait_for(master_log, r"I have been elected leader|Starting Spark master", procs[0], "master")
        worker_log = logs / "worker.log"
        with open(worker_log, "wb") as out:
            procs.append(subprocess.Popen([str(spark_class), "org.apache.spark.deploy.worker.Worker", "--host", LOOPBACK,
                                           "--cores", str(cores), "--memory", memory, "--webui-port", str(worker_ui),
                                           "--work-dir", str(logs / "work"), url], env=env, stdout=out,
                                          stderr=subprocess.STDOUT))
        _wait_for(worker_log, r"Successfully registered with master", procs[1], "worker")
        yield url
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in reversed(procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.campaign.standalone", description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=4, help="the worker's cores (tasks at once; default 4)")
    parser.add_argument("--memory", default="2g", help="the worker's memory for executors (default 2g)")
    parser.add_argument("--logs", help="where the master, the worker and its executors log (default: a temporary folder)")
    args, campaign = parser.parse_known_args(argv)
    if not campaign:
        parser.error("give a matrix: python -m conformance.campaign.standalone MATRIX.yaml [campaign options]")
    # `broker-emu campaign`, built here from its own module: the command's composition
    # (conformance.main) sits above this package
    command = argparse.ArgumentParser(prog="broker-emu")
    add_campaign(command.add_subparsers(dest="command", required=True))
    with standalone_cluster(args.cores, args.memory, args.logs) as url:
        print(f"standalone: master {url}, one worker with {args.cores} cores", file=sys.stderr, flush=True)
        parsed = command.parse_args(["campaign", *campaign, "--master", url])
        return int(parsed.func(parsed) or 0)


if __name__ == "__main__":
    sys.exit(main())
