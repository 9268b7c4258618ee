"""The blocking producer against `broker-emu` over real loopback TCP (real time, short timeouts)."""

import time

import pytest

import client
from broker_emu.runtime import run_cluster_in_thread
from client.errors import TimeoutException
from client.exceptions import NetworkThreadDied


def test_send_returns_a_future_and_callbacks_run():
    with run_cluster_in_thread(brokers=3, topics=[("t", 2, 3)]) as tc:
        seen = []
        with client.Producer({"bootstrap.servers": tc.bootstrap, "linger.ms": 2}) as p:
            futures = [p.send("t", b"v%d" % i, partition=i % 2, on_delivery=lambda e, m: seen.append((e, m))) for i in range(10)]
            assert p.flush(10) == 0
            offsets = sorted((f.result().partition, f.result().offset) for f in futures)
        assert offsets == [(0, i) for i in range(5)] + [(1, i) for i in range(5)]
        assert len(seen) == 10 and all(e is None for e, _ in seen)
        assert tc.call(lambda: tc.cluster.partition("t", 1).log_end_offset) == 5


def test_send_blocks_at_most_max_block_ms_for_a_missing_topic():
    with run_cluster_in_thread(brokers=1, config={"auto.create.topics.enable": False}) as tc:
        with client.Producer({"bootstrap.servers": tc.bootstrap, "max.block.ms": 300}) as p:
            start = time.perf_counter()
            future = p.send("missing", b"x")      # Java's send: a failed future, not an exception
            took = time.perf_counter() - start
            with pytest.raises(TimeoutException, match="max.block.ms=300 ms"):
                future.result(0)
            assert 0.3 <= took < 2.0  # generous upper bound for a busy machine


def test_partitions_for_fetches_metadata_or_gives_up_at_max_block_ms():
    from client.exceptions import MaxBlockTimeoutException

    with run_cluster_in_thread(brokers=3, topics=[("t", 2, 3)], config={"auto.create.topics.enable": False}) as tc:
        with client.Producer({"bootstrap.servers": tc.bootstrap, "max.block.ms": 300}) as p:
            assert [info.partition for info in p.partitions_for("t")] == [0, 1]
            start = time.perf_counter()
            assert p.send("t", b"x", partition=1).result(10).offset == 0     # metadata known: no wait
            assert time.perf_counter() - start < 1.0
            start = time.perf_counter()
            with pytest.raises(MaxBlockTimeoutException):
                p.partitions_for("missing")
            assert 0.3 <= time.perf_counter() - start < 2.0
            with pytest.raises(MaxBlockTimeoutException):
                p.partitions_for("missing", timeout=0.1)


def test_calls_after_close_fail_at_once():
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        p = client.Producer({"bootstrap.servers": tc.bootstrap})
        p.send("t", b"x").result(10)
        p.close(5)
        start = time.perf_counter()
        with pytest.raises(NetworkThreadDied):
            p.send("t", b"y")
        assert time.perf_counter() - start < 0.5


def test_bad_config_fails_in_the_constructor():
    from client.config import ConfigException

    with pytest.raises(ConfigException, match=r"delivery.timeout.ms \(10\)"):
        client.Producer({"bootstrap.servers": "127.0.0.1:1", "delivery.timeout.ms": 10})


def test_the_application_thread_never_waits_past_max_block_ms_even_if_the_network_thread_is_stuck():
    """A connect that blocks the network thread's whole trio loop (a real bug, simulated): the
    application thread still gets its answer at max.block.ms, and the record is never sent."""
    import threading

    release = threading.Event()

    async def stuck_connect(node, host, port):
        release.wait(10)        # blocks the entire network thread, not just this task
        raise OSError("gave up")

    p = client.Producer({"bootstrap.servers": "127.0.0.1:1", "max.block.ms": 200}, connect=stuck_connect)
    try:
        start = time.perf_counter()
        future = p.send("t", b"x")
        took = time.perf_counter() - start
        assert 0.2 <= took < 1.0
        with pytest.raises(TimeoutException, match="measured on the application thread"):
            future.result(0)
    finally:
        release.set()
        p.close(1)
