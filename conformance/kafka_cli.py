"""`broker-emu conformance --broker kafka [--kafka-brokers 1|3] [--diff]`: the suite on a real
Apache Kafka through the proxy (conformance/on_kafka.py), and the differential report against the
emulator behind the same proxy (conformance/differential.py)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Callable

from conformance.model import Result, Status


def run_kafka(args: argparse.Namespace, scenarios: list, adapters: list, progress: Callable[..., None]) -> int:
    from conformance.on_kafka import run_differential, run_on_kafka
    from conformance.summary import print_summary

    start = time.perf_counter()
    try:
        if args.diff:
            kafka, emulator, rows = run_differential(scenarios, adapters, args.scale, args.kafka_brokers,
                                                     args.diff_reruns, progress)
            return _report_diff(emulator, kafka, rows, args, time.perf_counter() - start)
        kafka = run_on_kafka(scenarios, adapters, args.scale, args.kafka_brokers, progress)
    except Exception as exc:   # no java, no jars, the cluster did not start: say so, plainly
        print(f"error: could not run on Apache Kafka: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print_summary(kafka, time.perf_counter() - start, args)
    print(f"(on Apache Kafka, {args.kafka_brokers} node(s), through the proxy)")
    return 1 if any(r.status is Status.ERROR for r in kafka) else 0


def _report_diff(emulator: list[Result], kafka: list[Result], rows: list, args: argparse.Namespace, wall: float) -> int:
    from conformance import differential as D

    table = D.cells(rows, args.kafka_brokers, args.scale)
    counts = D.summary(rows)
    ran = sorted({r.scenario for r in kafka if r.status is not Status.NA})
    meta: dict[str, Any] = {"kafka_brokers": args.kafka_brokers, "scale": args.scale, "wall_s": round(wall, 1),
                            "scenarios_run_on_kafka": len(ran),
                            "not_on_kafka": {r.scenario: r.message for r in kafka if r.status is Status.NA}}
    from conformance import report

    print("on Apache Kafka, through the proxy:")
    print(report.matrix(kafka))
    print("\nper client (cells judged on both sides; observations):")
    for client, t in D.by_client(table).items():
        print(f"  {client:<24} {t['cells']:>3} cells, {t['cells with a difference']} with a difference; "
              f"{t['same']} same, {t['different']} different, {t['flaky']} flaky, {t['n/a']} n/a")
    reproduce = {(c.scenario, c.client): c.reproduce for c in table}
    for r in rows:
        if r.verdict in ("different", "flaky"):
            tag = "DIFF " if r.verdict == "different" else "FLAKY"
            print(f"{tag} {r.scenario} [{r.client}] {r.observation}: emulator {r.emulator} | kafka {r.kafka} "
                  f"({r.tolerance}; {r.runs or 'not run again'})")
            print(f"      again: {reproduce[(r.scenario, r.client)]}")
    print(f"\n{len(rows)} observations: {counts['same']} same, {counts['different']} different, {counts['flaky']} flaky "
          f"(a difference that did not reproduce in every run of its cell), {counts['n/a']} n/a; "
          f"{len(ran)} scenario(s) ran on Kafka ({args.kafka_brokers} node(s)) in {wall:.0f} s")
    if args.json:   # with every verdict of both sides, for the record
        with open(args.json, "w") as f:
            f.write(D.to_json(rows, table, **meta, kafka_results=[r.to_dict() for r in kafka],
                              emulator_results=[r.to_dict() for r in emulator]))
    if args.html:
        with open(args.html, "w") as f:
            f.write(D.to_html(rows, table, **meta))
    broken = [r for r in [*emulator, *kafka] if r.status is Status.ERROR]
    for b in broken:
        print(f"  ERROR {b.client} {b.scenario}: {b.message}", file=sys.stderr)
    return 1 if broken else 0
