"""aiokafka (asyncio). Its request timeout is request_timeout_ms (per request, asyncio
wait_for; the connection is closed on expiry). It has no delivery.timeout.ms: a non-idempotent
batch expires request_timeout_ms after it was created, an idempotent one is retried without
limit (aiokafka/producer/sender.py ``_can_retry``), and no default.api.timeout.ms.

The consumer operations, by aiokafka's own names. None of them takes a deadline: an asyncio
application gives a call one by cancelling it (``asyncio.timeout``), and that is how the adapter
applies ``Operation.timeout_s``. Without one, what bounds each call is aiokafka's own:

    committed          AIOKafkaConsumer.committed(tp): nothing (it retries a retriable error,
                       each OffsetFetch bounded by request_timeout_ms, without limit)
    position           AIOKafkaConsumer.position(tp): request_timeout_ms per wait for a reset
    end_offsets,
    beginning_offsets  AIOKafkaConsumer.end_offsets / beginning_offsets([tp]): request_timeout_ms
    offsets_for_times  AIOKafkaConsumer.offsets_for_times({tp: ts}): request_timeout_ms
    list_topics        AIOKafkaConsumer.topics(): a Metadata request, request_timeout_ms (names
                       only: the partitions reported are those of its metadata cache)
    partitions_for     AIOKafkaConsumer.partitions_for_topic(topic): no network, the cache only
    commit_sync        AIOKafkaConsumer.commit({tp: offset}) (of an assigned partition, or it
                       raises IllegalStateError): request_timeout_ms per OffsetCommit
    close              AIOKafkaConsumer.stop()

Besides: create_topics and delete_records through AIOKafkaAdminClient (admin_steps.py: the step's
deadline is the call's timeout_ms); join_group_held with two AIOKafkaConsumers of one group (aiokafka
sends JoinGroup under request_timeout_ms like any request). N/A: security.sasl-handshake-stall
(no socket.connection.setup.timeout.ms, py_common.NO_SETUP_TIMEOUT says what aiokafka does instead).

A call that has not returned long after its deadline is reported as NoReturn (py_common)."""

from __future__ import annotations

import asyncio
import importlib.util
from types import MappingProxyType

from conformance.adapters import admin_steps, py_txn
from conformance.adapters.admin_steps import ADMIN_OPERATIONS
from conformance.adapters.base import RealTimeAdapter, RunEnv, scaled_ms
from conformance.adapters.py_common import (
    NO_SETUP_TIMEOUT,
    SETUP_TIMEOUT_JUDGED,
    lacks_growing_setup_timeout,
    not_created,
    offsets_value,
    python_sasl,
    short,
    supports_here,
    timed_async,
    topics_value,
    warm_step,
    warm_up_failed,
    watchdog_s,
)
from conformance.client_capabilities import ClientCapabilities, Lack, Pin, lacks_rebootstrap
from conformance.extras import client_missing
from conformance.model import SILENT_MEMBER, Operation, Outcome, Scenario

CONSUMER_PY, PRODUCER_PY = "aiokafka/consumer/consumer.py", "aiokafka/producer/producer.py"
_CANCELLED = ("an asyncio application cancels it at its deadline: the adapter gives the step's with asyncio.timeout "
              "(py_common.timed_async), and the matrix judges how the call ends")


def _no_timeout(call: str) -> Lack:
    return Lack(f"AIOKafkaConsumer.{call} takes no timeout ({CONSUMER_PY})", CONSUMER_PY, judged=_CANCELLED)


