"""One timer queue per cluster, on trio's clock: ``call_at(deadline, fn)``.

A heap of (deadline, sequence, timer) driven by a single task that sleeps until the earliest
deadline and is woken when an earlier one arrives. Under MockClock/autojump the sleeps are
virtual, so purgatory expiry lands on the exact deadline. This replaces Kafka's hierarchical
timing wheel (SEMANTICS.md §2.1): insertion and expiry are O(log n), which holds 10^5 delayed
operations comfortably, and the deadline is exact instead of rounded to a 1 ms tick.

Cancelled timers are dropped lazily; when they outnumber the live ones the heap is rebuilt, so
operations that complete early (the common case) do not pile up until their old deadline.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Callable

import trio

_COMPACT_MIN = 1024


class Timer:
    __slots__ = ("deadline", "fn", "cancelled", "_owner")

    def __init__(self, deadline: float, fn: Callable[[], None], owner: "Scheduler | None" = None):
        self.deadline, self.fn, self.cancelled, self._owner = deadline, fn, False, owner

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self.fn = _noop  # drop the closure (and the operation it holds) at once
            if self._owner is not None:
                self._owner._cancelled_one()


def _noop() -> None:
    pass


class Scheduler:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()
        self._wake = trio.Event()
        self._cancelled = 0

    def __len__(self) -> int:
        """Live (not cancelled) timers."""
        return len(self._heap) - self._cancelled

    def next_deadline(self) -> float:
        return self._heap[0][0] if self._heap else float("inf")

    def call_at(self, deadline: float, fn: Callable[[], None]) -> Timer:
        timer = Timer(deadline, fn, self)
        if not self._heap or deadline < self._heap[0][0]:
            self._wake.set()
        heapq.heappush(self._heap, (deadline, next(self._seq), timer))
        return timer

    def call_later(self, delay: float, fn: Callable[[], None]) -> Timer:
        return self.call_at(trio.current_time() + delay, fn)

    def run_due(self, now: float) -> int:
        """Run every timer due at ``now`` (in deadline order, ties in insertion order)."""
        ran = 0
        while self._heap and self._heap[0][0] <= now:
            _, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                self._cancelled -= 1
                continue
            timer._owner = None  # fired: a late cancel() must not count it again
            timer.cancelled = True
            timer.fn()
            ran += 1
        return ran

    def _cancelled_one(self) -> None:
        self._cancelled += 1
        if self._cancelled > _COMPACT_MIN and self._cancelled * 2 > len(self._heap):
            self._heap = [entry for entry in self._heap if not entry[2].cancelled]
            heapq.heapify(self._heap)
            self._cancelled = 0

    def statistics(self) -> dict[str, int]:
        return {"live": len(self), "heap": len(self._heap)}

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            self.run_due(trio.current_time())
            self._wake = trio.Event()
            with trio.move_on_at(self.next_deadline()):
                await self._wake.wait()
