"""Our share consumer (client/share/) in the share scenarios: the two faces the stories of
conformance/adapters/share_stories.py are told with.

- async face (``AsyncFace``): ``open_share_consumer`` over the emulator's in-memory connections,
  in virtual time, every time exact on the cluster clock;
- blocking face (``ThreadFace``): ``client.ShareConsumer`` over loopback TCP in real time, each
  blocking call made on a worker thread of a trio loop of the step's own (``trio.to_thread``),
  one call at a time, as an application thread would make them; durations scaled by the run.

The group's configs are set as the Java adapter sets them, through our admin client's
``incremental_alter_configs`` on the GROUP resource (``open_admin`` / ``client.Admin``), never
behind the broker's back."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator
from typing import Any

import trio

from client.admin import open_admin
from client.errors import KafkaError
from client.share.acknowledgements import AcknowledgeType, ShareRecord
from client.transport import Connect
from conformance.adapters.base import RunEnv
from conformance.adapters.ours_admin import admin_settings
from conformance.adapters.ours_common import error_name, real_time_backoffs
from conformance.adapters.share_stories import Member, share_args, tell
from conformance.model import Operation, Outcome

GROUP_RESOURCE, SET = 32, 0   # ConfigResource.Type.GROUP, AlterConfigOp.OpType.SET
# the share consumer's settings a scenario may give (it refuses the classic consumer's own), as ShareSteps.java's
PASSED = ("request.timeout.ms", "default.api.timeout.ms", "retry.backoff.ms", "retry.backoff.max.ms",
          "reconnect.backoff.ms", "reconnect.backoff.max.ms", "socket.connection.setup.timeout.ms",
          "socket.connection.setup.timeout.max.ms", "fetch.max.wait.ms")


def share_settings(env: RunEnv, group: str, suffix: str) -> dict[str, Any]:
    config = {k: v for k, v in env.config.items() if k in PASSED and v is not None}
    config.update({"bootstrap.servers": env.bootstrap, "group.id": group, "client.id": env.client_id + suffix,
                   "share.acknowledgement.mode": "explicit"})
    return config


def group_changes(group: str, config: dict[str, Any]) -> dict[tuple[int, str], list[tuple[str, int, str | None]]]:
    return {(GROUP_RESOURCE, group): [(k, SET, str(v)) for k, v in config.items()]}


def refused(results: dict[Any, KafkaError | None]) -> None:
    errors = {k: e for k, e in results.items() if e is not None}
    if errors:
        raise next(iter(errors.values()))


async def told(step: Operation, face: Any, timeout_s: float | None) -> Outcome:
    """The story's outcome: its value dict, or the error that broke it (a set-up the broker refused)."""
    start = trio.current_time()
    try:
        value = await tell(face, step, timeout_s)
    except (KafkaError, BaseExceptionGroup) as exc:
        error = _kafka_error(exc)
        if error is None:
            raise
        return Outcome(step.kind, False, trio.current_time() - start, error_name(error), str(error))
    return Outcome(step.kind, True, trio.current_time() - start, value=value)


def _kafka_error(exc: BaseException) -> KafkaError | None:
    """The client's error that ended a story, also when it came out through a consumer's nursery
    (an exception group of it alone); None for anything else, which is a bug to raise."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, KafkaError) else None


# -- the async face ------------------------------------------------------------------------------

class AsyncMember:
    def __init__(self, consumer: Any):
        self.c = consumer

    async def subscribe(self, topics: list[str]) -> None:
        self.c.subscribe(topics)

    async def poll(self, timeout_s: float) -> list[ShareRecord]:
        return await self.c.poll(timeout_s)

    async def acknowledge(self, record: ShareRecord, kind: AcknowledgeType) -> None:
        self.c.acknowledge(record, kind)

    async def commit_sync(self, timeout_s: float) -> dict[Any, KafkaError | None]:
        return await self.c.commit_sync(timeout_s)

    async def close(self, timeout_s: float) -> list[str]:
        return await self.c.aclose(timeout_s)

    async def lock_ms(self) -> int | None:
        return self.c.acquisition_lock_timeout_ms()


class AsyncFace:
    def __init__(self, env: RunEnv, connect: Connect):
        self.env, self.connect = env, connect

    async def configure_group(self, group: str, config: dict[str, Any]) -> None:
        if config:
            async with open_admin(admin_settings(self.env), self.connect) as admin:
                refused(await admin.incremental_alter_configs(group_changes(group, config)))

    @contextlib.asynccontextmanager
    async def member(self, group: str, suffix: str) -> AsyncIterator[Member]:
        from client.share.consumer import open_share_consumer

        async with open_share_consumer(share_settings(self.env, group, suffix), connect=self.connect) as c:
            yield AsyncMember(c)


# -- the blocking face ---------------------------------------------------------------------------

class ThreadMember:
    """``client.ShareConsumer``'s blocking calls, each on a worker thread (the application's)."""

    def __init__(self, consumer: Any):
        self.c = consumer

    async def _call(self, fn: Any, *args: Any) -> Any:
        return await trio.to_thread.run_sync(functools.partial(fn, *args))

    async def subscribe(self, topics: list[str]) -> None:
        await self._call(self.c.subscribe, topics)

    async def poll(self, timeout_s: float) -> list[ShareRecord]:
        return await self._call(self.c.poll, timeout_s)

    async def acknowledge(self, record: ShareRecord, kind: AcknowledgeType) -> None:
        await self._call(self.c.acknowledge, record, kind)

    async def commit_sync(self, timeout_s: float) -> dict[Any, KafkaError | None]:
        return await self._call(self.c.commit_sync, timeout_s)

    async def close(self, timeout_s: float) -> list[str]:
        await self._call(self.c.close, timeout_s)
        return list(self.c.close_report)

    async def lock_ms(self) -> int | None:
        return await self._call(self.c.acquisition_lock_timeout_ms)


class ThreadFace:
    def __init__(self, env: RunEnv, connect: Connect | None):
        self.env, self.connect = env, connect

    async def configure_group(self, group: str, config: dict[str, Any]) -> None:
        from client import Admin

        def alter() -> None:
            with Admin({**admin_settings(self.env), **real_time_backoffs(self.env)}, self.connect) as admin:
                refused(admin.incremental_alter_configs(group_changes(group, config)))

        if config:
            await trio.to_thread.run_sync(alter)

    @contextlib.asynccontextmanager
    async def member(self, group: str, suffix: str) -> AsyncIterator[Member]:
        from client import ShareConsumer

        config = {**share_settings(self.env, group, suffix), **real_time_backoffs(self.env)}
        c = await trio.to_thread.run_sync(functools.partial(ShareConsumer, config, connect=self.connect))
        try:
            yield ThreadMember(c)
        finally:
            await trio.to_thread.run_sync(c.close, 1.0)   # a no-op when the story closed it


def blocking_share_step(step: Operation, env: RunEnv, connect: Connect | None) -> Outcome:
    """The blocking face's share step, from the adapter's (non-trio) thread: the step's durations
    scaled, the story told on a real-time trio loop of its own."""
    return trio.run(told, share_args(step, env.scale), ThreadFace(env, connect), step.timeout_s)
