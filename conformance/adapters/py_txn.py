"""kafka-python's and aiokafka's transactional producers for the ``txn`` scenarios.

Neither has Java's max.block.ms bound on the transactional calls: kafka-python's
``init_transactions``/``commit_transaction`` and aiokafka's ``commit_transaction`` wait until the
coordinator answers (each request bounded by request_timeout_ms and retried). The adapter runs
them under the watchdog (py_common.watchdog_s): a call still blocked then is reported as
NoReturn, never waited for forever. Those are the clients' semantics, and the matrix shows them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from conformance.adapters import txn_probe
from conformance.adapters.base import RunEnv, scaled_ms
from conformance.adapters.py_common import NoReturn, call_in_thread, no_return, watchdog_s
from conformance.model import Operation, Outcome

TXN_OPERATIONS = frozenset({"transaction", "txn_zombie", "read_committed_behind_open_txn", "txn_abort_then_commit",
                            "txn_error_probe"})
HUNG, AFTER = b"in the open transaction", b"after it"
FIRST, SECOND = b"txn-1", b"txn-2"   # txn_abort_then_commit: the aborted transaction's record, the committed one's


def _name(exc: BaseException) -> str:
    name = type(exc).__name__
    if "ProducerFenced" in name or name == "InvalidProducerEpochError":   # aiokafka: ProducerFenced
        return "ProducerFencedError"
    return "TimeoutException" if "Timeout" in name else name


def _timeout_ms(env: RunEnv) -> int:
    return int(env.config.get("transaction.timeout.ms", scaled_ms(60_000, env.scale)))


def kafka_python_producer(adapter: Any, env: RunEnv, client_id: str) -> Any:
    from kafka import KafkaProducer

    common = {**adapter._common(env), "client_id": client_id}
    if "delivery.timeout.ms" in env.config:
        common["delivery_timeout_ms"] = env.config["delivery.timeout.ms"]
    if "linger.ms" in env.config:
        common["linger_ms"] = env.config["linger.ms"]
    return KafkaProducer(**common, transactional_id=f"{env.client_id}-tx", transaction_timeout_ms=_timeout_ms(env),
                         enable_idempotence=True, acks=-1,
                         max_block_ms=env.config.get("max.block.ms", scaled_ms(60_000, env.scale)))


def kp_transaction(adapter: Any, step: Operation, env: RunEnv) -> Outcome:
    clock: dict[str, float] = {"start": env.clock()}

    def run() -> Outcome:
        p = kafka_python_producer(adapter, env, env.client_id)
        p.init_transactions()
        for _ in range(step.args.get("count", 1)):
            p.begin_transaction()
            p.send(step.args["topic"], b"txn", partition=step.args.get("partition", 0)).get(timeout=30)
            time.sleep(step.args.get("open_s", 0.0) / env.scale)
            clock["start"] = env.clock()
            p.commit_transaction()
        return Outcome("transaction", True, env.clock() - clock["start"])

    return _guarded(step, env, "transaction", run, clock)


def kp_abort_then_commit(adapter: Any, step: Operation, env: RunEnv) -> Outcome:
    """A transaction whose one record fails is aborted; the next commits one record. Timed: from
    the abort to the commit; the value is how the first record ended (None: delivered)."""
    clock: dict[str, float] = {"start": env.clock()}

    def run() -> Outcome:
        topic, partition = step.args["topic"], step.args.get("partition", 0)
        p = kafka_python_producer(adapter, env, env.client_id)
        p.init_transactions()
        p.begin_transaction()
        first = None
        try:
            p.send(topic, FIRST, partition=partition).get(timeout=60)
        except Exception as exc:  # noqa: BLE001 - how the record ended is the point
            first = _name(exc)
        clock["start"] = env.clock()
        p.abort_transaction()
        p.begin_transaction()
        p.send(topic, SECOND, partition=partition).get(timeout=60)
        p.commit_transaction()
        return Outcome("txn_abort_then_commit", True, env.clock() - clock["start"], value=first)

    return _guarded(step, env, "txn_abort_then_commit", run, clock)


def kp_error_probe(adapter: Any, step: Operation, env: RunEnv) -> Outcome:
    """The probe of conformance/adapters/txn_probe.py with kafka-python (its errors by class name)."""
    clock: dict[str, float] = {"start": env.clock()}
    topic, partition = step.args["topic"], step.args.get("partition", 0)

    def run() -> Outcome:
        p = kafka_python_producer(adapter, env, env.client_id)
        calls = {"init": p.init_transactions, "begin": p.begin_transaction,
                 "send": lambda: p.send(topic, b"txn", partition=partition).get(timeout=60),
                 "commit": p.commit_transaction, "abort": p.abort_transaction}
        return txn_probe.run(calls, _raw_name, env.clock, time.sleep, step.args["clear_s"] / env.scale)

    return _guarded(step, env, txn_probe.OP, run, clock)


def _raw_name(exc: BaseException) -> str:
    """The client's own exception class (the table shows it as raised), a timeout as Kafka's name."""
    name = type(exc).__name__
    return f"TimeoutException ({name})" if "Timeout" in name and name != "TimeoutException" else name


async def ak_error_probe(adapter: Any, step: Operation, env: RunEnv) -> Outcome:
    """The probe with aiokafka (begin_transaction is a plain call; the others are awaited)."""
    clock = {"start": env.clock()}
    topic, partition = step.args["topic"], step.args.get("partition", 0)

    async def run() -> Outcome:
        p = _ak_producer(adapter, env, env.client_id)

        async def init() -> None:
            await p.start()   # aiokafka's start() is its initTransactions (InitProducerId)

        try:
            calls = {"init": init, "begin": p.begin_transaction,
                     "send": lambda: p.send_and_wait(topic, b"txn", partition=partition),
                     "commit": p.commit_transaction, "abort": p.abort_transaction}
            return await txn_probe.run_async(calls, _raw_name, env.clock, asyncio.sleep, step.args["clear_s"] / env.scale)
        finally:
            await p.stop()

    return await _ak_guarded(step, env, txn_probe.OP, run, clock)


def kp_zombie(adapter: Any, step: Operation, env: RunEnv) -> Outcome:
    clock: dict[str, float] = {"start": env.clock()}

    def run() -> Outcome:
        topic, partition = step.args["topic"], step.args.get("partition", 0)
        zombie = kafka_python_producer(adapter, env, env.client_id)
        zombie.init_transactions()
        zombie.begin_transaction()
        zombie.send(topic, b"zombie", partition=partition).get(timeout=30)
        fresh = kafka_python_producer(adapter, env, f"{env.client_id}-new")
        fresh.init_transactions()
        fresh.begin_transaction()
        fresh.send(topic, b"fresh", partition=partition).get(timeout=30)
        fresh.commit_transaction()
        clock["start"] = env.clock()
        zombie.commit_transaction()
        return Outcome("txn_zombie", True, env.clock() - clock["start"])

    return _guarded(step, env, "txn_zombie", run, clock)


def kp_read_committed(adapter: Any, step: Operation, env: RunEnv) -> Outcome:
    """A transaction left open, a plain record after it, a read_committed consumer polling until
    it sees a record (timed)."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    clock: dict[str, float] = {"start": env.clock()}
    topic, partition = step.args["topic"], step.args.get("partition", 0)

    def run() -> Outcome:
        hung = kafka_python_producer(adapter, env, f"{env.client_id}-hung")
        hung.init_transactions()
        hung.begin_transaction()
        hung.send(topic, HUNG, partition=partition).get(timeout=30)
        plain = KafkaProducer(**{**adapter._common(env), "client_id": f"{env.client_id}-plain"})
        plain.send(topic, AFTER, partition=partition).get(timeout=30)
        consumer = KafkaConsumer(**adapter._common(env), isolation_level="read_committed", auto_offset_reset="earliest",
                                 enable_auto_commit=False)
        consumer.assign([TopicPartition(topic, partition)])
        clock["start"] = env.clock()
        seen: list[bytes] = []
        while not seen and env.clock() - clock["start"] < (step.timeout_s or 60):
            for records in consumer.poll(timeout_ms=50).values():
                seen += [r.value for r in records]
        consumer.close()
        ok = bool(seen)
        return Outcome("read_committed_behind_open_txn", ok, env.clock() - clock["start"],
                       None if ok else "TimeoutException", None if ok else "no record became visible", value=seen)

    return _guarded(step, env, "read_committed_behind_open_txn", run, clock)


