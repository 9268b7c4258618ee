"""kafka-python 3.x. Its client-side request timeout is request_timeout_ms, the same value it
puts in the Produce's timeout_ms; it closes the connection when it fires.

The consumer operations, by kafka-python's own names. ``Operation.timeout_s`` goes to the call's
``timeout_ms`` where it has one. kafka-python has no default.api.timeout.ms: given no timeout_ms,
end_offsets, beginning_offsets, offsets_for_times, commit and close fall back to
request_timeout_ms (kafka/consumer/group.py); committed and position have no bound at all
(Timer(None)).

    committed          KafkaConsumer.committed(tp, timeout_ms=)
    position           KafkaConsumer.position(tp, timeout_ms=) (returns None when its time is
                       up without a position: it raises no timeout)
    end_offsets,
    beginning_offsets  KafkaConsumer.end_offsets / beginning_offsets([tp], timeout_ms=)
    offsets_for_times  KafkaConsumer.offsets_for_times({tp: ts}, timeout_ms=)
    list_topics        KafkaConsumer.topics(): no deadline; it waits for a Metadata answer with
                       no timeout of its own, each request bounded by request_timeout_ms
    partitions_for     KafkaConsumer.partitions_for_topic(topic): no deadline, as topics()
    commit_sync        KafkaConsumer.commit({tp: OffsetAndMetadata}, timeout_ms=)
    close              KafkaConsumer.close(autocommit=False, timeout_ms=)

A call that has not returned long after its deadline is reported as NoReturn (py_common)."""

from __future__ import annotations

import importlib.util
import threading
import time
from dataclasses import replace
from types import MappingProxyType

from conformance.adapters import admin_steps, py_txn
from conformance.adapters.admin_steps import ADMIN_OPERATIONS
from conformance.adapters.base import RealTimeAdapter, RunEnv, list_rounds, scaled_ms
from conformance.adapters.py_common import (
    NO_SETUP_TIMEOUT,
    SETUP_TIMEOUT_JUDGED,
    lacks_growing_setup_timeout,
    not_created,
    offsets_value,
    python_sasl,
    short,
    supports_here,
    timed_blocking,
    topics_value,
    warm_step,
    warm_up_failed,
)
from conformance.client_capabilities import ClientCapabilities, Lack, Pin, lacks_rebootstrap
from conformance.extras import client_missing
from conformance.model import SILENT_MEMBER, Operation, Outcome, Scenario


def _error_type(exc: BaseException) -> str:
    name = type(exc).__name__
    return "TimeoutException" if "Timeout" in name or "TimedOut" in name else name


def _timeout_ms(step: Operation) -> int | None:
    return None if step.timeout_s is None else int(step.timeout_s * 1000)


NO_DEADLINE = "kafka-python has no default.api.timeout.ms"