CAPABILITIES = ClientCapabilities(
    client="aiokafka", pin=Pin("pyproject.toml", "aiokafka"),
    source="https://github.com/aio-libs/aiokafka/blob/v{version}/{path}",
    has=("linger.ms", "calls on one client", "transactions", "poll(timeout)", "poll(0)",
         "consumer calls", "max.poll.interval.ms", "create_topics(timeout)", "delete_records(timeout)", "SASL"),
    lacks=MappingProxyType({
        "delivery.timeout.ms": Lack(
            f"AIOKafkaProducer has no delivery_timeout_ms ({PRODUCER_PY} AIOKafkaProducer.__init__): a non-idempotent "
            "batch expires request_timeout_ms after it was made, an idempotent one is retried without limit "
            "(aiokafka/producer/sender.py SendProduceReqHandler._can_retry)", PRODUCER_PY,
            judged="what aiokafka does with the record: the matrix judges it against delivery.timeout.ms (and "
                   "configure_producer passes delivery_timeout_ms, which the constructor refuses)"),
        "max.block.ms": Lack(
            f"AIOKafkaProducer has no max_block_ms ({PRODUCER_PY} AIOKafkaProducer.__init__): send() waits for "
            "metadata up to request_timeout_ms (aiokafka/client.py AIOKafkaClient._wait_on_metadata) and "
            "commit_transaction() until the coordinator answers", PRODUCER_PY,
            judged="what aiokafka does: the matrix judges it against max.block.ms"),
        "committed(timeout)": _no_timeout("committed(partition)"),
        "position(timeout)": _no_timeout("position(partition)"),
        "offsets(timeout)": _no_timeout("end_offsets / beginning_offsets / offsets_for_times"),
        "list_topics(timeout)": _no_timeout("topics() (and partitions_for_topic, the metadata cache only)"),
        "commit_sync(timeout)": _no_timeout("commit(offsets)"),
        "close(timeout)": _no_timeout("stop()"),
        "default.api.timeout.ms": Lack(
            f"aiokafka has no default.api.timeout.ms (AIOKafkaConsumer, {CONSUMER_PY}): a call given no deadline is "
            "bounded by request_timeout_ms per request, committed() not at all (it retries)", CONSUMER_PY,
            judged="the call without a deadline, bounded as aiokafka bounds it; the adapter's watchdog reports a "
                   "call still blocked long after as NoReturn"),
        "KIP-848": Lack(
            f"aiokafka has no group.protocol setting (AIOKafkaConsumer, {CONSUMER_PY}): its consumer joins with "
            "JoinGroup/SyncGroup (aiokafka/consumer/group_coordinator.py CoordinatorGroupRebalance)",
            "aiokafka/consumer/group_coordinator.py"),
        "socket.connection.setup.timeout.ms": Lack(NO_SETUP_TIMEOUT["aiokafka"], "aiokafka/conn.py",
                                                   judged=SETUP_TIMEOUT_JUDGED),
        **lacks_rebootstrap(
            f"aiokafka has no metadata_recovery_strategy (AIOKafkaProducer.__init__, {PRODUCER_PY}; AIOKafkaClient, "
            "aiokafka/client.py) and nothing in it handles REBOOTSTRAP_REQUIRED: it keeps asking the brokers it "
            "learnt of", "aiokafka/client.py"),
        "share groups": Lack("aiokafka has no share consumer: AIOKafkaConsumer joins classic groups only (aiokafka/consumer/"
                             "group_coordinator.py), no ShareFetch in its protocol", "aiokafka/consumer/group_coordinator.py"),
        "socket.connection.setup.timeout.max.ms": Lack(NO_SETUP_TIMEOUT["aiokafka"], "aiokafka/conn.py"),
    }),
)


def _error_type(exc: BaseException) -> str:
    name = type(exc).__name__
    return "TimeoutException" if "Timeout" in name or "TimedOut" in name else name


