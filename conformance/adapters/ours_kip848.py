"""Our async face's KIP-848 operations (``group.protocol=consumer``), in virtual time: the same
steps as confluent-kafka's (conformance/adapters/confluent_kip848.py). The crashed member is ours
too, run in-process: its connections are cut and it can open no new one, as if its process had
died — its heartbeats stop without a leave (``Mortal``).

What both faces' steps share lives here too (the blocking face's: ours_blocking_kip848.py): each
step's arguments, the mortal connection, and the outcomes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import trio

from client.errors import KafkaError
from client.transport import Connect
from conformance.adapters.app_calls import timed_start
from conformance.adapters.base import RunEnv
from conformance.model import SILENT_MEMBER, Operation, Outcome

KIP848_OPERATIONS = frozenset({"kip848_member_crash", "kip848_heartbeats", "kip848_late_poll", "kip848_coordinator_dies",
                               "kip848_stale_commit", "kip848_slow_revoke"})
# each step's default group, and what its failure means
GROUPS = {"kip848_member_crash": "k848", "kip848_heartbeats": "k848-hb", "kip848_late_poll": "k848-late",
          "kip848_coordinator_dies": "k848-move", "kip848_slow_revoke": "k848-slow", "kip848_stale_commit": "k848-stale"}
NEVER = {"kip848_member_crash": "the crashed member's partitions never moved", "kip848_heartbeats": "never assigned",
         "kip848_late_poll": "never assigned again", "kip848_coordinator_dies": "the group never settled on the new coordinator",
         "kip848_slow_revoke": "the slow member's partitions never moved"}


def step_args(step: Operation) -> tuple[str, str, float]:
    """The step's group, topic and time limit (seconds; a run's steps are already scaled)."""
    return step.args.get("group", GROUPS[step.kind]), step.args.get("topic", "t"), step.timeout_s or 600.0


def settled(step: Operation, ok: bool, elapsed: float, value: Any = None) -> Outcome:
    """A step that waits for the group to reach a state: done, or TimeoutException saying what never happened."""
    return Outcome(step.kind, ok, elapsed, None if ok else "TimeoutException", None if ok else NEVER[step.kind], value=value)


def takeover(step: Operation, ok: bool, elapsed: float, total: int) -> Outcome:
    """``kip848_member_crash``: how long the survivor waited for every partition after the crash."""
    return settled(step, ok, elapsed, {"partitions": total, "takeover_ms": round(elapsed * 1000, 1)})


def commits(step: Operation, elapsed: float, made: int, refused: BaseException | None = None) -> Outcome:
    """``kip848_stale_commit``: the first refused commit, or none."""
    if refused is None:
        return Outcome(step.kind, True, elapsed, value={"commits_before": made})
    return Outcome(step.kind, False, elapsed, type(refused).__name__, str(refused), value={"commits_before": made})


class Mortal:
    """A member's ``connect`` that can die: ``kill`` cuts every connection it opened and it opens no
    new one, as if the member's process had died (its heartbeats stop without a leave). ``kill``
    runs on the member's own trio run; ``kill_from_thread`` from any other thread (the blocking
    face's application thread)."""

    def __init__(self, inner: Connect):
        self.inner, self.streams, self.dead = inner, list[trio.abc.Stream](), False
        self.token: trio.lowlevel.TrioToken | None = None

    async def connect(self, node: int, host: str, port: int) -> trio.abc.Stream:
        if self.dead:
            raise OSError("the member's process is gone")
        stream = await self.inner(node, host, port)
        self.token = trio.lowlevel.current_trio_token()
        self.streams.append(stream)
        return stream

    async def kill(self) -> None:
        self.dead = True
        for stream in self.streams:
            await trio.aclose_forcefully(stream)

    def kill_from_thread(self) -> None:
        self.dead = True
        if self.token is not None:
            trio.from_thread.run(self.kill, trio_token=self.token)


