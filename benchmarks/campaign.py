"""Campaign benchmark (not a test): the same runs of a matrix three ways in one process
invocation, and the Spark overhead relative to plain Python.

  loop      one process, execute() run after run, rows kept in memory (the floor)
  pool      a process pool of --parallelism workers, same function (equal parallelism to Spark)
  spark     `broker-emu campaign`'s job on local[--parallelism]: DataFrame of runs, mapInArrow,
            Parquet written once (session start-up reported separately, not included)

Prints runs/minute for each and the ratios spark/loop and spark/pool of wall time.

Run: .venv/bin/python -m benchmarks.campaign [--matrix examples/campaign-large.yaml] [--parallelism 2]
     .venv/bin/python -m benchmarks.campaign --matrix examples/campaign-clients.yaml --parallelism 8 --limit 32
     (real-time clients: each run waits on scaled timeouts in its own process, so more runs than cores overlap)
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
    args = ap.parse_args()
    doc, runs = load(args.matrix)
    scale = float(doc.get("scale", 30.0))
    rows = [r.as_row() for r in runs]
    if args.limit and args.limit < len(rows):
        step = len(rows) / args.limit
        rows = [rows[int(i * step)] for i in range(args.limit)]
    print(f"{args.matrix}: {len(rows)} runs, {os.cpu_count()} cores, parallelism {args.parallelism}")

    start = time.perf_counter()
    statuses: dict[str, list[str]] = {}
    events = 0
    for r in rows:
        out = execute(r, scale)
        events += len(out)
        statuses.setdefault("loop", []).append(out[0]["status"])
    loop = time.perf_counter() - start
    print(f"loop : {loop:7.2f} s  {len(rows) / loop * 60:8.0f} runs/min  ({events} rows)")

    start = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.parallelism) as pool:
        pooled = sum(pool.map(_rows_of, [(r, scale) for r in rows], chunksize=1))
    pool_s = time.perf_counter() - start
    print(f"pool : {pool_s:7.2f} s  {len(rows) / pool_s * 60:8.0f} runs/min  ({pooled} rows)")

    from conformance.campaign.job import run_campaign
    from conformance.campaign.spark_session import get_session

    start = time.perf_counter()
    spark = get_session(f"local[{args.parallelism}]", "broker-emu campaign benchmark", args.parallelism)
    spark.range(1).count()
    startup = time.perf_counter() - start
    try:
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            path = run_campaign(spark, rows, out, parallelism=args.parallelism, scale=scale, progress=False)
            spark_s = time.perf_counter() - start
            written = spark.read.parquet(path).count()
            by_id = {r["run_id"]: r["status"] for r in spark.read.parquet(path).where("record = 'run'").collect()}
            statuses["spark"] = [by_id[r["run_id"]] for r in rows]
    finally:
        spark.stop()
    print(f"spark: {spark_s:7.2f} s  {len(rows) / spark_s * 60:8.0f} runs/min  ({written} rows in Parquet; "
          f"session start-up {startup:.1f} s not included)")
    print(f"overhead: spark/loop {spark_s / loop:.2f}x, spark/pool {spark_s / pool_s:.2f}x of wall time")
    # a real-time run's verdict can depend on the load beside it: say how often the two differ
    same = sum(a == b for a, b in zip(statuses["loop"], statuses["spark"]))
    print(f"verdicts: {same}/{len(rows)} runs judged the same in the loop and on Spark; pass "
          f"{statuses['loop'].count('pass')} (loop) vs {statuses['spark'].count('pass')} (spark)")


if __name__ == "__main__":
    main()
