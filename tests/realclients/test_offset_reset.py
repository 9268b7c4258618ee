"""Every client resets per auto.offset.reset when its position is out of range.

A partition holds 5 records; the consumer starts at offset 1000 (assign + seek, or for kafkajs a
group whose committed offset is 1000). The broker answers the Fetch with OFFSET_OUT_OF_RANGE and an
empty record set, as Kafka does. With earliest the consumer then reads the 5 records; with latest
it reads only a record produced after it reset. The emulator's trace shows each step: the Fetch
answered with error 1, then the ListOffsets the client sent to reset; for latest the new record is
produced only after that ListOffsets was answered, so it lands past the reset position.

Regression: the Fetch error went out with a null record set; librdkafka (confluent-kafka, kcat)
rejected the whole response ("invalid MessageSetSize -1"), never saw the error and stalled.
Real time, generous bounds (45 s per consumer)."""

import asyncio
import json
import queue
import subprocess
import threading
import time

import pytest

import client
from tests.broker_emu.wire import WireClient, produce_body
from tests.realclients.conftest import ROOT, require_client

pytestmark = pytest.mark.realclient
RESETS = ["earliest", "latest"]
VALUES = [b"v%d" % i for i in range(5)]
SECONDS = 45
PRODUCE = 0


def produce(cluster, topic: str, values: list[bytes]) -> None:
    """acks=all, one record per request, straight over an in-memory connection to the leader."""
    async def go():
        c = cluster.cluster
        w = WireClient(c.connect(c.partition(topic, 0).leader), client_id="test-producer")
        for v in values:
            r = await w.call(PRODUCE, 9, produce_body(topic, 0, [v]))
            assert r.responses[0].partition_responses[0].error_code == 0
        await w.stream.aclose()
    cluster.acall(go)


def prepare(cluster, name: str) -> float:
    """A 1-partition topic holding VALUES; returns the trace time from which to look."""
    cluster.call(lambda: cluster.cluster.create_topic(name, 1, 3))
    produce(cluster, name, VALUES)
    return cluster.call(lambda: cluster.cluster.trace.now_ms())


def reset_seen(cluster, since_ms: float) -> bool:
    """The trace holds a Fetch answered with OFFSET_OUT_OF_RANGE, then an answered ListOffsets."""
    sent = cluster.call(lambda: [(e.api, (e.details or {}).get("errors", [])) for e in
                                 cluster.cluster.trace.query(since_ms=since_ms, kind="send")])
    oor = next((i for i, (api, errors) in enumerate(sent) if api == "Fetch" and 1 in errors), None)
    return oor is not None and any(api == "ListOffsets" for api, _ in sent[oor + 1:])


def drive(cluster, topic: str, reset: str, since_ms: float, poll_once) -> tuple[list[bytes], bool]:
    """Poll until the expected records arrive. For latest, produce b"after" once the reset is in
    the trace. Returns (values read, whether the reset was seen)."""
    want = len(VALUES) if reset == "earliest" else 1
    produced = reset == "earliest"
    got: list[bytes] = []
    deadline = time.time() + SECONDS
    while len(got) < want and time.time() < deadline:
        got += poll_once()
        if not produced and reset_seen(cluster, since_ms):
            produce(cluster, topic, [b"after"])
            produced = True
    return got, reset_seen(cluster, since_ms)


def expected(reset: str) -> list[bytes]:
    return VALUES if reset == "earliest" else [b"after"]


def check_reset(cluster, topic: str, reset: str, since_ms: float, poll_once, close) -> None:
    """Drive the consumer, close it (``close`` may return what the client said, for the message),
    and check both sides: the trace shows the reset, and the records are the expected ones."""
    try:
        got, seen = drive(cluster, topic, reset, since_ms, poll_once)
    finally:
        said = close() or ""
    context = f"; the client said {said}" if said else ""
    assert seen, "no OFFSET_OUT_OF_RANGE answer followed by a ListOffsets reset in the trace" + context
    assert got == expected(reset), said


@pytest.mark.parametrize("reset", RESETS)
def test_confluent_kafka_resets(cluster, reset):
    require_client("confluent-kafka")
    from confluent_kafka import Consumer, TopicPartition

    topic = f"oor-confluent-{reset}"
    since = prepare(cluster, topic)
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "unused", "enable.auto.commit": False,
                  "auto.offset.reset": reset, "fetch.wait.max.ms": 200})
    c.assign([TopicPartition(topic, 0, 1000)])

    def poll_once():
        m = c.poll(0.3)
        return [m.value()] if m is not None and m.error() is None else []

    check_reset(cluster, topic, reset, since, poll_once, c.close)


