"""Campaign benchmark (not a test): the same runs of a matrix three ways in one process
invocation, and the Spark overhead relative to plain Python.

  loop      one process, execute() run after run, rows kept in memory (the floor)
  pool      a process pool of --parallelism workers, same function (equal parallelism to Spark)
  spark     `broker-emu campaign`'s job on local[--parallelism]: DataFrame of runs, mapInArrow,
            Parquet written once (session start-up reported separately, not included)
  standalone (--standalone) the same job on a Spark standalone master and worker on loopback
            (conformance/campaign/standalone.py, --parallelism cores): tasks in executor
            processes, as on a real cluster

Prints runs/minute for each and the ratios spark/loop and spark/pool of wall time.

Run: .venv/bin/python -m benchmarks.campaign [--matrix examples/campaign-large.yaml] [--parallelism 2]
     .venv/bin/python -m benchmarks.campaign --matrix examples/campaign-clients.yaml --parallelism 8 --limit 32
     (real-time clients: each run waits on scaled timeouts in its own process, so more runs than cores overlap)
     add --standalone for the spark:// run, --skip loop,pool to leave those out
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import time

from conformance.campaign.execute import execute
from conformance.campaign.matrix import load


def _rows_of(job: tuple[dict, float]) -> int:
    run, scale = job
    return len(execute(run, scale))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--matrix", default="examples/campaign-large.yaml")
    ap.add_argument("--parallelism", type=int, default=2)
    ap.add_argument("--limit", type=int, help="run an evenly spread subset of this many runs")
    ap.add_argument("--standalone", action="store_true", help="also on a Spark standalone cluster on loopback")
    ap.add_argument("--skip", help="comma-separated: loop, pool")
    args = ap.parse_args()
    doc, runs = load(args.matrix)
    scale = float(doc.get("scale", 30.0))
    rows = [r.as_row() for r in runs]
    if args.limit and args.limit < len(rows):
        step = len(rows) / args.limit
        rows = [rows[int(i * step)] for i in range(args.limit)]
    print(f"{args.matrix}: {len(rows)} runs, {os.cpu_count()} cores, parallelism {args.parallelism}")

    statuses: dict[str, list[str]] = {}
    times: dict[str, float] = {}
    skip = set(filter(None, (args.skip or "").split(",")))
    if "loop" not in skip:
        start = time.perf_counter()
        events = 0
        for r in rows:
            out = execute(r, scale)
            events += len(out)
            statuses.setdefault("loop", []).append(out[0]["status"])
        times["loop"] = time.perf_counter() - start
        print(f"loop : {times['loop']:7.2f} s  {len(rows) / times['loop'] * 60:8.0f} runs/min  ({events} rows)")
    if "pool" not in skip:
        start = time.perf_counter()
        with multiprocessing.get_context("spawn").Pool(args.parallelism) as pool:
            pooled = sum(pool.map(_rows_of, [(r, scale) for r in rows], chunksize=1))
        times["pool"] = time.perf_counter() - start
        print(f"pool : {times['pool']:7.2f} s  {len(rows) / times['pool'] * 60:8.0f} runs/min  ({pooled} rows)")

    for mode in ("spark", "standalone"):
        if mode == "standalone" and not args.standalone:
            continue
        spark_s, statuses[mode] = _spark(mode, rows, args.parallelism, scale)
        times[mode] = spark_s
    for mode in ("spark", "standalone"):
        if mode in times:
            ratios = ", ".join(f"{mode}/{m} {times[mode] / times[m]:.2f}x" for m in ("loop", "pool") if m in times)
            print(f"overhead: {ratios or 'no loop or pool run'} of wall time")
    # a real-time run's verdict can depend on the load beside it: say how often they differ
    base = next(iter(statuses))
    for mode, got in statuses.items():
        if mode != base:
            same = sum(a == b for a, b in zip(statuses[base], got))
            print(f"verdicts: {same}/{len(rows)} runs judged the same in {base} and {mode}; pass "
                  f"{statuses[base].count('pass')} ({base}) vs {got.count('pass')} ({mode})")


def _spark(mode: str, rows: list[dict], parallelism: int, scale: float) -> tuple[float, list[str]]:
    """The campaign's Spark job over ``rows`` on local[parallelism] or a standalone cluster."""
    import contextlib

    from conformance.campaign.job import run_campaign
    from conformance.campaign.standalone import standalone_cluster
    from conformance.spark_session import get_session

    with contextlib.ExitStack() as stack:
        start = time.perf_counter()
        master = (stack.enter_context(standalone_cluster(cores=parallelism)) if mode == "standalone"
                  else f"local[{parallelism}]")
        spark = get_session(master, "broker-emu campaign benchmark", parallelism)
        spark.range(1).count()
        startup = time.perf_counter() - start
        try:
            with tempfile.TemporaryDirectory() as out:
                start = time.perf_counter()
                path = run_campaign(spark, rows, out, parallelism=parallelism, scale=scale, progress=False)
                spark_s = time.perf_counter() - start
                written = spark.read.parquet(path).count()
                by_id = {r["run_id"]: r["status"] for r in spark.read.parquet(path).where("record = 'run'").collect()}
        finally:
            spark.stop()
    print(f"{mode}: {spark_s:7.2f} s  {len(rows) / spark_s * 60:8.0f} runs/min  ({written} rows in Parquet on "
          f"{master}; start-up {startup:.1f} s not included)")
    return spark_s, [by_id[r["run_id"]] for r in rows]

if __name__ == "__main__":
    main()
