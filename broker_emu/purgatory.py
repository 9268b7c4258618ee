"""Delayed operations (Kafka's purgatory), on the cluster's scheduler.

Semantics kept from the broker (Kafka's DelayedOperation and DelayedOperationPurgatory):

- ``try_complete_else_watch`` checks once, registers the operation under its keys, checks again
  (closing the race with events in between), and only then starts its timer — so the timeout
  counts from after the local append, not from when the request arrived. A caller that has just
  checked in the same step (the Fetch handler) skips both checks: no event can come in between.
- ``check_and_complete(key)`` re-runs ``try_complete`` for every operation watching ``key``; the
  cluster calls it when a high watermark moves, a leader changes or a partition goes away.
- An operation completes exactly once, by a successful check or by expiry (``on_expire`` then
  ``on_complete``); the loser of that race does nothing.

Completed operations are purged from the watch lists lazily, like Kafka's reaper
(``*.purgatory.purge.interval.requests``): a key's list is compacted after each check of it, and
all lists once the completed entries outnumber the live ones. Completing or expiring one
operation is therefore O(1), and 10,000 operations expiring at the same instant cost O(n).
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable

import trio

from broker_emu.scheduler import Scheduler, Timer
from broker_emu.trace import Kind

PURGE_INTERVAL = 1000  # Kafka's default *.purgatory.purge.interval.requests


class DelayedOperation:
    """Subclasses implement ``try_complete`` and ``on_complete`` (and may ``on_expire``), and
    declare ``__slots__``: 100,000 of these may wait at once, so each is kept to a few hundred
    bytes (no per-operation Event or closure; the waiting task is parked directly)."""

    __slots__ = ("timeout_s", "completed", "expired", "keys", "_timer", "_purgatory", "_waiter", "_event")

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self.completed = False
        self.expired = False
        self.keys: tuple[Hashable, ...] = ()
        self._timer: Timer | None = None
        self._purgatory: Purgatory | None = None
        self._waiter: Any = None          # the task parked in wait()
        self._event: trio.Event | None = None

    def try_complete(self) -> bool:
        """True if the operation can complete now (then ``on_complete`` runs)."""
        raise NotImplementedError

    def on_complete(self) -> None:
        """Build the outcome; runs exactly once."""

    def on_expire(self) -> None:
        """Called just before ``on_complete`` when the timer fired first."""

    def force_complete(self) -> bool:
        """Complete now unless already completed; True if this call completed it."""
        if self.completed:
            return False
        self.completed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.on_complete()
        if self._waiter is not None:
            trio.lowlevel.reschedule(self._waiter)
            self._waiter = None
        if self._event is not None:
            self._event.set()
        return True

    async def wait(self) -> None:
        """Until the operation completes (at once if it has). One waiter: the handler."""
        if self.completed:
            await trio.lowlevel.checkpoint()
            return
        if self._waiter is not None:
            await self.done.wait()
            return
        self._waiter = trio.lowlevel.current_task()

        def abort(_: Any) -> trio.lowlevel.Abort:
            self._waiter = None  # cancelled: the operation itself stays in the purgatory
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    @property
    def done(self) -> trio.Event:
        """An Event for other observers (tests); created on demand."""
        if self._event is None:
            self._event = trio.Event()
            if self.completed:
                self._event.set()
        return self._event

    @property
    def deadline_s(self) -> float | None:
        """When the operation's timer fires on trio's clock; None while it has no timer (not
        watched yet, or completed)."""
        return self._timer.deadline if self._timer is not None else None

    def _fire(self) -> None:  # the timer's callback: a bound method, not a closure per operation
        if self._purgatory is not None:
            self._purgatory._expire(self)

    def describe(self) -> dict[str, Any]:
        return {}


class Purgatory:
    def __init__(self, name: str, scheduler: Scheduler, on_event: Callable[[str, DelayedOperation], None] | None = None):
        self.name = name
        self.scheduler = scheduler
        self.watchers: dict[Hashable, list[DelayedOperation]] = {}
        self.on_event = on_event or (lambda kind, op: None)
        self.completed_count = 0
        self.expired_count = 0
        self._live = 0          # watched and not yet completed
        self._stale = 0         # completed entries still sitting in watch lists

    def __len__(self) -> int:
        """Operations waiting (watched, not completed)."""
        return self._live

    def statistics(self) -> dict[str, int]:
        return {"waiting": self._live, "completed": self.completed_count, "expired": self.expired_count,
                "watch_entries": sum(len(ops) for ops in self.watchers.values())}

    # -- entering ---------------------------------------------------------------------------------
    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable], checked: bool = False) -> bool:
        """True if completed at once; otherwise the operation waits (``await op.wait()``).
        ``checked``: the caller found, in this same step, that it cannot complete yet (the Fetch
        handler reads what is available before it parks, as ``ReplicaManager.fetchMessages``
        does): Kafka's two checks around the watch close a race between threads, which one trio
        step cannot have, so they are skipped."""
        if not checked and op.try_complete():  # nothing to wait for: never watched, no trace event
            self.completed_count += 1
            return op.force_complete()
        op.keys = tuple(keys)
        for key in op.keys:
            self.watchers.setdefault(key, []).append(op)
        self._live += 1
        if not checked and op.try_complete() and self._complete(op):
            return True
        op._purgatory = self
        op._timer = self.scheduler.call_later(op.timeout_s, op._fire)
        self.on_event(Kind.PURGATORY_ENTER, op)
        return False

    # -- leaving ----------------------------------------------------------------------------------
    def check_and_complete(self, key: Hashable) -> int:
        """Re-check every operation watching ``key``; returns how many completed."""
        ops = self.watchers.get(key)
        if not ops:
            return 0
        done = 0
        for op in list(ops):  # on_complete may add watchers; iterate a snapshot
            if not op.completed and op.try_complete() and self._complete(op):
                done += 1
        self._compact(key)
        return done

    def _complete(self, op: DelayedOperation) -> bool:
        if not op.force_complete():
            return False
        self.completed_count += 1
        self._left(op)
        self.on_event(Kind.PURGATORY_COMPLETE, op)
        return True

    def _expire(self, op: DelayedOperation) -> None:
        if op.completed:
            return
        op.expired = True
        op.on_expire()
        op.force_complete()
        self.expired_count += 1
        self._left(op)
        self.on_event(Kind.PURGATORY_EXPIRE, op)

    def _left(self, op: DelayedOperation) -> None:
        self._live -= 1
        self._stale += len(op.keys)
        if self._stale > PURGE_INTERVAL and self._stale > self._live:
            self.purge()

    def _compact(self, key: Hashable) -> None:
        ops = self.watchers.get(key)
        if ops is None:
            return
        live = [o for o in ops if not o.completed]
        self._stale -= len(ops) - len(live)
        if live:
            self.watchers[key] = live
        else:
            del self.watchers[key]

    def purge(self) -> None:
        """Drop every completed operation from every watch list."""
        for key in list(self.watchers):
            self._compact(key)
        self._stale = 0
