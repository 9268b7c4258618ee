"""A PySpark Python data source reading Kafka topics (the emulator or any Kafka) through
broker-emu's own client, so no Maven connector is needed.

    from conformance.campaign.kafka_source import register
    register(spark)
    df = (spark.read.format("broker-emu-kafka")
          .option("bootstrap.servers", "127.0.0.1:9092").option("subscribe", "t1,t2")
          .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    stream = spark.readStream.format("broker-emu-kafka").option(...).load()

Columns: topic, partition, offset, timestamp, key, value, headers (like Spark's Kafka source).
Options: ``bootstrap.servers`` (or ``kafka.bootstrap.servers``), ``subscribe`` (comma-separated
topics), ``startingOffsets`` / ``endingOffsets`` ("earliest", "latest" or JSON
``{"topic": {"0": 5}}``), ``pollTimeoutMs`` (how long one fetch may take before the read fails,
default 30000), and ``kafka.<key>`` for any consumer setting. One Spark partition per Kafka
partition and offset range; a stream's offsets are ``{"topic/partition": next offset}``.
Reads use the consumer in assign mode only (no group, nothing committed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from conformance.extras import DATA_SOURCE

try:
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceReader,
        DataSourceStreamReader,
        InputPartition,
    )
except ImportError as exc:   # the spark extra is not installed
    raise ImportError(DATA_SOURCE) from exc

SCHEMA = ("topic string, partition int, offset long, timestamp timestamp, key binary, value binary, "
          "headers array<struct<key: string, value: binary>>")
NAME = "broker-emu-kafka"


@dataclass
class OffsetRange(InputPartition):
    topic: str
    partition: int
    start: int     # first offset to read
    end: int       # first offset not to read

    def __init__(self, topic: str, partition: int, start: int, end: int):
        super().__init__(f"{topic}/{partition}")
        self.topic, self.partition, self.start, self.end = topic, partition, start, end


def _consumer_config(options: dict[str, str]) -> dict[str, Any]:
    bootstrap = options.get("bootstrap.servers") or options.get("kafka.bootstrap.servers")
    if not bootstrap:
        raise ValueError(f"{NAME}: option bootstrap.servers is required")
    config: dict[str, Any] = {k[len("kafka."):]: v for k, v in options.items() if k.startswith("kafka.")}
    for key, value in list(config.items()):
        if key.endswith((".ms", ".bytes", ".records")):
            config[key] = int(value)
    config.update({"bootstrap.servers": bootstrap, "group.id": None, "enable.auto.commit": False,
                   "auto.offset.reset": "earliest"})
    config.setdefault("client.id", "broker-emu-spark")
    return config


def _topics(options: dict[str, str]) -> list[str]:
    topics = [t.strip() for t in options.get("subscribe", "").split(",") if t.strip()]
    if not topics:
        raise ValueError(f"{NAME}: option subscribe (comma-separated topics) is required")
    return topics


def _run(options: dict[str, str], work):
    """Run ``work(consumer)`` in a fresh trio loop with a consumer (driver and workers alike)."""
    import trio

    from client.consumer.async_consumer import open_consumer

    async def main():
        async with open_consumer(_consumer_config(options)) as consumer:
            return await work(consumer)

    return trio.run(main)


def _offset_bounds(options: dict[str, str]) -> dict[tuple[str, int], tuple[int, int]]:
    """(earliest, latest) per partition of the subscribed topics."""
    from client.consumer.records import TopicPartition

    async def work(consumer):
        tps = []
        for topic in _topics(options):
            tps += [TopicPartition(topic, p) for p in sorted(await consumer.partitions_for(topic))]
        first = await consumer.beginning_offsets(tps)
        last = await consumer.end_offsets(tps)
        return {(tp.topic, tp.partition): (first[tp], last[tp]) for tp in tps}

    return _run(options, work)


def _resolve(spec: str | None, default: str, bounds: dict[tuple[str, int], tuple[int, int]]) -> dict[tuple[str, int], int]:
    spec = (spec or default).strip()
    if spec in ("earliest", "latest"):
        return {tp: b[0] if spec == "earliest" else b[1] for tp, b in bounds.items()}
    given = json.loads(spec)
    out = {}
    for tp, (lo, hi) in bounds.items():
        want = given.get(tp[0], {}).get(str(tp[1]))
        # -2 / -1: earliest / latest, as in Spark's Kafka source
        out[tp] = lo if want in (None, -2) and default == "earliest" else hi if want in (None, -1) else int(want)
    return out


def read_range(options: dict[str, str], part: OffsetRange):
    """Rows of one partition's offsets [start, end), in order."""
    import trio

    from client.consumer.records import TopicPartition

    if part.end <= part.start:
        return []
    tp = TopicPartition(part.topic, part.partition)
    wait_s = int(options.get("polltimeoutms", "30000")) / 1000

    async def work(consumer):
        consumer.assign([tp])
        consumer.seek(tp, part.start)
        rows = []
        next_offset = part.start
        while next_offset < part.end:
            with trio.move_on_after(wait_s) as scope:
                records: list[Any] = []
                while not records:
                    records = await consumer.poll(wait_s)
            if scope.cancelled_caught:
                raise TimeoutError(f"{NAME}: no records from {part.topic}-{part.partition} at offset {next_offset} "
                                   f"within pollTimeoutMs={wait_s * 1000:.0f}")
            for r in records:
                if part.start <= r.offset < part.end:
                    ts = datetime.fromtimestamp(r.timestamp / 1000, tz=UTC) if r.timestamp >= 0 else None
                    headers = [(k if isinstance(k, str) else bytes(k).decode(), None if v is None else bytes(v))
                               for k, v in r.headers]
                    rows.append((r.topic, r.partition, r.offset, ts,
                                 None if r.key is None else bytes(r.key), None if r.value is None else bytes(r.value), headers))
                next_offset = max(next_offset, r.offset + 1)
        return rows

    return _run(options, work)