CONSUMER_PY, PRODUCER_PY = "kafka/consumer/group.py", "kafka/producer/kafka.py"
CAPABILITIES = ClientCapabilities(
    client="kafka-python", pin=Pin("pyproject.toml", "kafka-python"),
    source="https://github.com/dpkp/kafka-python/blob/{version}/{path}",
    has=("delivery.timeout.ms", "max.block.ms", "linger.ms", "calls on one client", "transactions",
         "poll(timeout)", "poll(0)", "consumer calls", "committed(timeout)",
         "position(timeout)", "offsets(timeout)", "commit_sync(timeout)", "close(timeout)", "max.poll.interval.ms",
         "create_topics(timeout)", "delete_records(timeout)", "SASL"),
    lacks=MappingProxyType({
        "list_topics(timeout)": Lack(
            f"KafkaConsumer.topics() and partitions_for_topic(topic) take no timeout ({CONSUMER_PY}): each waits for "
            "a Metadata answer, every request bounded by request_timeout_ms", CONSUMER_PY,
            judged="topics() / partitions_for_topic() without the step's deadline; the adapter's watchdog reports a "
                   "call still blocked long after it as NoReturn"),
        "default.api.timeout.ms": Lack(
            f"{NO_DEADLINE} (KafkaConsumer.DEFAULT_CONFIG, {CONSUMER_PY}): given no timeout_ms, end_offsets, "
            "beginning_offsets, offsets_for_times, commit and close fall back to request_timeout_ms; committed and "
            "position have no bound", CONSUMER_PY,
            judged="the call without a deadline, bounded as kafka-python bounds it"),
        "KIP-848": Lack(
            f"kafka-python has no group.protocol setting (KafkaConsumer.DEFAULT_CONFIG, {CONSUMER_PY}): its consumer "
            "joins with JoinGroup/SyncGroup (kafka/coordinator/base.py BaseCoordinator._do_join_and_sync_async)",
            "kafka/coordinator/base.py"),
        "socket.connection.setup.timeout.ms": Lack(
            f"{NO_SETUP_TIMEOUT['kafka-python']}; neither KafkaProducer.DEFAULT_CONFIG ({PRODUCER_PY}) nor "
            "KafkaConsumer.DEFAULT_CONFIG has such a setting", PRODUCER_PY, judged=SETUP_TIMEOUT_JUDGED),
        **lacks_rebootstrap(
            f"kafka-python has no metadata_recovery_strategy: neither KafkaProducer.DEFAULT_CONFIG ({PRODUCER_PY}) "
            "nor KafkaConsumer.DEFAULT_CONFIG has it or a rebootstrap trigger, and nothing in the client handles "
            "REBOOTSTRAP_REQUIRED: it keeps asking the brokers it learnt of", PRODUCER_PY),
        "share groups": Lack("kafka-python has no share consumer: KafkaConsumer only (kafka/consumer/group.py); ShareFetch and "
                             "ShareGroupHeartbeat appear only as API key names (kafka/protocol/api_key.py)", "kafka/protocol/api_key.py"),
        "socket.connection.setup.timeout.max.ms": Lack(NO_SETUP_TIMEOUT["kafka-python"], PRODUCER_PY),
    }),
    notes=MappingProxyType({
        "max.block.ms": "max_block_ms bounds send()'s wait for metadata; the transactional calls wait for the "
                        "coordinator regardless (py_txn.py)",
        "position(timeout)": "position(tp, timeout_ms=) returns None when its time is up, raising nothing"}),
)


