"""`broker-emu chaos [--client ours|confluent-kafka|kafka-python|aiokafka|java|franz-go|sarama]
[--broker emulator|kafka] [--seeds N] [--first-seed S] [--duration SECONDS] [--acks all|1]
[--no-idempotence] [--json FILE] [--verbose]`: failover chaos with accounting (docs/chaos.md).

Exit status 0 when no seed broke what the producers' settings promise (acks=all: no acknowledged
record lost or misplaced; idempotence: none duplicated within a producer epoch) and the consumer
saw exactly what the logs hold; 1 otherwise; 2 for bad arguments or a client that is not
installed."""

from __future__ import annotations

import argparse
import functools
import json
import shlex
import sys
import time
from collections import Counter
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:   # the chaos machinery loads when a chaos command runs, not with the `broker-emu` command
    from conformance.chaos.readback import SeedResult

CLIENTS = ("ours", "confluent-kafka", "kafka-python", "aiokafka", "java", "franz-go", "sarama")
TXN_CLIENTS = ("ours", "confluent-kafka", "java", "franz-go")    # the clients with a transactional load (conformance/chaos/kits_txn.py)
REAL_TIME = (10, 60.0, 0.02)
DEFAULTS = {  # (seeds, duration s, interval s): virtual time is cheap, real time is not
    "ours": (100, 8.0, 0.1),
    **{client: REAL_TIME for client in CLIENTS[1:]},
}
KAFKA_DEFAULTS = (10, 30.0, 0.05)   # --broker kafka: a cluster per seed, so shorter seeds than the emulator's real time


def _short_name(name: str) -> str:
    """The command line's one name for a client (conformance/client_names.py): a display name
    such as "broker-emu (async)" is accepted, with a note."""
    from conformance.client_names import SHORT, adapter_name

    adapter_name(name)   # the note, for an old spelling
    return SHORT.get(name, name)


def add_chaos(sub) -> None:
    c = sub.add_parser("chaos", help="failover chaos: count lost, duplicated and reordered records per partition")
    c.add_argument("--client", choices=CLIENTS, default="ours", type=_short_name,
                   help="ours: client.AsyncProducer/AsyncConsumer in virtual time; the others in real time")
    c.add_argument("--broker", choices=("emulator", "kafka"), default="emulator",
                   help="kafka: a fresh 3-node Apache Kafka per seed behind the proxy, with the faults it can be "
                        "given (conformance/chaos/kafka_faults.py), real time; every client, no planted bug")
    c.add_argument("--seeds", type=int, help="how many seeds (default 100 for ours, 10 for the others)")
    c.add_argument("--first-seed", type=int, default=0)
    c.add_argument("--duration", type=float, help="seconds of chaos per seed (default 8 virtual / 60 real)")
    c.add_argument("--partitions", type=int, default=3)
    c.add_argument("--producers", type=int, default=3)
    c.add_argument("--interval", type=float, help="seconds between two records of the fastest producer")
    c.add_argument("--acks", choices=("all", "1"), default="all",
                   help="the producers' acks (1: acknowledged records may be lost, counted, not judged; it turns "
                        "idempotence off, as Kafka requires)")
    c.add_argument("--no-idempotence", dest="idempotence", action="store_false",
                   help="producers without idempotence (duplicates within an epoch counted, not judged)")
    c.add_argument("--txn", action="store_true",
                   help="a transactional producer, consume-transform-produce workers and a read_committed consumer "
                        "too, on topics of their own (ours and " + ", ".join(TXN_CLIENTS[1:]) + ")")
    c.add_argument("--plant", metavar="NAME",
                   help="plant a bug in the cluster (broker_emu/plants.py) to show the history checker catching it "
                        "(a third-party client: the plants without transactions); 'list' names them; 'all' measures "
                        "each over the seeds with ours (a markdown table)")
    c.add_argument("--json", metavar="FILE", help="write every seed's figures as JSON")
    c.add_argument("--history", metavar="DIR",
                   help="write each seed's client history (every send, poll, commit, transaction) as Parquet "
                        "into DIR, one file per seed, and check it; ours records it always, a third-party client "
                        "when asked")
    c.add_argument("--check-histories", metavar="DIR",
                   help="run nothing: check every history in DIR (written by --history) with Spark SQL")
    c.add_argument("--master", help="with --check-histories: Spark's master (default local[*])")
    c.add_argument("--verbose", action="store_true", help="print every chaos action as it fires")
    c.set_defaults(func=run_chaos_command)