def _guarded(step: Operation, env: RunEnv, op: str, run: Callable[[], Outcome], clock: dict[str, float]) -> Outcome:
    limit = watchdog_s(step, env)
    try:
        return call_in_thread(run, limit)
    except NoReturn:
        return Outcome(op, False, env.clock() - clock["start"], "NoReturn", no_return(step, limit, "no max.block.ms bound"))
    except Exception as exc:  # noqa: BLE001 - the client's error is the outcome
        return Outcome(op, False, env.clock() - clock["start"], _name(exc), str(exc))


def _ak_producer(adapter: Any, env: RunEnv, client_id: str) -> Any:
    from aiokafka import AIOKafkaProducer

    return AIOKafkaProducer(**{**adapter._common(env), "client_id": client_id}, transactional_id=f"{env.client_id}-tx",
                            transaction_timeout_ms=_timeout_ms(env), enable_idempotence=True, acks="all")


async def ak_abort_then_commit(adapter: Any, step: Operation, env: RunEnv) -> Outcome:
    """kp_abort_then_commit with aiokafka (its batches expire at request_timeout_ms: it has no
    delivery timeout of its own)."""
    clock = {"start": env.clock()}

    async def run() -> Outcome:
        topic, partition = step.args["topic"], step.args.get("partition", 0)
        p = _ak_producer(adapter, env, env.client_id)
        await p.start()
        try:
            await p.begin_transaction()
            first = None
            try:
                await p.send_and_wait(topic, FIRST, partition=partition)
            except Exception as exc:  # noqa: BLE001 - how the record ended is the point
                first = _name(exc)
            clock["start"] = env.clock()
            await p.abort_transaction()
            await p.begin_transaction()
            await p.send_and_wait(topic, SECOND, partition=partition)
            await p.commit_transaction()
            return Outcome("txn_abort_then_commit", True, env.clock() - clock["start"], value=first)
        finally:
            await p.stop()

    return await _ak_guarded(step, env, "txn_abort_then_commit", run, clock)


