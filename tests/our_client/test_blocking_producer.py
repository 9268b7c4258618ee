"""The blocking producer against `broker-emu` over real loopback TCP (real time, short timeouts)."""

import time

import pytest

import client
from broker_emu import run_cluster_in_thread
from client.blocking import NetworkThreadDied
from client.errors import TimeoutException


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
            with pytest.raises(TimeoutException, match="max.block.ms=300 ms"):
                p.send("missing", b"x")
            assert time.perf_counter() - start < 2.0  # generous bound for a busy machine


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
