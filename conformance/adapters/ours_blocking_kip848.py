"""Our blocking face's KIP-848 operations (``group.protocol=consumer``): the async face's steps
(ours_kip848.py: the same arguments, the same mortal connection, the same outcomes) made with
``client.Consumer`` in real time, every time scaled. Each member is driven by an application
thread, as a blocking application would: its rebalance callbacks run there, inside its polls.
The slow revoker has a thread of its own (confluent-kafka's runs in a process of its own), so
its slow callback keeps its own polls busy, not the measured member's."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from client.errors import KafkaError, TimeoutException
from client.transport import Connect
from conformance.adapters.base import RunEnv
from conformance.adapters.ours_kip848 import KIP848_OPERATIONS, Mortal, commits, settled, step_args, takeover
from conformance.model import SILENT_MEMBER, Operation, Outcome

__all__ = ["KIP848_OPERATIONS", "OursBlockingKip848"]
POLL_S = 0.02   # each member's poll while a step waits for the group (real time)


def _until(done: Callable[[], bool], consumers: list[Any], env: RunEnv, limit: float) -> bool:
    """Poll ``consumers`` in turn until ``done()`` or ``limit`` seconds have passed."""
    end = env.clock() + limit
    while env.clock() < end:
        if done():
            return True
        for c in consumers:
            c.poll(POLL_S)
    return done()


class OursBlockingKip848:
    """Mixed into OurBlockingAdapter (which provides _group_config, _connect and _consumer)."""

    if TYPE_CHECKING:
        def _group_config(self, env: RunEnv, group: str | None, client_id: str | None = None) -> dict: ...

        def _connect(self, env: RunEnv) -> Connect | None: ...

        def _consumer(self, env: RunEnv, config: dict, connect: Connect | None = None) -> Any: ...

    def _members(self, env: RunEnv, group: str, first_connect: Connect | None = None) -> tuple[Any, Any]:
        """The first member (client.id SILENT_MEMBER) and the second one, neither subscribed."""
        first = self._consumer(env, self._group_config(env, group, SILENT_MEMBER), first_connect)
        try:
            return first, self._consumer(env, self._group_config(env, group))
        except BaseException:
            first.close(1.0)
            raise

    def _kip848_member_crash(self, step: Operation, env: RunEnv) -> Outcome:
        """The first member joins over a mortal connection and takes the topic; the measured one
        joins and the group splits; the first one's connections are cut (no leave). Timed: until
        the measured member owns every partition."""
        from client.transport import connect_from_config

        group, topic, limit = step_args(step)
        mortal = Mortal(self._connect(env) or connect_from_config(self._group_config(env, group)))
        first, measured = self._members(env, group, mortal.connect)
        try:
            first.subscribe([topic])
            _until(lambda: bool(first.assignment()), [first], env, limit)
            total = len(first.assignment())
            measured.subscribe([topic])
            _until(lambda: bool(measured.assignment()) and len(first.assignment()) < total, [measured, first], env, limit)
            mortal.kill_from_thread()
            start = env.clock()
            ok = _until(lambda: len(measured.assignment()) == total, [measured], env, limit)
            return takeover(step, ok, env.clock() - start, total)
        finally:
            measured.close(1.0)
            first.close(0.2)   # its connections are gone: it cannot leave

    def _kip848_heartbeats(self, step: Operation, env: RunEnv) -> Outcome:
        """Join, then poll for ``run_ms`` (scaled): the heartbeats' spacing is read on the wire."""
        group, topic, limit = step_args(step)
        with self._consumer(env, self._group_config(env, group)) as c:
            c.subscribe([topic])
            start = env.clock()
            joined = _until(lambda: bool(c.assignment()), [c], env, limit)
            end = env.clock() + step.args.get("run_ms", 40_000) / env.scale / 1000
            while env.clock() < end:
                c.poll(POLL_S)
            return settled(step, joined, env.clock() - start)

    def _kip848_late_poll(self, step: Operation, env: RunEnv) -> Outcome:
        """Join, stop polling for ``stall_ms`` (scaled), poll again: timed, getting the partitions back."""
        group, topic, limit = step_args(step)
        with self._consumer(env, self._group_config(env, group)) as c:
            c.subscribe([topic])
            _until(lambda: bool(c.assignment()), [c], env, limit)
            time.sleep(step.args.get("stall_ms", 90_000) / env.scale / 1000)   # the application is busy
            start = env.clock()
            c.poll(POLL_S)   # the member left at max.poll.interval.ms: this poll rejoins
            return settled(step, _until(lambda: bool(c.assignment()), [c], env, limit), env.clock() - start)

    def _kip848_coordinator_dies(self, step: Operation, env: RunEnv) -> Outcome:
        """Two members; the scenario stops the group coordinator's broker when the first is asked
        to revoke for the second. Timed: from the second's subscribe until the two hold the topic."""
        group, topic, limit = step_args(step)
        first, second = self._members(env, group)
        try:
            first.subscribe([topic])
            _until(lambda: bool(first.assignment()), [first], env, limit)
            total = len(first.assignment())
            second.subscribe([topic])
            start = env.clock()

            def shared() -> bool:
                mine, theirs = len(first.assignment()), len(second.assignment())
                return mine + theirs == total and mine > 0 and theirs > 0

            return settled(step, _until(shared, [first, second], env, limit), env.clock() - start)
        finally:
            first.close(1.0)
            second.close(1.0)

    def _kip848_slow_revoke(self, step: Operation, env: RunEnv) -> Outcome:
        """A first member whose on_revoke takes ``revoke_ms`` (scaled) owns the topic and goes on
        polling on its own application thread, where the callback runs; the measured member
        joins. Timed: from its subscribe until it owns every partition — when the broker fences
        the slow member at its rebalance timeout, its heartbeats going on beside the callback."""
        group, topic, limit = step_args(step)
        slow_s = step.args.get("revoke_ms", 120_000) / env.scale / 1000
        over = threading.Event()   # the step is over: the slow callback (and the first's polling) ends
        first, second = self._members(env, group)
        polling = threading.Thread(target=_poll_until_set, args=(first, over), name="slow-member-application", daemon=True)
        try:
            first.subscribe([topic], on_revoke=lambda tps: over.wait(slow_s) if tps else None)
            _until(lambda: bool(first.assignment()), [first], env, limit)
            total = len(first.assignment())
            polling.start()
            second.subscribe([topic])
            start = env.clock()
            return settled(step, _until(lambda: len(second.assignment()) == total, [second], env, limit),
                           env.clock() - start)
        finally:
            over.set()
            if polling.is_alive():
                polling.join(slow_s + 5.0)
            first.close(1.0)
            second.close(1.0)

    def _kip848_stale_commit(self, step: Operation, env: RunEnv) -> Outcome:
        """A member commits every ``every_ms`` (scaled) for ``run_ms`` while a second one joins and
        the group rebalances (the scenario delays every heartbeat answer). The first refused commit
        is the outcome; success means none was refused."""
        group, topic, limit = step_args(step)
        every = step.args.get("every_ms", 500) / env.scale / 1000
        with self._consumer(env, self._group_config(env, group)) as a, \
                self._consumer(env, self._group_config(env, group, SILENT_MEMBER)) as b:
            a.subscribe([topic])
            _until(lambda: bool(a.assignment()), [a], env, limit)
            b.subscribe([topic])
            start, made = env.clock(), 0
            while env.clock() - start < min(limit, step.args.get("run_ms", 30_000) / env.scale / 1000):
                a.poll(every)
                b.poll(0.0)
                try:
                    a.commit_sync({tp: 0 for tp in a.assignment()})
                    made += 1
                except KafkaError as exc:
                    return commits(step, env.clock() - start, made, exc)
            return commits(step, env.clock() - start, made)


def _poll_until_set(consumer: Any, over: threading.Event) -> None:
    """A member's application thread: poll until told to stop (its callbacks run in these polls).
    A poll whose deadline the network thread let pass (the reaper's TimeoutException: only when
    something holds that thread, as a callback run on it does in the broken variant the tests
    build) is polled again, as an application would; it is no failure of this thread."""
    while not over.is_set():
        try:
            consumer.poll(POLL_S)
        except TimeoutException:
            continue
