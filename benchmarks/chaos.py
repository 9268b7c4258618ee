"""Failover chaos with accounting (not a test; the CI test is tests/conformance/chaos/test_chaos.py): our
client in virtual time and the third-party Python clients in real time, same plans, same accounting, figures
side by side. The reference for both is the rule acks=all + enable.idempotence +
min.insync.replicas=2 must keep: 0 lost, 0 misplaced, 0 duplicated within a producer epoch.

Run: .venv/bin/python -m benchmarks.chaos [--seeds-ours 100] [--seeds-real 10] [--duration 60]
     [--client ours|confluent-kafka|kafka-python|aiokafka|all]

The real-time part takes seeds x (duration + settling) of wall time: ~12 min with the defaults.
"""

from __future__ import annotations

import argparse
import sys

from conformance.chaos.cli import CLIENTS, DEFAULTS, print_summary, run_seeds, seed_runner


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--client", choices=(*CLIENTS, "all"), default="all")
    parser.add_argument("--seeds-ours", type=int, default=DEFAULTS["ours"][0])
    parser.add_argument("--seeds-real", type=int, default=DEFAULTS["confluent-kafka"][0])
    parser.add_argument("--duration", type=float, default=DEFAULTS["confluent-kafka"][1],
                        help="real-time seconds of chaos per seed of a third-party client")
    args = parser.parse_args(argv)

    def out(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    bad = 0
    if args.client in ("ours", "all"):
        from conformance.chaos.ours import run_seed
        _, duration, interval = DEFAULTS["ours"]
        results = run_seeds(run_seed, range(args.seeds_ours), dict(duration=duration, partitions=3, producers=3,
                                                                   interval=interval), out=out)
        print_summary(f"ours (virtual time, {duration:g} s per seed)", results)
        bad += sum(r.bad() for r in results)
    for client in CLIENTS[1:]:
        if args.client not in (client, "all"):
            continue
        real_seed, why = seed_runner(client)
        if real_seed is None:
            print(f"{client}: not run ({why})")
            bad += 1
            continue
        interval = DEFAULTS[client][2]
        results = run_seeds(real_seed, range(args.seeds_real), dict(
            duration=args.duration, partitions=3, producers=3, interval=interval), progress=out, out=out)
        print_summary(f"{client} (real time, {args.duration:g} s per seed)", results)
        bad += sum(r.bad() for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
