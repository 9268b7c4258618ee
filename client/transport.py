"""The trio driver of one broker connection, and the ``connect`` callables that open streams.

``connect(node_id, host, port) -> trio.abc.Stream`` is injected into the network client: TCP by
default, TLS when ``security.protocol`` is SSL, or anything a test hands in (the emulator's
in-memory connections, a stream that swallows frames). Never monkeypatched.

``BrokerConnection`` drives a sans-io ``ConnectionCore`` with two tasks: a reader that feeds
received bytes in, and a timer that sleeps until ``next_deadline()`` and applies
``handle_timeouts(now)``. It reads only ``trio.current_time()``. A request past its timeout
closes the connection and fails every request in flight on it (KIP-19); the network client is
told (``on_closed``) so it can back off reconnecting and ask for a metadata refresh.
"""

from __future__ import annotations

import math
import random
import ssl
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio

from client.connection import ConnectionCore, InFlight
from client.errors import KafkaError
from client.exceptions import ConnectionClosedError, RequestTimeoutException
from client.protocol import ApiKey, ProtocolError
from client.sasl import SaslLogin, SaslStream, TokenSource, unsecured_token_source
from kafka_common.wakeup import Wakeup
from kafka_common.wallclock import system_ms

Connect = Callable[[int, str, int], Awaitable[trio.abc.Stream]]
SETTLE_ROUNDS = 16
STREAM_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


async def tcp_connect(node: int, host: str, port: int) -> trio.abc.Stream:
    return await trio.open_tcp_stream(host, port)


def tls_connect(ssl_context: ssl.SSLContext | None = None, *, server_hostname: str | None = None,
                inner: Connect = tcp_connect) -> Connect:
    """TLS over ``inner`` (TCP by default). The handshake is part of connecting, so it counts
    against socket.connection.setup.timeout.ms, as in librdkafka and (measured with a stalled SASL
    handshake, security.sasl-handshake-stall) the Java client."""
    context = ssl_context or ssl.create_default_context()

    async def connect(node: int, host: str, port: int) -> trio.abc.Stream:
        raw = await inner(node, host, port)
        stream = trio.SSLStream(raw, context, server_hostname=server_hostname or host)
        try:
            await stream.do_handshake()
        except BaseException:
            await trio.aclose_forcefully(raw)
            raise
        return stream

    return connect


def sasl_connect(mechanism: str, user: str, password: str, client_id: str | None = None,
                 inner: Connect = tcp_connect, token: TokenSource | None = None) -> Connect:
    """SASL over ``inner`` (TCP or TLS), run before the connection is handed to its driver;
    ``token`` gives OAUTHBEARER a fresh token for each connection."""

    login = SaslLogin(mechanism, user, password, client_id, token)

    async def connect(node: int, host: str, port: int) -> trio.abc.Stream:
        stream = await inner(node, host, port)
        try:
            return await login.on_stream(stream)
        except BaseException:
            await trio.aclose_forcefully(stream)
            raise

    return connect


def connect_from_config(config: Mapping[str, Any]) -> Connect:
    """security.protocol PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL, with
    ssl.ca.location (a PEM file; the system's trust store if unset),
    ssl.endpoint.identification.algorithm ("https" checks the broker's host name, "" does not),
    ssl.certificate.location and ssl.key.location (PEM; a client certificate for mutual TLS),
    sasl.mechanism, sasl.username and sasl.password, as librdkafka names them; for OAUTHBEARER
    confluent-kafka's ``oauth_cb`` (called with sasl.oauthbearer.config, returns the token or
    (token, expiry)) or librdkafka's enable.sasl.oauthbearer.unsecure.jwt with
    sasl.oauthbearer.config (``principal=NAME scope=a,b lifeSeconds=N``)."""
    protocol = str(config.get("security.protocol", "PLAINTEXT")).upper()
    connect: Connect = tcp_connect
    if protocol in ("SSL", "SASL_SSL"):
        context = ssl.create_default_context(cafile=config.get("ssl.ca.location") or None)
        if config.get("ssl.certificate.location"):   # mutual TLS: our certificate, for ssl.client.auth
            context.load_cert_chain(config["ssl.certificate.location"], config.get("ssl.key.location") or None)
        if not config.get("ssl.endpoint.identification.algorithm", "https"):
            context.check_hostname = False
        connect = tls_connect(context)
    if protocol.startswith("SASL_"):
        connect = sasl_connect(str(config.get("sasl.mechanism", "PLAIN")), str(config.get("sasl.username", "")),
                               str(config.get("sasl.password", "")), config.get("client.id"), inner=connect,
                               token=oauth_token_source(config))
    return connect


