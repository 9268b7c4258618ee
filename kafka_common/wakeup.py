"""'Sleep until the next deadline or a wake-up': the one wait of every sans-io driver loop, in
the client (the sender, the group member, the connection timer, the metadata refresher, the
blocking consumer's reaper) and in the emulator (the timer heap's ``DeadlineLoop``, a
``wait_for`` woken by the trace).

A loop calls ``new_cycle()`` before it reads its state (so a ``set()`` from then on is not
lost), computes its next deadline, and awaits ``sleep_until(deadline)``, which returns True when
woken, False when the deadline came. ``set()`` is called by whoever changed the state.
It lives in ``kafka_common`` because the emulator may import only the codec and the error table
of the client package (docs/architecture.md), and the codec stays free of trio.
"""

from __future__ import annotations

import trio


class Wakeup:
    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = trio.Event()

    def set(self) -> None:
        self._event.set()

    def new_cycle(self) -> None:
        self._event = trio.Event()

    async def sleep_until(self, deadline: float) -> bool:
        with trio.move_on_at(deadline):
            await self._event.wait()
            return True
        return False
