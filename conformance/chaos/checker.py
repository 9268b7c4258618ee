"""A checker over client histories (conformance/chaos/history.py) that names Jepsen's Kafka
anomalies, each with a minimal witness: the operations involved.

The definitions follow Jepsen's Kafka workload, ``jepsen.tests.kafka`` (jepsen-io/jepsen,
jepsen/src/jepsen/tests/kafka.clj: ``version-orders``, ``lost-write-cases``,
``poll-skip+nonmonotonic-cases``, ``nonmonotonic-send-cases``, ``duplicate-cases``,
``g1a-cases``, ``unseen``); this is our own reading of them, in our terms. A *key* is a
topic-partition. Per key, the **version order** is every offset some operation says a value is
at: a send's acknowledgement (when its write must have committed, below) and every record a poll
returned. Offsets that carry nothing we know of (transaction markers, aborted or unread records)
are holes; **indices** number the known offsets densely, so consecutive records of a log are one
index apart even across a marker.

A write (a send) *must have committed* when it was acknowledged and is not part of a transaction,
or its transaction committed (``commit_txn`` ok); or, when its outcome is unknown (an error, a
transaction whose end is unknown), when some poll read it or, in a transaction, any of that
transaction's writes (Jepsen's ``must-have-committed?``). A transaction that was aborted
(``abort_txn`` ok, no commit tried; or its producer fenced by a successor with the same
transactional.id before it invoked the commit) *failed*: none of its writes may be seen by a
read_committed consumer.

- **inconsistent-offsets**: one offset of a key holds two different values.
- **duplicate**: one value sits at two offsets of a key.
- **lost-write**: a write that must have committed, with a known offset, whose index is at or
  below the highest index a poll read on that key (by the first index of each read value), was
  read by no poll — a consumer read past it. Witness: the send and the poll that read furthest.
  (A second value acknowledged at an offset some poll read is lost too: the poll saw the other.)
- **poll-skip** / **nonmonotonic-poll**: two successive records one consumer read from a key (in
  one poll, Jepsen's ``int-poll-skip``, or across two) are more than one index apart, or not
  ahead at all, with no ``seek`` on the key or ``assign`` leaving it out in between (Jepsen
  compares the indices of the *values*; we compare those of the *offsets* the consumer reported,
  which our records always carry, so a duplicated value does not also read as a jump).
- **nonmonotonic-send**: two successive sends of one producer to a key, both acknowledged, the
  later at an index not above the earlier.
- **aborted-read** (Jepsen's G1a): a read_committed consumer read a value of an aborted
  transaction.
- **uncommitted-read**: a read_committed consumer's poll returned a value of a transaction that
  was not aborted, and completed before that transaction's ``commit_txn`` was invoked (or it never
  was). Jepsen's ``precommitted-read`` catches a transaction reading its own writes, by the rule it
  states: in Kafka's model "sent values are supposed to be invisible to *all* pollers until their
  producing txn commits"; this applies the same rule to every other read_committed poller, by the
  history's real-time order (a commit marker is written only after EndTxn, which comes after the
  invocation). A value of an aborted transaction is an aborted-read instead.
- **fenced-write**: a send acknowledged although it was invoked after another producer with the
  same transactional.id completed ``init_transactions`` (after this producer's own did): Kafka's
  zombie fencing — the successor's InitProducerId bumps the epoch and every write of the older
  epoch is refused. Not one of Jepsen's Kafka classes (its workload has no second producer per
  transactional id); the guarantee is KIP-98's.
- **G1c** (and, informational, **G0** and **G1c-ww**): cycles between committed transactions
  of write-write and write-read edges, conformance/chaos/cycles.py; only the cycle of write-read
  edges alone is an anomaly under read_committed.
- **unseen**: acknowledged writes no poll read by the end, reported apart (not an anomaly by
  itself: a consumer may stop early; the chaos consumer reads to the end, so it should be 0).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from conformance.chaos import cycles
from conformance.chaos.history import INVOKE, OK, History, Op

ANOMALIES = ("lost-write", "duplicate", "inconsistent-offsets", "poll-skip", "nonmonotonic-poll",
             "nonmonotonic-send", "aborted-read", "uncommitted-read", "fenced-write", *cycles.JUDGED)
INFORMATIONAL = cycles.INFORMATIONAL     # named with a witness, not anomalies: Kafka allows them
CONSUMER_SIDE = ("poll-skip", "nonmonotonic-poll", "aborted-read", "uncommitted-read", *cycles.JUDGED)
ALWAYS_JUDGED = (*CONSUMER_SIDE, "fenced-write")     # transactional guarantees: acks=all is implied
Key = tuple[str, int]
COMMITTED, ABORTED, UNKNOWN = "committed", "aborted", "unknown"


@dataclass
class Write:
    key: Key | None
    value: bytes | None
    process: str
    invoke: Op
    done: Op | None                 # the completion, None if it never came
    txn_outcome: str | None         # None outside a transaction
    committed: bool = False         # must have committed (module doc)

    @property
    def offset(self) -> int | None:
        """The acknowledged offset, if there is one."""
        if self.done is None or self.done.type != OK or self.done.offset is None or self.done.offset < 0:
            return None
        return self.done.offset

    @property
    def acked(self) -> bool:
        return self.done is not None and self.done.type == OK and self.txn_outcome in (None, COMMITTED)

    @property
    def failed(self) -> bool:
        return self.txn_outcome == ABORTED

    def ops(self) -> list[Op]:
        return [self.invoke] + ([self.done] if self.done is not None else [])


@dataclass(frozen=True)
class ReadAt:
    key: Key
    offset: int
    value: bytes | None
    op: Op


@dataclass
class Anomaly:
    kind: str
    key: Key | None
    what: str
    ops: list[Op]

    def as_dict(self) -> dict:
        topic, partition = self.key if self.key is not None else (None, None)
        return {"kind": self.kind, "topic": topic, "partition": partition, "what": self.what,
                "witness": [op.describe() for op in sorted(self.ops, key=lambda op: op.index)]}


@dataclass
class Check:
    anomalies: dict[str, list[Anomaly]] = field(default_factory=lambda: {kind: [] for kind in ANOMALIES})
    unseen: list[Write] = field(default_factory=list)
    informational: dict[str, list[Anomaly]] = field(default_factory=lambda: {kind: [] for kind in INFORMATIONAL})

    def counts(self) -> dict[str, int]:
        return ({kind: len(found) for kind, found in self.anomalies.items()} | {"unseen": len(self.unseen)}
                | {kind: len(found) for kind, found in self.informational.items()})

    def named(self) -> list[str]:
        """The anomaly classes found (unseen apart)."""
        return [kind for kind in ANOMALIES if self.anomalies[kind]]

    def bad(self) -> int:
        return sum(len(found) for found in self.anomalies.values())

    def add(self, kind: str, key: Key | None, what: str, ops: Iterable[Op]) -> None:
        where = self.anomalies if kind in self.anomalies else self.informational
        where[kind].append(Anomaly(kind, key, what, list({op.index: op for op in ops}.values())))

    def as_dict(self, examples: int = 3) -> dict:
        found_all = self.anomalies | self.informational
        return {"counts": self.counts(),
                "examples": {kind: [a.as_dict() for a in found[:examples]] for kind, found in found_all.items()
                             if found},
                "unseen_examples": [f"{w.key}: {w.value!r} acknowledged at {w.offset}" for w in self.unseen[:examples]]}


def judged_anomalies(acks: str = "all", idempotence: bool = True) -> tuple[str, ...]:
    """The anomalies the producers' settings forbid (as accounting.judged): with acks=1 a
    truncation may take an acknowledged write and its offset goes to the next one (lost-write,
    inconsistent-offsets, nonmonotonic-send are the cost, counted); without idempotence a retry
    may be stored twice (duplicate). What a consumer sees is always judged. With idempotence but
    no transactions Kafka still allows a duplicate across producer epochs (accounting.py); the
    histories carry no epochs, so such a duplicate would be judged too (0 in our runs)."""
    strong = acks in ("all", "-1")
    return tuple(kind for kind in ANOMALIES if kind in ALWAYS_JUDGED or (strong and kind != "duplicate")
                 or (kind == "duplicate" and idempotence))


# -- what the history says -------------------------------------------------------------------------

def txn_outcomes(ops: list[Op]) -> dict[tuple[str, int], str]:
    """(process, txn) -> committed, aborted or unknown: committed when a ``commit_txn`` completed
    ok, aborted when an ``abort_txn`` did and no commit was tried — or when the producer was
    fenced (``fenced_at``) before it invoked the commit: the successor's InitProducerId aborts
    the open transaction (``TransactionCoordinator.handleInitProducerId``), and a commit sent
    after it is refused."""
    tried_commit: dict[tuple[str, int], int] = {}
    out: dict[tuple[str, int], str] = {}
    for op in ops:
        if op.txn is None or op.f not in ("begin", "commit_txn", "abort_txn"):
            continue
        who = (op.process, op.txn)
        out.setdefault(who, UNKNOWN)
        if op.f == "commit_txn" and op.type == INVOKE:
            tried_commit.setdefault(who, op.index)
        elif op.f == "commit_txn" and op.type == OK:
            out[who] = COMMITTED
        elif op.f == "abort_txn" and op.type == OK and who not in tried_commit:
            out[who] = ABORTED
    fenced = fenced_at(ops)
    for who, outcome in out.items():
        if outcome == UNKNOWN and who[0] in fenced and tried_commit.get(who, len(ops)) > fenced[who[0]].index:
            out[who] = ABORTED
    return out


def inits_by_id(ops: list[Op]) -> tuple[dict[str, list[Op]], dict[str, tuple[str, Op]]]:
    """Completed ``init_txn``: transactional.id -> its inits in order, and process -> (its
    transactional.id, its first completed init)."""
    inits: dict[str, list[Op]] = defaultdict(list)
    own: dict[str, tuple[str, Op]] = {}
    for op in ops:
        if op.f == "init_txn" and op.type == OK and op.detail:
            tid = json.loads(op.detail).get("transactional_id")
            if tid is not None:
                inits[tid].append(op)
                own.setdefault(op.process, (tid, op))
    return inits, own


def fenced_at(ops: list[Op]) -> dict[str, Op]:
    """process -> the first completed init of another producer with its transactional.id, after
    its own: from then on it is a zombie."""
    inits, own = inits_by_id(ops)
    out = {}
    for process, (tid, mine) in own.items():
        fence = next((op for op in inits[tid] if op.process != process and op.index > mine.index), None)
        if fence is not None:
            out[process] = fence
    return out


def writes_of(ops: list[Op]) -> list[Write]:
    """Every send, in invocation order, with its completion and its transaction's outcome."""
    done = {op.invoke: op for op in ops if op.f == "send" and op.type != INVOKE and op.invoke is not None}
    outcomes = txn_outcomes(ops)
    out = []
    for op in ops:
        if op.f == "send" and op.type == INVOKE:
            completion = done.get(op.index)
            partition = completion.partition if completion is not None and completion.partition is not None \
                else op.partition
            key = (op.topic, partition) if op.topic is not None and partition is not None else None
            outcome = None if op.txn is None else outcomes.get((op.process, op.txn), UNKNOWN)
            out.append(Write(key, op.value, op.process, op, completion, outcome))
    return out