def run_chaos_command(args: argparse.Namespace) -> int:
    if args.check_histories:
        from conformance.chaos.checker_spark import check_directory

        return check_directory(args.check_histories, args.master)
    resolved = _resolve(args)
    if isinstance(resolved, int):
        return resolved
    run_seed, seeds, params = resolved

    def to_stderr(line: str) -> None:
        print(f"  {line}", file=sys.stderr, flush=True)
    # a refused plant is refused before the header names it ('all' is the mutation table's, checked by _resolve)
    extra = plant_options(args) if args.plant != "all" else {}
    if extra is None:
        return 2
    where = ("real time, Apache Kafka behind the proxy" if args.broker == "kafka"
             else "virtual time" if args.client == "ours" else "real time")
    print(f"chaos: {args.client}, seeds {seeds.start}..{seeds.stop - 1}, {params['duration']:g} s each "
          f"({where}), {args.producers} producers, "
          f"{args.partitions} partitions, acks={args.acks}, enable.idempotence={str(args.idempotence).lower()}, "
          "min.insync.replicas=2" + (", transactions too" if args.txn else "")
          + (f", planted bug {args.plant}" if args.plant and args.plant != "all" else ""), file=sys.stderr)
    if args.plant == "all":
        from conformance.chaos.mutation import run_table

        return run_table(seeds, params, sys.argv[1:], to_stderr)
    keep = functools.partial(keep_history, args.history, args.client) if args.history else None
    written: list[dict] = []

    def after(r: SeedResult) -> None:
        if keep is not None:
            keep(r)
        if args.json:   # after every seed: a long run stopped midway leaves the seeds it ran
            written.append({**r.as_dict(), "workload": "txn" if args.txn else "default", "broker": args.broker})
            with open(args.json, "w") as f:
                json.dump(written, f, indent=1)
    results = run_seeds(run_seed, seeds, {**params, **extra}, say=to_stderr if args.verbose else None,
                        progress=to_stderr, out=lambda line: print(line, file=sys.stderr, flush=True), after=after)
    print_summary(args.client, results, replay_command(args.client, {**params, **extra, "broker": args.broker}))
    return 1 if any(r.bad() for r in results) else 0


def _resolve(args: argparse.Namespace) -> tuple[Callable[..., SeedResult], range, dict] | int:
    """(the client's run_seed, the seeds, the parameters), or an exit status (2: bad arguments;
    0: ``--plant list`` answered)."""
    seeds, duration, interval = KAFKA_DEFAULTS if args.broker == "kafka" else DEFAULTS[args.client]
    seeds = args.seeds if args.seeds is not None else seeds
    duration = args.duration if args.duration is not None else duration
    interval = args.interval if args.interval is not None else interval
    if seeds < 1 or duration < 2 or interval <= 0 or args.partitions < 1 or args.producers < 1:
        print("error: --seeds, --partitions, --producers >= 1, --duration >= 2, --interval > 0", file=sys.stderr)
        return 2
    if args.acks != "all" and args.idempotence:
        args.idempotence = False     # Kafka refuses idempotence without acks=all (ProducerConfig)
    if args.broker == "kafka" and args.plant not in (None, "list"):
        print("error: --broker kafka runs with no planted bug (the plants are the emulator's: Apache Kafka has none)",
              file=sys.stderr)
        return 2
    run_seed, why = seed_runner(args.client, args.broker)
    if run_seed is None:
        print(f"error: {why}", file=sys.stderr)
        return 2
    if args.plant == "all" and args.client != "ours":
        print("error: --plant all runs with --client ours (the mutation table is measured with it)", file=sys.stderr)
        return 2
    if args.txn and args.client not in TXN_CLIENTS:
        print(f"error: --txn runs with --client {' or '.join(TXN_CLIENTS)} (the clients with a transactional kit)",
              file=sys.stderr)
        return 2
    if args.plant == "list":
        from conformance.chaos.mutation import list_plants

        print(list_plants())
        return 0
    params = dict(duration=duration, partitions=args.partitions, producers=args.producers, interval=interval,
                  acks=args.acks, idempotence=args.idempotence)
    return run_seed, range(args.first_seed, args.first_seed + seeds), params


TXN_PLANTS = ("aborted-read", "lso-past-open", "fenced-epoch", "lso-at-high")   # they act on transactions


