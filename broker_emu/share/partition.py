"""One share partition's in-flight records (KIP-932; Kafka's ``SharePartition``), sans-io.

Every offset between the start offset and the end offset (the first never acquired) is in one
state: available, acquired by one member until its lock deadline, acknowledged, or archived.
Acquiring counts a delivery; an acquisition lock that expires, a RELEASE and a member that goes
make the record available again with its delivery count kept, unless the count has reached the
group's delivery count limit: then it is archived (``InFlightState.tryUpdateState``). The start
offset moves past the acknowledged and archived records at its head.

Time is passed in (``now_s`` on trio's clock, ``ms_at`` for the trace) and lock timers are asked
of ``call_at``, so a lock expires exactly at its deadline in virtual time: a timer per
acquisition, as Kafka's ``AcquisitionLockTimerTask``; a renewed record gets a new lock and the old
timer passes it by.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from client.errors import ErrorCode as E


class State(enum.IntEnum):
    """Kafka's ``RecordState`` ids."""
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AckType(enum.IntEnum):
    """ShareFetch / ShareAcknowledge acknowledge types (``AcknowledgeType``; RENEW is KIP-1222)."""
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class Lock:
    """The acquisition lock of the records one acquire (or renew) handed to a member; its start
    and deadline in trace milliseconds come from one reading of the clock."""
    __slots__ = ("member", "deadline_s", "start_ms", "deadline_ms", "timer", "late_ms")

    def __init__(self, member: str, deadline_s: float, start_ms: float, deadline_ms: float, late_ms: float = 0.0):
        self.member, self.deadline_s, self.start_ms, self.deadline_ms = member, deadline_s, start_ms, deadline_ms
        self.late_ms = late_ms   # a lock_late fault: the expiry runs this long after the deadline
        self.timer: Any = None


@dataclass(slots=True)
class InFlight:
    state: State
    delivery_count: int = 0
    lock: Lock | None = None


class AckError(Exception):
    """An acknowledgement refused: ``code`` is INVALID_RECORD_STATE or INVALID_REQUEST."""

    def __init__(self, code: int, message: str | None):
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class Hooks:
    """What a share partition asks of its surroundings: the clock, timers and the trace."""
    now_s: Callable[[], float]
    ms_at: Callable[[float], float]                     # trace milliseconds of a trio time
    call_at: Callable[[float, Callable[[], None]], Any]
    emit: Callable[[str, dict[str, Any]], None]        # trace kind name, details
    available: Callable[[], None] = lambda: None       # records became acquirable (wake fetches)


def ranges(offsets: Iterable[int]) -> list[list[int]]:
    """Sorted offsets as [first, last] runs, for the trace."""
    out: list[list[int]] = []
    for o in sorted(offsets):
        if out and out[-1][1] == o - 1:
            out[-1][1] = o
        else:
            out.append([o, o])
    return out


