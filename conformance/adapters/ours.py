"""broker-emu's own client, in virtual time over the emulator's in-memory connections."""
# SASL settings become an authenticating connect (client/sasl.py) around the in-memory one

from __future__ import annotations

import trio

from broker_emu.broker_set import connect_front_door
from client.errors import KafkaError
from client.producer.async_producer import open_producer
from conformance.adapters import txn_probe
from conformance.adapters.admin_steps import ADMIN_OPERATIONS
from conformance.adapters.app_calls import step_ended, step_started, timed_start
from conformance.adapters.base import Adapter, RunEnv
from conformance.adapters.ours_admin import OursAdmin
from conformance.adapters.ours_blocking import OurBlockingAdapter
from conformance.adapters.ours_capabilities import OURS_ASYNC
from conformance.adapters.ours_common import (
    configure_producer,
    consumer_settings,
    error_name,
    first_visible,
    plain_producer_settings,
    producer_settings,
    secured,
    transaction_failed,
    txn_settings,
)
from conformance.adapters.ours_kip848 import KIP848_OPERATIONS, OursKip848
from conformance.adapters.ours_share import AsyncFace, told
from conformance.adapters.py_common import short, warm_step
from conformance.adapters.share_stories import SHARE_OPERATIONS
from conformance.model import SILENT_MEMBER, Operation, Outcome

__all__ = ["OurAdapter", "OurBlockingAdapter"]   # the blocking face's adapter lives in ours_blocking.py


