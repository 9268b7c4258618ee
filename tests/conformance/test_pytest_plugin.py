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
    from broker_emu.runtime import run_cluster_in_thread

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


@pytest.mark.kafka_cluster(brokers=1, topics=[("t", 1, 1)])
def test_sync_fixture_named_faults_and_waits(kafka_cluster):
    import client
    from broker_emu.waits import WaitTimeout

    error = kafka_cluster.faults.error("NOT_LEADER_OR_FOLLOWER", api="Produce", count=1)
    with client.Producer({"bootstrap.servers": kafka_cluster.bootstrap, "acks": 1, "linger.ms": 0}) as p:
        assert p.send("t", b"x", partition=0).result(10).offset == 0   # retried after the injected error
        seen = kafka_cluster.wait_for("partition", topic="t", partition=0, high_watermark=1, timeout=5)
        assert seen["high_watermark"] == 1 and error.hits == 1 and error.matched == 1
    with pytest.raises(WaitTimeout, match="^transactional id tx: waited 0.1 s for state Ongoing; last seen no such"):
        kafka_cluster.wait_for("transaction", transactional_id="tx", state="Ongoing", timeout=0.1)


async def test_trio_fixture_named_faults_and_waits(trio_kafka_cluster, autojump_clock):
    from tests.broker_emu.wire import WireClient, produce_body

    cluster = trio_kafka_cluster
    cluster.create_topic("t3", 1, 1)
    latency = cluster.faults.latency(api="Produce", ms=250)
    leader = cluster.partition("t3", 0).leader
    start = trio.current_time()
    await WireClient(cluster.connect(leader)).call(0, 9, produce_body("t3", 0, [b"a"], acks=1))
    assert trio.current_time() - start == 0.25
    assert (await cluster.wait_for("fault", id=latency.id, hits=1, timeout=0))["hits"] == 1