def plant_options(args: argparse.Namespace) -> dict | None:
    """``txn`` and ``plant`` for ours' run_seed; ``history`` for a third-party kit's; None after an error."""
    from broker_emu.plants import PLANTS

    if args.plant and args.plant not in PLANTS:
        print(f"error: no planted bug {args.plant!r}; --plant list names them", file=sys.stderr)
        return None
    if args.plant in TXN_PLANTS and args.client not in TXN_CLIENTS:
        print(f"error: --plant {args.plant} with --client {args.client}: its kit sends no transactions; "
              f"plant one of {', '.join(p for p in PLANTS if p not in TXN_PLANTS)}", file=sys.stderr)
        return None
    if args.plant in TXN_PLANTS and not args.txn:
        print(f"chaos: --plant {args.plant} acts on transactions: --txn added", file=sys.stderr)
        args.txn = True
    if args.client != "ours":   # a third-party kit records its history only when asked: it costs the wall clock
        return {"history": bool(args.history or args.plant), "plant": args.plant or "", "txn": args.txn}
    return {"txn": args.txn, "plant": args.plant or ""}


def seed_runner(client: str, broker: str = "emulator") -> tuple[Callable[..., SeedResult] | None, str]:
    """The per-seed function of ``client`` (one of ``CLIENTS``): ``run_seed(seed, *, duration,
    partitions, producers, interval)``, or None and why (the client is not installed; on
    ``broker`` kafka, Kafka is not)."""
    if broker == "kafka":
        from conformance.realkafka.install import KafkaNotInstalled, check_installed

        try:
            check_installed()
        except KafkaNotInstalled as exc:
            return None, f"--broker kafka: {exc}"
        from conformance.chaos import on_kafka
        if client == "ours":
            return on_kafka.run_seed, ""
    if client == "ours":
        from conformance.chaos.ours import run_seed
        return run_seed, ""
    if client not in CLIENTS:
        return None, f"chaos runs {', '.join(CLIENTS)}, not {client!r}"
    from conformance.chaos import realtime
    from conformance.chaos.kits import KITS

    kit = KITS[client]
    ok, why = kit.available()
    if not ok:
        return None, why
    if broker == "kafka":   # the same kit and driver, on a fresh Kafka behind the proxy
        from conformance.chaos.on_kafka import run_kit_seed
        return functools.partial(run_kit_seed, kit), ""
    return functools.partial(realtime.run_seed, kit), ""


def replay_command(client: str, params: dict, seed: int | None = None) -> str:
    """``broker-emu chaos`` for one seed with ``params`` (duration, interval, producers,
    partitions, and acks / idempotence when not the defaults), every action printed; without
    ``seed``, up to ``--first-seed`` (append one)."""
    args = ["broker-emu", "chaos", "--client", client] + (["--broker", "kafka"] if params.get("broker") == "kafka" else [])
    args += ["--seeds", "1"]
    for key in ("duration", "interval", "producers", "partitions"):
        value = params[key]
        args += [f"--{key}", f"{value:g}" if isinstance(value, float) else str(value)]
    if str(params.get("acks", "all")) != "all":
        args += ["--acks", str(params["acks"])]
    if not params.get("idempotence", True) and str(params.get("acks", "all")) == "all":
        args += ["--no-idempotence"]
    args += ["--txn"] if params.get("txn") else []
    args += ["--plant", params["plant"]] if params.get("plant") else []
    args += ["--verbose", "--first-seed"]
    return shlex.join(args + ([str(seed)] if seed is not None else []))


def keep_history(directory: str, client: str, result: SeedResult) -> None:
    """``--history DIR``: the seed's history as Parquet; then it leaves memory."""
    from conformance.chaos.history_parquet import write_parquet

    if result.history is not None:
        write_parquet(result.history, directory, client=client, seed=result.seed, plant=result.plant)
    result.history = None


def run_seeds(run_seed: Callable[..., SeedResult], seeds, params: dict, *, say=None, progress=None,
              out: Callable[[str], None] = print,
              after: Callable[[SeedResult], None] | None = None) -> list[SeedResult]:
    """Each seed in turn, one line per seed; ``say`` gets every chaos action, ``progress`` the
    real-time runs' lines every 10 s; ``after`` each seed's result once it is printed."""
    results = []
    start = time.perf_counter()
    seeds = list(seeds)
    for i, seed in enumerate(seeds, 1):
        r = run_seed(seed, **params, say=say, progress=progress)
        results.append(r)
        out(f"[{i}/{len(seeds)} {time.perf_counter() - start:6.1f}s] {seed_line(r)}")
        if r.bad() or r.accounting.totals()["unresolved"]:
            for kind, examples in r.accounting.examples().items():
                out(f"    {kind}: {'; '.join(examples[:3])}")
            for anomaly in ([found[0] for found in r.check.anomalies.values() if found] if r.check else []):
                out(f"    {anomaly.kind}: {anomaly.what}")
                for line in anomaly.as_dict()["witness"]:
                    out(f"      {line[:300]}")
        if after is not None:
            after(r)
    return results