@dataclass
class SharePartition:
    group: str
    topic: str
    index: int
    start_offset: int
    hooks: Hooks
    end_offset: int = -1
    delivery_count_limit: int = 5      # the group's, set by the owner before each use
    topic_id: Any = None               # a topic deleted and made again under its name starts afresh
    records: dict[int, InFlight] = field(default_factory=dict)
    # the runs of new offsets each acquisition took (first -> last), as Kafka's cached in-flight
    # batches: one is dropped when the start offset has passed its last offset
    batches: dict[int, int] = field(default_factory=dict)
    # what the share coordinator holds (start offset, records acknowledged or archived past it), as
    # of the last write: Kafka's SharePartition writes its state when records are acknowledged,
    # released or their lock expires, with the start offset from before that change moved it
    # (maybeUpdateCachedStateAndOffsets runs once the write is done), and never on acquisition.
    # None: nothing written yet, so DescribeShareGroupOffsets shows no start offset
    persisted: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.end_offset < self.start_offset:
            self.end_offset = self.start_offset

    def _details(self, **more: Any) -> dict[str, Any]:
        return {"group": self.group, "topic": self.topic, "partition": self.index, **more}

    # -- acquiring --------------------------------------------------------------------------------
    def acquirable(self, high_watermark: int) -> bool:
        return high_watermark > self.end_offset or any(r.state is State.AVAILABLE for r in self.records.values())

    def acquire(self, member: str, high_watermark: int, max_records: int, max_in_flight: int, lock_ms: int,
                log_start: int = 0, late_ms: float = 0.0) -> list[dict[str, int]]:
        """Lock up to ``max_records`` offsets for ``member``: available ones first (redeliveries),
        then new ones below the high watermark while fewer than ``max_in_flight`` are in flight
        (``share.partition.max.record.locks``). Returns the AcquiredRecords ranges, one per run of
        offsets with the same delivery count."""
        if log_start > self.start_offset:   # the log lost its head (retention, DeleteRecords): so do we
            for offset in range(self.start_offset, min(log_start, self.end_offset)):
                self.records.pop(offset, None)
            self.start_offset, self.end_offset = log_start, max(self.end_offset, log_start)
            self._advance()
        taken: list[int] = []
        for offset in sorted(self.records):
            if len(taken) >= max_records:
                break
            if self.records[offset].state is State.AVAILABLE:
                taken.append(offset)
        first_new = self.end_offset
        while (len(taken) < max_records and self.end_offset < high_watermark
               and self.end_offset - self.start_offset < max_in_flight):
            self.records[self.end_offset] = InFlight(State.AVAILABLE)
            taken.append(self.end_offset)
            self.end_offset += 1
        if self.end_offset > first_new:
            self.batches[first_new] = self.end_offset - 1
        if not taken:
            return []
        lock = self._lock(member, lock_ms, late_ms)
        out: list[dict[str, int]] = []
        for offset in taken:
            rec = self.records[offset]
            rec.state, rec.lock = State.ACQUIRED, lock
            rec.delivery_count += 1
            last = out[-1] if out else None
            if last and last["last_offset"] == offset - 1 and last["delivery_count"] == rec.delivery_count:
                last["last_offset"] = offset
            else:
                out.append({"first_offset": offset, "last_offset": offset, "delivery_count": rec.delivery_count})
        self.hooks.emit("share_acquire", self._details(
            member=member, offsets=ranges(taken), delivery_counts=[r["delivery_count"] for r in out],
            locked_at_ms=lock.start_ms, lock_deadline_ms=lock.deadline_ms, lock_duration_ms=lock_ms,
            **({"late_ms": late_ms} if late_ms else {})))
        return out

    def _lock(self, member: str, lock_ms: int, late_ms: float = 0.0) -> Lock:
        now_s = self.hooks.now_s()
        start_ms = self.hooks.ms_at(now_s)
        deadline_s = now_s + lock_ms / 1000.0
        lock = Lock(member, deadline_s, start_ms, round(start_ms + lock_ms, 3), late_ms)
        lock.timer = self.hooks.call_at(deadline_s + late_ms / 1000.0, lambda: self._expire(lock))
        return lock

    # -- letting go -------------------------------------------------------------------------------
    def _make_available(self, offsets: list[int], limit: int) -> tuple[list[int], list[int]]:
        """(made available, archived at the limit)."""
        freed, archived = [], []
        for offset in offsets:
            rec = self.records[offset]
            rec.lock = None
            if rec.delivery_count >= limit:
                rec.state = State.ARCHIVED
                archived.append(offset)
            else:
                rec.state = State.AVAILABLE
                freed.append(offset)
        return freed, archived

    def _expire(self, lock: Lock) -> None:
        offsets = [o for o, r in self.records.items() if r.lock is lock and r.state is State.ACQUIRED]
        if not offsets:
            return
        limit = self.delivery_count_limit
        freed, archived = self._make_available(offsets, limit)
        self.hooks.emit("share_lock_expired", self._details(
            member=lock.member, offsets=ranges(offsets), locked_at_ms=lock.start_ms, lock_deadline_ms=lock.deadline_ms,
            lock_duration_ms=round(lock.deadline_ms - lock.start_ms),
            available=ranges(freed), delivery_counts=sorted({self.records[o].delivery_count for o in offsets}),
            **({"late_ms": lock.late_ms} if lock.late_ms else {})))
        self._archived(archived, lock.member, "delivery_count_limit", limit)
        self._persist()
        self._advance()
        if freed:
            self.hooks.available()

    def release_member(self, member: str, reason: str) -> None:
        """A member that leaves (or is fenced) gives back what it holds (``releaseAcquiredRecords``)."""
        offsets = [o for o, r in self.records.items()
                   if r.state is State.ACQUIRED and r.lock is not None and r.lock.member == member]
        if offsets:
            self._release(offsets, member, reason)

    def _release(self, offsets: list[int], member: str, reason: str) -> None:
        limit = self.delivery_count_limit
        # the lock's timer stays: it finds these records no longer under its lock and passes
        freed, archived = self._make_available(offsets, limit)
        self.hooks.emit("share_release", self._details(member=member, offsets=ranges(offsets), reason=reason,
                                                        available=ranges(freed)))
        self._archived(archived, member, "delivery_count_limit", limit)
        self._persist()
        self._advance()
        if freed:
            self.hooks.available()

    def _archived(self, offsets: list[int], member: str, reason: str, limit: int) -> None:
        if offsets:
            self.hooks.emit("share_archive", self._details(
                member=member, offsets=ranges(offsets), reason=reason, delivery_count_limit=limit,
                delivery_counts=sorted({self.records[o].delivery_count for o in offsets})))

    def _persist(self) -> None:
        """The share coordinator's copy, written before the start offset moves."""
        done = sum(1 for o, r in self.records.items()
                   if o >= self.start_offset and r.state in (State.ACKNOWLEDGED, State.ARCHIVED))
        self.persisted = (self.start_offset, done)

    def _advance(self) -> None:
        while self.start_offset < self.end_offset:
            rec = self.records.get(self.start_offset)
            if rec is not None and rec.state in (State.AVAILABLE, State.ACQUIRED):
                break
            self.records.pop(self.start_offset, None)
            self.start_offset += 1
        for first in [f for f, last in self.batches.items() if last < self.start_offset]:
            del self.batches[first]

    # -- acknowledging ----------------------------------------------------------------------------
    def acknowledge(self, member: str, batches: list[tuple[int, int, list[int]]], lock_ms: int) -> None:
        """Apply the batches (first, last, types) all or nothing; AckError when one is refused,
        as ``SharePartition.acknowledge`` fails the whole partition's acknowledgement."""
        plan: list[tuple[int, AckType]] = []
        for first, last, types in batches:
            plan.extend(self._check(member, first, last, types))
        by_type: dict[AckType, list[int]] = {}
        for offset, kind in plan:
            by_type.setdefault(kind, []).append(offset)
        limit = self.delivery_count_limit
        if by_type.get(AckType.ACCEPT):
            self._settle(by_type[AckType.ACCEPT], State.ACKNOWLEDGED)
            self.hooks.emit("share_acknowledge", self._details(member=member, offsets=ranges(by_type[AckType.ACCEPT]),
                                                               type="accept"))
        if by_type.get(AckType.REJECT) or by_type.get(AckType.GAP):
            gone = by_type.get(AckType.REJECT, []) + by_type.get(AckType.GAP, [])
            self._settle(gone, State.ARCHIVED)
            self._archived(gone, member, "rejected", limit)
        if by_type.get(AckType.RENEW):
            self._renew(member, by_type[AckType.RENEW], lock_ms)
        if by_type.get(AckType.RELEASE):   # last: its write covers the other types' changes too
            self._release(by_type[AckType.RELEASE], member, "released")
        elif set(by_type) - {AckType.RENEW}:
            self._persist()
        self._advance()

    def _check(self, member: str, first: int, last: int, types: list[int]) -> list[tuple[int, AckType]]:
        if first > last or not types or (len(types) != 1 and len(types) != last - first + 1):
            raise AckError(E.INVALID_REQUEST, None)   # the request's own validation: no message
        try:
            kinds = [AckType(t) for t in types]
        except ValueError:
            raise AckError(E.INVALID_REQUEST, f"Invalid acknowledge type: {types}") from None
        if last < self.start_offset:
            # SharePartition.acknowledge: "All offsets in the acknowledgement batch are already archived": the
            # batch is skipped, no error (a late acknowledgement of records another member settled is taken
            # silently; seen against Kafka 4.4 through the differential)
            return []
        cached_from = min(self.batches, default=self.start_offset)
        if first < cached_from and not first < self.start_offset <= last:
            # SharePartition.fetchSubMap: no cached batch at or before it, the start offset not inside it
            raise AckError(E.INVALID_RECORD_STATE, "Batch record not found. The request batch offsets are not found "
                                                   "in the cache.")
        if first >= self.end_offset:
            raise AckError(E.INVALID_REQUEST, "Batch record not found. The first offset in request is past acquired records.")
        if last >= self.end_offset:
            raise AckError(E.INVALID_REQUEST, "Batch record not found. The last offset in request is past acquired records.")
        out = []
        for i, offset in enumerate(range(first, last + 1)):
            kind = kinds[0] if len(kinds) == 1 else kinds[i]
            if offset < self.start_offset:
                continue   # already settled and behind the start offset: Kafka lets it pass
            rec = self.records.get(offset)
            if rec is None or rec.state is not State.ACQUIRED:
                if kind is AckType.GAP and (rec is None or rec.state is State.ARCHIVED):
                    continue
                raise AckError(E.INVALID_RECORD_STATE, "The batch cannot be acknowledged. The batch is not in the acquired state.")
            if rec.lock is None or rec.lock.member != member:
                raise AckError(E.INVALID_RECORD_STATE, "Member is not the owner of batch record")
            out.append((offset, kind))
        return out

    def _settle(self, offsets: list[int], state: State) -> None:
        for o in offsets:
            rec = self.records[o]
            rec.state, rec.lock = state, None

    def _renew(self, member: str, offsets: list[int], lock_ms: int) -> None:
        lock = self._lock(member, lock_ms)
        for o in offsets:
            self.records[o].lock = lock
        self.hooks.emit("share_renew", self._details(member=member, offsets=ranges(offsets), locked_at_ms=lock.start_ms,
                                                     lock_deadline_ms=lock.deadline_ms, lock_duration_ms=lock_ms))

    def describe(self) -> dict[str, Any]:
        return {"start_offset": self.start_offset, "end_offset": self.end_offset,
                "records": {o: {"state": r.state.name.lower(), "delivery_count": r.delivery_count,
                                "member": r.lock.member if r.lock else None,
                                "lock_deadline_ms": r.lock.deadline_ms if r.lock else None}
                            for o, r in sorted(self.records.items())}}
