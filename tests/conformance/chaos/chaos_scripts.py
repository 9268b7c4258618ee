"""Histories written by hand for the history checker's tests (pure and Spark): each scenario
builds one and says what the checker must name in it (counts, unseen included)."""

from __future__ import annotations

import itertools
from typing import Callable

from conformance.chaos.history import INFO, OK, History, Op, Read, detail

T = "t"


class Script:
    """Sends, polls, seeks and transactions on a counting clock."""

    def __init__(self) -> None:
        ticks = itertools.count()
        self.h = History(lambda: float(next(ticks)))

    def send(self, value: str, offset: int | None, partition: int = 0, process: str = "p", txn: int | None = None,
             error: str | None = None) -> Op:
        inv = self.h.invoke(process, "send", topic=T, partition=partition, value=value.encode(), txn=txn)
        if error is not None:
            return self.h.complete(inv, INFO, value=value.encode(), error=error)
        return self.h.complete(inv, OK, offset=offset, value=value.encode())

    def assign(self, process: str = "c", isolation: str = "read_uncommitted", partitions=((T, 0),)) -> None:
        self.h.event(process, "assign", detail=detail(isolation=isolation, partitions=[list(p) for p in partitions]))

    def poll(self, *records: tuple[int, str], partition: int = 0, process: str = "c", txn: int | None = None) -> Op:
        inv = self.h.invoke(process, "poll", txn=txn)
        return self.h.complete(inv, OK, records=[Read(T, partition, o, None, v.encode()) for o, v in records])

    def init(self, process: str = "tp", transactional_id: str = "tx") -> None:
        said = detail(transactional_id=transactional_id)
        self.h.complete(self.h.invoke(process, "init_txn", detail=said), OK, detail=said)

    def begin(self, n: int, process: str = "tp") -> None:
        self.h.event(process, "begin", txn=n)

    def end(self, f: str, n: int, process: str = "tp", type_: str = OK, error: str | None = None) -> None:
        self.h.complete(self.h.invoke(process, f, txn=n), type_, error=error)


def clean(s: Script) -> dict:
    s.assign()
    for i, v in enumerate("abc"):
        s.send(v, i)
    s.poll((0, "a"), (1, "b"))
    s.poll((2, "c"))
    return {}


def lost(s: Script) -> dict:
    s.assign()
    s.send("a", 0)
    s.send("b", 1)
    s.send("c", 2)
    s.poll((0, "a"))
    s.poll((2, "c"))
    return {"lost-write": 1, "poll-skip": 1, "unseen": 1}


def unseen_at_the_end(s: Script) -> dict:
    s.assign()
    s.send("a", 0)
    s.send("b", 1)
    s.poll((0, "a"))
    return {"unseen": 1}


def indeterminate_send(s: Script) -> dict:
    s.assign()
    s.send("a", 0)
    s.send("b", None, error="RequestTimeoutException")   # outcome unknown: not lost if never read
    s.send("c", 1)
    s.poll((0, "a"), (1, "c"))
    return {}


def two_values_at_one_offset(s: Script) -> dict:
    s.assign()
    s.send("a", 0, process="p1")
    s.send("b", 0, process="p2")                        # acknowledged at an offset already taken
    s.poll((0, "a"))
    return {"lost-write": 1, "inconsistent-offsets": 1, "unseen": 1}   # the poll read offset 0: b is not there


def duplicate(s: Script) -> dict:
    s.assign()
    s.send("a", 0)
    s.send("b", 2)
    s.poll((0, "a"), (1, "a"), (2, "b"))                 # a stored twice (a retry appended again)
    return {"duplicate": 1}


def skips_and_goes_back(s: Script) -> dict:
    s.assign()
    for i, v in enumerate("abcd"):
        s.send(v, i)
    s.poll((0, "a"))
    s.poll((2, "c"))                                     # skips b
    s.poll((1, "b"))                                     # goes back
    s.poll((1, "b"), (2, "c"), (3, "d"))                 # b again: not ahead either
    return {"poll-skip": 1, "nonmonotonic-poll": 2}


