"""The network client: one connection per broker, request timeouts that disconnect (KIP-19).

Each connection is a sans-io ``ConnectionCore`` driven by two tasks: a reader that feeds
received bytes in, and a timer that sleeps until ``next_deadline()`` and then applies
``handle_timeouts(now)``. A request past its timeout closes its connection, fails every request
in flight on it, and asks the metadata for a refresh; the retry (the caller's business) goes out
on a new connection. Time comes only from trio's clock.
"""

from __future__ import annotations

import random
from typing import Any, Awaitable, Callable

import trio

from client.connection import ConnectionCore, InFlight
from client.errors import error_for_code
from client.protocol import ApiKey, supported_versions
from client.timeouts import ConnectionClosedError, ConnectTimeoutError, RequestTimeoutError

Connect = Callable[[int, str, int], Awaitable[trio.abc.Stream]]


async def tcp_connect(node: int, host: str, port: int) -> trio.abc.Stream:
    return await trio.open_tcp_stream(host, port)


class _Waiter:
    __slots__ = ("event", "body", "error")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.body: Any = None
        self.error: BaseException | None = None


class NodeConnection:
    def __init__(self, client: "NetworkClient", node: int, address: str, stream: trio.abc.Stream):
        self.client, self.node, self.address, self.stream = client, node, address, stream
        self.core = ConnectionCore(client.config["client.id"])
        self.versions: dict[int, tuple[int, int]] = {}
        self.closed = False
        self.scope = trio.CancelScope()
        self._wake = trio.Event()
        self._send_lock = trio.Lock()

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        try:
            with self.scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._reader)
                    nursery.start_soon(self._timer)
                    task_status.started()
        finally:
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(self.stream)

    async def _reader(self) -> None:
        while True:
            try:
                data = await self.stream.receive_some(1 << 20)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                self.close("the broker closed the connection")
                return
            for req, body in self.core.receive(data):
                waiter: _Waiter = req.result
                waiter.body = body
                waiter.event.set()

    async def _timer(self) -> None:
        while True:
            deadline = self.core.next_deadline()
            self._wake = trio.Event()
            with trio.move_on_at(deadline if deadline is not None else float("inf")):
                await self._wake.wait()
                continue
            expired = self.core.handle_timeouts(trio.current_time())
            if expired:
                self._expire(expired[0])

    def _expire(self, req: InFlight) -> None:
        api = ApiKey(req.api_key).api_name
        err = RequestTimeoutError(api, req.correlation_id, self.node, self.address, req.timeout * 1000,
                                  req.extra.get("setting", "request.timeout.ms"))
        waiter: _Waiter = req.result
        waiter.error = err
        self.close(f"closed after {api} (correlation id {req.correlation_id}) timed out client-side", skip=req)
        waiter.event.set()

    def close(self, why: str, skip: InFlight | None = None) -> None:
        if self.closed:
            return
        self.closed = True
        for req in self.core.abandon_all():
            if req is skip:
                continue
            waiter: _Waiter = req.result
            waiter.error = ConnectionClosedError(ApiKey(req.api_key).api_name, req.correlation_id, self.node, self.address, why)
            waiter.event.set()
        self.client._connection_closed(self)
        self.scope.cancel()

    async def send(self, api_key: int, version: int, body: Any, timeout: float, setting: str,
                   expects_response: bool = True) -> Any:
        if self.closed:
            raise ConnectionClosedError(ApiKey(api_key).api_name, -1, self.node, self.address, "connection closed")
        req = self.core.send(api_key, version, body, trio.current_time(), timeout, expects_response)
        req.result = waiter = _Waiter()
        req.extra["setting"] = setting
        self._wake.set()
        async with self._send_lock:
            try:
                await self.stream.send_all(self.core.take_outgoing())
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.close("the connection broke while sending")
        if not expects_response:
            return None
        await waiter.event.wait()
        if waiter.error is not None:
            raise waiter.error
        return waiter.body


