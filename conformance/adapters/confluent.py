"""confluent-kafka (librdkafka). librdkafka's client-side request timeout is socket.timeout.ms
(60 s by default, twice request.timeout.ms, which only becomes the Produce's timeout_ms); we keep
that ratio when scaling, so what the suite measures is the client's real behaviour.

The consumer operations, by librdkafka's own names (``Operation.timeout_s`` is the deadline the
call takes; librdkafka has no default.api.timeout.ms: a call given none passes its default,
timeout=-1, infinite):

    committed          Consumer.committed([tp], timeout=)
    position           Consumer.position([tp]): no deadline, no network: the fetch position
                       librdkafka holds locally (OFFSET_INVALID, -1001, until it has one)
    end_offsets,
    beginning_offsets  Consumer.get_watermark_offsets(tp, timeout=) (high and low watermark)
    offsets_for_times  Consumer.offsets_for_times([tp@timestamp], timeout=)
    list_topics        Consumer.list_topics(timeout=)
    partitions_for     Consumer.list_topics(topic, timeout=): that topic's partitions
    commit_sync        Consumer.commit(offsets=, asynchronous=False): no deadline, each
                       OffsetCommit bounded by socket.timeout.ms
    close              Consumer.close(): no deadline (librdkafka's close waits for the
                       consumer's own shutdown: its requests are bounded by socket.timeout.ms)

A call that has not returned long after its deadline is reported as NoReturn (py_common)."""

from __future__ import annotations

import importlib.util
import json
import time
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from conformance.adapters import admin_steps
from conformance.adapters.admin_steps import ADMIN_OPERATIONS
from conformance.adapters.base import RealTimeAdapter, RunEnv, list_rounds, scaled_ms
from conformance.adapters.confluent_kip848 import KIP848_OPERATIONS, ConfluentKip848
from conformance.adapters.confluent_txn import TXN_OPERATIONS, ConfluentTransactions
from conformance.adapters.py_common import (
    offsets_value,
    short,
    supports_here,
    timed_blocking,
    topics_value,
    warm_step,
    warm_up_failed,
)
from conformance.adapters.share_stories import SHARE_OPERATIONS
from conformance.client_capabilities import REBOOTSTRAP, ClientCapabilities, Lack, Pin, fixed_setup_timeout
from conformance.extras import client_missing
from conformance.model import SILENT_MEMBER, Operation, Outcome

TIMEOUT_CODES = {"_MSG_TIMED_OUT", "_TIMED_OUT", "REQUEST_TIMED_OUT", "_TIMED_OUT_QUEUE"}


PASSED_THROUGH = ("security.protocol", "sasl.mechanism", "sasl.username", "sasl.password",
                  "socket.connection.setup.timeout.ms", "socket.timeout.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
                  "metadata.recovery.strategy", "metadata.recovery.rebootstrap.trigger.ms")


def _error_type(err) -> str:
    return "TimeoutException" if err.name() in TIMEOUT_CODES else err.name()


def _exc_type(exc: BaseException) -> str:
    from confluent_kafka import KafkaError, KafkaException

    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return _error_type(exc.args[0])
    return type(exc).__name__


def _deadline(step: Operation) -> float:
    """The step's deadline in librdkafka's terms: seconds, -1 (its default) for none: infinite."""
    return -1 if step.timeout_s is None else step.timeout_s


# what bounds each call when it is given no deadline (librdkafka has no default.api.timeout.ms)
NO_DEADLINE = "librdkafka has no default.api.timeout.ms: timeout=-1 is infinite"

# the librdkafka confluent-kafka's wheel bundles (confluent_kafka.libversion()), whose files the lacks cite
LIBRDKAFKA = "2.16.0"
LIBRDKAFKA_CONFIGURATION = f"https://github.com/confluentinc/librdkafka/blob/v{LIBRDKAFKA}/CONFIGURATION.md"
CONSUMER_C = "src/confluent_kafka/src/Consumer.c"
_WATCHDOG = "the adapter's watchdog reports a call still blocked long after the step's deadline as NoReturn"