def reads_of(ops: list[Op]) -> list[ReadAt]:
    return [ReadAt((r.topic, r.partition), r.offset, r.value, op)
            for op in ops if op.f == "poll" and op.type == OK and op.records for r in op.records]


def mark_committed(writes: list[Write], reads: list[ReadAt]) -> None:
    """Jepsen's ``must-have-committed?``, per write and, for an unknown transaction, per
    transaction: acknowledged (and committed), or read by some poll."""
    read = {(r.key, r.value) for r in reads}
    seen_txns = {(w.process, w.invoke.txn) for w in writes if w.txn_outcome == UNKNOWN and (w.key, w.value) in read}
    for w in writes:
        if w.failed:
            continue
        w.committed = w.acked or (w.key, w.value) in read or (
            w.txn_outcome == UNKNOWN and (w.process, w.invoke.txn) in seen_txns)


class VersionOrder:
    """Per key: offset -> value -> the operations that put it there; the dense indices."""

    def __init__(self, writes: list[Write], reads: list[ReadAt]):
        self.at: dict[Key, dict[int, dict[bytes | None, list[Op]]]] = defaultdict(lambda: defaultdict(dict))
        for w in writes:
            if w.committed and w.key is not None and w.offset is not None and w.done is not None:
                self.at[w.key][w.offset].setdefault(w.value, []).extend(w.ops())
        for r in reads:
            self.at[r.key][r.offset].setdefault(r.value, []).append(r.op)
        self.index = {key: {o: i for i, o in enumerate(sorted(offsets))} for key, offsets in self.at.items()}
        self.offsets = {key: sorted(offsets) for key, offsets in self.at.items()}

    def values_at_index(self, key: Key, i: int) -> list[bytes | None]:
        return list(self.at[key][self.offsets[key][i]])

    def first_last_index(self, key: Key) -> tuple[dict, dict]:
        """value -> its first index, and its last, in ``key``'s order."""
        first: dict[bytes | None, int] = {}
        last: dict[bytes | None, int] = {}
        for offset in self.offsets.get(key, []):
            i = self.index[key][offset]
            for value in self.at[key][offset]:
                first.setdefault(value, i)
                last[value] = i
        return first, last


