"""Chaos with confluent-kafka (librdkafka), in real time: the emulated cluster listens on
loopback in its own thread (``run_cluster_in_thread``), the plan runs on that thread, each
producer is a ``confluent_kafka.Producer`` in a thread of its own and one
``confluent_kafka.Consumer`` reads along. Not a CI test (a seed takes its duration in wall
time); docs/chaos.md has the figures of a run.

librdkafka's settings mirror the virtual-time run's: acks=all, enable.idempotence,
message.timeout.ms (its delivery timeout) 120 s, request.timeout.ms 3 s (which only becomes the
Produce's timeout_ms), socket.timeout.ms 6 s (its client-side request timeout: it closes the
connection after that, as our request.timeout.ms does).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from broker_emu import run_cluster_in_thread
from conformance.chaos.accounting import Sent, account, record_value
from conformance.chaos.ours import CLUSTER_CONFIG, TOPIC
from conformance.chaos.plan import Chaos, make_plan
from conformance.chaos.readback import SeedResult, committed, join

PRODUCER_CONFIG = {"acks": "all", "enable.idempotence": True, "linger.ms": 5, "request.timeout.ms": 3000,
                   "socket.timeout.ms": 6000, "message.timeout.ms": 120_000, "retry.backoff.ms": 50,
                   "reconnect.backoff.ms": 50, "topic.metadata.refresh.interval.ms": 5000, "log_level": 0}
CONSUMER_CONFIG = {"group.id": "chaos-reader", "enable.auto.commit": False, "auto.offset.reset": "earliest",
                   "socket.timeout.ms": 6000, "fetch.wait.max.ms": 200, "topic.metadata.refresh.interval.ms": 5000,
                   "log_level": 0}
SETTLE_S = 150.0


def available() -> tuple[bool, str]:
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return False, "confluent-kafka is not installed (pip install confluent-kafka)"
    return True, ""


def run_seed(seed: int, *, duration: float = 60.0, partitions: int = 3, producers: int = 3, interval: float = 0.02,
             say: Callable[[str], None] | None = None, progress: Callable[[str], None] | None = None,
             progress_every: float = 10.0) -> SeedResult:
    """One seed in real time (``say`` gets each chaos action, ``progress`` a line every
    ``progress_every`` seconds)."""
    say = say or (lambda line: None)
    progress = progress or (lambda line: None)
    wall = time.perf_counter()
    config = {**CLUSTER_CONFIG, "emu.seed": seed}
    with run_cluster_in_thread(brokers=3, topics=[(TOPIC, partitions, 3)], config=config) as tc:
        cluster = tc.cluster
        assert cluster is not None   # started
        plan = make_plan(seed, TOPIC, duration, mean_gap=3.0)
        chaos = Chaos(cluster, plan, lambda line: say(f"seed {seed} {line}"))
        sent: list[list[Sent]] = [[] for _ in range(producers)]
        consumed: dict[tuple[int, int], bytes | None] = {}
        stop_consumer = threading.Event()
        errors: list[str] = []
        threads = [threading.Thread(target=_produce, args=(i, tc.bootstrap, partitions, duration, interval, sent[i], errors),
                                    name=f"chaos-producer-{i}") for i in range(producers)]
        chaos_thread = threading.Thread(target=tc.acall, args=(_chaos_then_heal, chaos), name="chaos")
        reader = threading.Thread(target=_consume, args=(tc.bootstrap, partitions, consumed, stop_consumer, errors),
                                  name="chaos-consumer")
        for t in [chaos_thread, reader, *threads]:
            t.start()
        _report_until_done(seed, wall, threads + [chaos_thread], sent, progress, progress_every)
        ends = tc.call(lambda: {p.index: p.high_watermark for p in cluster.topics[TOPIC].partitions})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(_upto(consumed, p) < end for p, end in ends.items()):
            time.sleep(0.2)
        stop_consumer.set()
        reader.join()
        log = tc.call(committed, cluster, TOPIC)
    stored, consumer = join(dict(consumed), log)
    every = [s for per in sent for s in per]
    return SeedResult(seed, "confluent-kafka", account(every, stored), consumer, plan.counts(),
                      time.perf_counter() - wall, time.perf_counter() - wall, plan.executed, errors)


async def _chaos_then_heal(chaos: Chaos) -> None:
    await chaos.run()
    await chaos.heal_all()


def _upto(consumed: dict, partition: int) -> int:
    return max((o + 1 for (p, o) in list(consumed) if p == partition), default=0)


def _report_until_done(seed: int, start: float, threads: list[threading.Thread], sent: list[list[Sent]],
                       say: Callable[[str], None], every: float) -> None:
    next_report = time.monotonic() + every
    while any(t.is_alive() for t in threads):
        time.sleep(0.2)
        if time.monotonic() < next_report:
            continue
        next_report += every
        records = [s for per in sent for s in list(per)]
        acked = sum(s.acked for s in records)
        failed = sum(s.error is not None for s in records)
        say(f"seed {seed}: {time.perf_counter() - start:5.0f}s, {len(records)} sent, {acked} acknowledged, "
            f"{failed} failed, {len(records) - acked - failed} waiting")


def _produce(index: int, bootstrap: str, partitions: int, duration: float, interval: float, sent: list[Sent],
             errors: list[str]) -> None:
    from confluent_kafka import KafkaException, Producer

    def on_error(err) -> None:
        if err.fatal():
            errors.append(f"producer {index}: fatal error {err.name()}: {err.str()}")

    producer = Producer({**PRODUCER_CONFIG, "bootstrap.servers": bootstrap, "client.id": f"chaos-producer-{index}",
                         "error_cb": on_error})
    deadline = time.monotonic() + duration
    n = 0
    while time.monotonic() < deadline:
        record = Sent(index, n, n % partitions)
        try:
            producer.produce(TOPIC, record_value(index, n), partition=record.partition, on_delivery=_outcome(record))
        except (BufferError, KafkaException) as exc:
            record.error = f"produce() raised {exc!r}"
        sent.append(record)
        n += 1
        producer.poll(0)
        time.sleep(interval * (1 + index / 2))   # unequal rates, as in the virtual-time run
    left = producer.flush(SETTLE_S)
    if left:
        errors.append(f"producer {index}: {left} records without a delivery report after flush({SETTLE_S:.0f})")


def _outcome(record: Sent):
    def on_delivery(err, msg) -> None:
        if err is not None:
            record.error = f"{err.name()}: {err.str()}"
        else:   # offset() is None when the answer gave none (DUPLICATE_SEQUENCE_NUMBER is a success)
            record.offset = msg.offset() if msg.offset() is not None else -1
    return on_delivery


def _consume(bootstrap: str, partitions: int, consumed: dict, stop: threading.Event, errors: list[str]) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({**CONSUMER_CONFIG, "bootstrap.servers": bootstrap})
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])
    try:
        while not stop.is_set():
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().fatal():
                    errors.append(f"consumer: {msg.error().str()}")
                continue
            consumed[msg.partition(), msg.offset()] = msg.value()
    finally:
        consumer.close()
