"""aiokafka (asyncio). Its request timeout is request_timeout_ms (per request, asyncio
wait_for; the connection is closed on expiry). It has no delivery.timeout.ms: a non-idempotent
batch expires request_timeout_ms after it was created, an idempotent one is retried without
limit (aiokafka/producer/sender.py ``_can_retry``), and no default.api.timeout.ms."""

from __future__ import annotations

import asyncio
import importlib.util

from conformance.adapters.base import RealTimeAdapter, RunEnv, scaled_ms
from conformance.model import Operation, Outcome


def _error_type(exc: BaseException) -> str:
    name = type(exc).__name__
    return "TimeoutException" if "Timeout" in name or "TimedOut" in name else name


class AiokafkaAdapter(RealTimeAdapter):
    name = "aiokafka"
    operations = frozenset({"produce", "poll", "committed", "admin_list_topics"})

    def available(self):
        ok = importlib.util.find_spec("aiokafka") is not None
        return ok, "" if ok else "aiokafka is not installed"

    def supports(self, steps):
        if any(s.kind == "committed" and s.timeout_s is None for s in steps):
            return False, "aiokafka has no default.api.timeout.ms"
        return super().supports(steps)

    def run_blocking(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        async def main():
            return [await getattr(self, f"_{s.kind}")(s, env) for s in steps]
        return asyncio.run(main())

    def _common(self, env: RunEnv) -> dict:
        return {"bootstrap_servers": env.bootstrap, "client_id": env.client_id,
                "request_timeout_ms": env.config.get("request.timeout.ms", scaled_ms(40_000, env.scale)),
                "retry_backoff_ms": scaled_ms(100, env.scale)}

    async def _admin_list_topics(self, step: Operation, env: RunEnv) -> Outcome:
        """AIOKafkaAdminClient.list_topics() (request_timeout_ms bounds each call)."""
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(**self._common(env))
        rounds = int(step.args.get("repeat", 1))
        await admin.start()
        try:
            start, topics = env.clock(), []
            for i in range(rounds):
                if i:
                    await asyncio.sleep(step.args.get("pause_s", 0.0) / env.scale)
                start = env.clock()
                try:
                    topics = sorted(await admin.list_topics())
                except Exception as exc:  # the client's own error: an outcome
                    return Outcome("admin_list_topics", False, env.clock() - start, _error_type(exc),
                                   f"call {i + 1} of {rounds}: {exc}")
            return Outcome("admin_list_topics", True, env.clock() - start, value=topics)
        finally:
            await admin.close()

    async def _produce(self, step: Operation, env: RunEnv) -> Outcome:
        from aiokafka import AIOKafkaProducer

        c = env.config
        acks = c.get("acks", "all")
        p = AIOKafkaProducer(**self._common(env), acks="all" if acks in ("all", "-1", -1) else int(acks),
                             enable_idempotence=bool(c.get("enable.idempotence", False)), linger_ms=0)
        start = env.clock()
        try:
            await asyncio.wait_for(p.start(), 30)
            if step.args.get("warm_up", True):
                await p.partitions_for(step.args["topic"])
            start = env.clock()
            md = None
            for _ in range(step.args.get("count", 1)):
                md = await p.send_and_wait(step.args["topic"], step.args["value"], partition=step.args.get("partition"))
            return Outcome("produce", True, env.clock() - start, value=md.offset if md else None)
        except Exception as exc:
            return Outcome("produce", False, env.clock() - start, _error_type(exc), str(exc))
        finally:
            await p.stop()

    async def _poll(self, step: Operation, env: RunEnv) -> Outcome:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(**self._common(env), enable_auto_commit=False,
                                    fetch_max_wait_ms=env.config.get("fetch.max.wait.ms", 500))
        await consumer.start()
        try:
            tp = TopicPartition(step.args["topic"], step.args["partition"])
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            start = env.clock()
            # no timeout given: aiokafka's own default (timeout_ms=0, what is already fetched)
            got = await (consumer.getmany() if step.timeout_s is None else consumer.getmany(timeout_ms=int(step.timeout_s * 1000)))
            return Outcome("poll", True, env.clock() - start, value=sum(len(v) for v in got.values()))
        finally:
            await consumer.stop()

    async def _committed(self, step: Operation, env: RunEnv) -> Outcome:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(**self._common(env), group_id=step.args["group"], enable_auto_commit=False)
        await consumer.start()
        start = env.clock()
        try:
            got = await asyncio.wait_for(consumer.committed(TopicPartition(step.args["topic"], step.args["partition"])),
                                         step.timeout_s)
            return Outcome("committed", True, env.clock() - start, value=got)
        except (asyncio.TimeoutError, Exception) as exc:
            return Outcome("committed", False, env.clock() - start, _error_type(exc), str(exc) or type(exc).__name__)
        finally:
            await consumer.stop()
