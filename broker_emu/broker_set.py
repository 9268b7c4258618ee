"""Replacing the whole broker set: the move KIP-899 and KIP-1102 were written for. New brokers
join at new addresses, every partition is reassigned onto them (KIP-455: they copy the logs at
the replication's pace, ``broker_emu.reassignments``), and once every reassignment is complete the
old brokers stop. A client that knew only the old brokers can then reach the cluster only
through ``bootstrap.servers`` — a DNS name or load balancer that now leads to the new brokers,
which in a test is the cluster's front door (``broker_emu/front_door.py``: an address of its own,
over TCP or in memory) moved to a new broker, or a connect function mapping the bootstrap address
(node -1) to one.

Kept apart from ``cluster.py``: this is an operation on a running cluster, built from the
cluster's own parts (adding a broker, reassignments, ``stop_broker``).
"""

from __future__ import annotations

import socket
from typing import Any, Callable

import trio

from broker_emu import cluster_shape, reassignments
from broker_emu.brokers import Broker
from broker_emu.cluster import Cluster
from broker_emu.front_door import FrontDoor
from broker_emu.listeners import serve_broker
from broker_emu.security.settings import tls_on
from broker_emu.server import Connection
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


async def replace_brokers(cluster: Cluster, *, timeout_s: float = 60.0,
                          before_stop: Callable[[dict[int, int]], None] | None = None) -> dict[int, int]:
    """Replace every live broker with a new one (ids after the highest; same racks), move each
    partition's replicas to the new brokers in the same order, wait until the reassignments
    complete (at most ``timeout_s`` of the cluster's clock), call ``before_stop`` with the
    mapping, then stop the old brokers. Returns old id -> new id."""
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
    if before_stop is not None:
        before_stop(mapping)
    for o in old:
        await cluster.stop_broker(o)
    return mapping


def _settled(cluster: Cluster) -> tuple[bool, dict[str, Any], str]:
    stuck = [f"{p.topic}-{p.index}" for p in cluster.all_partitions() if reassignments.in_progress(p)]
    return not stuck, {"in_progress": stuck}, f"{len(stuck)} in progress (e.g. {', '.join(stuck[:3])})"


# -- the front door: the bootstrap address as an address of its own -----------------------------
def open_front_door(cluster: Cluster, target: int = 0) -> FrontDoor:
    """Give the cluster a bootstrap address of its own, leading to broker ``target``. On a cluster
    that listens on TCP it binds a port now (so bootstrap.servers can name it before the client
    starts) and serves it in the cluster's nursery, on the cluster's own security protocol
    without TLS; on an in-memory cluster ``connect_front_door`` is the way in."""
    if cluster.front_door is not None:
        raise ValueError(f"the cluster already has a front door at {cluster.front_door.address}")
    if target not in cluster.brokers:
        raise ValueError(f"no broker {target} (brokers: {sorted(cluster.brokers)})")
    door = FrontDoor(target, cluster.host)
    if any(b.port for b in cluster.brokers.values()):
        if tls_on(cluster.security.protocol):
            raise ValueError("the front door carries no TLS: open it on a PLAINTEXT or SASL_PLAINTEXT cluster")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((cluster.host, 0))
        sock.listen(128)
        door.port = sock.getsockname()[1]
        listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
        cluster.tasks.start_soon(_serve_front_door, cluster, door, listener)
    cluster.front_door = door
    return door


async def _serve_front_door(cluster: Cluster, door: FrontDoor, listener: trio.SocketListener) -> None:
    async def handle(stream: trio.SocketStream) -> None:
        broker = cluster.brokers[door.target]
        if not broker.alive:   # a load balancer whose backend is down: the connection ends at once
            await stream.aclose()
            return
        peer = stream.socket.getpeername()
        await Connection(cluster, broker, stream, f"{peer[0]}:{peer[1]}", via_bootstrap=True).run()

    with trio.CancelScope() as scope:
        door.scope = scope
        try:
            await trio.serve_listeners(handle, [listener])
        finally:
            await listener.aclose()


def connect_front_door(cluster: Cluster) -> trio.abc.Stream:
    """The client end of an in-memory connection through the front door; OSError, like a refused
    TCP connect, when the broker it leads to is stopped."""
    door = cluster.front_door
    if door is None:
        raise RuntimeError("the cluster has no front door (open_front_door)")
    broker = cluster.brokers[door.target]
    if not broker.alive:
        raise OSError(f"connection refused: the bootstrap address leads to broker {door.target}, which is stopped")
    import trio.testing  # here, not at the top: it imports pytest (as listeners.connect_in_memory)

    client_end, server_end = trio.testing.memory_stream_pair()
    cluster.tasks.start_soon(Connection(cluster, broker, server_end, f"memory:bootstrap->{door.target}", via_bootstrap=True).run)
    return client_end


def move_front_door(cluster: Cluster, target: int) -> None:
    """From now on the bootstrap address leads to broker ``target`` (a DNS record or a load
    balancer changed); connections already open through it stay with their broker."""
    door = cluster.front_door
    if door is None:
        raise RuntimeError("the cluster has no front door (open_front_door)")
    if target not in cluster.brokers:
        raise ValueError(f"no broker {target} (brokers: {sorted(cluster.brokers)})")
    door.target = target
    door.moves.append((cluster.now_ms(), target))
    cluster.trace.emit(Kind.BOOTSTRAP_MOVED, broker=target, details={"address": door.address})


async def move_cluster_behind_bootstrap(cluster: Cluster, *, timeout_s: float = 60.0) -> dict[int, int]:
    """The operator's move KIP-899 was written for: the brokers replaced by new ones at new
    addresses (``replace_brokers``), the bootstrap address moved to the new broker that replaced
    the one it led to once they hold every partition, then the old brokers stopped."""
    door = cluster.front_door
    if door is None:
        raise RuntimeError("the cluster has no front door (open_front_door)")
    return await replace_brokers(cluster, timeout_s=timeout_s,
                                 before_stop=lambda mapping: move_front_door(cluster, mapping.get(door.target, door.target)))