def seed_line(r: SeedResult) -> str:
    t = r.accounting.totals()
    flag = "BAD " if r.bad() else ""
    return (f"{flag}seed {r.seed}: {t['sent']} sent, {t['acked']} acknowledged, {t['failed']} failed | lost {t['lost']}, "
            f"misplaced {t['misplaced']}, dup {t['dup_in_epoch']} in epoch (+{t['dup_across_epochs']} across), "
            f"reordered {t['reordered']} | consumer missed {r.consumer['consumer_missed']}, wrong "
            f"{r.consumer['consumer_wrong']}{history_part(r)} | {sum(r.actions.values())} actions | {r.wall_s:.1f}s wall"
            + (f" | {'; '.join(r.notes[:2])}" if r.notes else ""))


def history_part(r: SeedResult) -> str:
    """`` | history: ...``: the anomalies the history checker named, and the unseen writes."""
    if r.check is None:
        return ""
    counts = r.check.counts()
    named = [f"{kind} {counts[kind]}" for kind in r.check.named()]
    return f" | history: {', '.join(named) or 'no anomaly'}" + (f" (unseen {counts['unseen']})" if counts["unseen"] else "")


def totals(results: list[SeedResult]) -> Counter:
    from conformance.chaos.accounting import FIELDS

    total: Counter = Counter({k: 0 for k in FIELDS})
    for r in results:
        total.update(r.accounting.totals())
        total["consumer_missed"] += r.consumer["consumer_missed"]
        total["consumer_wrong"] += r.consumer["consumer_wrong"]
    return total


def print_summary(client: str, results: list[SeedResult], replay: str = "broker-emu chaos --seeds 1 --first-seed") -> None:
    t = totals(results)
    actions: Counter = Counter()
    for r in results:
        actions.update(r.actions)
    bad = [r.seed for r in results if r.bad()]
    print(f"{client}: {len(results)} seeds, {t['sent']} records sent, {t['acked']} acknowledged, {t['failed']} failed "
          f"({t['failed_but_stored']} of them stored anyway), {t['unresolved']} without an outcome, "
          f"{t['acked_without_offset']} acknowledged without an offset")
    print(f"  lost {t['lost']}, misplaced {t['misplaced']}, duplicated in epoch {t['dup_in_epoch']} "
          f"(across epochs {t['dup_across_epochs']}), reordered {t['reordered']}; consumer missed "
          f"{t['consumer_missed']}, read wrong {t['consumer_wrong']}")
    print(f"  actions: {', '.join(f'{k} {v}' for k, v in sorted(actions.items()))}")
    checked = [r.check for r in results if r.check is not None]
    if checked:
        from conformance.chaos.checker import ANOMALIES, INFORMATIONAL

        found: Counter = Counter()
        seeds_with: Counter = Counter()
        for c in checked:
            found.update(c.counts())
            seeds_with.update(kind for kind in INFORMATIONAL if c.counts()[kind])
        print(f"  history checker ({len(checked)} histories): "
              + ", ".join(f"{kind} {found[kind]}" for kind in (*ANOMALIES, "unseen"))
              + "; informational (Kafka allows them): "
              + ", ".join(f"{kind} {found[kind]} in {seeds_with[kind]} seeds" for kind in INFORMATIONAL))
    promised = results[0].judged if results else ()
    if bad:
        print(f"  BAD seeds: {bad[:20]}; replay one with: {replay} {bad[0]}")
    elif set(promised) >= {"lost", "misplaced", "dup_in_epoch"}:
        print("  no acknowledged record lost or misplaced, none duplicated within a producer epoch")
    else:
        unjudged = [k for k in ("lost", "misplaced", "dup_in_epoch") if k not in promised]
        print(f"  {', '.join(unjudged)}: counted, not judged (the producers' settings do not promise them); "
              "the consumer read exactly the logs")
