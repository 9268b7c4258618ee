"""The broker-emu-kafka data source: batch and streaming reads of emulator topics through our
own client, with partitions and offsets mapped to columns."""

import json

import pytest

from broker_emu.runtime import run_cluster_in_thread
from client import Producer

pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")]


@pytest.fixture(scope="module")
def cluster():
    with run_cluster_in_thread(brokers=2, topics=[("a", 2, 2), ("b", 1, 1)]) as tc:
        with Producer({"bootstrap.servers": tc.bootstrap}) as p:
            for i in range(10):
                p.send("a", f"v{i}".encode(), key=f"k{i}".encode(), partition=i % 2).result()
            p.send("b", b"only", headers=[("h", b"1")]).result()
        yield tc


def _reader(spark, tc, topics, **options):
    r = spark.read.format("broker-emu-kafka").option("bootstrap.servers", tc.bootstrap).option("subscribe", topics)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def test_batch_read_maps_partitions_offsets_keys_values_and_headers(spark, cluster):
    rows = _reader(spark, cluster, "a,b").collect()
    got = sorted((r.topic, r.partition, r.offset, r.key, r.value) for r in rows)
    want = sorted([("a", i % 2, i // 2, f"k{i}".encode(), f"v{i}".encode()) for i in range(10)] + [("b", 0, 0, None, b"only")])
    assert got == want
    b = next(r for r in rows if r.topic == "b")
    assert [(h.key, h.value) for h in b.headers] == [("h", b"1")] and b.timestamp is not None


def test_batch_read_honours_offset_ranges_per_partition(spark, cluster):
    df = _reader(spark, cluster, "a", startingOffsets=json.dumps({"a": {"0": 3}}),
                 endingOffsets=json.dumps({"a": {"0": 5, "1": 2}}))
    assert sorted((r.partition, r.offset) for r in df.collect()) == [(0, 3), (0, 4), (1, 0), (1, 1)]


def test_stream_reads_what_is_there_then_what_arrives(spark, cluster, tmp_path):
    stream = (spark.readStream.format("broker-emu-kafka").option("bootstrap.servers", cluster.bootstrap)
              .option("subscribe", "b").option("startingOffsets", "earliest").load())
    query = (stream.writeStream.format("memory").queryName("b_stream")
             .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        query.processAllAvailable()
        assert [(r.offset, r.value) for r in spark.sql("SELECT * FROM b_stream").collect()] == [(0, b"only")]
        with Producer({"bootstrap.servers": cluster.bootstrap}) as p:
            p.send("b", b"later").result()
        query.processAllAvailable()
        got = sorted((r.offset, r.value) for r in spark.sql("SELECT * FROM b_stream").collect())
        assert got == [(0, b"only"), (1, b"later")]
    finally:
        query.stop()
