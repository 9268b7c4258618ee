"""Simulated replication: how followers copy their leaders.

Modes per (topic, partition, follower), most specific wins: ``normal`` (copy after
``emu.replication.delay.ms``, 0 = at once), ``lag`` (copy after ``lag_ms``), ``stall`` (never).
A follower that has not caught up for ``replica.lag.time.max.ms`` leaves the ISR. Kafka checks
that every lag/2 (so it really happens between 1x and 1.5x); we remove it at exactly 1x so
teaching timelines are exact (a documented difference). A stopped broker's replicas and cut
links (``cut(a, b)``) behave as stalled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import trio

if TYPE_CHECKING:
    from broker_emu.partition import Partition
    from broker_emu.scheduler import Scheduler


@dataclass(frozen=True)
class Mode:
    mode: str = "normal"
    lag_ms: float = 0.0


class Replication:
    def __init__(self, scheduler: "Scheduler", config: dict, alive: Callable[[int], bool],
                 on_change: Callable[["Partition"], None], on_isr: Callable[["Partition", list[int], str], None]):
        self.scheduler = scheduler
        self.config = config
        self.alive = alive
        self.on_change = on_change
        self.on_isr = on_isr
        self.modes: dict[tuple[str | None, int | None, int | None], Mode] = {}
        self.cuts: set[frozenset[int]] = set()

    # -- control ------------------------------------------------------------------------------
    def set_mode(self, topic: str | None, partition: int | None, follower: int | None, mode: str, lag_ms: float = 0.0) -> None:
        if mode not in ("normal", "lag", "stall"):
            raise ValueError(f"unknown replication mode {mode!r}")
        key = (topic, partition, follower)
        if mode == "normal" and not lag_ms:
            self.modes.pop(key, None)
        else:
            self.modes[key] = Mode(mode, lag_ms)

    def stall(self, topic=None, partition=None, follower=None) -> None:
        self.set_mode(topic, partition, follower, "stall")

    def lag(self, topic=None, partition=None, follower=None, ms: float = 0.0) -> None:
        self.set_mode(topic, partition, follower, "lag", ms)

    def normal(self, topic=None, partition=None, follower=None) -> None:
        self.set_mode(topic, partition, follower, "normal")

    def cut(self, a: int, b: int) -> None:
        self.cuts.add(frozenset((a, b)))

    def heal(self, a: int, b: int) -> None:
        self.cuts.discard(frozenset((a, b)))

    def mode_for(self, p: "Partition", follower: int) -> Mode:
        if not self.alive(follower) or frozenset((p.leader, follower)) in self.cuts:
            return Mode("stall")
        for key in ((p.topic, p.index, follower), (p.topic, p.index, None), (p.topic, None, follower),
                    (p.topic, None, None), (None, None, follower), (None, None, None)):
            if key in self.modes:
                return self.modes[key]
        return Mode("normal", float(self.config.get("emu.replication.delay.ms", 0)))

    # -- events -------------------------------------------------------------------------------
    def after_append(self, p: "Partition", previous_leo: int | None = None) -> None:
        """The leader appended: let each follower copy according to its mode. Followers that
        were caught up until this append count as caught up now (a real follower long-polls
        the leader, so it was fetching right up to it)."""
        target = p.log_end_offset
        now = trio.current_time()
        if previous_leo is not None:
            for follower in p.isr:
                if follower != p.leader and p.follower_leo.get(follower, 0) >= previous_leo:
                    p.last_caught_up[follower] = now
        for follower in p.replicas:
            if follower == p.leader:
                continue
            self._schedule_copy(p, follower, target)
        self._schedule_isr_check(p)

    def resync(self, p: "Partition") -> None:
        """Modes changed (or a broker came back): followers catch up to the current end."""
        self.after_append(p)

    def _schedule_copy(self, p: "Partition", follower: int, target: int) -> None:
        mode = self.mode_for(p, follower)
        if mode.mode == "stall":
            return
        delay = mode.lag_ms / 1000.0
        epoch = p.leader_epoch
        if delay <= 0:
            self._copy(p, follower, target, epoch)
        else:
            self.scheduler.call_later(delay, lambda: self._copy(p, follower, target, epoch))

    def _copy(self, p: "Partition", follower: int, target: int, epoch: int) -> None:
        if p.leader_epoch != epoch or follower == p.leader or self.mode_for(p, follower).mode == "stall":
            return
        was_isr = list(p.isr)
        if p.follower_fetched(follower, target, trio.current_time()):
            if p.isr != was_isr:
                self.on_isr(p, [follower], "expand")
            self.on_change(p)

    def _schedule_isr_check(self, p: "Partition") -> None:
        lag_max = self.config["replica.lag.time.max.ms"] / 1000.0
        now = trio.current_time()
        for follower in p.isr:
            if follower == p.leader or p.follower_leo.get(follower, 0) >= p.log_end_offset:
                continue
            since = p.last_caught_up.setdefault(follower, now)
            self.scheduler.call_at(since + lag_max, lambda: self._check_isr(p))

    def _check_isr(self, p: "Partition") -> None:
        gone = p.shrink_isr(trio.current_time(), self.config["replica.lag.time.max.ms"] / 1000.0)
        if gone:
            self.on_isr(p, gone, "shrink")
            self.on_change(p)
