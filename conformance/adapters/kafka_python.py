"""kafka-python 3.x. Its client-side request timeout is request_timeout_ms, the same value it
puts in the Produce's timeout_ms; it closes the connection when it fires."""

from __future__ import annotations

import importlib.util

from conformance.adapters.base import RealTimeAdapter, RunEnv, list_rounds, scaled_ms
from conformance.model import Operation, Outcome


def _error_type(exc: BaseException) -> str:
    name = type(exc).__name__
    return "TimeoutException" if "Timeout" in name or "TimedOut" in name else name


class KafkaPythonAdapter(RealTimeAdapter):
    name = "kafka-python"
    operations = frozenset({"produce", "poll", "committed", "admin_list_topics"})

    def available(self):
        ok = importlib.util.find_spec("kafka") is not None
        return ok, "" if ok else "kafka-python is not installed"

    def supports(self, steps):
        if any(s.kind == "committed" and s.timeout_s is None for s in steps):
            return False, "kafka-python has no default.api.timeout.ms: committed() without a timeout may block forever"
        return super().supports(steps)

    def run_blocking(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        return [getattr(self, f"_{s.kind}")(s, env) for s in steps]

    def _common(self, env: RunEnv) -> dict:
        c = env.config
        return {"bootstrap_servers": env.bootstrap.split(","), "client_id": env.client_id,
                "request_timeout_ms": c.get("request.timeout.ms", scaled_ms(30_000, env.scale)),
                "retry_backoff_ms": scaled_ms(100, env.scale), "reconnect_backoff_ms": scaled_ms(50, env.scale)}

    def _admin_list_topics(self, step: Operation, env: RunEnv) -> Outcome:
        """KafkaAdminClient.list_topics() (no per-call timeout: request_timeout_ms bounds it)."""
        from kafka.admin import KafkaAdminClient

        admin = KafkaAdminClient(**self._common(env))
        try:
            return list_rounds(step, env, admin.list_topics, _error_type)
        finally:
            admin.close()

    def _produce(self, step: Operation, env: RunEnv) -> Outcome:
        from kafka import KafkaProducer

        c = env.config
        acks = c.get("acks", "all")
        p = KafkaProducer(**self._common(env), acks=-1 if acks in ("all", "-1", -1) else int(acks),
                          delivery_timeout_ms=c.get("delivery.timeout.ms", scaled_ms(120_000, env.scale)),
                          retries=c.get("retries", 2147483647), linger_ms=0,
                          max_block_ms=c.get("max.block.ms", scaled_ms(60_000, env.scale)),
                          enable_idempotence=bool(c.get("enable.idempotence", False)))
        try:
            if step.args.get("warm_up", True):
                p.partitions_for(step.args["topic"])  # warm up: time the send, not the bootstrap
            start = env.clock()
            try:
                for _ in range(step.args.get("count", 1)):
                    future = p.send(step.args["topic"], step.args["value"], partition=step.args.get("partition"))
                    md = future.get(timeout=c.get("delivery.timeout.ms", 120_000) / 1000 * 3 + 10)
                return Outcome("produce", True, env.clock() - start, value=md.offset)
            except Exception as exc:
                return Outcome("produce", False, env.clock() - start, _error_type(exc), str(exc))
        finally:
            p.close(timeout=1)

    def _consumer(self, env: RunEnv, group: str | None):
        from kafka import KafkaConsumer

        return KafkaConsumer(**self._common(env), group_id=group, enable_auto_commit=False,
                             fetch_max_wait_ms=env.config.get("fetch.max.wait.ms", 500))

    def _poll(self, step: Operation, env: RunEnv) -> Outcome:
        from kafka import TopicPartition

        consumer = self._consumer(env, None)
        start = env.clock()
        try:
            tp = TopicPartition(step.args["topic"], step.args["partition"])
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            start = env.clock()
            # no timeout given: kafka-python's own default (timeout_ms=0, what is already buffered)
            got = consumer.poll() if step.timeout_s is None else consumer.poll(timeout_ms=int(step.timeout_s * 1000))
            return Outcome("poll", True, env.clock() - start, value=sum(len(v) for v in got.values()))
        except Exception as exc:
            return Outcome("poll", False, env.clock() - start, _error_type(exc), str(exc))
        finally:
            consumer.close()

    def _committed(self, step: Operation, env: RunEnv) -> Outcome:
        from kafka import TopicPartition

        consumer = self._consumer(env, step.args["group"])
        try:
            start = env.clock()
            try:
                timeout_ms = None if step.timeout_s is None else int(step.timeout_s * 1000)
                got = consumer.committed(TopicPartition(step.args["topic"], step.args["partition"]), timeout_ms=timeout_ms)
                return Outcome("committed", True, env.clock() - start, value=got)
            except Exception as exc:
                return Outcome("committed", False, env.clock() - start, _error_type(exc), str(exc))
        finally:
            consumer.close(autocommit=False)
