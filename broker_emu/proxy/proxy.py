"""The proxy: one local listener per upstream broker, the emulator's fault engine, trace and
control API in front of them.

A ``Proxy`` offers the part of the emulated ``Cluster`` that the connection pipeline
(``broker_emu.server.Connection``) and the control API (``ControlTarget``) use: ``trace``,
``faults``, ``config``, ``conn_ids``, ``now_ms``, ``stop_broker``/``start_broker``. Broker ids are
the upstream's node ids. Stopping a broker of the proxy closes its listener and its connections
(a network partition between the clients and that broker); the upstream broker keeps running and
keeps its leaderships, so ``move_leader`` and replication commands are refused.
"""

from __future__ import annotations

import contextlib
import itertools
import uuid
from dataclasses import dataclass, field
from typing import IO, Any, AsyncIterator, Awaitable, Callable, Iterable, Iterator, NamedTuple

import trio

from broker_emu.config import broker_config
from broker_emu.faults.engine import FaultEngine
from broker_emu.listeners import serve_broker
from broker_emu.proxy.answers import AnswerCache
from broker_emu.proxy.forward import proxy_connection
from broker_emu.proxy.upstream import Node, discover, parse_bootstrap
from broker_emu.runtime import ThreadedCluster
from broker_emu.security.settings import Security
from broker_emu.trace import DEFAULT_MAX_BYTES, Trace
from broker_emu.waits import Waits

DEFAULT_MAX_REQUEST = 104_857_600   # Kafka's socket.request.max.bytes


@dataclass
class ProxyBroker:
    """One upstream broker as the proxy serves it (the attributes ``serve_broker`` uses)."""

    id: int
    upstream: tuple[str, int]
    host: str = "127.0.0.1"
    port: int = 0
    alive: bool = True
    connections: set = field(default_factory=set)
    listener_scope: trio.CancelScope | None = None


class KnownTopic(NamedTuple):
    name: str