class NetworkClient:
    """Connections per node id. Bootstrap addresses get node ids -1, -2, ... until metadata
    names the brokers."""

    def __init__(self, config: dict, nursery: trio.Nursery, connect: Connect | None = None,
                 rng: random.Random | None = None, on_disconnect: Callable[[int], None] | None = None):
        self.config = config
        self.nursery = nursery
        self.connect_fn = connect or tcp_connect
        self.rng = rng or random.Random(0)
        self.nodes: dict[int, tuple[str, int]] = {}
        for i, hostport in enumerate(str(config["bootstrap.servers"]).split(",")):
            host, _, port = hostport.strip().rpartition(":")
            self.nodes[-1 - i] = (host, int(port))
        self.connections: dict[int, NodeConnection] = {}
        self._connecting: dict[int, trio.Event] = {}
        self.failures: dict[int, int] = {}
        self.next_attempt: dict[int, float] = {}
        self.on_disconnect = on_disconnect or (lambda node: None)

    def _connection_closed(self, conn: NodeConnection) -> None:
        if self.connections.get(conn.node) is conn:
            del self.connections[conn.node]
        self.on_disconnect(conn.node)

    def backoff(self, node: int) -> float:
        """Exponential reconnect backoff with ±20% jitter (Kafka's shape)."""
        n = self.failures.get(node, 0)
        base = min(self.config["reconnect.backoff.ms"] * (2 ** max(n - 1, 0)), self.config["reconnect.backoff.max.ms"])
        return base * (0.8 + 0.4 * self.rng.random()) / 1000.0

    async def connection(self, node: int) -> NodeConnection:
        """The node's connection, connecting (and negotiating versions) if needed. Concurrent
        callers share one attempt, and nobody gets a connection before its ApiVersions answer."""
        while True:
            conn = self.connections.get(node)
            if conn is not None and not conn.closed:
                return conn
            pending = self._connecting.get(node)
            if pending is None:
                break
            await pending.wait()
            if node not in self.connections:
                break  # that attempt failed: try ourselves (its caller got the error)
        done = self._connecting[node] = trio.Event()
        try:
            return await self._connect(node)
        finally:
            del self._connecting[node]
            done.set()

    async def _connect(self, node: int) -> NodeConnection:
        wait_until = self.next_attempt.get(node, 0.0)
        if trio.current_time() < wait_until:
            await trio.sleep_until(wait_until)
        host, port = self.nodes[node]
        address = f"{host}:{port}"
        setup = self.config["socket.connection.setup.timeout.ms"] / 1000.0
        start = trio.current_time()
        try:
            with trio.fail_after(setup):
                stream = await self.connect_fn(node, host, port)
        except (trio.TooSlowError, OSError) as exc:
            self.failures[node] = self.failures.get(node, 0) + 1
            self.next_attempt[node] = trio.current_time() + self.backoff(node)
            if isinstance(exc, trio.TooSlowError):
                raise ConnectTimeoutError(node, address, (trio.current_time() - start) * 1000) from None
            raise ConnectionClosedError("connect", -1, node, address, f"connection failed: {exc}") from None
        self.failures.pop(node, None)
        conn = NodeConnection(self, node, address, stream)
        await self.nursery.start(conn.run)
        await self._negotiate(conn)
        if not conn.closed:
            self.connections[node] = conn
        return conn

    async def _negotiate(self, conn: NodeConnection) -> None:
        """ApiVersions first; on UNSUPPORTED_VERSION retry with the broker's max for key 18."""
        key = int(ApiKey.API_VERSIONS)
        version = supported_versions(key)[1]
        timeout = self.config["request.timeout.ms"] / 1000.0
        body = {"client_software_name": "broker-emu", "client_software_version": "0.1.0"}
        answer = await conn.send(key, version, body, timeout, "request.timeout.ms")
        if answer.error_code == 35:
            theirs = next((k.max_version for k in answer.api_keys if k.api_key == key), 0)
            answer = await conn.send(key, min(theirs, version), body, timeout, "request.timeout.ms")
        if answer.error_code:
            conn.close(f"ApiVersions failed with error {answer.error_code}")
            raise error_for_code(answer.error_code)
        conn.versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}

    def version_for(self, conn: NodeConnection, api_key: int, max_version: int | None = None) -> int:
        lo, hi = supported_versions(api_key)
        if max_version is not None:
            hi = min(hi, max_version)
        theirs = conn.versions.get(int(api_key))
        if theirs is None or theirs[1] < lo or theirs[0] > hi:
            raise ConnectionClosedError(ApiKey(api_key).api_name, -1, conn.node, conn.address,
                                        f"broker does not support {ApiKey(api_key).api_name} {lo}..{hi}")
        return min(hi, theirs[1])

    async def request(self, node: int, api_key: int, body: Any, *, timeout: float | None = None,
                      setting: str = "request.timeout.ms", expects_response: bool = True,
                      max_version: int | None = None) -> Any:
        conn = await self.connection(node)
        version = self.version_for(conn, api_key, max_version)
        t = timeout if timeout is not None else self.config["request.timeout.ms"] / 1000.0
        return await conn.send(int(api_key), version, body, t, setting, expects_response)

    def close(self) -> None:
        for conn in list(self.connections.values()):
            conn.close("the client is closing")
