"""Simulated replication: how followers copy their leaders.

Followers hold no bytes, only a log end offset (``Partition.follower_leo``). Each append makes
every follower "fetch": the copy lands after a delay set by the follower's mode, most specific
setting wins — per (topic, partition, follower), any of them may be a wildcard:

- ``normal``: after ``emu.replication.delay.ms`` (default 0: at once, in the same step);
- ``lag``: after ``lag_ms``;
- ``stall``: never (the follower stopped fetching). A stopped broker and a cut link
  (``cut(leader, follower)``) behave as stalled.

Caught-up time follows Kafka (``Replica.updateFetchState``): a follower is caught up as of the
last fetch that read up to the leader's log end *at that moment*. A fetching follower with no
data to copy is caught up continuously; a stalled one stays caught up as of the moment it stopped.
A follower that lacks data and has not been caught up for ``replica.lag.time.max.ms`` leaves the
ISR. Kafka runs that check every lag/2, so it really happens between 1x and 1.5x; we remove it at
exactly 1x (or at once, if it had already stalled that long before the data arrived) so teaching
timelines are exact — a documented difference. HW = min LEO over the ISR (``Partition``).

Hooks for chaos: ``stall(topic, partition, follower)``, ``lag(..., ms=...)``, ``normal(...)``,
``cut(a, b)`` / ``heal(a, b)``; each takes effect at once (followers catch up or stop).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable

import trio

from broker_emu.trace import Kind

if TYPE_CHECKING:
    from broker_emu.partition import Partition
    from broker_emu.scheduler import Scheduler, Timer

MODES = ("normal", "lag", "stall")
Scope = tuple  # (topic | None, partition | None, follower | None)


@dataclass(frozen=True)
class Mode:
    mode: str = "normal"
    lag_ms: float = 0.0


_STALL, _AT_ONCE = Mode("stall"), Mode("normal", 0.0)


class Replication:
    def __init__(self, scheduler: "Scheduler", config: dict, alive: Callable[[int], bool],
                 on_change: Callable[["Partition"], None], on_isr: Callable[["Partition", list[int], str], None],
                 partitions: Callable[[], Iterable["Partition"]] = lambda: (),
                 emit: Callable[..., Any] | None = None):
        self.scheduler = scheduler
        self.config = config
        self.alive = alive
        self.on_change = on_change      # HW moved (or ISR changed): wake purgatories
        self.on_isr = on_isr            # ISR shrank or grew: trace it
        self.partitions = partitions
        self.emit = emit or (lambda kind, **fields: None)
        self.modes: dict[Scope, Mode] = {}
        self.cuts: set[frozenset[int]] = set()
        self._isr_checks: dict[int, "Timer"] = {}  # id(partition): a recreated topic is a new object

    # -- control ------------------------------------------------------------------------------
    def set_mode(self, topic: str | None, partition: int | None, follower: int | None, mode: str, lag_ms: float = 0.0) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown replication mode {mode!r} (one of {', '.join(MODES)})")
        if lag_ms < 0:
            raise ValueError(f"lag_ms must be >= 0, got {lag_ms}")
        self._changing()
        key = (topic, partition, follower)
        if mode == "normal" and not lag_ms:
            self.modes.pop(key, None)
        else:
            self.modes[key] = Mode(mode, lag_ms)
        self.emit(Kind.REPLICATION_MODE, details={"topic": topic, "partition": partition, "follower": follower,
                                               "mode": mode, "lag_ms": lag_ms})
        self.resync_all()

    def stall(self, topic: str | None = None, partition: int | None = None, follower: int | None = None) -> None:
        self.set_mode(topic, partition, follower, "stall")

    def lag(self, topic: str | None = None, partition: int | None = None, follower: int | None = None, *, ms: float) -> None:
        self.set_mode(topic, partition, follower, "lag", ms)

    def normal(self, topic: str | None = None, partition: int | None = None, follower: int | None = None) -> None:
        self.set_mode(topic, partition, follower, "normal")

    def cut(self, a: int, b: int) -> None:
        self._changing()
        self.cuts.add(frozenset((a, b)))

    def heal(self, a: int, b: int) -> None:
        self.cuts.discard(frozenset((a, b)))
        self.resync_all()

    def mode_for(self, p: "Partition", follower: int) -> Mode:
        # (called a few times per append: without modes or cuts set, nothing is looked up)
        if not self.alive(follower) or (self.cuts and frozenset((p.leader, follower)) in self.cuts):
            return _STALL
        if self.modes:
            for key in ((p.topic, p.index, follower), (p.topic, p.index, None), (p.topic, None, follower),
                        (p.topic, None, None), (None, None, follower), (None, None, None)):
                if key in self.modes:
                    return self.modes[key]
        delay = self.config.get("emu.replication.delay.ms", 0)
        return _AT_ONCE if not delay else Mode("normal", float(delay))

    def immediate(self) -> bool:
        """Whether every live follower copies an append within the append's own step (no modes,
        no cuts, no delay): with every broker alive, acks=all then never waits."""
        return not self.modes and not self.cuts and not self.config.get("emu.replication.delay.ms", 0)

    def _changing(self) -> None:
        """Before modes change: followers fetching until now were caught up until now (a
        real follower long-polls its leader), so a stall counts from this moment."""
        now = trio.current_time()
        for p in self.partitions():
            self._touch_fetching(p, p.log_end_offset, now)

    def _touch_fetching(self, p: "Partition", upto: int, now: float) -> None:
        for follower in p.isr:
            if follower != p.leader and p.follower_leo.get(follower, 0) >= upto and \
                    self.mode_for(p, follower).mode != "stall":
                p.last_caught_up[follower] = now

    # -- events -------------------------------------------------------------------------------
    def after_append(self, p: "Partition", previous_leo: int | None = None) -> None:
        """The leader's log grew (or modes changed): every follower fetches per its mode."""
        now = trio.current_time()
        if self._copy_all_at_once(p, now):
            return
        if previous_leo is not None:
            self._touch_fetching(p, previous_leo, now)
        target = p.log_end_offset
        for follower in p.replicas:
            if follower != p.leader:
                self._schedule_copy(p, follower, target, now)
        self._schedule_isr_check(p)

    def _copy_all_at_once(self, p: "Partition", now: float) -> bool:
        """The common case in one step: no modes, cuts or delay, and every follower alive and
        in the ISR. Each then copies to the log end now (caught up now, nothing lags, the ISR
        does not change), so what the per-follower path would do comes down to moving the high
        watermark once and waking the purgatories once. False: take the per-follower path."""
        if self.modes or self.cuts or self.config.get("emu.replication.delay.ms", 0):
            return False
        leader, isr = p.leader, p.isr
        followers = [b for b in p.replicas if b != leader]
        for b in followers:
            if b not in isr or not self.alive(b):
                return False
        target = p.log.log_end_offset
        leo, caught = p.follower_leo, p.last_caught_up
        for b in followers:
            if leo.get(b, 0) < target:
                leo[b] = target
            caught[b] = max(caught.get(b, now), now)
        if p.update_high_watermark():
            self.on_change(p)
        return True

    def log_start_moved(self, p: "Partition") -> None:
        """DeleteRecords moved the leader's log start: each follower learns it on its next fetch
        (after its mode's delay; a stalled follower never), then ``on_change`` rechecks waiters."""
        now = trio.current_time()
        start, epoch = p.log.log_start_offset, p.leader_epoch
        for follower in p.replicas:
            mode = self.mode_for(p, follower)
            if follower == p.leader or mode.mode == "stall":
                continue
            self.scheduler.call_at(now + mode.lag_ms / 1000.0, lambda f=follower: self._learn_start(p, f, start, epoch))

    def _learn_start(self, p: "Partition", follower: int, start: int, epoch: int) -> None:
        if p.leader_epoch != epoch or self.mode_for(p, follower).mode == "stall":
            return
        p.follower_log_start[follower] = max(p.follower_log_start.get(follower, 0), start)
        self.on_change(p)

    def resync(self, p: "Partition") -> None:
        """Modes changed (or a broker came back): followers catch up to the current end."""
        self.after_append(p)

    def resync_all(self) -> None:
        for p in list(self.partitions()):
            self.resync(p)

    def _schedule_copy(self, p: "Partition", follower: int, target: int, now: float) -> None:
        mode = self.mode_for(p, follower)
        if mode.mode == "stall" or (follower in p.isr and p.follower_leo.get(follower, 0) >= target):
            return  # (a caught-up follower outside the ISR still fetches: that is how it rejoins)
        delay = mode.lag_ms / 1000.0
        epoch = p.leader_epoch
        if delay <= 0:
            self._copy(p, follower, target, epoch, now)
        else:
            self.scheduler.call_at(now + delay, lambda: self._copy(p, follower, target, epoch, now))

    def _copy(self, p: "Partition", follower: int, target: int, epoch: int, fetched_at: float) -> None:
        if p.leader_epoch != epoch or follower == p.leader or follower not in p.replicas or \
                self.mode_for(p, follower).mode == "stall":
            return  # leadership moved, a reassignment removed it, or it stopped while the copy was in flight
        was_isr = list(p.isr)
        if p.follower_fetched(follower, target, trio.current_time(), fetched_at):
            if p.isr != was_isr:
                self.on_isr(p, [follower], "expand")
            self.on_change(p)
        self._schedule_isr_check(p)

    # -- ISR shrink -----------------------------------------------------------------------------
    def _schedule_isr_check(self, p: "Partition") -> None:
        """At most one pending check per partition, at the earliest moment a lagging ISR
        follower can go out of sync."""
        lagging = p.lagging_isr()
        if not lagging:
            return
        lag_max = self.config["replica.lag.time.max.ms"] / 1000.0
        now = trio.current_time()
        due = min(p.last_caught_up.setdefault(b, now) for b in lagging) + lag_max
        pending = self._isr_checks.get(id(p))
        if pending is not None and not pending.cancelled and pending.deadline <= due:
            return
        if pending is not None:
            pending.cancel()
        self._isr_checks[id(p)] = self.scheduler.call_at(max(due, now), lambda: self._check_isr(p))

    def _check_isr(self, p: "Partition") -> None:
        self._isr_checks.pop(id(p), None)
        gone = p.shrink_isr(trio.current_time(), self.config["replica.lag.time.max.ms"] / 1000.0)
        if gone:
            self.on_isr(p, gone, "shrink")
            self.on_change(p)
        self._schedule_isr_check(p)
