"""`broker-emu campaign MATRIX.yaml [--master URL] [--out DIR] [--parallelism N]`."""

from __future__ import annotations

import argparse
import os
import sys
import time


def add_campaign(sub) -> None:
    c = sub.add_parser("campaign", help="run a conformance matrix on Spark and report statistics (docs/campaigns.md)")
    c.add_argument("matrix", help="matrix YAML (see examples/campaign-small.yaml)")
    c.add_argument("--master", default="local[*]", help="Spark master (default local[*]; spark://HOST:7077 for a cluster; sc://HOST:15002 for Spark Connect)")
    c.add_argument("--out", default="campaign-out", help="output directory: traces/ (Parquet), summary.json, report.html")
    c.add_argument("--parallelism", type=int, help="concurrent runs (default: the cores; for a campaign of mostly "
                   "real-time clients, 4 per core, since those runs mostly wait)")
    c.add_argument("--scale", type=float, help="real-time clients run every timeout divided by this (default: the "
                   "matrix's scale:, else 30)")
    c.add_argument("--dry-run", action="store_true", help="expand the matrix and print the run count only")
    c.set_defaults(func=run_campaign_command)


def run_campaign_command(args: argparse.Namespace) -> int:
    from conformance.campaign import matrix

    try:
        doc, runs = matrix.load(args.matrix)
    except (OSError, matrix.MatrixError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.matrix}: {len(runs)} runs", file=sys.stderr)
    if args.dry_run:
        return 0
    from conformance.spark_session import SparkUnavailable, check_spark

    try:
        check_spark(args.master)
    except SparkUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from conformance.campaign import client_versions, report
    from conformance.campaign.aggregate import summarise

    try:
        client_versions.ensure([r.client for r in runs])
    except client_versions.ClientVersionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from conformance.campaign.job import run_campaign
    from conformance.spark_session import get_session

    scale = args.scale or float(doc.get("scale", 30.0))
    parallelism = args.parallelism or default_parallelism(runs)
    master = args.master
    if master == "local[*]" and parallelism:
        master = f"local[{parallelism}]"   # more task threads than cores: real-time runs overlap their waits
    if parallelism:
        print(f"{parallelism} runs at a time on {os.cpu_count()} cores (mostly real-time clients)", file=sys.stderr)
    spark = get_session(master, "broker-emu campaign", parallelism)
    try:
        start = time.perf_counter()
        path = run_campaign(spark, [r.as_row() for r in runs], args.out, parallelism=parallelism, scale=scale)
        wall = time.perf_counter() - start
        print(f"runs done in {wall:.1f} s ({len(runs) / wall * 60:.0f} runs/min); aggregating {path}", file=sys.stderr)
        summary = summarise(spark, spark.read.parquet(path))
        summary["campaign"] = {"name": doc.get("name", args.matrix), "matrix": args.matrix, "master": args.master,
                               "runs": len(runs), "wall_s": round(wall, 3), "runs_per_minute": round(len(runs) / wall * 60, 1),
                               "traces": path}
    finally:
        spark.stop()
    json_path, html_path = report.write(args.out, summary)
    t = summary["totals"]
    print(f"{t['runs']} runs: {t['passed']} pass, {t['failed']} fail, {t['errors']} error, {t['na']} n/a; "
          f"{t['events']} trace events")
    for v in summary["violations"][:10]:
        print(f"  {v['runs']:>5} x {v['scenario']} [{v['client']}]: {v['contract']}")
    for w in summary["worst_runs"][:3]:
        if w["status"] in ("fail", "error"):
            print(f"  replay: {w['replay']}")
    print_chaos(summary["chaos"])
    print(f"wrote {json_path} and {html_path}")
    return 0


def default_parallelism(runs) -> int | None:
    """2 runs per core when most runs are real-time clients (each spends most of its time waiting
    on scaled timeouts, in its own process; at 4 per core a JVM client's start-up missed its
    scaled max.block.ms: docs/campaigns.md); None (Spark's default, one per core) when our
    virtual-time client, which never waits, dominates."""
    from conformance.campaign.execute import is_virtual_time

    real_time = sum(1 for r in runs if not is_virtual_time(r.client))
    if real_time * 2 <= len(runs):
        return None
    return min(real_time, 2 * (os.cpu_count() or 1))


def print_chaos(chaos: dict) -> None:
    for c in chaos["per_config"]:
        print(f"chaos [{c['client']}] {c['params']}: {c['seeds']} seeds ({c['bad_seeds']} bad, {c['errors']} error, "
              f"{c['na']} n/a); {c['sent']} records, {c['acked']} acknowledged, {c['failed_records']} failed, "
              f"{c['unresolved']} unresolved | lost {c['lost']}, misplaced {c['misplaced']}, duplicated in epoch "
              f"{c['dup_in_epoch']}, across epochs {c['dup_across_epochs']}, reordered {c['reordered']} | consumer "
              f"missed {c['consumer_missed']}, wrong {c['consumer_wrong']}")
    for w in chaos["worst_seeds"][:3]:
        if w["status"] in ("fail", "error"):
            print(f"  replay: {w['replay']}")