class BatchReader(DataSourceReader):
    def __init__(self, options: dict[str, str]):
        self.options = options

    def partitions(self):
        bounds = _offset_bounds(self.options)
        start = _resolve(self.options.get("startingoffsets"), "earliest", bounds)
        end = _resolve(self.options.get("endingoffsets"), "latest", bounds)
        return [OffsetRange(t, p, start[(t, p)], end[(t, p)]) for (t, p) in sorted(bounds)]

    def read(self, partition: InputPartition):
        # Spark hands back one of the partitions partitions() made
        yield from read_range(self.options, cast(OffsetRange, partition))


class StreamReader(DataSourceStreamReader):
    """Micro-batches over offset ranges: each batch reads from the previous batch's end offsets
    up to the partitions' latest offsets when the batch was planned."""

    def __init__(self, options: dict[str, str]):
        self.options = options

    @staticmethod
    def _encode(offsets: dict[tuple[str, int], int]) -> dict[str, int]:
        return {f"{t}/{p}": o for (t, p), o in sorted(offsets.items())}

    @staticmethod
    def _decode(offsets: dict[str, int]) -> dict[tuple[str, int], int]:
        return {(k.rsplit("/", 1)[0], int(k.rsplit("/", 1)[1])): int(v) for k, v in offsets.items()}

    def initialOffset(self) -> dict:
        bounds = _offset_bounds(self.options)
        return self._encode(_resolve(self.options.get("startingoffsets"), "latest", bounds))

    def latestOffset(self) -> dict:
        return self._encode({tp: hi for tp, (_, hi) in _offset_bounds(self.options).items()})

    def partitions(self, start: dict, end: dict):
        lo, hi = self._decode(start), self._decode(end)
        return [OffsetRange(t, p, lo.get((t, p), 0), o) for (t, p), o in sorted(hi.items()) if o > lo.get((t, p), 0)]

    def read(self, partition: InputPartition):
        # Spark hands back one of the partitions partitions() made
        yield from read_range(self.options, cast(OffsetRange, partition))

    def commit(self, end: dict) -> None:
        """Nothing to do: the stream's offsets live in Spark's checkpoint, not in Kafka."""


class BrokerEmuKafka(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA

    def _options(self) -> dict[str, str]:
        # Spark treats option names case-insensitively; Kafka's own keys are lower case anyway
        return {k.lower(): v for k, v in self.options.items()}

    def reader(self, schema):
        return BatchReader(self._options())

    def streamReader(self, schema):
        return StreamReader(self._options())


def register(spark) -> None:
    spark.dataSource.register(BrokerEmuKafka)