# -- the anomalies ---------------------------------------------------------------------------------

def check(history: History | list[Op]) -> Check:
    ops = history.ops if isinstance(history, History) else history
    writes, reads = writes_of(ops), reads_of(ops)
    mark_committed(writes, reads)
    order = VersionOrder(writes, reads)
    result = Check()
    _offsets_and_duplicates(order, result)
    _lost_and_unseen(order, writes, reads, result)
    _polls(order, ops, result)
    _sends(order, writes, result)
    isolation = _isolation(ops)
    _aborted_reads(ops, writes, reads, isolation, result)
    _uncommitted_reads(ops, writes, reads, isolation, result)
    _fenced_writes(ops, writes, result)
    graph = cycles.build(ops, writes, order, isolation)
    for cycle in cycles.cycles(graph):
        what, key, witness = cycles.describe(graph, cycle)
        result.add(cycle.kind, key, what, witness)
    return result


def _offsets_and_duplicates(order: VersionOrder, result: Check) -> None:
    for key in sorted(order.at):
        where: dict[bytes | None, list[int]] = defaultdict(list)
        for offset in order.offsets[key]:
            values = order.at[key][offset]
            if len(values) > 1:
                result.add("inconsistent-offsets", key, f"offset {offset} holds {sorted(values, key=repr)}",
                           (op for ops in values.values() for op in ops))
            for value in values:
                where[value].append(offset)
        for value, offsets in where.items():
            if len(offsets) > 1:
                ops = (op for o in offsets for op in order.at[key][o][value])
                result.add("duplicate", key, f"{value!r} at offsets {offsets}", ops)