class AiokafkaAdapter(RealTimeAdapter):
    name = "aiokafka"
    sasl = True
    operations = (frozenset({"produce", "poll", "committed", "position", "end_offsets", "beginning_offsets",
                             "offsets_for_times", "list_topics", "partitions_for", "commit_sync", "close",
                             "admin_list_topics", "configure_producer", "produce_pipelined", "join_group_held"})
                  | py_txn.TXN_OPERATIONS | ADMIN_OPERATIONS)
    warm_up_calls = frozenset({"committed"})
    capabilities = CAPABILITIES

    def supports_scenario(self, scenario: Scenario) -> tuple[bool, str]:
        return lacks_growing_setup_timeout(self, scenario) or super().supports_scenario(scenario)

    def available(self):
        ok = importlib.util.find_spec("aiokafka") is not None
        return ok, "" if ok else client_missing("aiokafka")

    def supports(self, steps):
        return supports_here(self, steps)

    def run_blocking(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        async def main():
            return [await getattr(self, f"_{s.kind}")(s, env) for s in steps]
        return asyncio.run(main())

    async def _transaction(self, step: Operation, env: RunEnv) -> Outcome:
        return await py_txn.ak_transaction(self, step, env)

    async def _txn_error_probe(self, step: Operation, env: RunEnv) -> Outcome:
        return await py_txn.ak_error_probe(self, step, env)

    async def _txn_zombie(self, step: Operation, env: RunEnv) -> Outcome:
        return await py_txn.ak_zombie(self, step, env)

    async def _txn_abort_then_commit(self, step: Operation, env: RunEnv) -> Outcome:
        return await py_txn.ak_abort_then_commit(self, step, env)

    async def _read_committed_behind_open_txn(self, step: Operation, env: RunEnv) -> Outcome:
        return await py_txn.ak_read_committed(self, step, env)

    async def _create_topics(self, step: Operation, env: RunEnv) -> Outcome:
        return await admin_steps.aiokafka_create_topics(self._common(env), step, env)

    async def _delete_records(self, step: Operation, env: RunEnv) -> Outcome:
        return await admin_steps.aiokafka_delete_records(self._common(env), step, env)

    def _common(self, env: RunEnv) -> dict:
        return {"bootstrap_servers": env.bootstrap, "client_id": env.client_id,
                "request_timeout_ms": env.config.get("request.timeout.ms", scaled_ms(40_000, env.scale)),
                "retry_backoff_ms": scaled_ms(100, env.scale), **python_sasl(env.config)}

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

    def _producer(self, env: RunEnv, **settings):
        from aiokafka import AIOKafkaProducer

        c = env.config
        acks = c.get("acks", "all")
        return AIOKafkaProducer(**self._common(env), acks="all" if acks in ("all", "-1", -1) else int(acks),
                                enable_idempotence=bool(c.get("enable.idempotence", False)), **{"linger_ms": 0, **settings})

    async def _configure_producer(self, step: Operation, env: RunEnv) -> Outcome:
        """AIOKafkaProducer(**config) with the scenario's settings under aiokafka's names. It has
        no delivery.timeout.ms: given one, the constructor refuses the keyword (TypeError)."""
        c = env.config
        settings = {"linger_ms": c.get("linger.ms", 0)}
        if "delivery.timeout.ms" in c:
            settings["delivery_timeout_ms"] = c["delivery.timeout.ms"]
        try:
            await self._producer(env, **settings).stop()   # never started: stop() only marks it closed
            return Outcome("configure_producer", True, 0.0)
        except Exception as exc:  # aiokafka's own refusal
            return Outcome("configure_producer", False, 0.0, type(exc).__name__, str(exc))

    async def _produce_pipelined(self, step: Operation, env: RunEnv) -> Outcome:
        """``count`` sends back to back, each its own batch (linger_ms=0, a pause between), then
        every future awaited; the value is their offsets."""
        p = self._producer(env)
        start = env.clock()
        try:
            await asyncio.wait_for(p.start(), 30)
            await p.partitions_for(step.args["topic"])
            start = env.clock()
            futures = []
            for _ in range(step.args.get("count", 2)):
                futures.append(await p.send(step.args["topic"], step.args["value"], partition=step.args.get("partition")))
                await asyncio.sleep(max(step.args.get("gap_s", 0.01) / env.scale, 0.05))
            offsets = [(await f).offset for f in futures]
            return Outcome("produce_pipelined", True, env.clock() - start, value=offsets)
        except Exception as exc:
            return Outcome("produce_pipelined", False, env.clock() - start, _error_type(exc), str(exc))
        finally:
            await p.stop()

    async def _produce(self, step: Operation, env: RunEnv) -> Outcome:
        p = self._producer(env)
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

    async def _consumer_step(self, step: Operation, env: RunEnv, call, shape, bound_by: str, assign: bool = False,
                             warm: bool = False) -> Outcome:
        """One call on a fresh, started consumer (group: the step's, else "cg"), timed from the
        call; ``warm``: if the step asks for ``warm_up``, the same call made first with a deadline
        of default.api.timeout.ms."""
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(**self._common(env), group_id=step.args.get("group", "cg"), enable_auto_commit=False,
                                    fetch_max_wait_ms=env.config.get("fetch.max.wait.ms", 500))
        start = env.clock()
        try:
            async with asyncio.timeout(watchdog_s(step, env)):
                await consumer.start()   # bootstraps: a Metadata answer is needed before any call
        except Exception as exc:
            await consumer.stop()
            return not_created(step, env.clock() - start, exc, "AIOKafkaConsumer.start() (its bootstrap)")
        try:
            tp = TopicPartition(step.args.get("topic", "t"), step.args.get("partition", 0))
            if assign:
                consumer.assign([tp])
            if warm and step.args.get("warm_up"):
                warmed = await timed_async(warm_step(step, env), env, lambda: call(consumer, tp), shape, _error_type, bound_by)
                if not warmed.ok:
                    return warm_up_failed(warmed)
            return await timed_async(step, env, lambda: call(consumer, tp), shape, _error_type, bound_by)
        finally:
            await consumer.stop()

    async def _committed(self, step: Operation, env: RunEnv) -> Outcome:
        async def call(c, tp):
            return {tp: await c.committed(tp)}

        return await self._consumer_step(step, env, call, lambda got: offsets_value(
            (tp.topic, tp.partition, o) for tp, o in got.items()), "committed() retries without limit", warm=True)

    async def _position(self, step: Operation, env: RunEnv) -> Outcome:
        return await self._consumer_step(step, env, lambda c, tp: c.position(tp), short,
                                         "request_timeout_ms bounds each wait for a position", assign=True)

    async def _offsets(self, step: Operation, env: RunEnv, call) -> Outcome:
        return await self._consumer_step(step, env, call, lambda got: short(offsets_value(
            (tp.topic, tp.partition, o) for tp, o in got.items())), "request_timeout_ms bounds the ListOffsets")

    async def _end_offsets(self, step: Operation, env: RunEnv) -> Outcome:
        return await self._offsets(step, env, lambda c, tp: c.end_offsets([tp]))

    async def _beginning_offsets(self, step: Operation, env: RunEnv) -> Outcome:
        return await self._offsets(step, env, lambda c, tp: c.beginning_offsets([tp]))

    async def _offsets_for_times(self, step: Operation, env: RunEnv) -> Outcome:
        async def call(c, tp):
            got = await c.offsets_for_times({tp: step.args.get("timestamp_ms", 0)})
            # None: no record at or after the timestamp, Kafka's (-1, -1) as ours reports it
            return {k: (-1, -1) if v is None else (v.offset, v.timestamp) for k, v in got.items()}

        return await self._offsets(step, env, call)

    async def _list_topics(self, step: Operation, env: RunEnv) -> Outcome:
        async def call(c, tp):
            return {t: c.partitions_for_topic(t) or () for t in await c.topics()}

        return await self._consumer_step(step, env, call, lambda got: short(topics_value(got)),
                                         "request_timeout_ms bounds the Metadata request")

    async def _partitions_for(self, step: Operation, env: RunEnv) -> Outcome:
        async def call(c, tp):   # not a coroutine in aiokafka: the metadata cache, no request
            return sorted(c.partitions_for_topic(tp.topic) or ())

        return await self._consumer_step(step, env, call, short, "partitions_for_topic() reads the cache only")

    async def _commit_sync(self, step: Operation, env: RunEnv) -> Outcome:
        return await self._consumer_step(step, env, lambda c, tp: c.commit({tp: step.args.get("offset", 0)}), short,
                                         "request_timeout_ms bounds each OffsetCommit", assign=True)

    async def _close(self, step: Operation, env: RunEnv) -> Outcome:
        """stop() with a fetch in flight (a short getmany first, as ours' poll)."""
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(**self._common(env), enable_auto_commit=False,
                                    fetch_max_wait_ms=env.config.get("fetch.max.wait.ms", 500))
        await consumer.start()
        tp = TopicPartition(step.args.get("topic", "t"), step.args.get("partition", 0))
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        await consumer.getmany(timeout_ms=int(max(step.args.get("poll_first_s", 0.2) / env.scale, 0.3) * 1000))
        try:
            return await timed_async(step, env, consumer.stop, lambda _: None, _error_type, "stop() takes no deadline")
        finally:
            await consumer.stop()   # a second stop() is a no-op once the first finished

    async def _join_group_held(self, step: Operation, env: RunEnv) -> Outcome:
        """A first member (client.id SILENT_MEMBER: the scenario black-holes its heartbeats) joins
        and is not polled again; timed: the second member's wait for its assignment. aiokafka
        sends JoinGroup like any request (consumer/group_coordinator.py,
        ``CoordinatorGroupRebalance._send_join_group_request`` -> ``_send_req`` ->
        ``AIOKafkaClient.send``), so request_timeout_ms bounds it however long the coordinator
        may rightly hold it."""
        group, topic, limit = step.args.get("group", "held"), step.args.get("topic", "t"), step.timeout_s or 60.0
        first, second = self._member(env, group, SILENT_MEMBER), self._member(env, group, env.client_id)
        try:
            await first.start()
            first.subscribe([topic])
            if not await _assigned(first, env, limit):
                return Outcome("join_group_held", False, 0.0, "TimeoutException", "the first member never got an assignment")
            await second.start()
            second.subscribe([topic])
            start = env.clock()
            ok = await _assigned(second, env, limit)
            return Outcome("join_group_held", ok, env.clock() - start, None if ok else "TimeoutException",
                           None if ok else "the second member never got an assignment")
        finally:
            await second.stop()
            await first.stop()

    def _member(self, env: RunEnv, group: str, client_id: str):
        from aiokafka import AIOKafkaConsumer

        names = {"session.timeout.ms": "session_timeout_ms", "heartbeat.interval.ms": "heartbeat_interval_ms",
                 "max.poll.interval.ms": "max_poll_interval_ms"}
        timers = {ours: env.config[kafka] for kafka, ours in names.items() if kafka in env.config}
        return AIOKafkaConsumer(**{**self._common(env), "client_id": client_id}, group_id=group, enable_auto_commit=False,
                                fetch_max_wait_ms=env.config.get("fetch.max.wait.ms", 500), **timers)


async def _assigned(consumer, env: RunEnv, limit_s: float) -> bool:
    """Poll (getmany, 50 ms) until the consumer has an assignment or ``limit_s`` passed."""
    start = env.clock()
    while not consumer.assignment() and env.clock() - start < limit_s:
        await consumer.getmany(timeout_ms=50)
    return bool(consumer.assignment())
