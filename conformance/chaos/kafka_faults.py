"""The chaos plan applied to a real Apache Kafka (``broker-emu chaos --broker kafka``): the part
of the emulator's fault set (conformance/chaos/plan.py) that a 3-node Kafka behind our proxy
can be given, and what stands in where a kind cannot be.

| kind | what | through |
|---|---|---|
| ``leader`` | leadership moves to an in-sync follower | the admin: AlterPartitionReassignments with the same replicas, the target first, then ElectLeaders (PREFERRED) |
| ``bounce`` | a node is killed (SIGKILL, a crash: no controlled shutdown) and started again | the harness (conformance/realkafka/node.py) |
| ``pause`` | a node stops dead (SIGSTOP) and runs on (SIGCONT): no heartbeats, fetches or answers; as a follower it is a stalled replica, its ISR shrinks after replica.lag.time.max.ms | the harness |
| ``black_hole`` | the clients' requests to a node are read and never answered | the proxy's ``black_hole`` |
| ``lost_answer`` | a node's next 1–3 Produce requests are handled and their answers dropped (the connection closed) | the proxy's ``close_after`` |
| ``lost_request`` | a node's next 1–3 Produce requests are dropped before Kafka sees them (the connection closed) | the proxy's ``close_before`` |
| ``delay`` | every answer of a node is held 50–1,500 ms | the proxy's ``delay_response`` |
| ``isolate`` | the clients cannot reach a node (its proxy listener closed, its connections cut); the node itself stays in the cluster and keeps its leaderships | the proxy's ``stop_broker`` |

Not applied, because the proxy sits between the clients and the brokers only (the brokers'
replication and controller traffic goes straight between the JVMs): ``truncate`` (followers
stalled while the leader alone takes writes, then a follower without them elected), ``stall``,
``lag`` and ``cut`` (one replication link). ``pause`` of a follower stands in for a stalled
follower. Nor is a duplicated request or answer: no proxy action sends a frame twice.

Every step runs on the seed's trio loop; signals and restarts of a JVM go to a worker thread.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable

import trio

from conformance.chaos.plan import Plan, Step
from conformance.realkafka import wire
from conformance.realkafka.config import HOST

KAFKA_KINDS = {"leader": 3, "bounce": 2, "pause": 2, "black_hole": 2, "lost_answer": 2, "lost_request": 1,
               "delay": 2, "isolate": 1}
NOT_ON_KAFKA = {
    "truncate": "needs the leader's followers stalled while it alone takes writes: replication does not pass the proxy",
    "stall": "stops a partition's replication: replication does not pass the proxy (pause stands in for a follower)",
    "lag": "slows one follower's replication: replication does not pass the proxy",
    "cut": "cuts one replication link: replication does not pass the proxy",
    "duplicate": "no proxy action sends a request or an answer twice",
}
ADMIN_TIMEOUT_S = 15.0
RESTART_READY_S = 120.0


class KafkaChaos:
    """Applies a plan (drawn with ``KAFKA_KINDS``) to ``kafka`` (a started
    conformance/realkafka KafkaCluster) through ``proxy`` (a running broker_emu.proxy Proxy in
    front of it, on this trio loop) and ``admin`` (our AsyncAdmin, straight to Kafka)."""

    def __init__(self, kafka, proxy, admin, plan: Plan, say: Callable[[str], None] = lambda line: None):
        self.kafka, self.proxy, self.admin, self.plan, self.say = kafka, proxy, admin, plan, say
        self.rng = random.Random(f"chaos-choices:{plan.seed}")
        self.down: set[int] = set()       # killed, paused or isolated now: one node at a time
        self.killed: set[int] = set()
        self.paused: set[int] = set()
        self.isolated: set[int] = set()

    async def run(self) -> None:
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            for step in self.plan.steps:
                nursery.start_soon(self._step, start, step)

    async def _step(self, start: float, step: Step) -> None:
        await trio.sleep_until(start + step.at)
        try:
            heal = await getattr(self, f"_{step.kind}")(step)
        except Exception as exc:  # noqa: BLE001 - a step Kafka refused is noted, the seed goes on
            step.note, heal = f"skipped: {type(exc).__name__}: {exc}", None
        step.note = step.note or "done"
        when = trio.current_time() - start
        self.plan.executed.append((round(when, 3), f"{step.kind}: {step.note}"))
        self.say(f"t={when:6.1f}s {step.kind}: {step.note}")
        if heal is not None:
            await trio.sleep_until(start + step.at + step.duration)
            await heal()

    # -- choices ------------------------------------------------------------------------------
    def _nodes(self) -> list[int]:
        return [n.node_id for n in self.kafka.nodes]

    def _pick(self, step: Step, among: list[int]) -> int:
        return among[int(step.draw * len(among)) % len(among)]

    def _whole(self) -> list[int]:
        """Nodes neither killed nor paused (a proxy fault on one of them would say nothing)."""
        return [n for n in self._nodes() if n not in self.killed and n not in self.paused]

    async def _partition_state(self, step: Step) -> tuple[int, int, list[int], list[int]]:
        """(partition, leader, replicas, isr) of the partition the step draws, from a live node."""
        asker = next(n for n in self.kafka.nodes if n.node_id in self._whole())
        meta = await trio.to_thread.run_sync(lambda: wire.metadata(HOST, asker.ports.broker_port, [self.plan.topic]))
        parts = sorted((p for t in meta.topics for p in t.partitions), key=lambda p: p.partition_index)
        p = parts[int(step.draw * len(parts)) % len(parts)]
        return p.partition_index, p.leader_id, list(p.replica_nodes), list(p.isr_nodes)

    # -- the kinds ------------------------------------------------------------------------------
    async def _leader(self, step: Step):
        partition, leader, replicas, isr = await self._partition_state(step)
        candidates = [b for b in isr if b != leader and b in self._whole()]
        if leader < 0 or not candidates:
            step.note = f"skipped: no in-sync follower of partition {partition} to lead"
            return None
        to = self.rng.choice(candidates)
        tp = (self.plan.topic, partition)
        with trio.move_on_after(ADMIN_TIMEOUT_S):
            moved = await self.admin.alter_partition_reassignments({tp: [to] + [b for b in replicas if b != to]},
                                                                   timeout=ADMIN_TIMEOUT_S)
            if moved.get(tp) is not None:
                step.note = f"skipped: reassignment of partition {partition} refused: {moved[tp]}"
                return None
            elected = await self.admin.elect_leaders([tp], timeout=ADMIN_TIMEOUT_S)
            step.note = (f"partition {partition} leader {leader} -> {to}" if elected.get(tp) is None
                         else f"partition {partition}: replicas reordered, election answered {elected[tp]}")
            return None
        step.note = f"skipped: the admin did not answer within {ADMIN_TIMEOUT_S:g}s"
        return None

    def _take_one(self, step: Step, what: str) -> int | None:
        if self.down:
            step.note = f"skipped: node {min(self.down)} is already down"
            return None
        node = self._pick(step, self._nodes())
        self.down.add(node)
        step.note = f"node {node} {what} for {step.duration:.1f}s"
        return node

    async def _bounce(self, step: Step):
        node_id = self._take_one(step, "killed (SIGKILL)")
        if node_id is None:
            return None
        node = self.kafka.node(node_id)
        self.killed.add(node_id)
        await trio.to_thread.run_sync(_kill, node)

        async def heal() -> None:
            await trio.to_thread.run_sync(node.start)
            self.killed.discard(node_id)
            self.down.discard(node_id)
        return heal

    async def _pause(self, step: Step):
        node_id = self._take_one(step, "paused (SIGSTOP)")
        if node_id is None:
            return None
        node = self.kafka.node(node_id)
        self.paused.add(node_id)
        await trio.to_thread.run_sync(node.pause)

        async def heal() -> None:
            await trio.to_thread.run_sync(node.resume)
            self.paused.discard(node_id)
            self.down.discard(node_id)
        return heal

    async def _isolate(self, step: Step):
        node_id = self._take_one(step, "cut off from the clients")
        if node_id is None:
            return None
        self.isolated.add(node_id)
        await self.proxy.stop_broker(node_id)

        async def heal() -> None:
            await self.proxy.start_broker(node_id)
            self.isolated.discard(node_id)
            self.down.discard(node_id)
        return heal

    def _rule(self, step: Step, rule: dict[str, Any], note: str) -> None:
        node = self._pick(step, self._whole() or self._nodes())
        step.note = note.format(node=node)
        self.proxy.faults.add({**rule, "match": {"broker": node, **rule.get("match", {})}}, self.proxy.now_ms())

    async def _black_hole(self, step: Step):
        self._rule(step, {"action": "black_hole", "duration_ms": step.duration * 1000},
                   f"node {{node}} answers nothing for {step.duration:.1f}s")

    async def _lost_answer(self, step: Step):
        times = 1 + int(step.draw * 100) % 3
        self._rule(step, {"match": {"api": "Produce"}, "action": "close_after", "times": times},
                   f"node {{node}}: the answers of its next {times} Produce requests dropped")

    async def _lost_request(self, step: Step):
        times = 1 + int(step.draw * 100) % 3
        self._rule(step, {"match": {"api": "Produce"}, "action": "close_before", "times": times},
                   f"node {{node}}: its next {times} Produce requests dropped before it reads them")

    async def _delay(self, step: Step):
        ms = round(50 + step.draw * 1450)
        self._rule(step, {"action": {"type": "delay_response", "ms": ms}, "duration_ms": step.duration * 1000},
                   f"node {{node}}: every answer held {ms} ms for {step.duration:.1f}s")

    # -- the end ------------------------------------------------------------------------------
    async def heal_all(self) -> None:
        """Every proxy fault off, every node running and registered again."""
        self.proxy.faults.clear()
        for node_id in list(self.isolated):
            await self.proxy.start_broker(node_id)
        for node_id in list(self.paused):
            await trio.to_thread.run_sync(self.kafka.node(node_id).resume)
        for node_id in list(self.killed):
            node = self.kafka.node(node_id)
            if not node.running():
                await trio.to_thread.run_sync(node.start)
        for held in (self.killed, self.paused, self.isolated, self.down):
            held.clear()
        await trio.to_thread.run_sync(lambda: self.kafka.wait_ready(time.monotonic() + RESTART_READY_S))


def _kill(node) -> None:
    if node.running():
        node.proc.kill()
        node.proc.wait(timeout=30)