def seek_and_reassign(s: Script) -> dict:
    s.assign()
    for i, v in enumerate("abcd"):
        s.send(v, i)
    s.poll((0, "a"), (1, "b"), (2, "c"))
    s.h.event("c", "seek", topic=T, partition=0, offset=0)
    s.poll((0, "a"))                                     # after a seek: no jump
    s.assign(partitions=())
    s.assign()
    s.poll((3, "d"), (1, "b"))                           # after a reassignment: d is fine; then b, in one poll: judged
    return {"nonmonotonic-poll": 1}


def markers_and_aborted_records(s: Script) -> dict:
    s.assign(isolation="read_committed")
    s.begin(1)
    s.send("a", 0, process="tp", txn=1)
    s.end("commit_txn", 1)                               # its marker at offset 1
    s.begin(2)
    s.send("x", 2, process="tp", txn=2)
    s.end("abort_txn", 2)                                # x aborted, its marker at 3
    s.begin(3)
    s.send("b", 4, process="tp", txn=3)
    s.end("commit_txn", 3)
    s.poll((0, "a"))
    s.poll((4, "b"))
    return {}


def aborted_read(s: Script) -> dict:
    s.assign(isolation="read_committed")
    s.assign(process="u")                                # read_uncommitted: may see it
    s.begin(1)
    s.send("x", 0, process="tp", txn=1)
    s.end("abort_txn", 1)
    s.poll((0, "x"))
    s.poll((0, "x"), process="u")
    return {"aborted-read": 1}


def read_before_commit(s: Script) -> dict:
    s.assign(isolation="read_committed")
    s.assign(process="u")                                # read_uncommitted: may see it
    s.begin(1)
    s.send("a", 0, process="tp", txn=1)
    s.poll((0, "a"))                                     # before the commit was even invoked
    s.poll((0, "a"), process="u")
    s.end("commit_txn", 1)
    s.begin(2)
    s.send("b", 2, process="tp", txn=2)
    s.end("commit_txn", 2)
    s.poll((2, "b"))                                     # after its commit: fine
    s.begin(3)
    s.send("c", 4, process="tp", txn=3)
    s.poll((4, "c"))                                     # a transaction never committed
    return {"uncommitted-read": 2}


def zombie(s: Script) -> dict:
    s.assign(isolation="read_committed")
    s.init("tp")
    s.begin(1)
    s.send("a", 0, process="tp", txn=1)
    s.init("tp2")                                        # a successor: tp is fenced, its transaction aborted
    s.send("b", 1, process="tp", txn=1)                  # ... yet this write was acknowledged
    s.end("commit_txn", 1, type_=INFO, error="ProducerFencedException")
    s.begin(1, process="tp2")
    s.send("c", 3, process="tp2", txn=1)
    s.end("commit_txn", 1, process="tp2")
    s.poll((0, "a"), (3, "c"))                           # a was in the fenced, so aborted, transaction
    return {"fenced-write": 1, "aborted-read": 1}


def commit_unknown(s: Script) -> dict:
    s.assign(isolation="read_committed")
    s.begin(1)
    s.send("a", 0, process="tp", txn=1)
    s.send("b", 1, process="tp", txn=1)
    s.end("commit_txn", 1, type_=INFO, error="TimeoutException")
    s.end("abort_txn", 1)                                # after a commit was tried: not known aborted
    s.send("c", 3)
    s.poll((0, "a"), (3, "c"))                           # a read: the transaction committed, so b is lost
    return {"lost-write": 1, "poll-skip": 1}


def sends_go_back(s: Script) -> dict:
    s.assign()
    s.send("a", 0)
    s.send("b", 1, process="q")
    s.send("c", 0)                                       # p's second send acknowledged at its first's offset
    s.poll((0, "a"), (1, "b"))
    return {"nonmonotonic-send": 1, "inconsistent-offsets": 1, "lost-write": 1, "unseen": 1}


