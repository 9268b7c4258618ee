"""confluent-kafka's ShareConsumer (librdkafka 2.16's KIP-932 preview) in the share scenarios: a
third face for the stories of conformance/adapters/share_stories.py, beside our two.

Each of ``confluent_kafka.ShareConsumer``'s blocking calls runs on a worker thread of the step's
own real-time trio loop (``trio.to_thread``), one call at a time, as an application thread makes
them; the records it returns are read into ``ShareRecord``s (``Message.delivery_count``; librdkafka
does not expose the acquisition lock's duration) and acknowledged through the ``Message`` they came
from. Its errors are raised as our client's ``KafkaError`` under the Java client's name (the
confluent adapter's ``_exc_type``), since the stories read them by that name.

What librdkafka 2.16's share consumer lacks, the scenario's N/A says (the adapter's declaration):
``AcknowledgeType`` has ACCEPT, RELEASE and REJECT, no RENEW (KIP-1222); ``close()`` takes no
timeout, so a close story gives it the step's deadline as an application would, waiting for it on
its thread and abandoning it there. The group's configs are set with our admin client, as the other
faces do (``ThreadFace.configure_group``)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator
from typing import Any

import trio

from client.errors import KafkaError
from client.share.acknowledgements import AcknowledgeType, ShareRecord
from conformance.adapters.base import RunEnv, scaled_ms
from conformance.adapters.ours_share import ThreadFace, told
from conformance.adapters.share_stories import Member, share_args
from conformance.model import Operation, Outcome

_NAMED: dict[str, type[KafkaError]] = {}


def as_kafka_error(exc: BaseException, name: str) -> KafkaError:
    """``exc`` as a KafkaError whose class name is ``name`` (the stories name errors by class)."""
    cls = _NAMED.setdefault(name, type(name, (KafkaError,), {"name": name}))
    return cls(f"{type(exc).__name__}: {exc}")


class ConfluentMember:
    def __init__(self, consumer: Any, exc_type: Any):
        self.c, self._exc_type = consumer, exc_type
        self._messages: dict[tuple[str, int, int], Any] = {}

    async def _call(self, fn: Any, *args: Any, abandon_after_s: float | None = None) -> Any:
        def call() -> Any:
            try:
                return fn(*args)
            except Exception as exc:   # noqa: BLE001 - librdkafka's errors, named as Java names them
                raise as_kafka_error(exc, self._exc_type(exc)) from exc

        if abandon_after_s is None:
            return await trio.to_thread.run_sync(call)
        with trio.move_on_after(abandon_after_s):
            return await trio.to_thread.run_sync(call, abandon_on_cancel=True)
        raise as_kafka_error(TimeoutError(f"still blocked at the step's deadline ({abandon_after_s:.3f} s)"),
                             "TimeoutException")

    async def subscribe(self, topics: list[str]) -> None:
        await self._call(self.c.subscribe, topics)

    async def poll(self, timeout_s: float) -> list[ShareRecord]:
        got = []
        for m in await self._call(self.c.poll, timeout_s) or []:
            if m.error() is not None:
                raise as_kafka_error(Exception(str(m.error())), self._exc_type(m.error()))
            self._messages[(m.topic(), m.partition(), m.offset())] = m
            got.append(ShareRecord(m.topic(), m.partition(), m.offset(), m.timestamp()[1], m.key(), m.value(),
                                   tuple(m.headers() or ()), m.delivery_count() or 1))
        return got

    async def acknowledge(self, record: ShareRecord, kind: AcknowledgeType) -> None:
        from confluent_kafka import AcknowledgeType as Ack

        message = self._messages[(record.topic, record.partition, record.offset)]
        await self._call(self.c.acknowledge, message, getattr(Ack, kind.name))

    async def commit_sync(self, timeout_s: float) -> dict[Any, KafkaError | None]:
        results = await self._call(self.c.commit_sync, timeout_s)
        return {tp: None if err is None else as_kafka_error(err, self._exc_type(err))
                for tp, err in (results or {}).items()}

    async def close(self, timeout_s: float) -> list[str]:
        await self._call(self.c.close, abandon_after_s=timeout_s)
        return []

    async def lock_ms(self) -> int | None:
        return None   # librdkafka does not expose AcquisitionLockTimeoutMs


class ConfluentFace(ThreadFace):
    """Our admin client for the group's configs (``ThreadFace``), confluent-kafka's share consumer
    for the members."""

    def __init__(self, env: RunEnv, settings: dict[str, Any], exc_type: Any):
        super().__init__(env, None)
        self.settings, self.exc_type = settings, exc_type

    @contextlib.asynccontextmanager
    async def member(self, group: str, suffix: str) -> AsyncIterator[Member]:
        from confluent_kafka import ShareConsumer

        config = {**self.settings, "group.id": group, "client.id": self.env.client_id + suffix,
                  "share.acknowledgement.mode": "explicit"}
        c = await trio.to_thread.run_sync(functools.partial(ShareConsumer, config))
        member = ConfluentMember(c, self.exc_type)
        try:
            yield member
        finally:
            with contextlib.suppress(Exception):   # a no-op when the story closed it; one that blocks is left
                with trio.move_on_after(5.0):
                    await trio.to_thread.run_sync(c.close, abandon_on_cancel=True)


def confluent_share_step(step: Operation, env: RunEnv, settings: dict[str, Any], exc_type: Any) -> Outcome:
    """The step's durations scaled, its story told on a real-time trio loop of its own."""
    settings = {**settings, "socket.timeout.ms": scaled_ms(60_000, env.scale)}
    return trio.run(told, share_args(step, env.scale), ConfluentFace(env, settings, exc_type), step.timeout_s)
