"""confluent-kafka's KIP-848 operations (``group.protocol=consumer``): the broker owns the group's
timers, so the steps make the broker's clocks visible from the client.

- ``kip848_member_crash``: a first member (its own process, client.id SILENT_MEMBER) joins and
  takes half the topic while the measured member takes the other half; the first process is
  killed (no leave: heartbeats simply stop) and the time until the measured member owns every
  partition is the outcome — the broker's ``group.consumer.session.timeout.ms`` plus at most one
  heartbeat interval, whatever the client's own settings.
- ``kip848_heartbeats``: one member joins and polls for ``run_ms`` (scaled); its heartbeats' spacing is read
  from the trace (the broker's ``group.consumer.heartbeat.interval.ms``, not a client setting).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from conformance.adapters.base import RunEnv
from conformance.model import SILENT_MEMBER, Operation, Outcome

KIP848_OPERATIONS = frozenset({"kip848_member_crash", "kip848_heartbeats", "kip848_late_poll", "kip848_slow_revoke",
                               "kip848_stale_commit", "kip848_coordinator_dies"})

# the first member's process: join, say which partitions it owns whenever that changes, then
# poll until killed; with a third argument, its on_revoke callback takes that many seconds
_MEMBER = """
import json, sys, time
from confluent_kafka import Consumer
conf, topic = json.loads(sys.argv[1]), sys.argv[2]
slow = float(sys.argv[3])
c = Consumer(conf)
c.subscribe([topic], on_revoke=lambda consumer, parts: time.sleep(slow) if parts else None)
owned = None
while True:
    c.poll(0.05)
    now = sorted(p.partition for p in c.assignment())
    if now != owned:
        owned = now
        print(json.dumps(now), flush=True)
