"""Replacing the whole broker set: the move KIP-899 and KIP-1102 were written for. New brokers
join at new addresses, every partition is reassigned onto them (KIP-455: they copy the logs at
the replication's pace, ``broker_emu.reassignments``), and once every reassignment is complete the
old brokers stop. A client that knew only the old brokers can then reach the cluster only
through ``bootstrap.servers`` — a DNS name or load balancer that now leads to the new brokers,
which in a test is the connect function mapping the bootstrap address (node -1) to a new broker.

Kept apart from ``cluster.py``: this is an operation on a running cluster, built from the
cluster's own parts (adding a broker, reassignments, ``stop_broker``).
"""

from __future__ import annotations

from typing import Any

from broker_emu import cluster_shape, reassignments
from broker_emu.brokers import Broker
from broker_emu.cluster import Cluster
from broker_emu.listeners import serve_broker
from broker_emu.trace import Kind
from broker_emu.waits import Condition, WaitTimeout, wait_until


async def add_broker(cluster: Cluster, broker_id: int, rack: str | None = None) -> Broker:
    """A new, empty broker; listening on a free port if the cluster listens on TCP."""
    if broker_id in cluster.brokers:
        raise ValueError(f"broker {broker_id} already exists")
    b = Broker(broker_id, cluster.host, rack=rack)
    cluster.brokers[broker_id] = b
    if cluster.faults.brokers is not None:
        cluster.faults.brokers.add(broker_id)   # so rules may name it
    cluster_shape.changed()
    cluster.trace.emit(Kind.BROKER_START, broker=broker_id, details={"added": True})
    if cluster.tasks.running and any(o.port for o in cluster.brokers.values() if o is not b):
        await cluster.tasks.start(serve_broker, cluster, b, 0)
    return b


async def replace_brokers(cluster: Cluster, *, timeout_s: float = 60.0) -> dict[int, int]:
    """Replace every live broker with a new one (ids after the highest; same racks), move each
    partition's replicas to the new brokers in the same order, wait until the reassignments
    complete (at most ``timeout_s`` of the cluster's clock), then stop the old brokers.
    Returns old id -> new id."""
    old = sorted(b.id for b in cluster.live_brokers())
    first = max(cluster.brokers) + 1
    mapping = {o: first + i for i, o in enumerate(old)}
    for o, n in mapping.items():
        await add_broker(cluster, n, rack=cluster.brokers[o].rack)
    for p in list(cluster.all_partitions()):
        reassignments.start(cluster, p, [mapping.get(r, r) for r in p.replicas])
    cluster_shape.changed()
    try:   # each reassignment completes on a replication event: waits.wait_until looks after each one
        await wait_until(cluster, Condition("replace_brokers", "every reassignment complete", lambda: _settled(cluster)),
                         timeout_s)
    except WaitTimeout as exc:
        raise TimeoutError(f"{exc}; the old brokers were left running") from None
    cluster.controller_id = mapping.get(cluster.controller_id, cluster.controller_id)
    for o in old:
        await cluster.stop_broker(o)
    return mapping


def _settled(cluster: Cluster) -> tuple[bool, dict[str, Any], str]:
    stuck = [f"{p.topic}-{p.index}" for p in cluster.all_partitions() if reassignments.in_progress(p)]
    return not stuck, {"in_progress": stuck}, f"{len(stuck)} in progress (e.g. {', '.join(stuck[:3])})"