@pytest.mark.parametrize("reset", RESETS)
def test_kafka_python_resets(cluster, reset):
    require_client("kafka-python")
    from kafka import KafkaConsumer, TopicPartition

    topic = f"oor-kafka-python-{reset}"
    since = prepare(cluster, topic)
    c = KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset=reset, enable_auto_commit=False,
                      fetch_max_wait_ms=200)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek(tp, 1000)

    def poll_once():
        return [r.value for batch in c.poll(timeout_ms=300).values() for r in batch]

    check_reset(cluster, topic, reset, since, poll_once, c.close)


@pytest.mark.parametrize("reset", RESETS)
def test_aiokafka_resets(cluster, reset):
    require_client("aiokafka")
    from aiokafka import AIOKafkaConsumer, TopicPartition

    topic = f"oor-aiokafka-{reset}"
    since = prepare(cluster, topic)
    loop = asyncio.new_event_loop()
    tp = TopicPartition(topic, 0)

    async def start():
        c = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset=reset, enable_auto_commit=False,
                             fetch_max_wait_ms=200)
        await c.start()
        c.assign([tp])
        c.seek(tp, 1000)
        return c

    c = loop.run_until_complete(start())

    def poll_once():
        batches = loop.run_until_complete(c.getmany(timeout_ms=300))
        return [r.value for batch in batches.values() for r in batch]

    def close():
        loop.run_until_complete(c.stop())
        loop.close()

    check_reset(cluster, topic, reset, since, poll_once, close)


@pytest.mark.parametrize("reset", RESETS)
def test_our_consumer_resets(cluster, reset):
    topic = f"oor-ours-{reset}"
    since = prepare(cluster, topic)
    c = client.Consumer({"bootstrap.servers": cluster.bootstrap, "auto.offset.reset": reset, "fetch.max.wait.ms": 200})
    c.assign([(topic, 0)])
    c.seek((topic, 0), 1000)

    def poll_once():
        return [r.value for r in c.poll(0.3)]

    check_reset(cluster, topic, reset, since, poll_once, c.close)


class Lines:
    """A child process whose stdout lines are read by a thread, polled without blocking."""

    def __init__(self, args: list[str]):
        self.proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip(b"\n"))

    def poll(self, timeout: float = 0.3) -> list[bytes]:
        out = []
        try:
            out.append(self.lines.get(timeout=timeout))
            while True:
                out.append(self.lines.get_nowait())
        except queue.Empty:
            return out

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self.reader.join(10)
        stderr = self.proc.stderr.read().decode(errors="replace")[-2000:]
        self.proc.stdout.close()
        self.proc.stderr.close()
        return stderr


@pytest.mark.parametrize("reset", RESETS)
def test_kcat_resets(cluster, reset):
    require_client("kcat")
    topic = f"oor-kcat-{reset}"
    since = prepare(cluster, topic)
    count = len(expected(reset))
    kcat = Lines(["kcat", "-b", cluster.bootstrap, "-C", "-t", topic, "-p", "0", "-o", "1000", "-c", str(count),
                  "-f", "%s\n", "-X", f"auto.offset.reset={reset}", "-X", "fetch.wait.max.ms=200"])
    check_reset(cluster, topic, reset, since, kcat.poll, kcat.stop)


@pytest.mark.parametrize("reset", RESETS)
def test_kafkajs_resets(cluster, reset):
    """kafkajs has no auto.offset.reset: a group member resets to the earliest offset when it
    subscribed fromBeginning, else to the latest (ConsumerGroup.recoverFromOffsetOutOfRange)."""
    require_client("kafkajs")
    topic = f"oor-kafkajs-{reset}"
    since = prepare(cluster, topic)
    count = len(expected(reset))
    node = Lines(["node", "tests/realclients/offset_reset_kafkajs.js", cluster.bootstrap, topic, f"g-{reset}",
                  "true" if reset == "earliest" else "false", str(count), str(SECONDS * 1000)])

    def poll_once():
        rows = [json.loads(line) for line in node.poll()]
        return [r["value"].encode() for r in rows if "value" in r]

    check_reset(cluster, topic, reset, since, poll_once, node.stop)
