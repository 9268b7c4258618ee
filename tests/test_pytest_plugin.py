"""The pytest plugin's fixtures, from sync, trio and asyncio tests."""

import asyncio
import time

import pytest
import trio


def test_sync_fixture_with_a_real_client(kafka_cluster):
    from kafka import KafkaProducer
    from kafka.errors import NotLeaderForPartitionError

    p = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap, retries=0, acks=1)
    try:
        p.partitions_for("plug")
        rule = kafka_cluster.add_fault({"match": {"api": "Produce"},
                                        "action": {"type": "error", "error": "NOT_LEADER_OR_FOLLOWER"}, "times": 1})
        with pytest.raises(NotLeaderForPartitionError):
            p.send("plug", b"x", partition=0).get(10)
        assert p.send("plug", b"y", partition=0).get(10).offset == 0  # times=1: the fault is spent
    finally:
        p.close()
    sent = kafka_cluster.trace(kind="send", api="Produce")
    assert [e.details.get("errors") for e in sent] == [[6], None]
    assert kafka_cluster.remove_fault(rule)


@pytest.mark.kafka_cluster(brokers=1, topics=[("t", 2, 1)])
def test_marker_configures_the_cluster(kafka_cluster):
    described = kafka_cluster.describe()
    assert len(described["brokers"]) == 1 and described["topics"][0]["name"] == "t"
    assert len(described["topics"][0]["partitions"]) == 2


@pytest.mark.kafka_cluster(brokers=1, topics=[("t", 1, 1)], kafka_version="2.8")
def test_marker_sets_a_version_profile(kafka_cluster):
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap)
    try:
        # kafka-python guesses a broker's release from its ApiVersions: 2.8's ranges say 2.8 (4.3 without a profile)
        assert admin._client.check_version() == (2, 8)
    finally:
        admin.close()


def test_fixture_starts_fast(request):
    from broker_emu import run_cluster_in_thread

    start = time.perf_counter()
    with run_cluster_in_thread(brokers=3):
        started = time.perf_counter() - start
    assert started < 2.0  # generous bound for a loaded CI machine; benchmarks measure the real figure


async def test_trio_fixture(trio_kafka_cluster):
    cluster = trio_kafka_cluster
    cluster.create_topic("t2", 1, 3)
    assert cluster.partition("t2", 0).leader in cluster.broker_ids()
    with trio.move_on_after(0.01):
        await trio.sleep_forever()


def test_asyncio_test_with_aiokafka(kafka_cluster):
    from aiokafka import AIOKafkaProducer

    async def main():
        p = AIOKafkaProducer(bootstrap_servers=kafka_cluster.bootstrap)
        await p.start()
        try:
            return await p.send_and_wait("a", b"hello")
        finally:
            await p.stop()

    md = asyncio.run(main())
    assert md.offset == 0
    assert [e.api for e in kafka_cluster.trace(kind="recv", api="Produce")] == ["Produce"]
