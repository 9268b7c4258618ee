"""Real third-party clients: the helper that decides what a missing client means."""

from __future__ import annotations

import os
import socket

import pytest

from .clients import installed_version, require_client  # noqa: F401  (re-exported for the tests)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def cluster(request):
    """A 3-broker emulated cluster on loopback, with topic t (3 partitions, RF 3); with
    ``--broker kfake|kafka|kafka-proxy``, that broker with the same topic (other_brokers.py)."""
    broker = request.config.getoption("--broker")
    if broker != "emulator":
        from .other_brokers import KafkaTestCluster, KfakeCluster, WireCluster

        other: WireCluster = KfakeCluster() if broker == "kfake" else KafkaTestCluster(proxied=broker == "kafka-proxy")
        with other:
            yield other
        return
    from broker_emu.runtime import run_cluster_in_thread

    with run_cluster_in_thread(brokers=3, topics=[("t", 3, 3)], config={"group.initial.rebalance.delay.ms": 0}) as tc:
        yield tc


def run_node(script: str, *args: str, timeout: float = 60):
    import subprocess

    return subprocess.run(["node", os.path.join(ROOT, "tests", "realclients", script), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def silent():
    """A listener that completes the TCP handshake and never answers (a hung broker)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield f"127.0.0.1:{s.getsockname()[1]}"
