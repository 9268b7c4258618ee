"""Where connections come from: a broker's TCP listeners — one per security protocol, the cluster's
(``emu.security.protocol``) and any in ``emu.extra.listeners`` — and in-memory connections for
virtual-time tests. Each connection runs the request pipeline of ``server.Connection`` and knows the
listener it came in on: that decides TLS, SASL, and which port the broker's endpoints carry in
answers (Kafka's brokers answer Metadata with the endpoints of the listener the request used)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, Callable, Protocol

import trio

from broker_emu import cluster_shape
from broker_emu.dropped_connects import DropHost, DropKeeper
from broker_emu.security.settings import tls_on
from broker_emu.server import Connection
from broker_emu.syn_gate import SynGate

if TYPE_CHECKING:
    from broker_emu.cluster import Cluster
    from broker_emu.security.settings import Security


class ListenerHost(DropHost, Protocol):
    """What ``serve_broker`` needs of what it serves for (the cluster, or the proxy): the
    listeners' security, and the fault rules, trace and clock its drop_connects keeper reads; it
    hands itself to each ``connection``."""

    @property
    def security(self) -> "Security": ...


class ListenedBroker(Protocol):
    """A broker as its listeners see it (the cluster's ``Broker``, the proxy's ``ProxyBroker``);
    extra listeners only where it has ``listeners``."""

    id: int
    host: str
    port: int
    listener_scope: trio.CancelScope | None


async def serve_broker(cluster: ListenerHost, broker: ListenedBroker, port: int = 0, *, connection: Callable[..., Connection] = Connection,
                       task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Listen for ``broker`` and run a ``connection`` (the emulator's pipeline, or one built with
    another backend: broker_emu.proxy) for each client until the listener's scope is cancelled. The cluster's
    listener is on ``port``; each extra one on the port it had before (a restarted broker), its
    configured first port + the broker id, or a free one."""
    security = cluster.security
    primary = await trio.open_tcp_listeners(port, host=broker.host)
    broker.port = primary[0].socket.getsockname()[1]
    served = [(security.protocol, listener) for listener in primary]
    ports: dict[str, int] | None = getattr(broker, "listeners", None)   # the extra listeners' ports
    if ports is not None:
        for protocol, first in security.extra_listeners.items():
            wanted = ports.get(protocol) or (first + broker.id if first else 0)
            opened = await trio.open_tcp_listeners(wanted, host=broker.host)
            ports[protocol] = opened[0].socket.getsockname()[1]
            served += [(protocol, listener) for listener in opened]
    cluster_shape.changed()   # the ports Metadata answers with

    def handler(protocol: str) -> Callable[[trio.SocketStream], Awaitable[None]]:
        async def handle(stream: trio.SocketStream) -> None:
            try:
                peer = stream.socket.getpeername()
                addr = f"{peer[0]}:{peer[1]}"
            except OSError:
                addr = "?"
            tls = security.tls
            # TLS wraps the stream; trio runs the handshake on the first read or write
            wrapped = trio.SSLStream(stream, tls.context, server_side=True) if tls is not None and tls_on(protocol) else stream
            if protocol == security.protocol:
                await connection(cluster, broker, wrapped, addr).run()
            else:
                await connection(cluster, broker, wrapped, addr, protocol).run()
        return handle

    gates = [(protocol, SynGate(listener)) for protocol, listener in served]
    keeper = DropKeeper(cluster, broker.id, [gate for _, gate in gates])
    try:
        keeper.update()   # a drop_connects rule already there closes the gates before the port is known
        with trio.CancelScope() as scope:
            broker.listener_scope = scope
            async with trio.open_nursery() as nursery:
                for protocol, gate in gates:
                    nursery.start_soon(gate.serve, handler(protocol), nursery)
                nursery.start_soon(keeper.run)
                task_status.started(broker.port)
    finally:
        keeper.stop()
        for _, listener in served:
            listener.socket.close()   # not aclose: under cancellation its checkpoint would leave the others open


def connect_in_memory(cluster: "Cluster", broker_id: int, protocol: str | None = None) -> trio.abc.Stream:
    """A client end of an in-memory connection to ``broker_id`` (virtual-time tests), as if it came
    in on the listener of ``protocol`` (the cluster's by default; no TLS in memory, SASL as that
    listener runs it)."""
    broker = cluster.brokers.get(broker_id)
    if broker is None or not broker.alive:
        raise OSError(f"connection refused: broker {broker_id} is {'unknown' if broker is None else 'stopped'}")
    if not cluster.tasks.running:
        raise RuntimeError("the cluster is not running")
    if protocol is not None and protocol not in cluster.security.protocols:
        raise ValueError(f"no {protocol} listener (listeners: {', '.join(cluster.security.protocols)})")
    import trio.testing  # here, not at the top: it imports pytest (100+ ms off `broker-emu serve` start)

    client_end, server_end = trio.testing.memory_stream_pair()
    cluster.tasks.start_soon(Connection(cluster, broker, server_end, f"memory:{broker_id}", protocol).run)
    return client_end
