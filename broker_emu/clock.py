"""The cluster's two clocks: trio's (``now_ms``: timers, trace times, fault windows) and Kafka's
wall clock (``wall_ms``: LogAppendTime, ListOffsets, OAUTHBEARER token times), read from
kafka_common.wallclock, the one source the client shares."""

from __future__ import annotations

import sys
from typing import Any, Callable, Mapping

import trio

from kafka_common.wallclock import FIXED_EPOCH_MS, system_ms


def follows_system_clock(mode: str) -> bool:
    """``emu.wall.clock``: "fixed" keeps virtual-time runs reproducible; real clients in real
    time need the system's (token expiry, their own timestamps against ours)."""
    # a MockClock exists only once trio.testing is imported; importing it here would import
    # pytest too (100+ ms off `broker-emu serve`'s start)
    testing = sys.modules.get("trio.testing")
    mock = testing is not None and isinstance(trio.lowlevel.current_clock(), testing.MockClock)
    return mode == "system" or (mode == "auto" and not mock)


class ClusterClock:
    """``now_ms`` is trio's clock as the trace reads it; ``wall_ms`` follows ``emu.wall.clock``
    in ``config``, decided at the first reading (it needs trio running)."""

    def __init__(self, now_ms: Callable[[], float], config: Mapping[str, Any]):
        self.now_ms = now_ms
        self._config = config
        self._system_wall: bool | None = None

    def wall_ms(self) -> int:
        """Kafka's wall clock: the system clock in real time, a fixed epoch plus trio's clock
        under a MockClock (``emu.wall.clock``)."""
        if self._system_wall is None:
            self._system_wall = follows_system_clock(self._config["emu.wall.clock"])
        return system_ms() if self._system_wall else FIXED_EPOCH_MS + int(self.now_ms())
