"""Delayed operations (Kafka's purgatory), on the cluster's scheduler.

Semantics kept from the broker (SEMANTICS.md §2.1): ``try_complete_else_watch`` checks once,
registers the operation under its keys, checks again (closing the race with events in
between), and only then starts its timer — so the timeout counts from after the local append.
An operation completes exactly once: by a successful check or by expiry.
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable

import trio

from broker_emu.scheduler import Scheduler, Timer


class DelayedOperation:
    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self.completed = False
        self.expired = False
        self.done = trio.Event()
        self._timer: Timer | None = None
        self.keys: tuple[Hashable, ...] = ()

    # subclasses implement these three
    def try_complete(self) -> bool:
        """Return True if the operation can complete now (then on_complete runs)."""
        raise NotImplementedError

    def on_complete(self) -> None:
        raise NotImplementedError

    def on_expire(self) -> None:
        """Called just before on_complete when the timer fired first."""

    def force_complete(self) -> bool:
        if self.completed:
            return False
        self.completed = True
        if self._timer is not None:
            self._timer.cancel()
        self.on_complete()
        self.done.set()
        return True


class Purgatory:
    def __init__(self, name: str, scheduler: Scheduler, on_event: Callable[[str, DelayedOperation], None] | None = None):
        self.name = name
        self.scheduler = scheduler
        self.watchers: dict[Hashable, list[DelayedOperation]] = {}
        self.on_event = on_event or (lambda kind, op: None)
        self.completed_count = 0
        self.expired_count = 0

    def __len__(self) -> int:
        return sum(1 for ops in self.watchers.values() for op in ops if not op.completed)

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """True if completed at once; otherwise the operation waits (await ``op.done``)."""
        if op.try_complete():
            return self._complete(op)
        op.keys = tuple(keys)
        for key in op.keys:
            self.watchers.setdefault(key, []).append(op)
        if op.try_complete():
            return self._complete(op)
        op._timer = self.scheduler.call_later(op.timeout_s, lambda: self._expire(op))
        self.on_event("purgatory_enter", op)
        return False

    def check_and_complete(self, key: Hashable) -> int:
        ops = self.watchers.get(key)
        if not ops:
            return 0
        done = 0
        for op in list(ops):
            if not op.completed and op.try_complete() and self._complete(op):
                done += 1
        self._purge(key)
        return done

    def _complete(self, op: DelayedOperation) -> bool:
        if not op.force_complete():
            return False
        self.completed_count += 1
        if op.keys:
            self.on_event("purgatory_complete", op)
            for key in op.keys:
                self._purge(key)
        return True

    def _expire(self, op: DelayedOperation) -> None:
        if op.completed:
            return
        op.expired = True
        op.on_expire()
        op.force_complete()
        self.expired_count += 1
        self.on_event("purgatory_expire", op)
        for key in op.keys:
            self._purge(key)

    def _purge(self, key: Hashable) -> None:
        ops = self.watchers.get(key)
        if ops is not None:
            live = [o for o in ops if not o.completed]
            if live:
                self.watchers[key] = live
            else:
                del self.watchers[key]