def _lost_and_unseen(order: VersionOrder, writes: list[Write], reads: list[ReadAt], result: Check) -> None:
    read_values: dict[Key, set] = defaultdict(set)
    furthest: dict[Key, tuple[int, Op]] = {}
    for r in reads:
        read_values[r.key].add(r.value)
    known: dict[Key, list[Write]] = defaultdict(list)     # in the version order: must have committed, offset known
    for w in writes:
        if w.committed and w.key is not None and w.offset is not None:
            known[w.key].append(w)
    for key in sorted(read_values):
        first, last = order.first_last_index(key)
        for r in reads:   # the poll that read furthest: by the first index of each value read (Jepsen's bound)
            if r.key == key and r.value in first and first[r.value] > furthest.get(key, (-1, r.op))[0]:
                furthest[key] = (first[r.value], r.op)
        if key not in furthest:
            continue
        bound, poll = furthest[key]
        for w in known[key]:
            if w.value not in read_values[key] and last.get(w.value, bound + 1) <= bound:
                result.add("lost-write", key, f"{w.value!r} acknowledged at offset {w.offset} (index "
                           f"{first[w.value]}), never read; a poll read index {bound}", w.ops() + [poll])
    result.unseen = [w for w in writes if w.acked and w.key is not None and w.value not in read_values[w.key]]


def _polls(order: VersionOrder, ops: list[Op], result: Check) -> None:
    """Per consumer, each key's successive reads (module doc)."""
    last: dict[tuple[str, Key], tuple[int, Op]] = {}      # (consumer, key) -> (index read, its poll)
    for op in ops:
        if op.f == "assign" and op.type == OK and op.detail:
            kept = {tuple(tp) for tp in json.loads(op.detail).get("partitions", [])}
            for who in [who for who in last if who[0] == op.process and who[1] not in kept]:
                del last[who]
        elif op.f == "seek" and op.type == OK and op.topic is not None and op.partition is not None:
            last.pop((op.process, (op.topic, op.partition)), None)
        elif op.f == "poll" and op.type == OK and op.records:
            for r in op.records:
                key = (r.topic, r.partition)
                i = order.index[key][r.offset]
                before = last.get((op.process, key))
                last[op.process, key] = (i, op)
                if before is not None:
                    _poll_pair(order, key, before, (i, op), r.offset, result)