CAPABILITIES = ClientCapabilities(
    client="confluent-kafka", pin=Pin("pyproject.toml", "confluent-kafka"), bundles=f"librdkafka {LIBRDKAFKA}",
    source="https://github.com/confluentinc/confluent-kafka-python/blob/v{version}/{path}",
    has=("delivery.timeout.ms", "linger.ms", "calls on one client", "transactions", "poll(timeout)", "poll(0)",
         "consumer calls", "committed(timeout)", "offsets(timeout)", "list_topics(timeout)", "KIP-848",
         "max.poll.interval.ms", "create_topics(timeout)", "delete_records(timeout)", "SASL",
         "socket.connection.setup.timeout.ms", *REBOOTSTRAP, "share groups"),
    lacks=MappingProxyType({
        "max.block.ms": Lack(
            "librdkafka has no max.block.ms (CONFIGURATION.md): produce() never waits for metadata, the record waits "
            "in the queue under message.timeout.ms, and each transactional call takes a timeout of its own "
            "(init_transactions(timeout), commit_transaction(timeout))", LIBRDKAFKA_CONFIGURATION,
            judged="the adapter gives message.timeout.ms the smaller of delivery.timeout.ms and max.block.ms, and each "
                   "transactional call the scenario's max.block.ms (confluent.py _producer_conf, confluent_txn.py)"),
        "position(timeout)": Lack(
            "Consumer.position(partitions) takes no timeout and sends nothing: it returns the fetch position "
            f"librdkafka holds locally ({CONSUMER_C} Consumer_position)", CONSUMER_C,
            judged="position() as it is: it returns at once, OFFSET_INVALID until librdkafka has a position"),
        "commit_sync(timeout)": Lack(
            "Consumer.commit(asynchronous=False) takes no timeout: socket.timeout.ms bounds each OffsetCommit "
            f"({CONSUMER_C} Consumer_commit)", CONSUMER_C,
            judged=f"commit(asynchronous=False) without the step's deadline; {_WATCHDOG}"),
        "close(timeout)": Lack(
            f"Consumer.close() takes no argument ({CONSUMER_C} Consumer_close, METH_NOARGS): it waits for the "
            "consumer's own shutdown, each of its requests bounded by socket.timeout.ms", CONSUMER_C,
            judged=f"close() without the step's deadline; {_WATCHDOG}"),
        "default.api.timeout.ms": Lack(
            f"{NO_DEADLINE} (CONFIGURATION.md has no such property: a call given no timeout passes -1)",
            LIBRDKAFKA_CONFIGURATION, judged=f"a call given no deadline waits as librdkafka does; {_WATCHDOG}"),
        "socket.connection.setup.timeout.max.ms": fixed_setup_timeout(f"librdkafka {LIBRDKAFKA}", "socket.connection.setup.timeout.ms "
                                                               "(CONFIGURATION.md has no .max.ms)", LIBRDKAFKA_CONFIGURATION),
    }),
    not_driven=MappingProxyType({"share.renew-keeps-the-lock": (
        "librdkafka 2.16's share consumer (a preview) has no RENEW: confluent_kafka.AcknowledgeType is ACCEPT, "
        "RELEASE or REJECT (KIP-1222's RENEW came after it)")}),
    notes=MappingProxyType({"delivery.timeout.ms": "librdkafka's alias of message.timeout.ms",
                            "linger.ms": "librdkafka's alias of queue.buffering.max.ms",
                            "list_topics(timeout)": "Consumer.list_topics(topic, timeout=)",
                            "offsets(timeout)": "get_watermark_offsets(tp, timeout=), offsets_for_times(..., timeout=)"}),
)


