"""broker-emu's own client, in virtual time over the emulator's in-memory connections."""

from __future__ import annotations

import trio

from client.config import PRODUCER
from client.errors import KafkaError
from client.producer import open_producer
from conformance.adapters.base import Adapter, RealTimeAdapter, RunEnv, scaled_ms
from conformance.model import Operation, Outcome


class OurAdapter(Adapter):
    name = "broker-emu (async)"
    virtual_time = True
    operations = frozenset({"produce", "poll", "committed"})

    def _connect(self, env: RunEnv):
        async def connect(node, host, port):
            return env.cluster.connect(node if node >= 0 else 0)
        return connect

    async def run(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        outcomes = []
        for s in steps:
            env.cluster.trace.emit("app_call", client_id=env.client_id, details={"op": s.kind, "phase": "start"})
            outcome = await getattr(self, f"_{s.kind}")(s, env)
            env.cluster.trace.emit("app_call", client_id=env.client_id, details={
                "op": s.kind, "phase": "end", "ok": outcome.ok, "error": outcome.error_type, "message": outcome.error_message})
            outcomes.append(outcome)
        return outcomes

    def _consumer_config(self, env: RunEnv, group: str | None) -> dict:
        from client.config import CONSUMER

        config = {k: v for k, v in env.config.items() if k in CONSUMER}
        config.update({"bootstrap.servers": env.bootstrap, "client.id": env.client_id, "group.id": group,
                       "auto.offset.reset": "earliest"})
        return config

    async def _poll(self, step: Operation, env: RunEnv) -> Outcome:
        from client.consumer import TopicPartition, open_consumer

        async with open_consumer(self._consumer_config(env, None), connect=self._connect(env)) as consumer:
            consumer.assign([TopicPartition(step.args["topic"], step.args["partition"])])
            start = trio.current_time()
            records = await consumer.poll(step.timeout_s or 0.0)
            return Outcome("poll", True, trio.current_time() - start, value=len(records))

    async def _committed(self, step: Operation, env: RunEnv) -> Outcome:
        from client.consumer import TopicPartition, open_consumer

        async with open_consumer(self._consumer_config(env, step.args["group"]), connect=self._connect(env)) as consumer:
            start = trio.current_time()
            try:
                got = await consumer.committed([TopicPartition(step.args["topic"], step.args["partition"])], timeout=step.timeout_s)
                return Outcome("committed", True, trio.current_time() - start, value=got)
            except KafkaError as exc:
                name = "TimeoutException" if "Timeout" in type(exc).__name__ else type(exc).__name__
                return Outcome("committed", False, trio.current_time() - start, name, str(exc))

    async def _produce(self, step: Operation, env: RunEnv) -> Outcome:
        config = {k: v for k, v in env.config.items() if k in PRODUCER}
        config.update({"bootstrap.servers": env.bootstrap, "client.id": env.client_id})
        async with open_producer(config, connect=self._connect(env)) as producer:
            if step.args.get("warm_up", True):
                await producer.refresh_metadata([step.args["topic"]])
            start = trio.current_time()
            try:
                meta = None
                for _ in range(step.args.get("count", 1)):
                    future = await producer.send(step.args["topic"], step.args["value"], partition=step.args.get("partition"))
                    meta = await future.get()
                return Outcome("produce", True, trio.current_time() - start, value=meta.offset if meta else None)
            except KafkaError as exc:
                name = "TimeoutException" if "Timeout" in type(exc).__name__ else type(exc).__name__
                return Outcome("produce", False, trio.current_time() - start, name, str(exc))


class OurBlockingAdapter(RealTimeAdapter):
    """The blocking face (``client.Producer``: application thread + trio network thread), over
    real loopback TCP in real time with scaled timeouts, like any third-party client."""

    name = "broker-emu (blocking)"
    operations = frozenset({"produce"})

    def run_blocking(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        return [self._produce(s, env) for s in steps]

    def _produce(self, step: Operation, env: RunEnv) -> Outcome:
        from client import Producer

        config = {k: v for k, v in env.config.items() if k in PRODUCER}
        config.update({"bootstrap.servers": env.bootstrap, "client.id": env.client_id,
                       "retry.backoff.ms": scaled_ms(100, env.scale), "reconnect.backoff.ms": scaled_ms(50, env.scale)})
        with Producer(config) as producer:
            start = env.clock()
            try:
                meta = None
                for _ in range(step.args.get("count", 1)):
                    meta = producer.send(step.args["topic"], step.args["value"], partition=step.args.get("partition")).result()
                return Outcome("produce", True, env.clock() - start, value=meta.offset if meta else None)
            except KafkaError as exc:
                name = "TimeoutException" if "Timeout" in type(exc).__name__ else type(exc).__name__
                return Outcome("produce", False, env.clock() - start, name, str(exc))
