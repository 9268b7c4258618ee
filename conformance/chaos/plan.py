"""The chaos itself: a seeded schedule of faults, applied through the cluster's own Python
controls (``Cluster.move_leader``, ``stop_broker`` / ``start_broker``, ``cluster.faults``,
``cluster.replication``) on the cluster's trio thread.

A plan is drawn from the seed alone (kinds, start times, durations, raw random draws); which
partition, broker or follower an action hits is resolved when it fires, from the cluster's state
at that moment (an ISR member to lead, a live broker to stop), with the plan's own random
stream. In virtual time the whole run is a function of the seed; in real time the same plan
meets whatever state the clients produced, and the executed log says what really happened.

Kinds, each healed at the end of its duration:

- ``leader``: the partition's leadership moves to another in-sync replica (a controlled
  election, as Kafka's preferred-leader election or a reassignment does);
- ``truncate``: the lost-retry path — followers of a partition stop copying, writes pile up on
  the leader, then an in-sync follower that lacks them becomes leader and truncates them, and
  copying resumes;
- ``bounce``: a broker stops (the controller elects new leaders at once) and starts again;
- ``black_hole``: a broker reads requests and never answers (clients hit request.timeout.ms);
- ``lost_answer``: a broker handles Produce requests and closes the connection instead of
  answering (the write is in the log, the client does not know: its retry must be deduplicated);
- ``stall`` / ``lag``: a partition's (or one follower's) replication stops or slows, so the ISR
  shrinks below min.insync.replicas (NOT_ENOUGH_REPLICAS) and grows back;
- ``cut``: the replication link between a leader and one follower is cut.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

import trio

KINDS = {"leader": 3, "truncate": 3, "bounce": 2, "black_hole": 2, "lost_answer": 2, "stall": 2, "lag": 1, "cut": 1}


@dataclass
class Step:
    at: float             # seconds after the start
    kind: str
    duration: float       # seconds until it is healed
    draw: float           # a raw random number, for choices made when the step fires
    note: str = ""        # what was really done (filled when it fires)


@dataclass
class Plan:
    seed: int
    topic: str
    steps: list[Step]
    executed: list[tuple[float, str]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.steps:
            if s.note and not s.note.startswith("skipped"):
                out[s.kind] = out.get(s.kind, 0) + 1
        return out


def make_plan(seed: int, topic: str, duration: float, mean_gap: float = 1.5,
              kinds: dict[str, int] | None = None) -> Plan:
    """Steps from 0.5 s to ``duration`` - 1 s, ``mean_gap`` apart on average, of ``kinds`` (kind ->
    weight; the emulator's ``KINDS`` by default, conformance/chaos/kafka_faults.py's on Kafka)."""
    rng = random.Random(f"chaos:{seed}")
    names, weights = zip(*(kinds or KINDS).items())
    steps: list[Step] = []
    t = 0.5
    while True:
        t += rng.uniform(0.3, 2 * mean_gap - 0.3)
        if t > duration - 1.0:
            return Plan(seed, topic, steps)
        kind = rng.choices(names, weights)[0]
        steps.append(Step(round(t, 3), kind, round(rng.uniform(0.5, 6.0), 3), rng.random()))


class Chaos:
    """Applies a plan to a cluster. Every method runs on the cluster's trio thread."""

    def __init__(self, cluster, plan: Plan, say: Callable[[str], None] = lambda line: None):
        self.cluster, self.plan, self.say = cluster, plan, say
        self.topic = cluster.topics[plan.topic]
        self.stopped: set[int] = set()
        self.rng = random.Random(f"chaos-choices:{plan.seed}")

    async def run(self) -> None:
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            for step in self.plan.steps:
                nursery.start_soon(self._step, start, step)

    async def _step(self, start: float, step: Step) -> None:
        await trio.sleep_until(start + step.at)
        heal = await getattr(self, f"_{step.kind}")(step)
        step.note = step.note or "done"
        when = trio.current_time() - start
        self.plan.executed.append((round(when, 3), f"{step.kind}: {step.note}"))
        self.say(f"t={when:6.1f}s {step.kind}: {step.note}")
        if heal is not None:
            await trio.sleep_until(start + step.at + step.duration)
            await heal()

    # -- choices ------------------------------------------------------------------------------
    def _partition(self, step: Step):
        parts = self.topic.partitions
        return parts[int(step.draw * len(parts)) % len(parts)]

    def _alive(self) -> list[int]:
        return [b for b in sorted(self.cluster.brokers) if self.cluster.is_alive(b)]

    def _in_sync_follower(self, p) -> int | None:
        candidates = [b for b in p.isr if b != p.leader and self.cluster.is_alive(b)]
        return self.rng.choice(candidates) if candidates else None

    # -- the kinds ------------------------------------------------------------------------------
    async def _leader(self, step: Step):
        p = self._partition(step)
        to = self._in_sync_follower(p)
        if to is None or not self.cluster.is_alive(p.leader):
            step.note = f"skipped: no in-sync follower of partition {p.index} to lead"
            return None
        step.note = f"partition {p.index} leader {p.leader} -> {to}"
        self.cluster.move_leader(p.topic, p.index, to)
        return None

    async def _truncate(self, step: Step):
        p = self._partition(step)
        if not self.cluster.is_alive(p.leader) or self._in_sync_follower(p) is None:
            step.note = f"skipped: partition {p.index} has no live leader and in-sync follower"
            return None
        self.cluster.replication.stall(p.topic, p.index)
        end_before = p.log_end_offset
        await trio.sleep(0.05 + step.draw * 0.5)       # writes land on the leader only
        to = self._in_sync_follower(p)
        piled = p.log_end_offset - end_before
        if to is not None and self.cluster.is_alive(p.leader):
            step.note = f"partition {p.index}: {piled} offsets on leader {p.leader} only, leader -> {to}"
            self.cluster.move_leader(p.topic, p.index, to)
        else:
            step.note = f"partition {p.index}: stalled, no in-sync follower left to lead"
        self.cluster.replication.normal(p.topic, p.index)
        return None

    async def _bounce(self, step: Step):
        alive = self._alive()
        if self.stopped or len(alive) < len(self.cluster.brokers):
            step.note = "skipped: a broker is already stopped"
            return None
        broker = alive[int(step.draw * len(alive)) % len(alive)]
        self.stopped.add(broker)
        step.note = f"broker {broker} stopped for {step.duration:.1f}s"
        await self.cluster.stop_broker(broker)

        async def heal() -> None:
            self.stopped.discard(broker)
            await self.cluster.start_broker(broker)
        return heal

    async def _black_hole(self, step: Step):
        alive = self._alive()
        broker = alive[int(step.draw * len(alive)) % len(alive)]
        step.note = f"broker {broker} answers nothing for {step.duration:.1f}s"
        self.cluster.faults.add({"match": {"broker": broker}, "action": "black_hole",
                                 "duration_ms": step.duration * 1000}, self.cluster.now_ms())
        return None

    async def _lost_answer(self, step: Step):
        alive = self._alive()
        broker = alive[int(step.draw * len(alive)) % len(alive)]
        times = 1 + int(step.draw * 100) % 3
        step.note = f"broker {broker} drops the answers of its next {times} Produce requests"
        self.cluster.faults.add({"match": {"broker": broker, "api": "Produce"}, "action": "close_after", "times": times},
                                self.cluster.now_ms())
        return None

    async def _stall(self, step: Step):
        return self._replication(step, "stall")

    async def _lag(self, step: Step):
        return self._replication(step, "lag")

    def _replication(self, step: Step, mode: str):
        p = self._partition(step)
        followers = [b for b in p.replicas if b != p.leader]
        follower = self.rng.choice(followers + [None]) if followers else None
        lag_ms = 200 + step.draw * 3000 if mode == "lag" else 0.0
        who = "all followers" if follower is None else f"follower {follower}"
        step.note = f"partition {p.index}, {who}: {mode}" + (f" {lag_ms:.0f} ms" if mode == "lag" else "") + \
            f" for {step.duration:.1f}s"
        self.cluster.set_replication(p.topic, p.index, follower, mode, lag_ms)

        async def heal() -> None:
            self.cluster.set_replication(p.topic, p.index, follower, "normal")
        return heal

    async def _cut(self, step: Step):
        p = self._partition(step)
        follower = self._in_sync_follower(p)
        if follower is None:
            step.note = f"skipped: partition {p.index} has no in-sync follower"
            return None
        a, b = p.leader, follower
        step.note = f"replication link {a} <-> {b} cut for {step.duration:.1f}s"
        self.cluster.replication.cut(a, b)

        async def heal() -> None:
            self.cluster.replication.heal(a, b)
        return heal

    # -- the end ------------------------------------------------------------------------------
    async def heal_all(self) -> None:
        """Every fault off, every broker up, replication normal: the partitions converge."""
        self.cluster.faults.clear()
        replication = self.cluster.replication
        for scope in list(replication.modes):
            replication.set_mode(*scope, "normal")
        for a, b in [tuple(c) for c in list(replication.cuts)]:
            replication.heal(a, b)
        for broker in sorted(self.cluster.brokers):
            if not self.cluster.is_alive(broker):
                await self.cluster.start_broker(broker)
        self.stopped.clear()