async def ak_zombie(adapter: Any, step: Operation, env: RunEnv) -> Outcome:
    clock = {"start": env.clock()}

    async def run() -> Outcome:
        topic, partition = step.args["topic"], step.args.get("partition", 0)
        zombie, fresh = _ak_producer(adapter, env, env.client_id), _ak_producer(adapter, env, f"{env.client_id}-new")
        await zombie.start()
        try:
            await zombie.begin_transaction()
            await zombie.send_and_wait(topic, b"zombie", partition=partition)
            await fresh.start()
            try:
                async with fresh.transaction():
                    await fresh.send_and_wait(topic, b"fresh", partition=partition)
            finally:
                await fresh.stop()
            clock["start"] = env.clock()
            await zombie.commit_transaction()
            return Outcome("txn_zombie", True, env.clock() - clock["start"])
        finally:
            await zombie.stop()

    return await _ak_guarded(step, env, "txn_zombie", run, clock)


async def _ak_guarded(step: Operation, env: RunEnv, op: str, run: Callable[[], Any], clock: dict[str, float]) -> Outcome:
    limit = watchdog_s(step, env)
    try:
        return await asyncio.wait_for(run(), limit)
    except asyncio.TimeoutError:
        return Outcome(op, False, env.clock() - clock["start"], "NoReturn", no_return(step, limit, "no max.block.ms bound"))
    except Exception as exc:  # noqa: BLE001
        return Outcome(op, False, env.clock() - clock["start"], _name(exc), str(exc))


async def ak_read_committed(adapter: Any, step: Operation, env: RunEnv) -> Outcome:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    clock = {"start": env.clock()}
    topic, partition = step.args["topic"], step.args.get("partition", 0)

    async def run() -> Outcome:
        hung = _ak_producer(adapter, env, f"{env.client_id}-hung")
        plain = AIOKafkaProducer(**{**adapter._common(env), "client_id": f"{env.client_id}-plain"})
        consumer = AIOKafkaConsumer(**adapter._common(env), isolation_level="read_committed", auto_offset_reset="earliest",
                                    enable_auto_commit=False)
        await hung.start()
        await plain.start()
        try:
            await hung.begin_transaction()
            await hung.send_and_wait(topic, HUNG, partition=partition)
            await plain.send_and_wait(topic, AFTER, partition=partition)
            await consumer.start()
            consumer.assign([TopicPartition(topic, partition)])
            clock["start"] = env.clock()
            seen: list[bytes] = []
            while not seen and env.clock() - clock["start"] < (step.timeout_s or 60):
                for records in (await consumer.getmany(timeout_ms=50)).values():
                    seen += [r.value for r in records]
            ok = bool(seen)
            return Outcome("read_committed_behind_open_txn", ok, env.clock() - clock["start"],
                           None if ok else "TimeoutException", None if ok else "no record became visible", value=seen)
        finally:
            await consumer.stop()
            await plain.stop()
            await hung.stop()

    return await _ak_guarded(step, env, "read_committed_behind_open_txn", run, clock)


async def ak_transaction(adapter: Any, step: Operation, env: RunEnv) -> Outcome:
    clock = {"start": env.clock()}

    async def run() -> Outcome:
        p = _ak_producer(adapter, env, env.client_id)
        await p.start()
        try:
            for _ in range(step.args.get("count", 1)):
                await p.begin_transaction()
                await p.send_and_wait(step.args["topic"], b"txn", partition=step.args.get("partition", 0))
                await asyncio.sleep(step.args.get("open_s", 0.0) / env.scale)
                clock["start"] = env.clock()
                await p.commit_transaction()
            return Outcome("transaction", True, env.clock() - clock["start"])
        finally:
            await p.stop()

    return await _ak_guarded(step, env, "transaction", run, clock)