class KafkaPythonAdapter(RealTimeAdapter):
    name = "kafka-python"
    sasl = True
    operations = frozenset({"produce", "poll", "committed", "position", "end_offsets", "beginning_offsets",
                            "offsets_for_times", "list_topics", "partitions_for", "commit_sync", "close",
                            "admin_list_topics", "configure_producer", "produce_pipelined", "join_group_held"}) \
        | py_txn.TXN_OPERATIONS | ADMIN_OPERATIONS
    warm_up_calls = frozenset({"committed"})
    capabilities = CAPABILITIES

    def supports_scenario(self, scenario: Scenario) -> tuple[bool, str]:
        return lacks_growing_setup_timeout(self, scenario) or super().supports_scenario(scenario)

    def available(self):
        ok = importlib.util.find_spec("kafka") is not None
        return ok, "" if ok else client_missing("kafka-python")

    def supports(self, steps):
        return supports_here(self, steps)

    def run_blocking(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        return [getattr(self, f"_{s.kind}")(s, env) for s in steps]

    def _transaction(self, step: Operation, env: RunEnv) -> Outcome:
        return py_txn.kp_transaction(self, step, env)

    def _txn_error_probe(self, step: Operation, env: RunEnv) -> Outcome:
        return py_txn.kp_error_probe(self, step, env)

    def _txn_zombie(self, step: Operation, env: RunEnv) -> Outcome:
        return py_txn.kp_zombie(self, step, env)

    def _txn_abort_then_commit(self, step: Operation, env: RunEnv) -> Outcome:
        return py_txn.kp_abort_then_commit(self, step, env)

    def _read_committed_behind_open_txn(self, step: Operation, env: RunEnv) -> Outcome:
        return py_txn.kp_read_committed(self, step, env)

    def _common(self, env: RunEnv) -> dict:
        c = env.config
        return {"bootstrap_servers": env.bootstrap.split(","), "client_id": env.client_id,
                "request_timeout_ms": c.get("request.timeout.ms", scaled_ms(30_000, env.scale)),
                "retry_backoff_ms": scaled_ms(100, env.scale), "reconnect_backoff_ms": scaled_ms(50, env.scale),
                **python_sasl(c)}

    def _create_topics(self, step: Operation, env: RunEnv) -> Outcome:
        return admin_steps.kafka_python_create_topics(self._common(env), step, env)

    def _delete_records(self, step: Operation, env: RunEnv) -> Outcome:
        return admin_steps.kafka_python_delete_records(self._common(env), step, env)

    def _admin_list_topics(self, step: Operation, env: RunEnv) -> Outcome:
        """KafkaAdminClient.list_topics() (no per-call timeout: request_timeout_ms bounds it)."""
        from kafka.admin import KafkaAdminClient

        admin = KafkaAdminClient(**self._common(env))
        try:
            return list_rounds(step, env, admin.list_topics, _error_type)
        finally:
            admin.close()

    def _producer(self, env: RunEnv, linger_ms: int = 0, **extra):
        from kafka import KafkaProducer

        c = env.config
        acks = c.get("acks", "all")
        return KafkaProducer(**self._common(env), **extra, acks=-1 if acks in ("all", "-1", -1) else int(acks),
                             delivery_timeout_ms=c.get("delivery.timeout.ms", scaled_ms(120_000, env.scale)),
                             retries=c.get("retries", 2147483647), linger_ms=linger_ms,
                             max_block_ms=c.get("max.block.ms", scaled_ms(60_000, env.scale)),
                             enable_idempotence=bool(c.get("enable.idempotence", False)))

    def _configure_producer(self, step: Operation, env: RunEnv) -> Outcome:
        """KafkaProducer(**config) with the scenario's settings; a refused config is the outcome.
        kafka-python checks the settings after it made its network client, which a refusing
        constructor leaves open: the adapter hands it a factory (its kafka_client setting) to
        close that client afterwards."""
        try:
            from kafka.net.compat import KafkaNetClient as NetworkClient
        except ImportError:     # kafka-python before 3.0 (a pinned release in a campaign)
            from kafka.client_async import KafkaClient as NetworkClient

        made: list = []

        def client(**configs):
            made.append(NetworkClient(**configs))
            return made[-1]

        try:
            self._producer(env, linger_ms=env.config.get("linger.ms", 0), kafka_client=client).close(timeout=1)
            return Outcome("configure_producer", True, 0.0)
        except Exception as exc:  # kafka-python's refusal: KafkaConfigurationError is Kafka's ConfigException
            for c in made:
                c.close()
            name = "ConfigException" if type(exc).__name__ == "KafkaConfigurationError" else type(exc).__name__
            return Outcome("configure_producer", False, 0.0, name, str(exc))

    def _produce_pipelined(self, step: Operation, env: RunEnv) -> Outcome:
        """``count`` sends back to back, each its own batch (linger_ms=0, a pause between), then
        every future awaited; the value is their offsets."""
        p = self._producer(env)
        try:
            p.partitions_for(step.args["topic"])
            start = env.clock()
            futures = []
            for _ in range(step.args.get("count", 2)):
                futures.append(p.send(step.args["topic"], step.args["value"], partition=step.args.get("partition")))
                time.sleep(max(step.args.get("gap_s", 0.01) / env.scale, 0.05))
            try:
                wait = env.config.get("delivery.timeout.ms", 120_000) / 1000 * 3 + 10
                offsets = [f.get(timeout=wait).offset for f in futures]
                return Outcome("produce_pipelined", True, env.clock() - start, value=offsets)
            except Exception as exc:
                return Outcome("produce_pipelined", False, env.clock() - start, _error_type(exc), str(exc))
        finally:
            p.close(timeout=1)

    def _produce(self, step: Operation, env: RunEnv) -> Outcome:
        c = env.config
        p = self._producer(env)
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

        # bootstrap_timeout_ms (30 s) bounds the constructor's eager bootstrap: scaled like every time;
        # releases before 3.0 bootstrap lazily and have no such setting
        extra = ({"bootstrap_timeout_ms": scaled_ms(30_000, env.scale)}
                 if "bootstrap_timeout_ms" in KafkaConsumer.DEFAULT_CONFIG else {})
        # the group timers' own defaults scaled like the request timeout: releases before 3.0
        # refuse a request_timeout_ms below session_timeout_ms (the rule KIP-62 retired in Java)
        own = KafkaConsumer.DEFAULT_CONFIG
        extra["session_timeout_ms"] = env.config.get("session.timeout.ms", scaled_ms(own["session_timeout_ms"], env.scale))
        extra["heartbeat_interval_ms"] = env.config.get("heartbeat.interval.ms",
                                                        scaled_ms(own["heartbeat_interval_ms"], env.scale))
        if "max.poll.interval.ms" in env.config:
            extra["max_poll_interval_ms"] = env.config["max.poll.interval.ms"]
        return KafkaConsumer(**self._common(env), group_id=group, enable_auto_commit=False,
                             fetch_max_wait_ms=env.config.get("fetch.max.wait.ms", 500), **extra)

    def _join_group_held(self, step: Operation, env: RunEnv) -> Outcome:
        """A first member (client.id SILENT_MEMBER: the scenario black-holes its heartbeats) joins
        and is not polled again; timed: the second member's wait for its assignment, polled. kafka-python
        sends JoinGroup like any request (kafka/coordinator/base.py ``_send_join_group_request`` ->
        ``KafkaClient.send``), under request_timeout_ms unless the client gives it more."""
        group, topic, limit = step.args.get("group", "held"), step.args.get("topic", "t"), step.timeout_s or 60.0

        def member(client_id: str):
            consumer = self._consumer(replace(env, client_id=client_id), group)
            # the topic known before the first join: kafka-python 3.0.12 can lose the answer of the
            # rejoin a late metadata answer triggers (docs/findings.md), not what this step judges
            consumer.partitions_for_topic(topic)
            consumer.subscribe([topic])
            return consumer

        def assigned(consumer) -> bool:
            start = env.clock()
            while not consumer.assignment() and env.clock() - start < limit:
                consumer.poll(timeout_ms=50)
            return bool(consumer.assignment())

        first = member(SILENT_MEMBER)
        try:
            if not assigned(first):
                return Outcome("join_group_held", False, 0.0, "TimeoutException", "the first member never got an assignment")
            second = member(env.client_id)
            try:
                start = env.clock()
                ok = assigned(second)
                return Outcome("join_group_held", ok, env.clock() - start, None if ok else "TimeoutException",
                               None if ok else "the second member never got an assignment")
            finally:
                second.close(autocommit=False)
        finally:
            first.close(autocommit=False)

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

    def _consumer_step(self, step: Operation, env: RunEnv, call, shape, bound_by: str, assign: bool = False,
                       warm=None) -> Outcome:
        """One call on a fresh consumer (group: the step's, else "cg"), timed from the call;
        ``warm``: the same call with a deadline of default.api.timeout.ms, made first if the step
        asks for ``warm_up``."""
        from kafka import TopicPartition

        start = env.clock()
        try:
            consumer = self._consumer(env, step.args.get("group", "cg"))
        except Exception as exc:  # KafkaConsumer() bootstraps in its constructor (api_version not pinned)
            return not_created(step, env.clock() - start, exc, "KafkaConsumer() (its eager bootstrap)")
        tp = TopicPartition(step.args.get("topic", "t"), step.args.get("partition", 0))
        came_back = True
        try:
            if assign:
                consumer.assign([tp])
            if warm is not None and step.args.get("warm_up"):
                warmed, came_back = timed_blocking(warm_step(step, env), env, lambda: warm(consumer, tp), shape, _error_type, bound_by)
                if not warmed.ok:
                    return warm_up_failed(warmed)
            outcome, came_back = timed_blocking(step, env, lambda: call(consumer, tp), shape, _error_type, bound_by)
            return outcome
        finally:
            if came_back:
                consumer.close(autocommit=False, timeout_ms=1000)
            else:   # still blocked in the call on its own thread: closed from another, not awaited
                threading.Thread(target=consumer.close, kwargs={"autocommit": False, "timeout_ms": 1000},
                                 name="conformance-close", daemon=True).start()

    def _committed(self, step: Operation, env: RunEnv) -> Outcome:
        def call(s: Operation):
            return lambda c, tp: {tp: c.committed(tp, timeout_ms=_timeout_ms(s))}

        return self._consumer_step(step, env, call(step),
                                   lambda got: offsets_value((tp.topic, tp.partition, o) for tp, o in got.items()),
                                   f"{NO_DEADLINE}: committed() without timeout_ms has no bound", warm=call(warm_step(step, env)))

    def _position(self, step: Operation, env: RunEnv) -> Outcome:
        return self._consumer_step(step, env, lambda c, tp: c.position(tp, timeout_ms=_timeout_ms(step)), short,
                                   f"{NO_DEADLINE}: position() without timeout_ms has no bound", assign=True)

    def _offsets(self, step: Operation, env: RunEnv, call) -> Outcome:
        return self._consumer_step(step, env, call, lambda got: short(offsets_value(
            (tp.topic, tp.partition, o) for tp, o in got.items())), f"{NO_DEADLINE}: request_timeout_ms bounds the call")

    def _end_offsets(self, step: Operation, env: RunEnv) -> Outcome:
        return self._offsets(step, env, lambda c, tp: c.end_offsets([tp], timeout_ms=_timeout_ms(step)))

    def _beginning_offsets(self, step: Operation, env: RunEnv) -> Outcome:
        return self._offsets(step, env, lambda c, tp: c.beginning_offsets([tp], timeout_ms=_timeout_ms(step)))

    def _offsets_for_times(self, step: Operation, env: RunEnv) -> Outcome:
        def call(c, tp):
            got = c.offsets_for_times({tp: step.args.get("timestamp_ms", 0)}, timeout_ms=_timeout_ms(step))
            # None: no record at or after the timestamp, Kafka's (-1, -1) as ours reports it
            return {k: (-1, -1) if v is None else (v.offset, v.timestamp) for k, v in got.items()}

        return self._offsets(step, env, call)

    def _list_topics(self, step: Operation, env: RunEnv) -> Outcome:
        return self._consumer_step(step, env, lambda c, tp: {t: c.partitions_for_topic(t) or () for t in c.topics()},
                                   lambda got: short(topics_value(got)),
                                   "topics() takes no deadline: request_timeout_ms bounds each Metadata request")

    def _partitions_for(self, step: Operation, env: RunEnv) -> Outcome:
        return self._consumer_step(step, env, lambda c, tp: sorted(c.partitions_for_topic(tp.topic)), short,
                                   "partitions_for_topic() takes no deadline: request_timeout_ms bounds each Metadata request")

    def _commit_sync(self, step: Operation, env: RunEnv) -> Outcome:
        from kafka.structs import OffsetAndMetadata

        return self._consumer_step(step, env, lambda c, tp: c.commit({tp: OffsetAndMetadata(step.args.get("offset", 0), "", -1)},
                                                                     timeout_ms=_timeout_ms(step)),
                                   short, f"{NO_DEADLINE}: request_timeout_ms bounds commit()")

    def _close(self, step: Operation, env: RunEnv) -> Outcome:
        """close(timeout_ms) with a fetch in flight (a short poll first, as ours)."""
        from kafka import TopicPartition

        consumer = self._consumer(env, None)
        tp = TopicPartition(step.args.get("topic", "t"), step.args.get("partition", 0))
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        consumer.poll(timeout_ms=int(max(step.args.get("poll_first_s", 0.2) / env.scale, 0.3) * 1000))
        outcome, _ = timed_blocking(step, env, lambda: consumer.close(autocommit=False, timeout_ms=_timeout_ms(step)),
                                    lambda _: None, _error_type, f"{NO_DEADLINE}: close() falls back to request_timeout_ms")
        return outcome
