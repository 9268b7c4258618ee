"""How each third-party client takes part in a real-time chaos seed
(conformance/chaos/realtime.py): a producer that reports every record's outcome, and a consumer
assigned to every partition from the beginning.

Settings mirror the virtual-time run's (conformance/chaos/ours.py) in each client's own names.
Where a client lacks one, the docstring of its kit says what stands in for it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from typing import Any, Callable, Iterable

from conformance.adapters.line_protocol import LineProtocolAdapter, decode_value
from conformance.chaos.accounting import Sent
from conformance.chaos.kits_txn import ConfluentTxnConsumer, ConfluentTxnProducer, LineTxnConsumer, LineTxnProducer
from conformance.chaos.ours import CONSUMER_CONFIG as OUR_CONSUMER
from conformance.chaos.ours import PRODUCER_CONFIG as OUR_PRODUCER
from conformance.chaos.ours import TOPIC
from conformance.chaos.realtime import Kit
from conformance.chaos.realtime_txn import TxnKit
from conformance.extras import client_missing

LINE_START_S = 120.0     # a JVM starting on a busy 2-core machine
LINE_CALL_S = 60.0       # a command the program answers at once, with a wide margin


def _acks(settings: dict) -> str | int:
    """Kafka's acks ("all", "1") as the Python clients take it ("all", 1)."""
    return "all" if str(settings["acks"]) in ("all", "-1") else int(settings["acks"])


def _installed(module: str, package: str) -> Callable[[], tuple[bool, str]]:
    def check() -> tuple[bool, str]:
        if importlib.util.find_spec(module) is None:
            return False, client_missing(package)
        return True, ""
    return check


# --- confluent-kafka (librdkafka) --------------------------------------------------------------
# request.timeout.ms only becomes the Produce's timeout_ms; socket.timeout.ms is librdkafka's own
# request timeout (it closes the connection after it, as our request.timeout.ms does);
# message.timeout.ms is its delivery timeout.
CONFLUENT_PRODUCER = {"acks": "all", "enable.idempotence": True, "linger.ms": 5, "request.timeout.ms": 3000,
                      "socket.timeout.ms": 6000, "message.timeout.ms": 120_000, "retry.backoff.ms": 50,
                      "reconnect.backoff.ms": 50, "topic.metadata.refresh.interval.ms": 5000, "log_level": 0}
CONFLUENT_CONSUMER = {"group.id": "chaos-reader", "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "socket.timeout.ms": 6000, "fetch.wait.max.ms": 200,
                      "topic.metadata.refresh.interval.ms": 5000, "log_level": 0}


class ConfluentProducer:
    def __init__(self, index: int, bootstrap: str, errors: list[str], settings: dict) -> None:
        from confluent_kafka import Producer

        def on_error(err) -> None:
            if err.fatal():
                errors.append(f"producer {index}: fatal error {err.name()}: {err.str()}")

        self._producer = Producer({**CONFLUENT_PRODUCER, **settings, "bootstrap.servers": bootstrap,
                                   "client.id": f"chaos-producer-{index}", "error_cb": on_error})

    def send(self, record: Sent, value: bytes) -> None:
        def on_delivery(err, msg) -> None:
            if err is not None:
                record.settle(error=f"{err.name()}: {err.str()}")
            else:   # offset() is None when the answer gave none (DUPLICATE_SEQUENCE_NUMBER is a success)
                record.settle(offset=msg.offset() if msg.offset() is not None else -1)
        self._producer.produce(TOPIC, value, partition=record.partition, on_delivery=on_delivery)
        self._producer.poll(0)

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def finish(self, settle_s: float) -> None:
        self._producer.flush(settle_s)


class ConfluentConsumer:
    def __init__(self, bootstrap: str, partitions: int, errors: list[str]) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        self._errors = errors
        self._consumer = Consumer({**CONFLUENT_CONSUMER, "bootstrap.servers": bootstrap})
        self._consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])

    def poll(self, timeout_s: float) -> Iterable[tuple[int, int, bytes | None]]:
        msg = self._consumer.poll(timeout_s)
        if msg is None:
            return ()
        if msg.error():
            if msg.error().fatal():
                self._errors.append(f"consumer: {msg.error().str()}")
            return ()
        return ((msg.partition(), msg.offset(), msg.value()),)

    def close(self) -> None:
        self._consumer.close()


# --- kafka-python -------------------------------------------------------------------------------
KAFKA_PYTHON_PRODUCER = dict(acks="all", enable_idempotence=True, linger_ms=5, request_timeout_ms=3000,
                             delivery_timeout_ms=120_000, retry_backoff_ms=50, reconnect_backoff_ms=50,
                             metadata_max_age_ms=5000)
KAFKA_PYTHON_CONSUMER = dict(enable_auto_commit=False, auto_offset_reset="earliest", request_timeout_ms=3000,
                             fetch_max_wait_ms=200, metadata_max_age_ms=5000, reconnect_backoff_ms=50)


