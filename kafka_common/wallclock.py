"""The one wall-clock source of the client and the emulator: Kafka's timestamps (CreateTime,
LogAppendTime, token times) are wall-clock milliseconds, which trio's clock is not. In the
client, everything that needs one takes a ``wall_clock`` callable defaulting to ``system_ms``;
virtual-time tests inject one derived from trio's clock. The emulator's ``Cluster.wall_ms``
reads ``system_ms`` in real time and counts from ``FIXED_EPOCH_MS`` under a MockClock, the
epoch ``virtual_ms`` counts from too, so a virtual-time client's and broker's timestamps agree.
Nothing else in either reads the system clock (timeouts and deadlines use trio's clock only)."""

from __future__ import annotations

import time
from collections.abc import Callable

WallClock = Callable[[], int]

FIXED_EPOCH_MS = 1_700_000_000_000   # the wall clock at virtual time 0 (November 2023)


def system_ms() -> int:
    """The system clock, as Kafka reads it (``System.currentTimeMillis``)."""
    return time.time_ns() // 1_000_000


def virtual_ms(epoch_ms: int = FIXED_EPOCH_MS) -> WallClock:
    """Wall-clock ms that follow trio's clock from a fixed epoch (reproducible in virtual time;
    the emulator stamps LogAppendTime the same way)."""
    import trio

    return lambda: epoch_ms + int(trio.current_time() * 1000)
