"""Keyed deadlines for the group coordinator (Kafka's coordinator timer: ``schedule(key, ...)``
replaces any task under the same key, ``cancel(key)`` drops it).

Sans-io: deadlines are plain floats on trio's clock, supplied by the caller. The driver asks
``next_deadline()``, sleeps until then (or until ``on_earlier`` says a sooner one arrived) and
calls ``fire_due(now)``; each task receives the ``now`` it fires at. Superseded entries stay in the heap and are skipped when popped.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Hashable


class Timers:
    def __init__(self, on_earlier: Callable[[], None] | None = None) -> None:
        self._heap: list[tuple[float, int, Hashable]] = []
        self._live: dict[Hashable, tuple[float, int, Callable[[float], None]]] = {}
        self._seq = itertools.count()
        self.on_earlier = on_earlier

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._live

    def deadline(self, key: Hashable) -> float | None:
        entry = self._live.get(key)
        return entry[0] if entry else None

    def schedule(self, key: Hashable, deadline: float, fn: Callable[[float], None]) -> None:
        seq = next(self._seq)
        earlier = deadline < self.next_deadline()
        self._live[key] = (deadline, seq, fn)
        heapq.heappush(self._heap, (deadline, seq, key))
        if earlier and self.on_earlier is not None:
            self.on_earlier()

    def cancel(self, key: Hashable) -> None:
        self._live.pop(key, None)

    def cancel_where(self, predicate: Callable[[Hashable], bool]) -> None:
        for key in [k for k in self._live if predicate(k)]:
            del self._live[key]

    def next_deadline(self) -> float:
        while self._heap and not self._current(self._heap[0]):
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else math.inf

    def fire_due(self, now: float) -> int:
        """Run every task due at ``now`` in deadline order (ties: scheduling order); tasks may
        schedule more, and those run too if already due. Returns how many ran."""
        ran = 0
        while self.next_deadline() <= now:
            _, _, key = heapq.heappop(self._heap)
            _, _, fn = self._live.pop(key)
            fn(now)
            ran += 1
        return ran

    def _current(self, entry: tuple[float, int, Hashable]) -> bool:
        live = self._live.get(entry[2])
        return live is not None and live[1] == entry[1]
