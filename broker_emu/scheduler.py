"""One timer queue per cluster, on trio's clock: ``call_at(deadline, fn)``.

A heap of (deadline, sequence) driven by a single task that sleeps until the earliest deadline
and is woken when an earlier one arrives. Under MockClock/autojump the sleeps are virtual, so
purgatory expiry lands on the exact deadline. Cancelled entries are dropped lazily.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Callable

import trio


class Timer:
    __slots__ = ("deadline", "fn", "cancelled")

    def __init__(self, deadline: float, fn: Callable[[], None]):
        self.deadline, self.fn, self.cancelled = deadline, fn, False

    def cancel(self) -> None:
        self.cancelled = True


class Scheduler:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()
        self._wake = trio.Event()

    def __len__(self) -> int:
        return len(self._heap)

    def call_at(self, deadline: float, fn: Callable[[], None]) -> Timer:
        timer = Timer(deadline, fn)
        if not self._heap or deadline < self._heap[0][0]:
            self._wake.set()
        heapq.heappush(self._heap, (deadline, next(self._seq), timer))
        return timer

    def call_later(self, delay: float, fn: Callable[[], None]) -> Timer:
        return self.call_at(trio.current_time() + delay, fn)

    def run_due(self, now: float) -> None:
        while self._heap and self._heap[0][0] <= now:
            _, _, timer = heapq.heappop(self._heap)
            if not timer.cancelled:
                timer.fn()

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            self.run_due(trio.current_time())
            self._wake = trio.Event()
            deadline = self._heap[0][0] if self._heap else float("inf")
            with trio.move_on_at(deadline):
                await self._wake.wait()