class ConfluentAdapter(ConfluentTransactions, ConfluentKip848, RealTimeAdapter):
    name = "confluent-kafka"
    operations = frozenset({"produce", "poll", "committed", "position", "end_offsets", "beginning_offsets",
                            "offsets_for_times", "list_topics", "partitions_for", "commit_sync", "close",
                            "admin_list_topics", "configure_producer", "produce_pipelined", "join_group_held"}) \
        | TXN_OPERATIONS | KIP848_OPERATIONS | ADMIN_OPERATIONS | (SHARE_OPERATIONS - {"share_renew"})   # no RENEW
    warm_up_calls = frozenset({"committed"})
    capabilities = CAPABILITIES
    lacks = MappingProxyType({"socket.connection.setup.timeout.max.ms": CAPABILITIES.lacks["socket.connection.setup.timeout.max.ms"].reason})

    def available(self):
        ok = importlib.util.find_spec("confluent_kafka") is not None
        return ok, "" if ok else client_missing("confluent-kafka")

    def supports(self, steps):
        return supports_here(self, steps)

    sasl = True

    def _common(self, env: RunEnv) -> dict:
        c = env.config
        passed = {k: c[k] for k in PASSED_THROUGH if k in c}   # librdkafka's names are Kafka's here
        if "reconnect.backoff.max.ms" in passed and "reconnect.backoff.ms" not in passed:
            # librdkafka refuses a reconnect.backoff.max.ms below reconnect.backoff.ms (100 ms by
            # default): a scaled 1 s cap is 33 ms, so the base goes under it, scaled like the rest
            passed["reconnect.backoff.ms"] = min(scaled_ms(100, env.scale), passed["reconnect.backoff.max.ms"])
        return {"bootstrap.servers": env.bootstrap, "client.id": env.client_id,
                "socket.timeout.ms": scaled_ms(60_000, env.scale), "log_level": 0,
                "request.timeout.ms": c.get("request.timeout.ms", scaled_ms(30_000, env.scale)), **passed}

    def run_blocking(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        return [self._share(s, env) if s.kind in SHARE_OPERATIONS else getattr(self, f"_{s.kind}")(s, env)
                for s in steps]

    def _share(self, step: Operation, env: RunEnv) -> Outcome:
        """A share story told with confluent_kafka.ShareConsumer (conformance/adapters/confluent_share.py)."""
        from conformance.adapters.confluent_share import confluent_share_step

        settings = {k: v for k, v in self._common(env).items() if k != "client.id"}
        settings["fetch.wait.max.ms"] = env.config.get("fetch.max.wait.ms", 500)
        return confluent_share_step(step, env, settings, _exc_type)

    def _producer_conf(self, env: RunEnv) -> dict:
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
        return conf

    def _produce(self, step: Operation, env: RunEnv) -> Outcome:
        from confluent_kafka import Producer

        conf = self._producer_conf(env)
        if step.args.get("warm_up", True):   # time the send, not the bootstrap
            p = self._warm_producer(conf, step.args["topic"], limit_s=min(10.0, conf["request.timeout.ms"] / 1000))
        else:
            p = Producer(conf)
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

    def _configure_producer(self, step: Operation, env: RunEnv) -> Outcome:
        """Producer(config) with the scenario's settings in librdkafka's names (delivery.timeout.ms
        is its message.timeout.ms); a refused config is the outcome."""
        from confluent_kafka import KafkaException, Producer

        conf = {**self._producer_conf(env), "linger.ms": env.config.get("linger.ms", 0)}
        try:
            Producer(conf)
            return Outcome("configure_producer", True, 0.0)
        except KafkaException as exc:
            return Outcome("configure_producer", False, 0.0, _exc_type(exc), str(exc))

    def _produce_pipelined(self, step: Operation, env: RunEnv) -> Outcome:
        """``count`` records produced back to back, each its own batch (linger.ms=0, a pause
        between), then all delivery reports awaited (flush); the value is their offsets."""
        conf = self._producer_conf(env)
        p = self._warm_producer(conf, step.args["topic"])
        reports: list[tuple[Any, float, int]] = []
        start = env.clock()
        for _ in range(step.args.get("count", 2)):
            p.produce(step.args["topic"], step.args["value"], partition=step.args.get("partition", -1),
                      on_delivery=lambda err, msg: reports.append((err, env.clock(), msg.offset())))
            p.poll(max(step.args.get("gap_s", 0.01) / env.scale, 0.05))
        p.flush(conf["message.timeout.ms"] / 1000 * 3 + 10)
        if len(reports) < step.args.get("count", 2):
            return Outcome("produce_pipelined", False, env.clock() - start, "NoDeliveryReport",
                           f"flush ended with {len(reports)} delivery report(s)")
        failed = [r for r in reports if r[0] is not None]
        end = max(t for _, t, _ in reports)
        if failed:
            return Outcome("produce_pipelined", False, end - start, _error_type(failed[0][0]), failed[0][0].str())
        return Outcome("produce_pipelined", True, end - start, value=[offset for _, _, offset in reports])

    @staticmethod
    def _warm_producer(conf: dict, topic: str, limit_s: float = 10.0) -> Any:
        """A producer that knows the topic's leader and, when idempotent, holds its producer id
        (its idempotence state, in its statistics, is "Assigned"), or ``limit_s`` has passed:
        set-up, not part of the timed sends. librdkafka holds every record until InitProducerId
        is answered, so records sent before that all leave in one batch; and its PID state
        machine (rdkafka_idempotence.c, rd_kafka_idemp_pid_fsm) asks again only on a 500 ms
        timer when no broker was up at its first try, which happens when the bootstrap
        connection's second Metadata is answered before the client closes that connection: a
        first record then waited 500 ms before InitProducerId was even sent, on Apache Kafka
        and on the emulator alike (the faster the broker answers, the more often). Waiting that
        out would start the timed send half a second later against librdkafka's own 1 s timers
        (its request and message timeouts are found by scans once a second), which moved
        kip91.delivery-timeout-in-flight's failure 0.6 s late; so, as in the runs where the race
        goes the other way, a Metadata answered on the new connection wakes the state machine:
        the id is then held 100-150 ms after the producer was made, race or not (500-555 ms
        before, in 3 of 10 runs)."""
        from confluent_kafka import Producer

        state: dict[str, str] = {}
        p = Producer({**conf, "statistics.interval.ms": 50,
                      "stats_cb": lambda stats: state.update(idemp=json.loads(stats).get("eos", {}).get("idemp_state", ""))})
        made = time.monotonic()
        p.list_topics(topic, timeout=10)
        woken = False
        while conf.get("enable.idempotence") and state.get("idemp") != "Assigned" and time.monotonic() < made + limit_s:
            p.poll(0.05)
            if not woken and state.get("idemp") != "Assigned" and time.monotonic() - made > 0.1:
                p.list_topics(topic, timeout=limit_s)
                woken = True
        return p

    def _create_topics(self, step: Operation, env: RunEnv) -> Outcome:
        return admin_steps.confluent_create_topics(self._common(env), step, env)

    def _delete_records(self, step: Operation, env: RunEnv) -> Outcome:
        return admin_steps.confluent_delete_records(self._common(env), step, env)

    def _admin_list_topics(self, step: Operation, env: RunEnv) -> Outcome:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(self._common(env))
        timeout = step.timeout_s if step.timeout_s is not None else scaled_ms(30_000, env.scale) / 1000
        return list_rounds(step, env, lambda: list(admin.list_topics(timeout=timeout).topics), _exc_type)

    def _consumer(self, env: RunEnv, group: str):
        from confluent_kafka import Consumer

        return Consumer(self._consumer_conf(env, group))

    def _consumer_conf(self, env: RunEnv, group: str) -> dict:
        c = env.config
        # librdkafka's own backoffs are scaled like every other time, or its 500 ms fetch error
        # backoff alone would be half a scaled request timeout
        return {**self._common(env), "group.id": group, "enable.auto.commit": False,
                "fetch.wait.max.ms": c.get("fetch.max.wait.ms", 500),
                "fetch.error.backoff.ms": scaled_ms(500, env.scale),
                "reconnect.backoff.ms": scaled_ms(100, env.scale),
                "reconnect.backoff.max.ms": scaled_ms(10_000, env.scale)}

    def _join_group_held(self, step: Operation, env: RunEnv) -> Outcome:
        """A first member (client.id SILENT_MEMBER: the scenario black-holes its heartbeats) joins
        and stays open without polling; the second member's wait for its assignment is timed."""
        group, topic = step.args.get("group", "held"), step.args.get("topic", "t")
        limit = step.timeout_s or 60.0
        timers = {k: env.config[k] for k in ("session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms")
                  if k in env.config}

        def wait_assigned(consumer) -> bool:
            start = env.clock()
            while not consumer.assignment() and env.clock() - start < limit:
                consumer.poll(0.05)
            return bool(consumer.assignment())

        first = self._timed_member(env, group, topic, SILENT_MEMBER, timers)
        try:
            if not wait_assigned(first):
                return Outcome("join_group_held", False, 0.0, "TimeoutException", "the first member never got an assignment")
            second = self._timed_member(env, group, topic, env.client_id, timers)
            try:
                start = env.clock()
                ok = wait_assigned(second)
                return Outcome("join_group_held", ok, env.clock() - start, None if ok else "TimeoutException",
                               None if ok else "the second member never got an assignment")
            finally:
                second.close()
        finally:
            first.close()

    def _timed_member(self, env: RunEnv, group: str, topic: str, client_id: str, timers: dict):
        from confluent_kafka import Consumer

        consumer = Consumer({**self._consumer_conf(replace(env, client_id=client_id), group), **timers})
        consumer.subscribe([topic])
        return consumer

    def _poll(self, step: Operation, env: RunEnv) -> Outcome:
        """Consumer.poll(timeout): one message or None; the value is the number of records (0 or 1)."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        consumer = self._consumer(env, "conformance-poll")
        try:
            consumer.assign([TopicPartition(step.args["topic"], step.args["partition"], OFFSET_BEGINNING)])
            start = env.clock()
            msg = consumer.poll(step.timeout_s)
            elapsed = env.clock() - start
            if msg is not None and msg.error() is not None:
                return Outcome("poll", False, elapsed, _error_type(msg.error()), msg.error().str())
            return Outcome("poll", True, elapsed, value=0 if msg is None else 1)
        finally:
            consumer.close()

    def _consumer_step(self, step: Operation, env: RunEnv, call, shape, bound_by: str, assign: bool = False,
                       warm=None) -> Outcome:
        """One call on a fresh consumer (group: the step's, else "cg"), timed from the call;
        ``warm``: the same call with a deadline of default.api.timeout.ms, made first if the step
        asks for ``warm_up``."""
        from confluent_kafka import TopicPartition

        consumer = self._consumer(env, step.args.get("group", "cg"))
        tp = TopicPartition(step.args.get("topic", "t"), step.args.get("partition", 0))
        came_back = True
        try:
            if assign:
                consumer.assign([tp])
            if warm is not None and step.args.get("warm_up"):
                warmed, came_back = timed_blocking(warm_step(step, env), env, lambda: warm(consumer, tp), shape, _exc_type, bound_by)
                if not warmed.ok:
                    return warm_up_failed(warmed)
            outcome, came_back = timed_blocking(step, env, lambda: call(consumer, tp), shape, _exc_type, bound_by)
            return outcome
        finally:
            if came_back:   # a consumer still blocked in a call is left to its thread
                consumer.close()

    def _committed(self, step: Operation, env: RunEnv) -> Outcome:
        def call(s: Operation):
            return lambda c, tp: c.committed([tp], timeout=_deadline(s))

        return self._consumer_step(step, env, call(step), lambda got: offsets_value(
            (p.topic, p.partition, p.offset if p.offset >= 0 else None) for p in got), NO_DEADLINE,
            warm=call(warm_step(step, env)))

    def _position(self, step: Operation, env: RunEnv) -> Outcome:
        return self._consumer_step(step, env, lambda c, tp: c.position([tp])[0].offset, short,
                                   "position() is local: it takes no deadline and sends nothing", assign=True)

    def _watermark(self, step: Operation, env: RunEnv, index: int) -> Outcome:
        def call(c, tp):
            return {(tp.topic, tp.partition): c.get_watermark_offsets(tp, timeout=_deadline(step))[index]}

        return self._consumer_step(step, env, call, lambda got: short(offsets_value((t, p, o) for (t, p), o in got.items())),
                                   NO_DEADLINE)

    def _end_offsets(self, step: Operation, env: RunEnv) -> Outcome:
        return self._watermark(step, env, 1)

    def _beginning_offsets(self, step: Operation, env: RunEnv) -> Outcome:
        return self._watermark(step, env, 0)

    def _offsets_for_times(self, step: Operation, env: RunEnv) -> Outcome:
        from confluent_kafka import TopicPartition

        def call(c, tp):
            return c.offsets_for_times([TopicPartition(tp.topic, tp.partition, step.args.get("timestamp_ms", 0))],
                                       timeout=_deadline(step))

        # librdkafka reports no timestamp: -1, as Kafka's "unknown"; offset -1: no such record
        return self._consumer_step(step, env, call, lambda got: short(offsets_value(
            (p.topic, p.partition, (p.offset, -1)) for p in got)), NO_DEADLINE)

    def _list_topics(self, step: Operation, env: RunEnv) -> Outcome:
        return self._consumer_step(step, env, lambda c, tp: c.list_topics(timeout=_deadline(step)), lambda md: short(
            topics_value({name: t.partitions.keys() for name, t in md.topics.items() if t.error is None})), NO_DEADLINE)

    def _partitions_for(self, step: Operation, env: RunEnv) -> Outcome:
        def call(c, tp):
            topic = c.list_topics(tp.topic, timeout=_deadline(step)).topics.get(tp.topic)
            return [] if topic is None or topic.error is not None else sorted(topic.partitions)

        return self._consumer_step(step, env, call, short, NO_DEADLINE)

    def _commit_sync(self, step: Operation, env: RunEnv) -> Outcome:
        from confluent_kafka import TopicPartition

        def call(c, tp):
            got = c.commit(offsets=[TopicPartition(tp.topic, tp.partition, step.args.get("offset", 0))], asynchronous=False)
            failed = [p for p in got or () if p.error is not None]
            if failed:
                from confluent_kafka import KafkaException
                raise KafkaException(failed[0].error)
            return None

        return self._consumer_step(step, env, call, short,
                                   "commit(asynchronous=False) takes no deadline: socket.timeout.ms bounds each OffsetCommit")

    def _close(self, step: Operation, env: RunEnv) -> Outcome:
        """close() with a fetch in flight (a short poll first, as ours): librdkafka's close takes no
        deadline; the step's is what the contract holds it to."""
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        consumer = self._consumer(env, step.args.get("group", "cg"))
        consumer.assign([TopicPartition(step.args.get("topic", "t"), step.args.get("partition", 0), OFFSET_BEGINNING)])
        consumer.poll(max(step.args.get("poll_first_s", 0.2) / env.scale, 0.3))
        outcome, _ = timed_blocking(step, env, consumer.close, lambda _: None, _exc_type,
                                    "close() takes no deadline: librdkafka waits for its own shutdown")
        return outcome
