"""An emulated 3-broker cluster (the upstream) and a proxy in front of it, each on its own trio
thread, for tests that drive blocking clients through the proxy over loopback TCP."""

from __future__ import annotations

from typing import Any

import pytest

from broker_emu.proxy.proxy import run_proxy_in_thread
from broker_emu.runtime import run_cluster_in_thread


@pytest.fixture
def upstream():
    with run_cluster_in_thread(brokers=3, topics=[("t", 3, 3)], config={"group.initial.rebalance.delay.ms": 0}) as tc:
        yield tc


@pytest.fixture
def proxy(upstream):
    with run_proxy_in_thread(upstream.bootstrap) as tp:
        yield tp


def events(threaded: Any, kind: str | None = None) -> list:
    """A copy of the trace of a threaded cluster or proxy, read on its own thread."""
    return threaded.call(lambda: [e for e in threaded.cluster.trace.events if kind is None or e.kind == kind])


def ports(bootstrap: str) -> set[int]:
    return {int(part.rsplit(":", 1)[1]) for part in bootstrap.split(",")}


def add_fault(threaded: Any, rule: dict) -> None:
    threaded.call(lambda: threaded.cluster.faults.add(rule, threaded.cluster.now_ms()))