def _poll_pair(order: VersionOrder, key: Key, before: tuple[int, Op], now: tuple[int, Op], offset: int,
               result: Check) -> None:
    (i1, op1), (i2, op2) = before, now
    delta = i2 - i1
    o1 = order.offsets[key][i1]
    if delta > 1:
        skipped = [v for i in range(i1 + 1, i2) for v in order.values_at_index(key, i)]
        result.add("poll-skip", key, f"{op2.process} read offset {o1} then {offset}, skipping {skipped[:5]}"
                   + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""), [op1, op2])
    elif delta < 1:
        result.add("nonmonotonic-poll", key, f"{op2.process} read offset {o1} then {offset}", [op1, op2])


def _sends(order: VersionOrder, writes: list[Write], result: Check) -> None:
    last: dict[tuple[str, Key], Write] = {}
    for w in writes:
        if not (w.acked and w.committed and w.key is not None and w.offset is not None):
            continue
        before = last.get((w.process, w.key))
        last[w.process, w.key] = w
        if before is not None and before.offset is not None:
            index = order.index[w.key]
            if index[w.offset] - index[before.offset] < 1:
                result.add("nonmonotonic-send", w.key, f"{w.process} sent {before.value!r} (offset {before.offset}) "
                           f"then {w.value!r} (offset {w.offset})", before.ops() + w.ops())


def _isolation(ops: list[Op]) -> dict[str, str]:
    """Each consumer's isolation level, as its last assignment says."""
    isolation: dict[str, str] = {}
    for op in ops:
        if op.f == "assign" and op.detail:
            isolation[op.process] = json.loads(op.detail).get("isolation", "read_uncommitted")
    return isolation


def _aborted_reads(ops: list[Op], writes: list[Write], reads: list[ReadAt], isolation: dict[str, str],
                   result: Check) -> None:
    aborted = {(w.key, w.value): w for w in writes if w.failed}
    ends = {(op.process, op.txn): op for op in ops if op.f == "abort_txn" and op.type == OK}
    for r in reads:
        w = aborted.get((r.key, r.value))
        if w is not None and isolation.get(r.op.process) == "read_committed":
            end = ends.get((w.process, w.invoke.txn))
            result.add("aborted-read", r.key, f"{r.op.process} (read_committed) read {r.value!r} at offset {r.offset}, "
                       f"written in {w.process}'s aborted transaction {w.invoke.txn}",
                       w.ops() + ([end] if end else []) + [r.op])


def _uncommitted_reads(ops: list[Op], writes: list[Write], reads: list[ReadAt], isolation: dict[str, str],
                       result: Check) -> None:
    commits: dict[tuple[str, int], Op] = {}      # (process, txn) -> its first commit_txn invocation
    for op in ops:
        if op.f == "commit_txn" and op.type == INVOKE and op.txn is not None:
            commits.setdefault((op.process, op.txn), op)
    in_txn = {(w.key, w.value): w for w in writes if w.txn_outcome is not None and not w.failed}
    for r in reads:
        w = in_txn.get((r.key, r.value))
        if w is None or isolation.get(r.op.process) != "read_committed" or w.invoke.txn is None:
            continue
        commit = commits.get((w.process, w.invoke.txn))
        if commit is None or commit.index > r.op.index:
            when = "before its commit was invoked" if commit else "and it was never committed"
            result.add("uncommitted-read", r.key, f"{r.op.process} (read_committed) read {r.value!r} at offset "
                       f"{r.offset}, written in {w.process}'s transaction {w.invoke.txn}, {when}",
                       w.ops() + ([commit] if commit else []) + [r.op])


def _fenced_writes(ops: list[Op], writes: list[Write], result: Check) -> None:
    fenced = fenced_at(ops)
    for w in writes:
        fence = fenced.get(w.process)
        if w.offset is None or w.key is None or fence is None or fence.index > w.invoke.index:
            continue
        tid = json.loads(fence.detail or "{}").get("transactional_id")
        result.add("fenced-write", w.key, f"{w.process} sent {w.value!r}, acknowledged at offset {w.offset}, after "
                   f"{fence.process} (transactional.id {tid}) had fenced it", [fence] + w.ops())
