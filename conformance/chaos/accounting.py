"""What a chaos run did to the data: lost, duplicated and reordered records, per partition.

Pure bookkeeping, no I/O. The producers give each record an identity in its value
(``p<producer>-<n>``: the application's own counter, increasing per producer); the driver
records what the application was told (acknowledged at an offset, or failed); the read-back
gives what is stored, each record with the producer id and epoch of the batch that carries it
(from the broker's log: no client exposes them). Then, per partition:

- **lost**: acknowledged, and absent from the partition — the one thing acks=all forbids;
- **misplaced**: acknowledged at an offset where another record sits, though it is stored
  elsewhere (a lost retry's signature: two records acknowledged at one offset); a record
  acknowledged without an offset (a DUPLICATE_SEQUENCE_NUMBER answer) is only checked for loss;
- **duplicated in epoch**: stored twice by batches of the same producer id and epoch —
  idempotence forbids it (sequence numbers dedupe within an epoch);
- **duplicated across epochs**: stored twice, by different epochs — allowed for a
  non-transactional idempotent producer (a batch whose answer was lost is resent under a new
  epoch after the epoch bump; KIP-360), counted for information;
- **reordered**: stored after a record of the same producer sent later (first copies only);
- **failed** / **failed but stored**: the application was told it failed (delivery timeout...);
  such a record may or may not be stored — neither is an error;
- **unresolved**: the application was never told (no delivery report by the end of the run).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable

FIELDS = ("sent", "acked", "acked_without_offset", "failed", "unresolved", "stored", "lost", "misplaced", "dup_in_epoch", "dup_across_epochs",
          "reordered", "failed_but_stored")
BAD = ("lost", "misplaced", "dup_in_epoch")   # what acks=all + idempotence must never show


def judged(acks: str = "all", idempotence: bool = True) -> tuple[str, ...]:
    """The counts the producer's settings promise to keep at 0: acks=all, no acknowledged record
    lost or misplaced; idempotence, no duplicate within an epoch. Under acks=1 or without
    idempotence they are counted, not judged (what the settings cost, shown)."""
    return (("lost", "misplaced") if acks in ("all", "-1") else ()) + (("dup_in_epoch",) if idempotence else ())


def record_value(producer: int, n: int, pad: int = 0) -> bytes:
    return b"p%d-%d" % (producer, n) + b"." * pad


def parse_value(value: bytes | None) -> tuple[int, int] | None:
    """(producer, n) from a value written by ``record_value``; None for anything else."""
    if not value or not value.startswith(b"p"):
        return None
    head, _, rest = value[1:].partition(b"-")
    digits = rest.rstrip(b".")
    if not head.isdigit() or not digits.isdigit():
        return None
    return int(head), int(digits)


@dataclass(slots=True)
class Sent:
    producer: int
    n: int
    partition: int
    offset: int | None = None     # acknowledged at this offset (-1: acknowledged, offset not given)
    error: str | None = None      # or failed with this
    # told when the outcome is known (the history's completion, at the instant the client reported it)
    on_outcome: Callable[[Sent], None] | None = field(default=None, repr=False, compare=False)

    @property
    def acked(self) -> bool:
        return self.offset is not None

    def settle(self, *, offset: int | None = None, error: str | None = None) -> None:
        """The client reported this record's outcome: acknowledged at ``offset`` or failed with
        ``error``."""
        self.offset, self.error = offset, error
        if self.on_outcome is not None:
            self.on_outcome(self)


@dataclass(frozen=True, slots=True)
class Stored:
    partition: int
    offset: int
    value: bytes | None
    producer_id: int = -1         # of the batch holding it
    producer_epoch: int = -1


@dataclass
class PartitionTally:
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, kind: str, example: str | None = None, n: int = 1) -> None:
        self.counts[kind] += n
        if example is not None and len(self.examples[kind]) < 3:
            self.examples[kind].append(example)


@dataclass
class Accounting:
    partitions: dict[int, PartitionTally] = field(default_factory=lambda: defaultdict(PartitionTally))

    def totals(self) -> Counter:
        total: Counter = Counter({k: 0 for k in FIELDS})
        for tally in self.partitions.values():
            total.update(tally.counts)
        return total

    def bad(self, judged: tuple[str, ...] = BAD) -> int:
        t = self.totals()
        return sum(t[k] for k in judged)

    def examples(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for p, tally in sorted(self.partitions.items()):
            for kind, items in tally.examples.items():
                out[kind] += [f"partition {p}: {e}" for e in items]
        return dict(out)

    def as_dict(self) -> dict:
        return {"totals": dict(self.totals()),
                "partitions": {p: dict(t.counts) for p, t in sorted(self.partitions.items())},
                "examples": {k: v[:5] for k, v in self.examples().items() if k in BAD + ("unresolved",)}}


def account(sent: Iterable[Sent], stored: Iterable[Stored]) -> Accounting:
    """Compare what the application was told with what the partitions hold."""
    acc = Accounting()
    where: dict[tuple[int, int], list[Stored]] = defaultdict(list)   # (producer, n) -> its copies
    by_partition: dict[int, list[Stored]] = defaultdict(list)
    at: dict[tuple[int, int], Stored] = {}
    for r in stored:
        by_partition[r.partition].append(r)
        at[r.partition, r.offset] = r
        ident = parse_value(r.value)
        if ident is not None:
            where[ident].append(r)
    for s in sent:
        _account_sent(acc.partitions[s.partition], s, where.get((s.producer, s.n), []), at)
    for p, records in by_partition.items():
        _account_stored(acc.partitions[p], sorted(records, key=lambda r: r.offset))
    return acc


def _account_sent(tally: PartitionTally, s: Sent, copies: list[Stored], at: dict) -> None:
    tally.add("sent")
    name = f"p{s.producer}-{s.n}"
    if s.acked:
        tally.add("acked")
        if not copies:
            there = at.get((s.partition, s.offset))
            tally.add("lost", f"{name} acknowledged at offset {s.offset}, absent"
                              + (f" (offset {s.offset} holds {there.value!r})" if there else ""))
        elif s.offset == -1:
            tally.add("acked_without_offset")    # e.g. answered DUPLICATE_SEQUENCE_NUMBER: stored, where unknown
        elif all(c.offset != s.offset for c in copies):
            tally.add("misplaced", f"{name} acknowledged at offset {s.offset}, stored at {[c.offset for c in copies]}")
    elif s.error is not None:
        tally.add("failed")
        if copies:
            tally.add("failed_but_stored")
    else:
        tally.add("unresolved", f"{name}: no outcome" + (f", stored at {[c.offset for c in copies]}" if copies else ""))


def _account_stored(tally: PartitionTally, records: list[Stored]) -> None:
    seen: dict[tuple[int, int], list[Stored]] = {}
    latest: dict[int, int] = {}                    # producer -> highest n stored so far
    for r in records:
        tally.add("stored")
        ident = parse_value(r.value)
        if ident is None:
            continue
        earlier = seen.setdefault(ident, [])
        if earlier:
            same = any((e.producer_id, e.producer_epoch) == (r.producer_id, r.producer_epoch) for e in earlier)
            what = f"p{ident[0]}-{ident[1]} at offsets {[e.offset for e in earlier] + [r.offset]}"
            if same:
                tally.add("dup_in_epoch", f"{what}, producer {r.producer_id} epoch {r.producer_epoch}")
            else:
                tally.add("dup_across_epochs", what)
            earlier.append(r)
            continue
        earlier.append(r)
        producer, n = ident
        if n < latest.get(producer, -1):
            tally.add("reordered", f"p{producer}-{n} at offset {r.offset} after p{producer}-{latest[producer]}")
        latest[producer] = max(n, latest.get(producer, -1))