class Proxy(Waits):   # Waits: proxy.wait_for(...) on fault hits, connections, trace events
    def __init__(self, upstream: str, *, seed: int = 0, host: str = "127.0.0.1", trace_sink: IO[str] | None = None,
                 max_request_bytes: int = DEFAULT_MAX_REQUEST, trace_max_bytes: int = DEFAULT_MAX_BYTES):
        self.upstream = upstream
        self.host = host
        self.config = {"socket.request.max.bytes": max_request_bytes}
        self.trace = Trace(trio.current_time, sink=trace_sink, max_bytes=trace_max_bytes)
        self.faults = FaultEngine(seed=seed, brokers=set(), clock=self.trace.now_ms)
        # plain listeners: SASL frames pass through to the upstream, which authenticates (docs/proxy.md)
        self.security = Security(broker_config())
        self.brokers: dict[int, ProxyBroker] = {}
        self.conn_ids = itertools.count(1)
        self.cluster_id: str | None = None
        self.topic_names: dict[uuid.UUID, str] = {}   # learnt from Metadata answers (fault matching by topic id)
        self.answers = AnswerCache()
        self._nursery: trio.Nursery | None = None
        self._learning = trio.Lock()
        self.front_door: str | None = None   # open_front_door's address

    # -- what the pipeline and the control API use --------------------------------------------
    def now_ms(self) -> float:
        return self.trace.now_ms()

    def broker_ids(self) -> set[int]:
        return set(self.brokers)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{b.host}:{b.port}" for b in self.brokers.values())

    def topic_by_id(self, topic_id: uuid.UUID) -> KnownTopic | None:
        name = self.topic_names.get(topic_id)
        return KnownTopic(name) if name else None

    def local_address(self, node_id: int) -> tuple[str, int]:
        b = self.brokers[node_id]
        return b.host, b.port

    async def learn(self, nodes: Iterable[Node]) -> None:
        """Brokers named in an answer: a listener for each new one; a known one that moved is
        reached at its new address by the connections opened from now on."""
        async with self._learning:
            for node in nodes:
                known = self.brokers.get(node.node_id)
                if known is not None:
                    known.upstream = (node.host, node.port)
                    continue
                await self._listen(ProxyBroker(node.node_id, (node.host, node.port), self.host))

    async def _listen(self, broker: ProxyBroker, port: int = 0) -> None:
        assert self._nursery is not None, "the proxy is not running"
        self.brokers[broker.id] = broker
        assert self.faults.brokers is not None
        self.faults.brokers.add(broker.id)
        await self._nursery.start(lambda task_status: serve_broker(
            self, broker, port, connection=proxy_connection, task_status=task_status))

    async def stop_broker(self, broker_id: int) -> None:
        b = self.brokers[broker_id]
        if not b.alive:
            return
        b.alive = False
        self.trace.emit("broker_stop", broker=broker_id)
        if b.listener_scope is not None:
            b.listener_scope.cancel()
        for conn in list(b.connections):
            conn.abort("broker stopped")

    def stop_broker_later(self, broker_id: int, delay_s: float = 0.0) -> None:
        """A ``stop_broker`` fault with a delay (``faults.apply``), as the cluster runs it: in the
        proxy's nursery, ``delay_s`` from now."""
        assert self._nursery is not None, "the proxy is not running"

        async def stop() -> None:
            await trio.sleep(delay_s)
            await self.stop_broker(broker_id)

        self._nursery.start_soon(stop)

    def run_late(self, fn: Callable[[], Awaitable[None]]) -> None:
        """A held request whose client has gone (``faults/apply.hold``): answered in the proxy's
        nursery, over an upstream connection of its own (``forward.UpstreamBackend.late_answer``)."""
        assert self._nursery is not None, "the proxy is not running"
        self._nursery.start_soon(fn)

    async def start_broker(self, broker_id: int) -> None:
        b = self.brokers[broker_id]
        if b.alive:
            return
        b.alive = True
        self.trace.emit("broker_start", broker=broker_id)
        await self._listen(b, b.port)

    async def open_front_door(self, target: int) -> str:
        """A bootstrap address of the proxy's own, leading to upstream broker ``target``, as the
        emulator's front door (``broker_set.open_front_door``) leads to one of its brokers: a client
        given only this address can tell it from the brokers Metadata names, and so can the trace
        (``conn_open`` ``via: bootstrap``) and a fault rule's ``bootstrap`` selector. Its address."""
        assert self._nursery is not None, "the proxy is not running"
        if self.front_door is not None:
            raise ValueError(f"the proxy already has a front door at {self.front_door}")
        broker = self.brokers[target]
        listeners = await trio.open_tcp_listeners(0, host=self.host)

        async def handle(stream: trio.SocketStream) -> None:
            if not broker.alive:   # a load balancer whose backend is down: the connection ends at once
                await stream.aclose()
                return
            peer = stream.socket.getpeername()
            await proxy_connection(self, broker, stream, f"{peer[0]}:{peer[1]}", via_bootstrap=True).run()

        self._nursery.start_soon(trio.serve_listeners, handle, listeners)
        self.front_door = f"{self.host}:{listeners[0].socket.getsockname()[1]}"
        return self.front_door

    def move_leader(self, topic: str, partition: int, broker_id: int) -> None:
        raise ValueError("a proxy cannot move the leaders of its upstream cluster")

    def set_replication(self, topic: str | None, partition: int | None, follower: int | None, mode: str,
                        lag_ms: float = 0.0) -> None:
        raise ValueError("a proxy cannot change the replication of its upstream cluster")

    def set_marker_delay(self, ms: float | None) -> None:
        raise ValueError("a proxy cannot delay the transaction markers of its upstream cluster")

    def describe(self) -> dict[str, Any]:
        return {
            "mode": "proxy",
            "upstream": self.upstream,
            "cluster_id": self.cluster_id,
            "brokers": [{"id": b.id, "host": b.host, "port": b.port, "alive": b.alive,
                         "upstream": f"{b.upstream[0]}:{b.upstream[1]}", "connections": len(b.connections)}
                        for b in self.brokers.values()],
            "faults": [r.to_dict() for r in self.faults.rules.values()],
        }


@contextlib.asynccontextmanager
async def open_proxy(upstream: str, *, seed: int = 0, host: str = "127.0.0.1", trace_sink: IO[str] | None = None,
                     max_request_bytes: int = DEFAULT_MAX_REQUEST) -> AsyncIterator[Proxy]:
    """A running proxy in front of the cluster at ``upstream`` (``host:port[,host:port]``): it
    asks the upstream for its brokers and listens for each. Raises ``UpstreamError`` (an
    OSError) when no bootstrap server answers, ValueError for a malformed ``upstream``."""
    nodes, cluster_id = await discover(parse_bootstrap(upstream))
    proxy = Proxy(upstream, seed=seed, host=host, trace_sink=trace_sink, max_request_bytes=max_request_bytes)
    proxy.cluster_id = cluster_id
    async with trio.open_nursery() as nursery:
        proxy._nursery = nursery
        await proxy.learn(nodes)
        try:
            yield proxy
        finally:
            nursery.cancel_scope.cancel()


@contextlib.contextmanager
def run_proxy_in_thread(upstream: str, **kwargs: Any) -> Iterator[ThreadedCluster]:
    """The proxy on its own trio thread, for blocking code: ``.bootstrap``, ``.cluster`` (the
    Proxy), ``.call(fn, *args)`` on its thread."""
    tp = ThreadedCluster(open_proxy, upstream=upstream, **kwargs).start()
    try:
        yield tp
    finally:
        tp.stop()
