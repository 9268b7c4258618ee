"""confluent-kafka (librdkafka). librdkafka's client-side request timeout is socket.timeout.ms
(60 s by default, twice request.timeout.ms, which only becomes the Produce's timeout_ms); we keep
that ratio when scaling, so what the suite measures is the client's real behaviour."""

from __future__ import annotations

import importlib.util
from typing import Any

from conformance.adapters.base import RealTimeAdapter, RunEnv, list_rounds, scaled_ms
from conformance.model import Operation, Outcome

TIMEOUT_CODES = {"_MSG_TIMED_OUT", "_TIMED_OUT", "REQUEST_TIMED_OUT", "_TIMED_OUT_QUEUE"}


def _error_type(err) -> str:
    return "TimeoutException" if err.name() in TIMEOUT_CODES else err.name()


class ConfluentAdapter(RealTimeAdapter):
    name = "confluent-kafka"
    operations = frozenset({"produce", "poll", "committed", "admin_list_topics"})

    def available(self):
        ok = importlib.util.find_spec("confluent_kafka") is not None
        return ok, "" if ok else "confluent-kafka is not installed"

    def supports(self, steps):
        if any(s.kind == "committed" and s.timeout_s is None for s in steps):
            return False, "librdkafka has no default.api.timeout.ms: committed() without a timeout blocks indefinitely"
        return super().supports(steps)

    def _common(self, env: RunEnv) -> dict:
        c = env.config
        return {"bootstrap.servers": env.bootstrap, "client.id": env.client_id,
                "socket.timeout.ms": scaled_ms(60_000, env.scale), "log_level": 0,
                "request.timeout.ms": c.get("request.timeout.ms", scaled_ms(30_000, env.scale))}

    def run_blocking(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        return [getattr(self, f"_{s.kind}")(s, env) for s in steps]

    def _produce(self, step: Operation, env: RunEnv) -> Outcome:
        from confluent_kafka import Producer

        c = env.config
        conf = {**self._common(env), "acks": str(c.get("acks", "all")),
                "message.timeout.ms": c.get("delivery.timeout.ms", scaled_ms(120_000, env.scale)),
                "enable.idempotence": bool(c.get("enable.idempotence", c.get("acks", "all") in ("all", "-1"))),
                "retry.backoff.ms": scaled_ms(100, env.scale), "linger.ms": 0}
        if "max.block.ms" in c:
            conf["message.timeout.ms"] = min(conf["message.timeout.ms"], c["max.block.ms"])  # librdkafka has no max.block.ms
        if "retries" in c:
            conf["retries"] = c["retries"]
            if c["retries"] == 0:
                conf["enable.idempotence"] = False  # librdkafka refuses idempotence without retries
        p = Producer(conf)
        if step.args.get("warm_up", True):
            p.list_topics(step.args["topic"], timeout=10)  # warm up: time the send, not the bootstrap
        result: dict[str, Any] = {}
        start = env.clock()
        for _ in range(step.args.get("count", 1)):
            result.clear()
            p.produce(step.args["topic"], step.args["value"], partition=step.args.get("partition", -1),
                      on_delivery=lambda err, msg: result.update(err=err, t=env.clock(), offset=msg.offset()))
            p.flush(conf["message.timeout.ms"] / 1000 * 3 + 10)
            if result.get("err") is not None:
                break
        if "t" not in result:
            return Outcome("produce", False, env.clock() - start, "NoDeliveryReport", "flush ended without a delivery report")
        err = result["err"]
        if err is None:
            return Outcome("produce", True, result["t"] - start, value=result["offset"])
        return Outcome("produce", False, result["t"] - start, _error_type(err), err.str())

    def _admin_list_topics(self, step: Operation, env: RunEnv) -> Outcome:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(self._common(env))
        timeout = step.timeout_s if step.timeout_s is not None else scaled_ms(30_000, env.scale) / 1000

        def error_type(exc: BaseException) -> str:
            return _error_type(exc.args[0]) if isinstance(exc, KafkaException) and exc.args else type(exc).__name__

        return list_rounds(step, env, lambda: list(admin.list_topics(timeout=timeout).topics), error_type)

    def _consumer(self, env: RunEnv, group: str):
        from confluent_kafka import Consumer

        c = env.config
        # librdkafka's own backoffs are scaled like every other time, or its 500 ms fetch error
        # backoff alone would be half a scaled request timeout
        return Consumer({**self._common(env), "group.id": group, "enable.auto.commit": False,
                         "fetch.wait.max.ms": c.get("fetch.max.wait.ms", 500),
                         "fetch.error.backoff.ms": scaled_ms(500, env.scale),
                         "reconnect.backoff.ms": scaled_ms(100, env.scale),
                         "reconnect.backoff.max.ms": scaled_ms(10_000, env.scale)})

    def _poll(self, step: Operation, env: RunEnv) -> Outcome:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        consumer = self._consumer(env, "conformance-poll")
        try:
            consumer.assign([TopicPartition(step.args["topic"], step.args["partition"], OFFSET_BEGINNING)])
            start = env.clock()
            msg = consumer.poll(step.timeout_s)
            elapsed = env.clock() - start
            if msg is not None and msg.error() is not None:
                return Outcome("poll", False, elapsed, _error_type(msg.error()), msg.error().str())
            return Outcome("poll", True, elapsed, value=None if msg is None else msg.value())
        finally:
            consumer.close()

    def _committed(self, step: Operation, env: RunEnv) -> Outcome:
        from confluent_kafka import KafkaException, TopicPartition

        consumer = self._consumer(env, step.args["group"])
        try:
            start = env.clock()
            try:
                got = consumer.committed([TopicPartition(step.args["topic"], step.args["partition"])], timeout=step.timeout_s)
                return Outcome("committed", True, env.clock() - start, value=got[0].offset)
            except KafkaException as exc:
                err = exc.args[0]
                return Outcome("committed", False, env.clock() - start, _error_type(err), err.str())
        finally:
            consumer.close()