class KafkaPythonProducer:
    """Its sender runs in a thread of the client's own; ``wait`` only sleeps."""

    def __init__(self, index: int, bootstrap: str, errors: list[str], settings: dict) -> None:
        from kafka import KafkaProducer

        self._producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=f"chaos-producer-{index}",
                                       **{**KAFKA_PYTHON_PRODUCER, "acks": _acks(settings),
                                          "enable_idempotence": settings["enable.idempotence"]})

    def send(self, record: Sent, value: bytes) -> None:
        future = self._producer.send(TOPIC, value=value, partition=record.partition)
        future.add_callback(lambda md: record.settle(offset=md.offset if md.offset is not None else -1))
        future.add_errback(lambda exc: record.settle(error=f"{type(exc).__name__}: {exc}"))

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def finish(self, settle_s: float) -> None:
        from kafka.errors import KafkaTimeoutError

        try:
            self._producer.flush(timeout=settle_s)
        except KafkaTimeoutError:
            pass   # the records still without an outcome are counted as unresolved
        self._producer.close(timeout=5)


class KafkaPythonConsumer:
    def __init__(self, bootstrap: str, partitions: int, errors: list[str]) -> None:
        from kafka import KafkaConsumer, TopicPartition

        self._consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="chaos-reader", **KAFKA_PYTHON_CONSUMER)
        self._consumer.assign([TopicPartition(TOPIC, p) for p in range(partitions)])
        self._consumer.seek_to_beginning()

    def poll(self, timeout_s: float) -> Iterable[tuple[int, int, bytes | None]]:
        batches = self._consumer.poll(timeout_ms=int(timeout_s * 1000))
        return [(tp.partition, r.offset, r.value) for tp, records in batches.items() for r in records]

    def close(self) -> None:
        self._consumer.close()


# --- aiokafka -----------------------------------------------------------------------------------
# aiokafka has no delivery timeout: a batch expires after request_timeout_ms without a leader to
# send it to (MessageAccumulator's batch_ttl), so its records fail sooner than the others'.
AIOKAFKA_PRODUCER = dict(acks="all", enable_idempotence=True, linger_ms=5, request_timeout_ms=3000,
                         retry_backoff_ms=50, metadata_max_age_ms=5000)
AIOKAFKA_CONSUMER = dict(enable_auto_commit=False, auto_offset_reset="earliest", request_timeout_ms=3000,
                         fetch_max_wait_ms=200, metadata_max_age_ms=5000)


