"""Failover chaos with accounting (not a test; the CI test is tests/cluster/test_chaos.py): our
client in virtual time and confluent-kafka in real time, same plans, same accounting, figures
side by side. The reference for both is the rule acks=all + enable.idempotence +
min.insync.replicas=2 must keep: 0 lost, 0 misplaced, 0 duplicated within a producer epoch.

Run: .venv/bin/python -m benchmarks.chaos [--seeds-ours 100] [--seeds-real 10] [--duration 60]
     [--client ours|confluent-kafka|both]

The real-time part takes seeds x (duration + settling) of wall time: ~12 min with the defaults.
"""

from __future__ import annotations

import argparse
import sys

from conformance.chaos.cli import DEFAULTS, print_summary, run_seeds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--client", choices=("ours", "confluent-kafka", "both"), default="both")
    parser.add_argument("--seeds-ours", type=int, default=DEFAULTS["ours"][0])
    parser.add_argument("--seeds-real", type=int, default=DEFAULTS["confluent-kafka"][0])
    parser.add_argument("--duration", type=float, default=DEFAULTS["confluent-kafka"][1],
                        help="real-time seconds of chaos per confluent-kafka seed")
    args = parser.parse_args(argv)

    def out(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    bad = 0
    if args.client in ("ours", "both"):
        from conformance.chaos.ours import run_seed
        _, duration, interval = DEFAULTS["ours"]
        results = run_seeds(run_seed, range(args.seeds_ours), dict(duration=duration, partitions=3, producers=3,
                                                                   interval=interval), out=out)
        print_summary(f"ours (virtual time, {duration:g} s per seed)", results)
        bad += sum(r.bad() for r in results)
    if args.client in ("confluent-kafka", "both"):
        from conformance.chaos import confluent
        ok, why = confluent.available()
        if not ok:
            print(f"confluent-kafka: skipped ({why})")
            return 1 if bad else 0
        interval = DEFAULTS["confluent-kafka"][2]
        results = run_seeds(confluent.run_seed, range(args.seeds_real), dict(
            duration=args.duration, partitions=3, producers=3, interval=interval), progress=out, out=out)
        print_summary(f"confluent-kafka (real time, {args.duration:g} s per seed)", results)
        bad += sum(r.bad() for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