def oauth_token_source(config: Mapping[str, Any]) -> TokenSource | None:
    if config.get("sasl.mechanism") != "OAUTHBEARER":
        return None
    settings = str(config.get("sasl.oauthbearer.config") or "")
    callback = config.get("oauth_cb")
    if callback is not None:
        def from_callback() -> str:
            answer = callback(settings)
            return str(answer[0] if isinstance(answer, tuple) else answer)
        return from_callback
    return unsecured_token_source(settings, system_ms)


class _Waiter:
    __slots__ = ("body", "error", "event")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.body: Any = None
        self.error: BaseException | None = None

    def finish(self, body: Any = None, error: BaseException | None = None) -> None:
        if not self.event.is_set():
            self.body, self.error = body, error
            self.event.set()


class BrokerConnection:
    def __init__(self, node: int, address: str, stream: trio.abc.Stream, client_id: str | None,
                 on_closed: Callable[[BrokerConnection, str], None], *, rng: random.Random | None = None,
                 reauth_timeout: float = 30.0):
        self.node, self.address, self.stream = node, address, stream
        self.core = ConnectionCore(client_id)
        self.versions: dict[int, tuple[int, int]] = {}   # ApiVersions answer: key -> (min, max)
        self.closed = False
        self.throttled_until = 0.0   # trio time: KIP-219, no request goes out before it
        self.close_reason = ""
        self._on_closed = on_closed
        self._scope = trio.CancelScope()
        self._wake = Wakeup()
        self._send_lock = trio.Lock()
        self._rng = rng or random.Random(0)
        self._reauth_timeout = reauth_timeout   # request.timeout.ms, for the re-authentication's requests
        self._reauthenticating: trio.Event | None = None   # set while KIP-368 holds new requests back

    # -- tasks -----------------------------------------------------------------------------
    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        try:
            with self._scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._reader)
                    nursery.start_soon(self._timer)
                    if isinstance(self.stream, SaslStream) and self.stream.lifetime_ms > 0:
                        nursery.start_soon(self._reauthenticator, self.stream)
                    task_status.started()
        finally:
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(self.stream)

    async def _reader(self) -> None:
        while True:
            try:
                data = await self.stream.receive_some(1 << 20)
            except STREAM_ERRORS:
                data = b""
            if not data:
                self.close("the broker closed the connection before answering", "broker")
                return
            try:
                completed = self.core.receive(data)
            except (ValueError, ProtocolError) as exc:  # out-of-step correlation id, corrupt or oversized frame
                self.close(f"the client closed the connection: the response stream broke ({exc})", "client")
                return
            for req, body in completed:
                req.waiter.finish(body)

    async def _timer(self) -> None:
        while True:
            deadline = self.core.next_deadline()
            self._wake.new_cycle()
            if await self._wake.sleep_until(math.inf if deadline is None else deadline):
                continue
            # Ties go to the answer. Java expires a request only once the time since sending
            # *exceeds* its timeout, so an answer arriving at the very deadline is accepted: a
            # broker whose purgatory answers REQUEST_TIMED_OUT at timeout_ms == request.timeout.ms
            # with zero latency wins. Let whatever is runnable at this instant (an answer being
            # written, our reader) run a few rounds before judging; in virtual time the clock
            # cannot move meanwhile, in real time this costs microseconds.
            for _ in range(SETTLE_ROUNDS):
                await trio.lowlevel.checkpoint()
            expired = self.core.handle_timeouts(trio.current_time())
            if expired:
                self._request_timed_out(expired[0])
                return

    async def _reauthenticator(self, stream: SaslStream) -> None:
        """KIP-368, as Java's SaslClientAuthenticator.ReauthInfo: re-authenticate at a random point
        between 85 % and 95 % of the session's lifetime (room for latency and clock drift, spread so
        that many connections do not re-authenticate at once). New requests wait meanwhile (Java's
        channel is not ready for sends while it re-authenticates); requests already sent are
        answered first, in order, as the broker answers a connection's requests."""
        while stream.lifetime_ms > 0:
            await trio.sleep(stream.lifetime_ms / 1000 * (0.85 + 0.10 * self._rng.random()))
            held = self._reauthenticating = trio.Event()
            try:
                async with self._send_lock:
                    stream.lifetime_ms = await stream.login.again(self._call_holding_the_lock)
            except KafkaError as exc:   # refused, or the connection broke (closed already)
                self.close(f"the client closed the connection: re-authentication failed ({exc})", "client")
                return
            finally:
                self._reauthenticating = None
                held.set()

    async def _call_holding_the_lock(self, api_key: int, version: int, body: Any) -> Any:
        req = self.core.send(api_key, version, body, trio.current_time(), self._reauth_timeout)
        req.waiter = waiter = _Waiter()
        self._wake.set()
        await self._send_buffers()
        await waiter.event.wait()
        if waiter.error is not None:
            raise waiter.error
        return waiter.body

    def _request_timed_out(self, req: InFlight) -> None:
        """KIP-19: close the connection; the expired request and every other one in flight on it
        fail with a (retriable) timeout that names the request that expired."""
        now = trio.current_time()
        api = ApiKey(req.api_key).api_name
        others = [r for r in self.core.close() if r is not req]
        this = f"{api} (correlation id {req.correlation_id})"
        for r in others:
            if r.waiter is not None:
                r.waiter.finish(error=RequestTimeoutException(
                    ApiKey(r.api_key).api_name, r.correlation_id, self.node, self.address, (now - r.sent_at) * 1000,
                    req.timeout * 1000, req.setting, timed_out=this))
        if req.waiter is not None:
            req.waiter.finish(error=RequestTimeoutException(
                api, req.correlation_id, self.node, self.address, (now - req.sent_at) * 1000, req.timeout * 1000,
                req.setting, others=sum(1 for r in others if not r.abandoned)))
        self.close(f"the client closed the connection after {this} timed out client-side ({req.setting})", "timeout")

    # -- closing ---------------------------------------------------------------------------
    def close(self, why: str, closed_by: str = "client") -> None:
        """Fail everything in flight with a disconnect that says why; idempotent."""
        if self.closed:
            return
        self.closed, self.close_reason = True, why
        now = trio.current_time()
        for r in self.core.close():
            if r.waiter is not None:
                r.waiter.finish(error=ConnectionClosedError(
                    ApiKey(r.api_key).api_name, r.correlation_id, self.node, self.address, why,
                    elapsed_ms=(now - r.sent_at) * 1000, closed_by=closed_by))
        self._scope.cancel()
        self._on_closed(self, closed_by)

    # -- requests --------------------------------------------------------------------------
    @property
    def in_flight(self) -> int:
        return self.core.in_flight

    async def request(self, api_key: int, version: int, body: Any, timeout: float, setting: str = "request.timeout.ms",
                      expects_response: bool = True) -> Any:
        """Send and wait for the answer. A caller cancelled while waiting abandons the request:
        it stays on the wire (and under its timeout) but its answer is dropped."""
        if self.closed:
            raise ConnectionClosedError(ApiKey(api_key).api_name, -1, self.node, self.address,
                                        f"the connection was already closed ({self.close_reason})")
        if trio.current_time() < self.throttled_until:
            # the broker asked us to hold back (throttle_time_ms); it mutes the connection too,
            # but a client that sends anyway only queues work on a muted broker (KIP-219)
            await trio.sleep_until(self.throttled_until)
            if self.closed:
                raise ConnectionClosedError(ApiKey(api_key).api_name, -1, self.node, self.address,
                                            f"the connection closed while throttled ({self.close_reason})")
        while self._reauthenticating is not None:
            await self._reauthenticating.wait()
            if self.closed:
                raise ConnectionClosedError(ApiKey(api_key).api_name, -1, self.node, self.address,
                                            f"the connection closed while re-authenticating ({self.close_reason})")
        req = self.core.send(api_key, version, body, trio.current_time(), timeout, setting=setting,
                             expects_response=expects_response)
        req.waiter = waiter = _Waiter()
        self._wake.set()
        try:
            await self._flush()
        except trio.Cancelled:
            self.core.abandon(req)
            raise
        if not expects_response:
            return None
        try:
            await waiter.event.wait()
        except trio.Cancelled:
            self.core.abandon(req)
            raise
        if waiter.error is not None:
            raise waiter.error
        throttle_ms = waiter.body.get("throttle_time_ms", 0) if hasattr(waiter.body, "get") else 0
        if throttle_ms and throttle_ms > 0:
            self.throttled_until = max(self.throttled_until, trio.current_time() + throttle_ms / 1000)
        return waiter.body

    async def _flush(self) -> None:
        async with self._send_lock:
            await self._send_buffers()

    async def _send_buffers(self) -> None:
        buffers = self.core.buffers_to_send()
        if not buffers or self.closed:
            return
        try:
            for data in buffers:
                await self.stream.send_all(data)
        except STREAM_ERRORS:
            self.close("the connection broke while sending (the broker is gone)", "broker")
        except trio.Cancelled:
            # a write cut short may leave half a frame on the wire: the stream is unusable
            self.close("the client closed the connection: a write was cancelled mid-frame", "client")
            raise