class _OwnLoop:
    """An asyncio loop owned by one thread: the client works only while that thread runs it,
    so ``wait`` runs the loop instead of sleeping."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def run(self, coro) -> Any:
        return self.loop.run_until_complete(coro)

    def end(self) -> None:
        self.loop.close()


class AiokafkaProducer(_OwnLoop):
    def __init__(self, index: int, bootstrap: str, errors: list[str], settings: dict) -> None:
        super().__init__()
        from aiokafka import AIOKafkaProducer

        async def start():
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id=f"chaos-producer-{index}",
                                        **{**AIOKAFKA_PRODUCER, "acks": _acks(settings),
                                           "enable_idempotence": settings["enable.idempotence"]})
            await producer.start()
            return producer
        self._producer = self.run(start())
        self._pending: set[asyncio.Future] = set()

    def send(self, record: Sent, value: bytes) -> None:
        future = self.run(self._producer.send(TOPIC, value=value, partition=record.partition))

        def done(f: asyncio.Future) -> None:
            self._pending.discard(f)
            if f.cancelled():
                record.settle(error="cancelled")
            elif f.exception() is not None:
                exc = f.exception()
                record.settle(error=f"{type(exc).__name__}: {exc}")
            else:
                record.settle(offset=f.result().offset)
        self._pending.add(future)
        future.add_done_callback(done)

    def wait(self, seconds: float) -> None:
        self.run(asyncio.sleep(seconds))

    def finish(self, settle_s: float) -> None:
        async def settle():
            if self._pending:
                await asyncio.wait(set(self._pending), timeout=settle_s)
            await self._producer.stop()
        try:
            self.run(settle())
        finally:
            self.end()


class AiokafkaConsumer(_OwnLoop):
    def __init__(self, bootstrap: str, partitions: int, errors: list[str]) -> None:
        super().__init__()
        from aiokafka import AIOKafkaConsumer, TopicPartition

        async def start():
            consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, client_id="chaos-reader", **AIOKAFKA_CONSUMER)
            await consumer.start()
            consumer.assign([TopicPartition(TOPIC, p) for p in range(partitions)])
            await consumer.seek_to_beginning()
            return consumer
        self._consumer = self.run(start())

    def poll(self, timeout_s: float) -> Iterable[tuple[int, int, bytes | None]]:
        batches = self.run(self._consumer.getmany(timeout_ms=int(timeout_s * 1000)))
        return [(tp.partition, r.offset, r.value) for tp, records in batches.items() for r in records]

    def close(self) -> None:
        try:
            self.run(self._consumer.stop())
        finally:
            self.end()


# --- programs of the line protocol (conformance/adapters/line_protocol.py): Java, franz-go, sarama --
# Kafka's own names, the virtual-time run's settings exactly; one program per producer and one
# for the consumer, so a send blocked in the client (max.block.ms) holds up no other.
class LineProducer:
    def __init__(self, adapter: LineProtocolAdapter, index: int, bootstrap: str, errors: list[str],
                 settings: dict) -> None:
        self._adapter = adapter
        self._records: dict[int, Sent] = {}
        self._adapter.request({"cmd": "chaos_producer", "bootstrap": bootstrap, "client_id": f"chaos-producer-{index}",
                               "config": {**OUR_PRODUCER, **settings}, "topic": TOPIC}, LINE_START_S)

    def send(self, record: Sent, value: bytes) -> None:
        self._records[record.n] = record
        answer = self._adapter.request({"cmd": "chaos_send", "n": record.n, "partition": record.partition,
                                        "value": value}, LINE_CALL_S)
        if not answer.get("ok"):
            raise RuntimeError(answer.get("error"))

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)
        self._learn(self._adapter.request({"cmd": "chaos_outcomes"}, LINE_CALL_S))

    def finish(self, settle_s: float) -> None:
        try:
            self._learn(self._adapter.request({"cmd": "chaos_finish", "settle_ms": int(settle_s * 1000)},
                                              settle_s + LINE_CALL_S))
        finally:
            self._adapter.shutdown()

    def _learn(self, answer: dict[str, Any]) -> None:
        for n, offset, error in answer.get("outcomes", []):
            record = self._records[n]
            if error is not None:
                record.settle(error=error)
            else:
                record.settle(offset=offset)


class LineConsumer:
    def __init__(self, adapter: LineProtocolAdapter, bootstrap: str, partitions: int, errors: list[str]) -> None:
        self._adapter = adapter
        self._adapter.request({"cmd": "chaos_consumer", "bootstrap": bootstrap, "client_id": "chaos-reader",
                               "config": OUR_CONSUMER, "topic": TOPIC, "partitions": partitions}, LINE_START_S)

    def poll(self, timeout_s: float) -> Iterable[tuple[int, int, bytes | None]]:
        answer = self._adapter.request({"cmd": "chaos_poll", "timeout_ms": int(timeout_s * 1000)},
                                       timeout_s + LINE_CALL_S)
        return [(p, o, decode_value(v)) for p, o, v in answer.get("records", [])]

    def close(self) -> None:
        try:
            self._adapter.request({"cmd": "chaos_close"}, LINE_CALL_S)
        finally:
            self._adapter.shutdown()


def _java() -> LineProtocolAdapter:
    from conformance.adapters.java_client import JavaAdapter

    return JavaAdapter()


def _franz_go() -> LineProtocolAdapter:
    from conformance.adapters.go_clients import FranzGoAdapter

    return FranzGoAdapter()


def _sarama() -> LineProtocolAdapter:
    from conformance.adapters.go_clients import SaramaAdapter

    return SaramaAdapter()


def _program_kit(name: str, make: Callable[[], LineProtocolAdapter], txn: bool = False) -> Kit:
    """``txn``: the program has the transactional commands too (``chaos_txn_*``)."""
    return Kit(name, _program_available(make),
               lambda index, bootstrap, errors, settings: LineProducer(make(), index, bootstrap, errors, settings),
               lambda bootstrap, partitions, errors: LineConsumer(make(), bootstrap, partitions, errors),
               TxnKit(lambda *args: LineTxnProducer(make, OUR_PRODUCER, *args),
                      lambda *args: LineTxnConsumer(make, OUR_CONSUMER, *args)) if txn else None)


def _program_available(make: Callable[[], LineProtocolAdapter]) -> Callable[[], tuple[bool, str]]:
    def check() -> tuple[bool, str]:
        adapter = make()
        if adapter.command() is None:
            return False, adapter.not_built_reason()
        return True, ""
    return check


KITS = {
    "confluent-kafka": Kit("confluent-kafka", _installed("confluent_kafka", "confluent-kafka"),
                           ConfluentProducer, ConfluentConsumer,
                           TxnKit(lambda *args: ConfluentTxnProducer(CONFLUENT_PRODUCER, *args),
                                  lambda *args: ConfluentTxnConsumer(CONFLUENT_CONSUMER, *args))),
    "kafka-python": Kit("kafka-python", _installed("kafka", "kafka-python"), KafkaPythonProducer, KafkaPythonConsumer),
    "aiokafka": Kit("aiokafka", _installed("aiokafka", "aiokafka"), AiokafkaProducer, AiokafkaConsumer),
    "java": _program_kit("java", _java, txn=True),
    "franz-go": _program_kit("franz-go", _franz_go, txn=True),
    "sarama": _program_kit("sarama", _sarama),
}