BOTH = ((T, 0), (T, 1))


def _read_all(s: Script, p0: tuple[tuple[int, str], ...], p1: tuple[tuple[int, str], ...]) -> None:
    """A read_committed consumer outside any transaction reads both partitions to the end."""
    s.poll(*p0, process="c")
    s.poll(*p1, partition=1, process="c")


def write_cycle(s: Script) -> dict:
    """G0: ta's write before tb's on partition 0, after it on partition 1. Kafka allows it."""
    for who in ("c", "ta", "tb"):
        s.assign(process=who, isolation="read_committed", partitions=BOTH)
    s.begin(1, process="ta")
    s.begin(1, process="tb")
    s.send("a0", 0, partition=0, process="ta", txn=1)
    s.send("b0", 1, partition=0, process="tb", txn=1)
    s.send("b1", 0, partition=1, process="tb", txn=1)
    s.send("a1", 1, partition=1, process="ta", txn=1)
    s.end("commit_txn", 1, process="ta")
    s.end("commit_txn", 1, process="tb")
    _read_all(s, ((0, "a0"), (1, "b0")), ((0, "b1"), (1, "a1")))
    return {"G0": 1}


def read_cycle(s: Script) -> dict:
    """G1c: each of two consume-transform-produce transactions read the other's write, which
    read_committed cannot show before a commit (both reads are uncommitted reads too)."""
    for who in ("c", "ta", "tb"):
        s.assign(process=who, isolation="read_committed", partitions=BOTH)
    s.begin(1, process="ta")
    s.begin(1, process="tb")
    s.send("a", 0, partition=0, process="ta", txn=1)
    s.send("b", 0, partition=1, process="tb", txn=1)
    s.poll((0, "b"), partition=1, process="ta", txn=1)
    s.poll((0, "a"), partition=0, process="tb", txn=1)
    s.end("commit_txn", 1, process="ta")
    s.end("commit_txn", 1, process="tb")
    _read_all(s, ((0, "a"),), ((0, "b"),))
    return {"G1c": 1, "uncommitted-read": 2}


def read_cycle_through_a_write(s: Script) -> dict:
    """G1c-ww: tb wrote partition 1 before ta did, then read what ta committed: allowed (writes
    are not isolated), informational. Then a chain of reads of committed writes: no cycle."""
    for who in ("c", "ta", "tb"):
        s.assign(process=who, isolation="read_committed", partitions=BOTH)
    s.begin(1, process="tb")
    s.send("b", 0, partition=1, process="tb", txn=1)
    s.begin(1, process="ta")
    s.send("a0", 0, partition=0, process="ta", txn=1)
    s.send("a1", 1, partition=1, process="ta", txn=1)
    s.end("commit_txn", 1, process="ta")
    s.poll((0, "a0"), partition=0, process="tb", txn=1)
    s.end("commit_txn", 1, process="tb")
    s.begin(2, process="ta")
    s.poll((0, "b"), (1, "a1"), partition=1, process="ta", txn=2)
    s.send("a2", 1, partition=0, process="ta", txn=2)
    s.end("commit_txn", 2, process="ta")
    _read_all(s, ((0, "a0"), (1, "a2")), ((0, "b"), (1, "a1")))
    return {"G1c-ww": 1}


SCENARIOS: dict[str, Callable[[Script], dict]] = {f.__name__: f for f in (
    clean, lost, unseen_at_the_end, indeterminate_send, two_values_at_one_offset, duplicate, skips_and_goes_back,
    seek_and_reassign, markers_and_aborted_records, aborted_read, read_before_commit, zombie, commit_unknown,
    sends_go_back, write_cycle, read_cycle, read_cycle_through_a_write)}


def build(name: str) -> tuple[History, dict]:
    s = Script()
    expected = SCENARIOS[name](s)
    return s.h, expected
