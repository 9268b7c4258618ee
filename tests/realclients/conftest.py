"""Real third-party clients: the helper that decides what a missing client means."""

from __future__ import annotations

import os

import pytest

from .clients import installed_version, require_client  # noqa: F401  (re-exported for the tests)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def cluster(request):
    """A 3-broker emulated cluster on loopback, with topic t (3 partitions, RF 3); with
    ``--broker kfake``, franz-go's kfake with the same topic (tests/realclients/kfake_cluster.py)."""
    if request.config.getoption("--broker") == "kfake":
        from .kfake_cluster import KfakeCluster

        with KfakeCluster() as kf:
            yield kf
        return
    from broker_emu import run_cluster_in_thread

    with run_cluster_in_thread(brokers=3, topics=[("t", 3, 3)], config={"group.initial.rebalance.delay.ms": 0}) as tc:
        yield tc


def run_node(script: str, *args: str, timeout: float = 60):
    import subprocess

    return subprocess.run(["node", os.path.join(ROOT, "tests", "realclients", script), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
