"""Keyed deadlines for the group coordinator (Kafka's coordinator timer: ``schedule(key, ...)``
replaces any task under the same key, ``cancel(key)`` drops it).

Sans-io: deadlines are plain floats on trio's clock, supplied by the caller. The driver asks
``next_deadline()``, sleeps until then (or until ``on_earlier`` says a sooner one arrived) and
calls ``fire_due(now)``; each task receives the ``now`` it fires at. The heap is the emulator's one
``TimerHeap`` (``broker_emu/scheduler.py``): replaced and cancelled tasks are dropped lazily.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from broker_emu.scheduler import Timer, TimerHeap


class Timers:
    """Keys over one ``TimerHeap`` (``broker_emu/scheduler.py``): a key has at most one task."""

    def __init__(self, on_earlier: Callable[[], None] | None = None, *, heap: TimerHeap | None = None) -> None:
        # Several keyed Timers may share one heap (each collaborator of the coordinator owns its
        # keys), so that every task still fires in one deadline order.
        self._heap = heap if heap is not None else TimerHeap(on_earlier)
        self._live: dict[Hashable, Timer] = {}

    @property
    def on_earlier(self) -> Callable[[], None] | None:
        return self._heap.on_earlier

    @on_earlier.setter
    def on_earlier(self, fn: Callable[[], None] | None) -> None:
        self._heap.on_earlier = fn

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._live

    def deadline(self, key: Hashable) -> float | None:
        timer = self._live.get(key)
        return timer.deadline if timer else None

    def schedule(self, key: Hashable, deadline: float, fn: Callable[[float], None]) -> None:
        old = self._live.get(key)

        def fire(now: float) -> None:
            del self._live[key]
            fn(now)

        self._live[key] = self._heap.call_at(deadline, fire)   # "earlier" counts the old one as armed
        if old is not None:
            old.cancel()

    def cancel(self, key: Hashable) -> None:
        timer = self._live.pop(key, None)
        if timer is not None:
            timer.cancel()

    def cancel_where(self, predicate: Callable[[Hashable], bool]) -> None:
        for key in [k for k in self._live if predicate(k)]:
            self._live.pop(key).cancel()

    def cancel_group(self, group_id: str) -> None:
        """Every task keyed ``(kind, group_id, ...)``."""
        def of_group(key: Hashable) -> bool:
            return isinstance(key, tuple) and key[1] == group_id
        self.cancel_where(of_group)

    def next_deadline(self) -> float:
        return self._heap.next_deadline()

    def fire_due(self, now: float) -> int:
        """Run every task due at ``now`` in deadline order (ties: scheduling order); tasks may
        schedule more, and those run too if already due. Returns how many ran. With a shared
        heap, that is every sharer's tasks."""
        return fire_due(self._heap, now)


def fire_due(heap: TimerHeap, now: float) -> int:
    ran = 0
    while (timer := heap.pop_due(now)) is not None:
        timer.fn(now)
        ran += 1
    return ran
