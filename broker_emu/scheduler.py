"""One timer queue per cluster, on trio's clock: ``call_at(deadline, fn)``.

A heap of (deadline, sequence, timer) driven by a single task that sleeps until the earliest
deadline and is woken when an earlier one arrives. Under MockClock/autojump the sleeps are
virtual, so purgatory expiry lands on the exact deadline. This replaces Kafka's hierarchical
timing wheel (``SystemTimer`` / ``TimingWheel``): insertion and expiry are O(log n), which holds
10^5 delayed operations comfortably, and the deadline is exact instead of rounded to a 1 ms tick.

Cancelled timers are dropped lazily; when they outnumber the live ones the heap is rebuilt, so
operations that complete early (the common case) do not pile up until their old deadline.

``TimerHeap`` is the sans-io heap (no clock: callers pass ``now``); ``Scheduler`` drives one on
trio's clock. The group coordinator's keyed timers (``broker_emu/groups/timers.py``) are a
``TimerHeap`` too, so the emulator has one timer heap.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any, Callable

import trio

_COMPACT_MIN = 1024


class Timer:
    __slots__ = ("deadline", "fn", "cancelled", "_owner")

    def __init__(self, deadline: float, fn: Callable[..., None], owner: "TimerHeap | None" = None):
        self.deadline, self.fn, self.cancelled, self._owner = deadline, fn, False, owner

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self.fn = _noop  # drop the closure (and the operation it holds) at once
            if self._owner is not None:
                self._owner._cancelled_one()


def _noop(*_: Any) -> None:
    pass


class TimerHeap:
    """Timers in deadline order (ties in insertion order), on whatever clock the caller uses.
    ``on_earlier`` is called when a new timer becomes the earliest live one."""

    def __init__(self, on_earlier: Callable[[], None] | None = None) -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()
        self._cancelled = 0
        self.on_earlier = on_earlier

    def __len__(self) -> int:
        """Live (not cancelled) timers."""
        return len(self._heap) - self._cancelled

    def next_deadline(self) -> float:
        """The earliest live deadline (cancelled timers at the top are dropped), or inf."""
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
            self._cancelled -= 1
        return self._heap[0][0] if self._heap else math.inf

    def call_at(self, deadline: float, fn: Callable[..., None]) -> Timer:
        earlier = deadline < self.next_deadline()
        timer = Timer(deadline, fn, self)
        heapq.heappush(self._heap, (deadline, next(self._seq), timer))
        if earlier and self.on_earlier is not None:
            self.on_earlier()
        return timer

    def pop_due(self, now: float) -> Timer | None:
        """The earliest live timer due at ``now``, taken off the heap (its ``fn`` is the caller's
        to run), or None."""
        while self._heap and self._heap[0][0] <= now:
            _, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                self._cancelled -= 1
                continue
            timer._owner = None  # fired: a late cancel() must not count it again
            timer.cancelled = True
            return timer
        return None

    def run_due(self, now: float) -> int:
        """Run every timer due at ``now`` (in deadline order, ties in insertion order); timers
        they add run too if already due."""
        ran = 0
        while (timer := self.pop_due(now)) is not None:
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


class DeadlineLoop:
    """The emulator's driver loop: run ``handle_timeouts(now)``, then sleep until
    ``next_deadline()``. ``wake()`` says an earlier deadline arrived (a heap's ``on_earlier``):
    the sleep's own deadline is moved there, without a task switch — a Fetch that parks (a
    deadline max_wait_ms away) used to wake this task once only for it to go back to sleep."""

    __slots__ = ("_handle_timeouts", "_next_deadline", "_sleep")

    def __init__(self, handle_timeouts: Callable[[float], object], next_deadline: Callable[[], float]) -> None:
        self._handle_timeouts, self._next_deadline = handle_timeouts, next_deadline
        self._sleep: trio.CancelScope | None = None   # while the loop sleeps

    def wake(self) -> None:
        # Not sleeping: the loop is running timers and reads next_deadline() before it sleeps.
        # (trio's deadline setter is not free: a Fetch parked behind another's later timer skips it)
        if self._sleep is not None:
            deadline = self._next_deadline()
            if deadline < self._sleep.deadline:
                self._sleep.deadline = deadline

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            self._handle_timeouts(trio.current_time())
            with trio.CancelScope(deadline=self._next_deadline()) as self._sleep:
                await trio.sleep_forever()
            self._sleep = None


class Scheduler(TimerHeap):
    """One ``TimerHeap`` per cluster, driven on trio's clock by ``run``."""

    def __init__(self) -> None:
        self._loop = DeadlineLoop(self.run_due, self.next_deadline)
        super().__init__(on_earlier=self._loop.wake)

    def call_later(self, delay: float, fn: Callable[[], None]) -> Timer:
        return self.call_at(trio.current_time() + delay, fn)

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        await self._loop.run(task_status=task_status)