class OursKip848:
    """Mixed into OurAdapter (which provides _connect and _consumer_config)."""

    if TYPE_CHECKING:
        def _connect(self, env: RunEnv) -> Any: ...

        def _consumer_config(self, env: RunEnv, group: str | None) -> dict: ...

    @contextlib.asynccontextmanager
    async def _first_owns_the_topic(self, env: RunEnv, group: str, topic: str,
                                    on_revoke: Any = None) -> AsyncIterator[tuple[Any, Any, int]]:
        """A first member (client.id SILENT_MEMBER) that owns every partition, a second one not yet
        subscribed, and the partition count; both closed afterwards."""
        from client.consumer.async_consumer import open_consumer

        async with open_consumer({**self._consumer_config(env, group), "client.id": SILENT_MEMBER},
                                 connect=self._connect(env)) as first, \
                open_consumer(self._consumer_config(env, group), connect=self._connect(env)) as second:
            first.subscribe([topic], on_revoke=on_revoke)
            while not first.assignment():
                await first.poll(0.1)
            yield first, second, len(first.assignment())

    async def _kip848_member_crash(self, step: Operation, env: RunEnv) -> Outcome:
        from client.consumer.async_consumer import open_consumer

        group, topic, limit = step_args(step)
        mortal = Mortal(self._connect(env))
        first_cfg = {**self._consumer_config(env, group), "client.id": SILENT_MEMBER}
        async with open_consumer(first_cfg, connect=mortal.connect) as first, \
                open_consumer(self._consumer_config(env, group), connect=self._connect(env)) as measured:
            first.subscribe([topic])
            while not first.assignment():
                await first.poll(0.1)
            total = len(first.assignment())
            measured.subscribe([topic])
            with trio.move_on_after(limit):
                while not (measured.assignment() and len(first.assignment()) < total):
                    await measured.poll(0.1)
                    await first.poll(0.0)
            await mortal.kill()
            start = timed_start(env, step)
            with trio.move_on_after(limit):
                while len(measured.assignment()) < total:
                    await measured.poll(0.1)
            return takeover(step, len(measured.assignment()) == total, trio.current_time() - start, total)

    async def _kip848_heartbeats(self, step: Operation, env: RunEnv) -> Outcome:
        from client.consumer.async_consumer import open_consumer

        group, topic, limit = step_args(step)
        async with open_consumer(self._consumer_config(env, group), connect=self._connect(env)) as c:
            c.subscribe([topic])
            start = timed_start(env, step)
            with trio.move_on_after(limit):
                while not c.assignment():
                    await c.poll(0.1)
            joined = bool(c.assignment())
            end = trio.current_time() + step.args.get("run_ms", 40_000) / env.scale / 1000
            while trio.current_time() < end:
                await c.poll(0.1)
            return settled(step, joined, trio.current_time() - start)

    async def _kip848_late_poll(self, step: Operation, env: RunEnv) -> Outcome:
        """Join, stop polling for ``stall_ms`` (scaled), poll again: timed, getting the partitions back."""
        from client.consumer.async_consumer import open_consumer

        group, topic, limit = step_args(step)
        async with open_consumer(self._consumer_config(env, group), connect=self._connect(env)) as c:
            c.subscribe([topic])
            with trio.move_on_after(limit):
                while not c.assignment():
                    await c.poll(0.1)
            await trio.sleep(step.args.get("stall_ms", 90_000) / env.scale / 1000)   # the application is busy
            start = timed_start(env, step)
            with trio.move_on_after(limit):
                while True:
                    await c.poll(0.1)
                    if c.assignment():
                        break
            return settled(step, bool(c.assignment()), trio.current_time() - start)

    async def _kip848_coordinator_dies(self, step: Operation, env: RunEnv) -> Outcome:
        """Two members; the scenario stops the group coordinator's broker when the first is asked
        to revoke for the second (cluster_setup's stop_coordinator_when_revoking). Timed: from the
        second member's subscribe until the two hold the topic between them."""

        group, topic, limit = step_args(step)
        async with self._first_owns_the_topic(env, group, topic) as (first, second, total):
            second.subscribe([topic])
            start = timed_start(env, step)
            with trio.move_on_after(limit):
                while not (len(first.assignment()) + len(second.assignment()) == total
                           and first.assignment() and second.assignment()):
                    await first.poll(0.1)
                    await second.poll(0.1)
            ok = len(first.assignment()) + len(second.assignment()) == total and bool(second.assignment())
            return settled(step, ok, trio.current_time() - start)

    async def _kip848_slow_revoke(self, step: Operation, env: RunEnv) -> Outcome:
        """A first member whose (async) on_revoke takes ``revoke_ms`` owns the topic and goes on
        polling; the measured member joins. Timed from its subscribe until it owns every
        partition: when the broker fences the slow member at its rebalance timeout, while the
        slow member's heartbeats go on beside its callback."""

        group, topic, limit = step_args(step)
        slow_s = step.args.get("revoke_ms", 120_000) / env.scale / 1000

        async def slow_revoke(tps: list) -> None:
            if tps:
                await trio.sleep(slow_s)

        async with self._first_owns_the_topic(env, group, topic, slow_revoke) as (first, second, total):
            second.subscribe([topic])
            start = timed_start(env, step)
            with trio.move_on_after(limit):
                while len(second.assignment()) < total:
                    await first.poll(0.05)
                    await second.poll(0.05)
            return settled(step, len(second.assignment()) == total, trio.current_time() - start)

    async def _kip848_stale_commit(self, step: Operation, env: RunEnv) -> Outcome:
        """A member commits every ``every_ms`` for ``run_ms`` while a second one joins and the group
        rebalances (the scenario delays every heartbeat answer, so the member learns its new epoch
        late). The first refused commit is the outcome; success means none was refused."""
        from client.consumer.async_consumer import open_consumer
        from client.consumer.records import TopicPartition

        group, topic, limit = step_args(step)
        every = step.args.get("every_ms", 500) / env.scale / 1000
        async with open_consumer(self._consumer_config(env, group), connect=self._connect(env)) as a, \
                open_consumer({**self._consumer_config(env, group), "client.id": SILENT_MEMBER},
                              connect=self._connect(env)) as b:
            a.subscribe([topic])
            with trio.move_on_after(limit):
                while not a.assignment():
                    await a.poll(0.1)
            b.subscribe([topic])
            start, made = trio.current_time(), 0
            with trio.move_on_after(min(limit, step.args.get("run_ms", 30_000) / env.scale / 1000)):
                while True:
                    await a.poll(every)
                    await b.poll(0.0)
                    owned = {TopicPartition(tp.topic, tp.partition): 0 for tp in a.assignment()}
                    try:
                        await a.commit_sync(owned)
                        made += 1
                    except KafkaError as exc:
                        return commits(step, trio.current_time() - start, made, exc)
            return commits(step, trio.current_time() - start, made)
