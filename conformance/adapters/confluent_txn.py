"""confluent-kafka's transactional producer for the ``txn`` scenarios (a mixin of ConfluentAdapter).

librdkafka has no max.block.ms: each transactional call takes a timeout, and the adapter passes
the scenario's (scaled) max.block.ms, so the contract judges the same bound as for Java. A call
that timed out raises a retriable KafkaError; calling it again resumes the same operation
(librdkafka's documented retry of commit_transaction)."""

from __future__ import annotations

import time
from typing import Any

from conformance.adapters import txn_probe
from conformance.adapters.base import RunEnv, scaled_ms
from conformance.adapters.py_txn import AFTER, HUNG
from conformance.model import Operation, Outcome

TXN_OPERATIONS = frozenset({"transaction", "txn_zombie", "txn_abort_then_commit", "txn_error_probe",
                            "read_committed_behind_open_txn"})


def _name(exc: BaseException) -> str:
    from confluent_kafka import KafkaError, KafkaException

    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        err = exc.args[0]
        if err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH):
            return "ProducerFencedException"
        if err.code() in (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT, KafkaError._MSG_TIMED_OUT):
            return "TimeoutException"
        return err.name()
    return type(exc).__name__


class DeliveryFailed(Exception):
    """A record's delivery report carried this KafkaError."""


def flagged_name(exc: BaseException) -> str:
    """librdkafka's error name with the class it gives it (KafkaError.retriable, txn_requires_abort, fatal)."""
    from confluent_kafka import KafkaError, KafkaException

    if isinstance(exc, (KafkaException, DeliveryFailed)) and exc.args and isinstance(exc.args[0], KafkaError):
        err = exc.args[0]
        flags = [f for f, on in (("retriable", err.retriable()), ("txn_requires_abort", err.txn_requires_abort()),
                                 ("fatal", err.fatal())) if on]
        return err.name() + (f" ({', '.join(flags)})" if flags else "")
    return type(exc).__name__


INIT_SETUP_S = 10.0   # init_transactions as set-up (not the call a scenario times)