class OurAdapter(OursKip848, OursAdmin, Adapter):
    name = "broker-emu (async)"
    sasl = True
    virtual_time = True
    operations = frozenset({"produce", "poll", "committed", "position", "end_offsets", "beginning_offsets",
                            "offsets_for_times", "list_topics", "partitions_for", "commit_sync", "close",
                            "configure_producer", "join_group_held", "produce_pipelined", "admin_list_topics",
                            "transaction", "txn_zombie", "read_committed_behind_open_txn",
                            "txn_abort_then_commit", "txn_error_probe"}) | KIP848_OPERATIONS | ADMIN_OPERATIONS | SHARE_OPERATIONS
    warm_up_calls = frozenset({"committed"})
    capabilities = OURS_ASYNC

    def _connect(self, env: RunEnv):
        async def connect(node, host, port):
            if node < 0 and env.cluster.front_door is not None:
                return connect_front_door(env.cluster)
            return await env.cluster.open_connection(node if node >= 0 else 0)
        return secured(env, connect)

    async def run(self, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
        outcomes = []
        for s in steps:
            step_started(env, s)
            if s.kind in SHARE_OPERATIONS:   # a share story (conformance/adapters/share_stories.py)
                outcome = await told(s, AsyncFace(env, self._connect(env)), s.timeout_s)
            else:
                outcome = await getattr(self, f"_{s.kind}")(s, env)
            step_ended(env, s, outcome)
            outcomes.append(outcome)
        return outcomes

    def _consumer_config(self, env: RunEnv, group: str | None) -> dict:
        return consumer_settings(env, group)

    async def _poll(self, step: Operation, env: RunEnv) -> Outcome:
        from client.consumer.async_consumer import open_consumer
        from client.consumer.records import TopicPartition

        async with open_consumer(self._consumer_config(env, None), connect=self._connect(env)) as consumer:
            consumer.assign([TopicPartition(step.args["topic"], step.args["partition"])])
            start = timed_start(env, step)
            records = await consumer.poll(step.timeout_s or 0.0)
            return Outcome("poll", True, trio.current_time() - start, value=len(records))

    async def _admin_list_topics(self, step: Operation, env: RunEnv) -> Outcome:
        """Our client has no admin client: its all-topics Metadata call is the consumer's
        list_topics() (KIP-266 deadline: the step's, else default.api.timeout.ms)."""
        from client.consumer.async_consumer import open_consumer

        rounds = int(step.args.get("repeat", 1))
        async with open_consumer(self._consumer_config(env, None), connect=self._connect(env)) as consumer:
            start, topics = trio.current_time(), {}
            for i in range(rounds):
                if i:
                    await trio.sleep(step.args.get("pause_s", 0.0))
                start = timed_start(env, step)
                try:
                    topics = await consumer.list_topics(timeout=step.timeout_s)
                except KafkaError as exc:
                    name = error_name(exc)
                    return Outcome("admin_list_topics", False, trio.current_time() - start, name,
                                   f"call {i + 1} of {rounds}: {exc}")
            return Outcome("admin_list_topics", True, trio.current_time() - start, value=sorted(topics))

    async def _committed(self, step: Operation, env: RunEnv) -> Outcome:
        from client.consumer.async_consumer import open_consumer
        from client.consumer.records import TopicPartition

        async with open_consumer(self._consumer_config(env, step.args["group"]), connect=self._connect(env)) as consumer:
            tps = [TopicPartition(step.args["topic"], step.args["partition"])]
            if step.args.get("warm_up"):
                try:
                    await consumer.committed(tps, timeout=warm_step(step, env).timeout_s)
                except KafkaError as exc:
                    return Outcome("committed", False, 0.0, type(exc).__name__, f"the warm-up call failed: {exc}")
            start = timed_start(env, step)
            try:
                got = await consumer.committed(tps, timeout=step.timeout_s)
                return Outcome("committed", True, trio.current_time() - start, value=got)
            except KafkaError as exc:
                name = error_name(exc)
                return Outcome("committed", False, trio.current_time() - start, name, str(exc))

    async def _consumer_call(self, step: Operation, env: RunEnv, call) -> Outcome:
        """One deadline-taking consumer call on a fresh consumer (assigned to the step's
        partition), timed from the call itself."""
        from client.consumer.async_consumer import open_consumer
        from client.consumer.records import TopicPartition

        async with open_consumer(self._consumer_config(env, step.args.get("group", "cg")), connect=self._connect(env)) as consumer:
            tp = TopicPartition(step.args.get("topic", "t"), step.args.get("partition", 0))
            consumer.assign([tp])
            start = timed_start(env, step)
            try:
                got = await call(consumer, tp, step.timeout_s)
                return Outcome(step.kind, True, trio.current_time() - start, value=short(got))
            except KafkaError as exc:
                name = error_name(exc)
                return Outcome(step.kind, False, trio.current_time() - start, name, str(exc))

    async def _position(self, step, env):
        return await self._consumer_call(step, env, lambda c, tp, t: c.position(tp, timeout=t))

    async def _end_offsets(self, step, env):
        return await self._consumer_call(step, env, lambda c, tp, t: c.end_offsets([tp], timeout=t))

    async def _beginning_offsets(self, step, env):
        return await self._consumer_call(step, env, lambda c, tp, t: c.beginning_offsets([tp], timeout=t))

    async def _offsets_for_times(self, step, env):
        return await self._consumer_call(step, env, lambda c, tp, t: c.offsets_for_times(
            {tp: step.args.get("timestamp_ms", 0)}, timeout=t))

    async def _list_topics(self, step, env):
        return await self._consumer_call(step, env, lambda c, tp, t: c.list_topics(timeout=t))

    async def _partitions_for(self, step, env):
        return await self._consumer_call(step, env, lambda c, tp, t: c.partitions_for(tp.topic, timeout=t))

    async def _commit_sync(self, step, env):
        return await self._consumer_call(step, env, lambda c, tp, t: c.commit_sync({tp: step.args.get("offset", 0)}, timeout=t))

    async def _close(self, step: Operation, env: RunEnv) -> Outcome:
        """close(timeout) with a fetch in flight (started by a short poll first)."""
        from client.consumer.async_consumer import open_consumer
        from client.consumer.records import TopicPartition

        async with open_consumer(self._consumer_config(env, None), connect=self._connect(env)) as consumer:
            consumer.assign([TopicPartition(step.args.get("topic", "t"), step.args.get("partition", 0))])
            await consumer.poll(step.args.get("poll_first_s", 0.2))
            start = timed_start(env, step)
            try:
                await consumer.aclose(step.timeout_s)
                return Outcome("close", True, trio.current_time() - start)
            except KafkaError as exc:
                return Outcome("close", False, trio.current_time() - start, type(exc).__name__, str(exc))

    async def _configure_producer(self, step: Operation, env: RunEnv) -> Outcome:
        """Build a producer from the scenario's config; a refused config is the outcome."""
        from client.config import producer_config

        return configure_producer(env, producer_config)

    async def _join_group_held(self, step: Operation, env: RunEnv) -> Outcome:
        """A first member joins, then goes silent (the scenario black-holes the heartbeats of
        client id SILENT_MEMBER); the second member's JoinGroup is held by the coordinator until
        the first is expelled. Timed: the second member's wait for its assignment."""
        from client.consumer.async_consumer import open_consumer

        group = step.args.get("group", "held")
        topic = step.args.get("topic", "t")
        first_cfg = {**self._consumer_config(env, group), "client.id": SILENT_MEMBER}
        async with open_consumer(first_cfg, connect=self._connect(env)) as first:
            first.subscribe([topic])
            while not first.assignment():
                await first.poll(0.5)
            async with open_consumer(self._consumer_config(env, group), connect=self._connect(env)) as second:
                second.subscribe([topic])
                start = timed_start(env, step)
                with trio.move_on_after(step.timeout_s or 600):
                    while not second.assignment():
                        await second.poll(0.5)
                ok = bool(second.assignment())
                return Outcome("join_group_held", ok, trio.current_time() - start, None if ok else "TimeoutException",
                               None if ok else "the second member never got an assignment")

    async def _transaction(self, step: Operation, env: RunEnv) -> Outcome:
        """init_transactions, one record, ``open_s`` seconds open, commit_transaction; timed: the
        call that failed, else the commit. ``retry_commit``: after a TimeoutException the commit
        is called again (it must complete the same transaction)."""
        async with open_producer(self._txn_config(env, env.client_id), connect=self._connect(env)) as producer:
            start = timed_start(env, step)
            try:
                await producer.init_transactions()
                for _ in range(step.args.get("count", 1)):   # back to back: the next begins while markers may be pending
                    producer.begin_transaction()
                    await (await producer.send(step.args["topic"], b"txn", partition=step.args.get("partition"))).get()
                    await trio.sleep(step.args.get("open_s", 0.0))
                    start = timed_start(env, step)
                    await producer.commit_transaction()
                return Outcome("transaction", True, trio.current_time() - start)
            except KafkaError as exc:
                elapsed = trio.current_time() - start
                again = error_name(exc) == "TimeoutException" and bool(step.args.get("retry_commit"))
                if again:
                    await producer.commit_transaction(timeout=600)
                return transaction_failed(exc, elapsed, again)

    async def _txn_abort_then_commit(self, step: Operation, env: RunEnv) -> Outcome:
        """A transaction whose one record (txn-1) fails is aborted; the next one writes txn-2
        and commits. Timed: from the abort to the commit; the value is how the first record
        ended (None: delivered)."""
        topic, partition = step.args["topic"], step.args.get("partition")
        async with open_producer(self._txn_config(env, env.client_id), connect=self._connect(env)) as producer:
            await producer.init_transactions()
            producer.begin_transaction()
            first: str | None = None
            try:
                await (await producer.send(topic, b"txn-1", partition=partition)).get()
            except KafkaError as exc:
                first = error_name(exc)
            start = timed_start(env, step)
            try:
                await producer.abort_transaction()
                producer.begin_transaction()
                await (await producer.send(topic, b"txn-2", partition=partition)).get()
                await producer.commit_transaction()
            except KafkaError as exc:
                return Outcome("txn_abort_then_commit", False, trio.current_time() - start, error_name(exc), str(exc),
                               value=first)
            return Outcome("txn_abort_then_commit", True, trio.current_time() - start, value=first)

    async def _txn_error_probe(self, step: Operation, env: RunEnv) -> Outcome:
        """A transaction under a fault that answers one error, then what the producer can still do
        (conformance/adapters/txn_probe.py)."""
        topic, partition = step.args["topic"], step.args.get("partition")
        async with open_producer(self._txn_config(env, env.client_id), connect=self._connect(env)) as producer:
            async def send() -> None:
                await (await producer.send(topic, b"txn", partition=partition)).get()

            calls: dict[str, txn_probe.ACall] = {
                "init": producer.init_transactions, "begin": producer.begin_transaction, "send": send,
                "commit": producer.commit_transaction, "abort": producer.abort_transaction}
            return await txn_probe.run_async(calls, error_name, trio.current_time, trio.sleep, step.args["clear_s"])

    def _txn_config(self, env: RunEnv, client_id: str) -> dict:
        return txn_settings(env, client_id)

    async def _txn_zombie(self, step: Operation, env: RunEnv) -> Outcome:
        """A producer opens a transaction; a new instance with the same transactional.id starts
        (a restart) and commits its own; the old one's commit is timed and must be fenced."""
        topic, partition = step.args["topic"], step.args.get("partition")
        async with open_producer(self._txn_config(env, env.client_id), connect=self._connect(env)) as zombie, \
                open_producer(self._txn_config(env, f"{env.client_id}-new"), connect=self._connect(env)) as fresh:
            await zombie.init_transactions()
            zombie.begin_transaction()
            await (await zombie.send(topic, b"zombie", partition=partition)).get()
            await fresh.init_transactions()
            fresh.begin_transaction()
            await (await fresh.send(topic, b"fresh", partition=partition)).get()
            await fresh.commit_transaction()
            start = timed_start(env, step)
            try:
                await zombie.commit_transaction()
                return Outcome("txn_zombie", True, trio.current_time() - start)
            except KafkaError as exc:
                return Outcome("txn_zombie", False, trio.current_time() - start, type(exc).__name__, str(exc))

    async def _read_committed_behind_open_txn(self, step: Operation, env: RunEnv) -> Outcome:
        """A transaction is left open (its producer hangs); a plain record follows it. A
        read_committed consumer polls until it sees a record: timed, the wait for that."""
        from client.consumer.async_consumer import open_consumer
        from client.consumer.records import TopicPartition

        topic, partition = step.args["topic"], step.args.get("partition", 0)
        plain = plain_producer_settings(env, f"{env.client_id}-plain")
        consumer_config = {**self._consumer_config(env, None), "isolation.level": "read_committed"}
        async with open_producer(self._txn_config(env, f"{env.client_id}-hung"), connect=self._connect(env)) as hung, \
                open_producer(plain, connect=self._connect(env)) as other, \
                open_consumer(consumer_config, connect=self._connect(env)) as consumer:
            await hung.init_transactions()
            hung.begin_transaction()
            await (await hung.send(topic, b"in the open transaction", partition=partition)).get()
            await (await other.send(topic, b"after it", partition=partition)).get()
            consumer.assign([TopicPartition(topic, partition)])
            start, seen = trio.current_time(), list[bytes | None]()
            with trio.move_on_after(step.timeout_s or 600):
                while not seen:
                    seen = [r.value for r in await consumer.poll(1.0)]
            return first_visible("read_committed_behind_open_txn", seen, trio.current_time() - start)

    async def _produce_pipelined(self, step: Operation, env: RunEnv) -> Outcome:
        """``count`` records sent back to back, each its own batch (linger.ms=0, so the later
        ones go out while the first is in flight, on the same connection), then all awaited."""
        config = producer_settings(env)
        async with open_producer(config, connect=self._connect(env)) as producer:
            await producer.refresh_metadata([step.args["topic"]])
            start = timed_start(env, step)
            futures = []
            for _ in range(step.args.get("count", 2)):
                futures.append(await producer.send(step.args["topic"], step.args["value"], partition=step.args.get("partition")))
                await trio.sleep(step.args.get("gap_s", 0.01))
            try:
                metas = [await f.get() for f in futures]
                return Outcome("produce_pipelined", True, trio.current_time() - start, value=[m.offset for m in metas])
            except KafkaError as exc:
                name = error_name(exc)
                return Outcome("produce_pipelined", False, trio.current_time() - start, name, str(exc))

    async def _produce(self, step: Operation, env: RunEnv) -> Outcome:
        config = producer_settings(env)
        async with open_producer(config, connect=self._connect(env)) as producer:
            if step.args.get("warm_up", True):
                await producer.refresh_metadata([step.args["topic"]])
            start = timed_start(env, step)
            try:
                meta = None
                for _ in range(step.args.get("count", 1)):
                    future = await producer.send(step.args["topic"], step.args["value"], partition=step.args.get("partition"))
                    meta = await future.get()
                return Outcome("produce", True, trio.current_time() - start, value=meta.offset if meta else None)
            except KafkaError as exc:
                name = error_name(exc)
                return Outcome("produce", False, trio.current_time() - start, name, str(exc))