"""


class ConfluentKip848:
    """Mixed into ConfluentAdapter (which provides _consumer_conf)."""

    if TYPE_CHECKING:
        def _consumer_conf(self, env: RunEnv, group: str) -> dict: ...

    def _kip848_conf(self, env: RunEnv, group: str, client_id: str | None = None) -> dict[str, Any]:
        conf = self._consumer_conf(replace(env, client_id=client_id or env.client_id), group)
        return {**conf, "group.protocol": "consumer", "auto.offset.reset": "earliest",
                **{k: env.config[k] for k in ("group.remote.assignor", "max.poll.interval.ms") if k in env.config}}

    def _kip848_member_crash(self, step: Operation, env: RunEnv) -> Outcome:
        group, topic, limit = step.args.get("group", "k848"), step.args.get("topic", "t"), step.timeout_s or 60.0
        with self._beside_a_member_process(env, group, topic) as (first, measured):
            total = _first_owns_all(first, limit)
            if total is None:
                return Outcome("kip848_member_crash", False, 0.0, "TimeoutException", "the first member never joined")
            measured.subscribe([topic])
            if not _until(lambda: 0 < len(measured.assignment()) < total, measured, env, limit):
                return Outcome("kip848_member_crash", False, 0.0, "TimeoutException", "the group never split")
            first.kill()
            first.wait()
            start = env.clock()
            ok = _until(lambda: len(measured.assignment()) == total, measured, env, limit)
            elapsed = env.clock() - start
            return Outcome("kip848_member_crash", ok, elapsed, None if ok else "TimeoutException",
                           None if ok else "the crashed member's partitions never moved",
                           value={"partitions": total, "takeover_ms": round(elapsed * 1000, 1)})

    @contextlib.contextmanager
    def _beside_a_member_process(self, env: RunEnv, group: str, topic: str,
                                 revoke_s: float = 0.0) -> Iterator[tuple[subprocess.Popen, Any]]:
        """The first member in its own process (client.id SILENT_MEMBER; its on_revoke takes
        ``revoke_s``) and the measured member here, not yet subscribed; both gone afterwards."""
        from confluent_kafka import Consumer

        first = subprocess.Popen([sys.executable, "-c", _MEMBER, json.dumps(self._kip848_conf(env, group, SILENT_MEMBER)),
                                  topic, str(revoke_s)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        measured = Consumer(self._kip848_conf(env, group))
        try:
            yield first, measured
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
            if first.stdout is not None:
                first.stdout.close()
            measured.close()

    def _kip848_coordinator_dies(self, step: Operation, env: RunEnv) -> Outcome:
        """Two members; the scenario stops the group coordinator's broker when the first is asked
        to revoke for the second. Timed: from the second's subscribe until the two hold the topic."""
        from confluent_kafka import Consumer

        group, topic, limit = step.args.get("group", "k848-move"), step.args.get("topic", "t"), step.timeout_s or 60.0
        first = Consumer(self._kip848_conf(env, group, SILENT_MEMBER))
        second = Consumer(self._kip848_conf(env, group))
        try:
            first.subscribe([topic])
            if not _until(lambda: bool(first.assignment()), first, env, limit):
                return Outcome("kip848_coordinator_dies", False, 0.0, "TimeoutException", "the first member never joined")
            total = len(first.assignment())
            second.subscribe([topic])
            start, end = env.clock(), env.clock() + limit

            def settled() -> bool:
                mine, theirs = len(first.assignment()), len(second.assignment())
                return mine + theirs == total and mine > 0 and theirs > 0

            while env.clock() < end and not settled():
                first.poll(0.02)
                second.poll(0.02)
            ok = settled()
            return Outcome("kip848_coordinator_dies", ok, env.clock() - start, None if ok else "TimeoutException",
                           None if ok else "the group never settled on the new coordinator")
        finally:
            first.close()
            second.close()

    def _kip848_heartbeats(self, step: Operation, env: RunEnv) -> Outcome:
        from confluent_kafka import Consumer

        group, topic = step.args.get("group", "k848-hb"), step.args.get("topic", "t")
        run_s = step.args.get("run_ms", 40_000) / env.scale / 1000
        c = Consumer(self._kip848_conf(env, group))
        try:
            c.subscribe([topic])
            start = env.clock()
            joined = _until(lambda: bool(c.assignment()), c, env, step.timeout_s or 30.0)
            end = env.clock() + run_s
            while env.clock() < end:
                c.poll(0.05)
            return Outcome("kip848_heartbeats", joined, env.clock() - start, None if joined else "TimeoutException",
                           None if joined else "never assigned")
        finally:
            c.close()


    def _kip848_late_poll(self, step: Operation, env: RunEnv) -> Outcome:
        """Join, stop polling for ``stall_ms`` (scaled), poll again: timed, getting the partitions back."""
        from confluent_kafka import Consumer

        group, topic, limit = step.args.get("group", "k848-late"), step.args.get("topic", "t"), step.timeout_s or 60.0
        c = Consumer(self._kip848_conf(env, group))
        try:
            c.subscribe([topic])
            _until(lambda: bool(c.assignment()), c, env, limit)
            time.sleep(step.args.get("stall_ms", 90_000) / env.scale / 1000)   # the application is busy
            start = env.clock()
            c.poll(0.02)   # librdkafka reports the poll interval exceeded here, then rejoins
            ok = _until(lambda: bool(c.assignment()), c, env, limit)
            return Outcome("kip848_late_poll", ok, env.clock() - start, None if ok else "TimeoutException",
                           None if ok else "never assigned again")
        finally:
            c.close()


    def _kip848_slow_revoke(self, step: Operation, env: RunEnv) -> Outcome:
        """A first member (its own process) whose on_revoke takes ``revoke_ms`` (scaled) owns the
        topic; the measured member joins. Timed: from its subscribe until it owns every partition
        — which happens when the broker fences the slow member at its rebalance timeout
        (max.poll.interval.ms), not when the callback ends."""
        group, topic, limit = step.args.get("group", "k848-slow"), step.args.get("topic", "t"), step.timeout_s or 60.0
        slow_s = step.args.get("revoke_ms", 120_000) / env.scale / 1000
        with self._beside_a_member_process(env, group, topic, slow_s) as (first, measured):
            total = _first_owns_all(first, limit)
            if total is None:
                return Outcome("kip848_slow_revoke", False, 0.0, "TimeoutException", "the first member never joined")
            measured.subscribe([topic])
            start = env.clock()
            ok = _until(lambda: len(measured.assignment()) == total, measured, env, limit)
            return Outcome("kip848_slow_revoke", ok, env.clock() - start, None if ok else "TimeoutException",
                           None if ok else "the slow member's partitions never moved")

    def _kip848_stale_commit(self, step: Operation, env: RunEnv) -> Outcome:
        """A member commits every ``every_ms`` (scaled) for ``run_ms`` while a second one joins (the
        scenario delays every heartbeat answer); the first refused commit is the outcome."""
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        group, topic, limit = step.args.get("group", "k848-stale"), step.args.get("topic", "t"), step.timeout_s or 60.0
        every = step.args.get("every_ms", 500) / env.scale / 1000
        a = Consumer(self._kip848_conf(env, group))
        b = Consumer(self._kip848_conf(env, group, SILENT_MEMBER))
        try:
            a.subscribe([topic])
            _until(lambda: bool(a.assignment()), a, env, limit)
            b.subscribe([topic])
            start, commits = env.clock(), 0
            run_s = min(limit, step.args.get("run_ms", 30_000) / env.scale / 1000)
            while env.clock() - start < run_s:
                end = env.clock() + every
                while env.clock() < end:
                    a.poll(0.02)
                    b.poll(0.0)
                owned = [TopicPartition(tp.topic, tp.partition, 0) for tp in a.assignment()]
                if not owned:
                    continue
                try:
                    a.commit(offsets=owned, asynchronous=False)
                    commits += 1
                except KafkaException as exc:
                    name = exc.args[0].name() if exc.args and hasattr(exc.args[0], "name") else type(exc).__name__
                    return Outcome("kip848_stale_commit", False, env.clock() - start, name, str(exc),
                                   value={"commits_before": commits})
            return Outcome("kip848_stale_commit", True, env.clock() - start, value={"commits_before": commits})
        finally:
            a.close()
            b.close()


def _first_owns_all(proc: subprocess.Popen, limit: float) -> int | None:
    """The partition count once the first member owns a non-empty assignment (it is alone)."""
    end = time.monotonic() + limit
    assert proc.stdout is not None
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            return None
        owned = json.loads(line)
        if owned:
            return len(owned)
    return None


def _until(done: Any, consumer: Any, env: RunEnv, limit: float) -> bool:
    end = env.clock() + limit
    while env.clock() < end:
        if done():
            return True
        consumer.poll(0.02)
    return bool(done())