class ConfluentTransactions:
    # librdkafka's floor on transaction.timeout.ms (1000 ms) is kept by the scenarios themselves:
    # client_capabilities.needs refuses one whose scaled timeout goes under it

    def _txn_producer(self, env: RunEnv, client_id: str) -> Any:
        from confluent_kafka import Producer

        conf = {**self._producer_conf(replace_client(env, client_id)),  # type: ignore[attr-defined]
                "transactional.id": f"{env.client_id}-tx", "enable.idempotence": True}
        conf.pop("retries", None)
        if "transaction.timeout.ms" in env.config:
            conf["transaction.timeout.ms"] = env.config["transaction.timeout.ms"]
            # librdkafka refuses a transactional producer whose socket.timeout.ms exceeds
            # transaction.timeout.ms + 100, or whose message.timeout.ms exceeds it (rd_kafka_new:
            # "... must be set <= `transaction.timeout.ms`"): an application with a short
            # transaction lowers them too
            limit = conf["transaction.timeout.ms"]
            conf["socket.timeout.ms"] = min(conf["socket.timeout.ms"], limit + 100)
            if "message.timeout.ms" in conf:
                conf["message.timeout.ms"] = min(conf["message.timeout.ms"], limit)
        return Producer(conf)

    @staticmethod
    def _block_s(env: RunEnv) -> float:
        return env.config.get("max.block.ms", scaled_ms(60_000, env.scale)) / 1000

    def _transaction(self, step: Operation, env: RunEnv) -> Outcome:
        """init_transactions, one record, ``open_s`` open (scaled), commit; ``count`` of them
        back to back; ``retry_commit``: commit again after a timeout. Timed: the failing call,
        else the last commit."""
        p = self._txn_producer(env, env.client_id)
        block = self._block_s(env)
        start, phase = env.clock(), "init"
        try:
            # the bound is the scenario's point only where init is what it times; elsewhere a
            # cold start on a loaded machine must not fail the set-up
            p.init_transactions(block if step.args.get("time_init") else max(block, INIT_SETUP_S))
            for _ in range(step.args.get("count", 1)):
                p.begin_transaction()
                p.produce(step.args["topic"], b"txn", partition=step.args.get("partition", 0))
                p.flush(max(block, INIT_SETUP_S))
                time.sleep(step.args.get("open_s", 0.0) / env.scale)
                start, phase = env.clock(), "commit"
                p.commit_transaction(block)
            return Outcome("transaction", True, env.clock() - start)
        except Exception as exc:  # noqa: BLE001 - librdkafka's errors become the outcome
            elapsed, name = env.clock() - start, _name(exc)
            value = None
            if name == "TimeoutException" and phase == "commit" and step.args.get("retry_commit"):
                p.commit_transaction(60)
                value = "committed when called again"
            return Outcome("transaction", False, elapsed, name, str(exc), value=value)

    def _read_committed_behind_open_txn(self, step: Operation, env: RunEnv) -> Outcome:
        """A transaction left open, a plain record after it, a read_committed consumer polling
        until it sees a record (timed from its assignment)."""
        from confluent_kafka import Consumer, Producer, TopicPartition

        topic, partition = step.args["topic"], step.args.get("partition", 0)
        start = env.clock()
        try:
            hung = self._txn_producer(env, f"{env.client_id}-hung")
            hung.init_transactions(INIT_SETUP_S)
            hung.begin_transaction()
            hung.produce(topic, HUNG, partition=partition)
            hung.flush(INIT_SETUP_S)
            plain = Producer({**self._producer_conf(replace_client(env, f"{env.client_id}-plain"))})  # type: ignore[attr-defined]
            plain.produce(topic, AFTER, partition=partition)
            plain.flush(INIT_SETUP_S)
            consumer = Consumer({**self._consumer_conf(env, f"{env.client_id}-reader"),  # type: ignore[attr-defined]
                                 "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
        except Exception as exc:  # noqa: BLE001 - the set-up failed: the outcome says so
            return Outcome("read_committed_behind_open_txn", False, env.clock() - start, _name(exc), str(exc))
        try:
            consumer.assign([TopicPartition(topic, partition, 0)])
            start = env.clock()
            seen: list[bytes] = []
            while not seen and env.clock() - start < (step.timeout_s or 60):
                message = consumer.poll(0.05)
                if message is not None and message.error() is None:
                    seen.append(message.value())
            ok = bool(seen)
            return Outcome("read_committed_behind_open_txn", ok, env.clock() - start,
                           None if ok else "TimeoutException", None if ok else "no record became visible", value=seen)
        finally:
            consumer.close()

    def _txn_abort_then_commit(self, step: Operation, env: RunEnv) -> Outcome:
        """A transaction whose one record (txn-1) fails is aborted; the next writes txn-2 and
        commits. Timed: from the abort to the commit; the value is how the first record ended
        (librdkafka's delivery report; None: delivered)."""
        topic, partition = step.args["topic"], step.args.get("partition", 0)
        block = max(self._block_s(env), INIT_SETUP_S)
        p = self._txn_producer(env, env.client_id)
        reports: list[Any] = []
        p.init_transactions(block)
        p.begin_transaction()
        p.produce(topic, b"txn-1", partition=partition, on_delivery=lambda err, msg: reports.append(err))
        p.flush(block)
        first = None if reports and reports[0] is None else (reports[0].name() if reports else "no delivery report")
        start = env.clock()
        try:
            p.abort_transaction(block)
            p.begin_transaction()
            p.produce(topic, b"txn-2", partition=partition)
            p.flush(block)
            p.commit_transaction(block)
            return Outcome("txn_abort_then_commit", True, env.clock() - start, value=first)
        except Exception as exc:  # noqa: BLE001 - librdkafka's errors become the outcome
            return Outcome("txn_abort_then_commit", False, env.clock() - start, _name(exc), str(exc), value=first)

    def _txn_error_probe(self, step: Operation, env: RunEnv) -> Outcome:
        """The probe of conformance/adapters/txn_probe.py: each call bounded by the scenario's
        max.block.ms; the error named with librdkafka's own class flags (retriable, abortable,
        fatal), which the table shows beside what the probe found the producer could still do."""
        topic, partition = step.args["topic"], step.args.get("partition", 0)
        block = self._block_s(env)
        p = self._txn_producer(env, env.client_id)

        def send() -> None:
            reports: list[Any] = []   # this record's own report (an earlier record's may still come in)
            p.produce(topic, b"txn", partition=partition, on_delivery=lambda err, msg: reports.append(err))
            p.flush(max(block, INIT_SETUP_S))
            if not reports:
                raise TimeoutError("no delivery report")
            if reports[0] is not None:
                raise DeliveryFailed(reports[0])

        calls = {"init": lambda: p.init_transactions(block), "begin": p.begin_transaction, "send": send,
                 "commit": lambda: p.commit_transaction(block), "abort": lambda: p.abort_transaction(block)}
        return txn_probe.run(calls, flagged_name, env.clock, time.sleep, step.args["clear_s"] / env.scale)

    def _txn_zombie(self, step: Operation, env: RunEnv) -> Outcome:
        topic, partition = step.args["topic"], step.args.get("partition", 0)
        block = self._block_s(env)
        zombie = self._txn_producer(env, env.client_id)
        zombie.init_transactions(block)
        zombie.begin_transaction()
        zombie.produce(topic, b"zombie", partition=partition)
        zombie.flush(block)
        fresh = self._txn_producer(env, f"{env.client_id}-new")
        fresh.init_transactions(30)
        fresh.begin_transaction()
        fresh.produce(topic, b"fresh", partition=partition)
        fresh.commit_transaction(30)
        start = env.clock()
        try:
            zombie.commit_transaction(block)
            return Outcome("txn_zombie", True, env.clock() - start)
        except Exception as exc:  # noqa: BLE001
            return Outcome("txn_zombie", False, env.clock() - start, _name(exc), str(exc))


def replace_client(env: RunEnv, client_id: str) -> RunEnv:
    from dataclasses import replace

    return replace(env, client_id=client_id)
