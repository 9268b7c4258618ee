"""Our admin client's steps for the conformance runner (client/admin.py): ``create_topics`` and
``delete_records`` with the step's deadline — on the async face (``open_admin``, virtual time over
the emulator's in-memory connections) and on the blocking face (``client.Admin``, real time over
loopback TCP). What a call's answer means is decided once, for both (``_created``, ``_deleted``)."""

from __future__ import annotations

from typing import Any

import trio

from client.admin import ADMIN, BROKER_MARGIN_S, NewTopic, open_admin
from client.errors import KafkaError, RequestTimedOutError, TimeoutException
from conformance.adapters.app_calls import timed_start
from conformance.adapters.base import RunEnv
from conformance.adapters.ours_common import real_time_backoffs
from conformance.model import Operation, Outcome

LOOPBACK_MARGIN_S = 0.02   # the contracts allow a real-time call to return 30 ms early


def error_name(exc: BaseException) -> str:
    """Kafka's exception for REQUEST_TIMED_OUT is TimeoutException, as for a client's own deadline."""
    return "TimeoutException" if isinstance(exc, (RequestTimedOutError, TimeoutException)) else type(exc).__name__


def admin_settings(env: RunEnv) -> dict[str, Any]:
    return {**{k: v for k, v in env.config.items() if k in ADMIN}, "bootstrap.servers": env.bootstrap,
            "client.id": env.client_id}


def _new_topic(step: Operation) -> NewTopic:
    a = step.args
    return NewTopic(a["topic"], a.get("partitions", 1), a.get("replication_factor", 1))


def _partition(step: Operation) -> tuple[str, int]:
    return step.args["topic"], step.args["partition"]


def _created(step: Operation, got: dict[str, Any] | KafkaError, elapsed: float) -> Outcome:
    """create_topics' outcome: the call's error, else the topic's own."""
    error = got if isinstance(got, KafkaError) else got[step.args["topic"]]
    if error is not None:
        return Outcome("create_topics", False, elapsed, error_name(error), str(error))
    return Outcome("create_topics", True, elapsed)


def _deleted(step: Operation, got: dict[Any, Any] | KafkaError, elapsed: float) -> Outcome:
    """delete_records' outcome: the call's error, else the partition's (an error, or its new low watermark)."""
    result = got if isinstance(got, KafkaError) else got[_partition(step)]
    if isinstance(result, KafkaError):
        return Outcome("delete_records", False, elapsed, error_name(result), str(result))
    return Outcome("delete_records", True, elapsed, value=result)


class OursAdmin:
    """Mixed into OurAdapter (which provides _connect)."""

    async def _create_topics(self, step: Operation, env: RunEnv) -> Outcome:
        async with open_admin(admin_settings(env), self._connect(env)) as admin:  # type: ignore[attr-defined]
            start = timed_start(env, step)
            try:
                got: dict[str, Any] | KafkaError = await admin.create_topics([_new_topic(step)], timeout=step.timeout_s)
            except KafkaError as exc:
                got = exc
            return _created(step, got, trio.current_time() - start)

    async def _delete_records(self, step: Operation, env: RunEnv) -> Outcome:
        async with open_admin(admin_settings(env), self._connect(env)) as admin:  # type: ignore[attr-defined]
            start = timed_start(env, step)
            try:
                got: dict[Any, Any] | KafkaError = await admin.delete_records({_partition(step): step.args.get("offset", -1)},
                                                                              timeout=step.timeout_s)
            except KafkaError as exc:
                got = exc
            return _deleted(step, got, trio.current_time() - start)


class OursBlockingAdmin:
    """Mixed into OurBlockingAdapter: ``client.Admin``, each call blocking until its outcome, by
    the step's (scaled) deadline."""

    def _blocking_admin(self, env: RunEnv) -> Any:
        """A ``client.Admin`` whose time constants are scaled with the run's: the backoffs, and the
        margin by which a write's timeout_ms ends before the call (100 ms at full length) — but no
        less than the broker's answer needs to come back over loopback between three threads (the
        cluster's, the network thread, the application thread), or the call's own deadline wins
        the race the margin is there to avoid."""
        from client import Admin

        margin = max(BROKER_MARGIN_S / env.scale, LOOPBACK_MARGIN_S)
        return Admin({**admin_settings(env), **real_time_backoffs(env)}, self._connect(env),  # type: ignore[attr-defined]
                     broker_margin_s=margin)

    def _create_topics(self, step: Operation, env: RunEnv) -> Outcome:
        with self._blocking_admin(env) as admin:
            start = env.clock()
            try:
                got: dict[str, Any] | KafkaError = admin.create_topics([_new_topic(step)], timeout=step.timeout_s)
            except KafkaError as exc:
                got = exc
            return _created(step, got, env.clock() - start)

    def _delete_records(self, step: Operation, env: RunEnv) -> Outcome:
        with self._blocking_admin(env) as admin:
            start = env.clock()
            try:
                got: dict[Any, Any] | KafkaError = admin.delete_records({_partition(step): step.args.get("offset", -1)},
                                                                        timeout=step.timeout_s)
            except KafkaError as exc:
                got = exc
            return _deleted(step, got, env.clock() - start)
