"""Round-trip benchmark (not a test): what a test made of small steps pays per step, with
confluent-kafka against several brokers in one run, the targets taking turns in rounds so all see
the same machine. Each call waits for the one before:

- ``metadata``: ``list_topics("bench")``;
- ``produce acks=1`` and ``produce acks=all``: one 100 B record produced (linger 0) and flushed;
- ``fetch``: one 100 B record produced by one client, timed until another client's consumer —
  assigned to the partition's end, its Fetch long-polling with fetch.min.bytes=1 — returns it:
  the broker must wake the parked Fetch when the append lands.

p50 and p99 per target, each with its ratio to the first target's (the emulator unless
--targets says otherwise). The targets are ``benchmarks.broker``'s (emulator, mock, kfake,
kafka), started the same way.

Run: .venv/bin/python -m benchmarks.round_trips [--targets emulator,mock,kfake] [--rounds 10]
     [--per-round 100] [--json out/perf/round-trips.json]
Before and after a change, in one run: --targets emulator,emulator-before --before EARLIER_CHECKOUT
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import time
from typing import Any, Callable

VALUE = b"x" * 100


def producer_conf(target: str, acks: str) -> dict:
    conf: dict = {"acks": acks, "linger.ms": 5, "batch.size": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
                  "queue.buffering.max.messages": 1_000_000, "message.max.bytes": 1_000_000}
    if target == "mock":
        conf["test.mock.num.brokers"] = 3
    else:
        conf["bootstrap.servers"] = target
    return conf


def metadata_rtts(targets: list[str], rounds: int = 10, per_round: int = 100) -> list[tuple[float, float]]:
    """Sequential Metadata round trips, p50 and p99 per target. The targets take turns in
    rounds so all see the same machine: one target measured after the other swung the
    ratio between 2x and 4x from run to run on a 2-core VM."""
    return _round_trips(targets, "1", lambda p: p.list_topics("bench", timeout=10), rounds, per_round)


def _delivered(err: Any, msg: Any) -> None:
    if err is not None:
        raise SystemExit(f"a record was not delivered: {err}")


def _produce_one(p: Any) -> None:
    p.produce("bench", VALUE, partition=0, on_delivery=_delivered)
    if p.flush(10):
        raise SystemExit("a record was not delivered within 10 s")


def produce_rtts(targets: list[str], rounds: int = 10, per_round: int = 100, acks: str = "1") -> list[tuple[float, float]]:
    """One 100 B record produced (linger 0) and flushed, one after another: what a test
    that writes a record and waits for it pays per record. p50 and p99 per target, in turns."""
    return _round_trips(targets, acks, _produce_one, rounds, per_round, linger_ms=0)


def _round_trips(targets: list[str], acks: str, call: Callable, rounds: int, per_round: int,
                 linger_ms: int | None = None) -> list[tuple[float, float]]:
    from confluent_kafka import Producer

    confs = [producer_conf(t, acks) | ({} if linger_ms is None else {"linger.ms": linger_ms}) for t in targets]
    producers = [Producer(conf) for conf in confs]
    for p in producers:
        p.list_topics("bench", timeout=10)
        for _ in range(per_round):   # warm up: connections made, first answers cached
            call(p)
    return _in_turns([functools.partial(call, p) for p in producers], rounds, per_round)


def _in_turns(calls: list[Callable[[], Any]], rounds: int, per_round: int) -> list[tuple[float, float]]:
    """``per_round`` timed calls of each target in turn, ``rounds`` times: (p50, p99) in ms."""
    samples: list[list[float]] = [[] for _ in calls]
    for _ in range(rounds):
        for call, out in zip(calls, samples):
            for _ in range(per_round):
                t0 = time.perf_counter()
                call()
                out.append((time.perf_counter() - t0) * 1000)
    results = []
    for out in samples:
        out.sort()
        results.append((statistics.median(out), out[int(0.99 * len(out)) - 1]))
    return results


class _FetchPair:
    """A producer and a consumer of one target on separate connections. The mock lives inside a
    client: the consumer hosts it and the producer bootstraps from the brokers it lists."""

    def __init__(self, target: str) -> None:
        from confluent_kafka import Consumer, Producer, TopicPartition

        conf: dict = {"group.id": "round-trips", "enable.auto.commit": False, "fetch.min.bytes": 1,
                      "fetch.wait.max.ms": 500, "log_level": 0}
        conf |= {"test.mock.num.brokers": 3} if target == "mock" else {"bootstrap.servers": target}
        self.consumer = Consumer(conf)
        brokers = self.consumer.list_topics("bench", timeout=10).brokers.values()
        bootstrap = ",".join(f"{b.host}:{b.port}" for b in brokers) if target == "mock" else target
        self.producer = Producer(producer_conf(bootstrap, "1") | {"linger.ms": 0})
        self.producer.list_topics("bench", timeout=10)   # the mock creates the topic here
        self.consumer.list_topics("bench", timeout=10)
        # from the current end, read first: OFFSET_END resolved after the first record would skip it
        _, end = self.consumer.get_watermark_offsets(TopicPartition("bench", 0), timeout=10)
        self.consumer.assign([TopicPartition("bench", 0, end)])
        self.n = 0

    def one(self) -> None:
        self.n += 1
        key = b"%d" % self.n
        self.producer.produce("bench", VALUE, key=key, partition=0)
        self.producer.poll(0)
        deadline = time.perf_counter() + 10
        while time.perf_counter() < deadline:
            msg = self.consumer.poll(1)
            if msg is not None and msg.error() is None and msg.key() == key:
                self.producer.flush(10)    # its delivery report, outside the next call's time
                return
        raise SystemExit(f"record {self.n} was not fetched within 10 s")

    def close(self) -> None:
        self.producer.flush(10)
        self.consumer.close()


def fetch_rtts(targets: list[str], rounds: int = 10, per_round: int = 100) -> list[tuple[float, float]]:
    pairs = [_FetchPair(t) for t in targets]
    try:
        for pair in pairs:
            for _ in range(per_round):   # warm up: the consumer's first fetches and connections
                pair.one()
        return _in_turns([pair.one for pair in pairs], rounds, per_round)
    finally:
        for pair in pairs:
            pair.close()


KINDS: dict[str, Callable[[list[str], int, int], list[tuple[float, float]]]] = {
    "metadata": metadata_rtts,
    "produce acks=1": produce_rtts,
    "produce acks=all": lambda targets, rounds, per_round: produce_rtts(targets, rounds, per_round, acks="all"),
    "fetch": fetch_rtts,
}


def measure(addresses: list[str], labels: list[str], rounds: int, per_round: int, only: tuple[str, ...] = ()) -> dict:
    figures: dict = {"cores": os.cpu_count(), "rounds": rounds, "per_round": per_round, "targets": labels, "kinds": {}}
    print(f"{'round trip':<20}" + "".join(f"{label:>28}" for label in labels))
    for kind, rtts in KINDS.items():
        if only and kind not in only:
            continue
        results = rtts(addresses, rounds, per_round)
        figures["kinds"][kind] = [{"p50": p50, "p99": p99} for p50, p99 in results]
        for k, name in ((0, "p50"), (1, "p99")):
            base = results[0][k]
            print(f"{kind + ' ' + name:<20}" + "".join(
                f"{r[k]:>18.3f} ms" + (f" ({r[k] / base:.2f}x)" if i else " " * 8) for i, r in enumerate(results)), flush=True)
    return figures


def main() -> None:
    from benchmarks.broker import TARGETS, start_targets, stop_targets

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default="emulator,mock,kfake")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--per-round", type=int, default=100)
    parser.add_argument("--json", help="write the figures here too (benchmarks.report reads out/perf/round-trips.json)")
    parser.add_argument("--emulator-config", action="append", metavar="KEY=VALUE")
    parser.add_argument("--before", metavar="DIR", help="another checkout, served as the target emulator-before")
    args = parser.parse_args()
    keys = args.targets.split(",")
    unknown = [k for k in keys if k not in TARGETS]
    if unknown:
        parser.error(f"unknown target {', '.join(unknown)} (known: {', '.join(TARGETS)})")
    targets = start_targets(keys, True, args)
    try:
        figures = measure([t.address for t in targets], [t.label for t in targets], args.rounds, args.per_round)
    finally:
        stop_targets(targets)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
