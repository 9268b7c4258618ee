"""Our async face's KIP-848 operations (``group.protocol=consumer``), in virtual time: the same
steps as confluent-kafka's (conformance/adapters/confluent_kip848.py). The crashed member is ours
too, run in-process: its connections are cut and it can open no new one, as if its process had
died — its heartbeats stop without a leave."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import trio

from client.errors import KafkaError
from conformance.adapters.app_calls import timed_start
from conformance.adapters.base import RunEnv
from conformance.model import SILENT_MEMBER, Operation, Outcome

KIP848_OPERATIONS = frozenset({"kip848_member_crash", "kip848_heartbeats", "kip848_late_poll", "kip848_coordinator_dies",
                               "kip848_stale_commit", "kip848_slow_revoke"})


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
        from client.consumer import open_consumer

        async with open_consumer({**self._consumer_config(env, group), "client.id": SILENT_MEMBER},
                                 connect=self._connect(env)) as first, \
                open_consumer(self._consumer_config(env, group), connect=self._connect(env)) as second:
            first.subscribe([topic], on_revoke=on_revoke)
            while not first.assignment():
                await first.poll(0.1)
            yield first, second, len(first.assignment())

    async def _kip848_member_crash(self, step: Operation, env: RunEnv) -> Outcome:
        from client.consumer import open_consumer

        group, topic, limit = step.args.get("group", "k848"), step.args.get("topic", "t"), step.timeout_s or 600.0
        base = self._connect(env)
        streams: list[Any] = []
        dead: list[bool] = []

        async def mortal(node: int, host: str, port: int) -> Any:
            if dead:
                raise OSError("the member's process is gone")
            stream = await base(node, host, port)
            streams.append(stream)
            return stream

        first_cfg = {**self._consumer_config(env, group), "client.id": SILENT_MEMBER}
        async with open_consumer(first_cfg, connect=mortal) as first, \
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
            dead.append(True)
            for stream in streams:
                await stream.aclose()
            start = timed_start(env, step)
            with trio.move_on_after(limit):
                while len(measured.assignment()) < total:
                    await measured.poll(0.1)
            elapsed = trio.current_time() - start
            ok = len(measured.assignment()) == total
            return Outcome("kip848_member_crash", ok, elapsed, None if ok else "TimeoutException",
                           None if ok else "the crashed member's partitions never moved",
                           value={"partitions": total, "takeover_ms": round(elapsed * 1000, 1)})

    async def _kip848_heartbeats(self, step: Operation, env: RunEnv) -> Outcome:
        from client.consumer import open_consumer

        group, topic = step.args.get("group", "k848-hb"), step.args.get("topic", "t")
        async with open_consumer(self._consumer_config(env, group), connect=self._connect(env)) as c:
            c.subscribe([topic])
            start = timed_start(env, step)
            with trio.move_on_after(step.timeout_s or 600.0):
                while not c.assignment():
                    await c.poll(0.1)
            joined = bool(c.assignment())
            end = trio.current_time() + step.args.get("run_ms", 40_000) / env.scale / 1000
            while trio.current_time() < end:
                await c.poll(0.1)
            return Outcome("kip848_heartbeats", joined, trio.current_time() - start, None if joined else "TimeoutException",
                           None if joined else "never assigned")

    async def _kip848_late_poll(self, step: Operation, env: RunEnv) -> Outcome:
        """Join, stop polling for ``stall_ms`` (scaled), poll again: timed, getting the partitions back."""
        from client.consumer import open_consumer

        group, topic, limit = step.args.get("group", "k848-late"), step.args.get("topic", "t"), step.timeout_s or 600.0
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
            ok = bool(c.assignment())
            return Outcome("kip848_late_poll", ok, trio.current_time() - start, None if ok else "TimeoutException",
                           None if ok else "never assigned again")

    async def _kip848_coordinator_dies(self, step: Operation, env: RunEnv) -> Outcome:
        """Two members; the scenario stops the group coordinator's broker when the first is asked
        to revoke for the second (cluster_setup's stop_coordinator_when_revoking). Timed: from the
        second member's subscribe until the two hold the topic between them."""

        group, topic, limit = step.args.get("group", "k848-move"), step.args.get("topic", "t"), step.timeout_s or 600.0
        async with self._first_owns_the_topic(env, group, topic) as (first, second, total):
            second.subscribe([topic])
            start = timed_start(env, step)
            with trio.move_on_after(limit):
                while not (len(first.assignment()) + len(second.assignment()) == total
                           and first.assignment() and second.assignment()):
                    await first.poll(0.1)
                    await second.poll(0.1)
            ok = len(first.assignment()) + len(second.assignment()) == total and bool(second.assignment())
            return Outcome("kip848_coordinator_dies", ok, trio.current_time() - start, None if ok else "TimeoutException",
                           None if ok else "the group never settled on the new coordinator")

    async def _kip848_slow_revoke(self, step: Operation, env: RunEnv) -> Outcome:
        """A first member whose (async) on_revoke takes ``revoke_ms`` owns the topic and goes on
        polling; the measured member joins. Timed from its subscribe until it owns every
        partition: when the broker fences the slow member at its rebalance timeout, while the
        slow member's heartbeats go on beside its callback."""

        group, topic, limit = step.args.get("group", "k848-slow"), step.args.get("topic", "t"), step.timeout_s or 600.0
        slow_s = step.args.get("revoke_ms", 120_000) / 1000

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
            ok = len(second.assignment()) == total
            return Outcome("kip848_slow_revoke", ok, trio.current_time() - start, None if ok else "TimeoutException",
                           None if ok else "the slow member's partitions never moved")

    async def _kip848_stale_commit(self, step: Operation, env: RunEnv) -> Outcome:
        """A member commits every ``every_ms`` for ``run_ms`` while a second one joins and the group
        rebalances (the scenario delays every heartbeat answer, so the member learns its new epoch
        late). The first refused commit is the outcome; success means none was refused."""
        from client.consumer import TopicPartition, open_consumer

        group, topic, limit = step.args.get("group", "k848-stale"), step.args.get("topic", "t"), step.timeout_s or 600.0
        every = step.args.get("every_ms", 500) / env.scale / 1000
        async with open_consumer(self._consumer_config(env, group), connect=self._connect(env)) as a, \
                open_consumer({**self._consumer_config(env, group), "client.id": SILENT_MEMBER},
                              connect=self._connect(env)) as b:
            a.subscribe([topic])
            with trio.move_on_after(limit):
                while not a.assignment():
                    await a.poll(0.1)
            b.subscribe([topic])
            start, commits = trio.current_time(), 0
            with trio.move_on_after(min(limit, step.args.get("run_ms", 30_000) / env.scale / 1000)):
                while True:
                    await a.poll(every)
                    await b.poll(0.0)
                    owned = {TopicPartition(tp.topic, tp.partition): 0 for tp in a.assignment()}
                    try:
                        await a.commit_sync(owned)
                        commits += 1
                    except KafkaError as exc:
                        return Outcome("kip848_stale_commit", False, trio.current_time() - start, type(exc).__name__,
                                       str(exc), value={"commits_before": commits})
            return Outcome("kip848_stale_commit", True, trio.current_time() - start, value={"commits_before": commits})
