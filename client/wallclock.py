"""The one wall-clock source of the client: Kafka record timestamps (CreateTime) are wall-clock
milliseconds, which trio's clock is not. Everything that needs one takes a ``wall_clock``
callable defaulting to this; virtual-time tests inject one derived from trio's clock. Nothing
else in the client reads the system clock (timeouts and deadlines use trio's clock only)."""

from __future__ import annotations

import time
from collections.abc import Callable

WallClock = Callable[[], int]


def system_ms() -> int:
    return time.time_ns() // 1_000_000


def virtual_ms(epoch_ms: int = 1_700_000_000_000) -> WallClock:
    """Wall-clock ms that follow trio's clock from a fixed epoch (reproducible in virtual time;
    the emulator stamps LogAppendTime the same way)."""
    import trio

    return lambda: epoch_ms + int(trio.current_time() * 1000)
