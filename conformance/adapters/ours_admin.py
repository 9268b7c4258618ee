"""Our admin client's steps for the conformance runner (client/admin.py): ``create_topics`` and
``delete_records`` with the step's deadline, over the emulator's in-memory connections."""

from __future__ import annotations

from typing import Any

import trio

from client.admin import NewTopic, open_admin
from client.errors import KafkaError, RequestTimedOutError, TimeoutException
from conformance.adapters.app_calls import timed_start
from conformance.adapters.base import RunEnv
from conformance.model import Operation, Outcome


def error_name(exc: BaseException) -> str:
    """Kafka's exception for REQUEST_TIMED_OUT is TimeoutException, as for a client's own deadline."""
    return "TimeoutException" if isinstance(exc, (RequestTimedOutError, TimeoutException)) else type(exc).__name__


class OursAdmin:
    def _admin_config(self, env: RunEnv) -> dict[str, Any]:
        from client.admin import ADMIN

        return {**{k: v for k, v in env.config.items() if k in ADMIN}, "bootstrap.servers": env.bootstrap,
                "client.id": env.client_id}

    async def _create_topics(self, step: Operation, env: RunEnv) -> Outcome:
        a = step.args
        async with open_admin(self._admin_config(env), self._connect(env)) as admin:  # type: ignore[attr-defined]
            start = timed_start(env, step)
            try:
                got = await admin.create_topics([NewTopic(a["topic"], a.get("partitions", 1), a.get("replication_factor", 1))],
                                                timeout=step.timeout_s)
            except KafkaError as exc:
                return Outcome("create_topics", False, trio.current_time() - start, error_name(exc), str(exc))
            error = got[a["topic"]]
            if error is not None:
                return Outcome("create_topics", False, trio.current_time() - start, error_name(error), str(error))
            return Outcome("create_topics", True, trio.current_time() - start)

    async def _delete_records(self, step: Operation, env: RunEnv) -> Outcome:
        a = step.args
        tp = (a["topic"], a["partition"])
        async with open_admin(self._admin_config(env), self._connect(env)) as admin:  # type: ignore[attr-defined]
            start = timed_start(env, step)
            try:
                got = (await admin.delete_records({tp: a.get("offset", -1)}, timeout=step.timeout_s))[tp]
            except KafkaError as exc:
                return Outcome("delete_records", False, trio.current_time() - start, error_name(exc), str(exc))
            if isinstance(got, KafkaError):
                return Outcome("delete_records", False, trio.current_time() - start, error_name(got), str(got))
            return Outcome("delete_records", True, trio.current_time() - start, value=got)
