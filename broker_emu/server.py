"""The per-connection request pipeline, modelled on Kafka's network layer, for the emulated
broker and the proxy alike.

Pipeline: read size-prefixed frames (bounded by socket.request.max.bytes) -> decode (header,
version, body) -> SASL gate -> fault rules (faults/apply.py) -> the answer -> quota and throttle ->
encode -> send, strictly one request at a time per connection, responses in request order. What
differs between the broker and the proxy is the connection's ``Backend`` (backend.py): the
broker's answers with its handlers (handler_backend.py), the proxy's forwards upstream
(proxy/forward.py). The broker mutes a connection while it handles a request, so an acks=all produce
parked in the purgatory blocks every later request on that connection (Kafka's SocketServer:
processCompletedReceives mutes, processCompletedSends unmutes).

Unlike Kafka, which stops reading a muted connection, a reader task keeps reading ahead, up to
READ_AHEAD_BYTES or READ_AHEAD_FRAMES of whole frames (each counted with its overhead, so a
client that pipelines small requests and never reads an answer cannot make the broker buffer),
so that a client's disconnect during a long park is seen and traced when it happens (the conformance suite judges KIP-19 disconnects by it). Frames read
ahead are still processed strictly one at a time; past the bound the reader stops and the
socket's own buffers push back, as with Kafka. A length prefix above socket.request.max.bytes
closes the connection before anything is allocated for it.
"""

from __future__ import annotations

import logging
import ssl
import traceback
from typing import TYPE_CHECKING, Any, Mapping

import trio

from broker_emu import socket_io
from broker_emu.backend import Backend
from broker_emu.context import RequestContext
from broker_emu.faults import apply as fault_steps
from broker_emu.frame_reader import FrameReader
from broker_emu.handler_backend import HandlerBackend
from broker_emu.handlers import CloseConnection, error_response
from broker_emu.memory import BIG_BUFFER_BYTES, release_free_memory
from broker_emu.repeated_requests import decoded_before, encode_with_errors, remember_decoded, repeat_key, request_facts
from broker_emu.sasl_gate import raw_sasl_token, sasl_admits
from broker_emu.security.session import SaslSession
from broker_emu.trace import RECV, SEND, Kind
from client.errors import ErrorCode
from client.protocol import ApiKey
from client.protocol.codec import RequestHeader, decode_request, decode_request_header, encode_response
from client.protocol.errors import ProtocolError
from client.protocol.framing import Frame, FrameTooLargeError

if TYPE_CHECKING:
    from broker_emu.brokers import Broker
    from broker_emu.cluster import Cluster

READ_AHEAD_BYTES = 16 << 20  # covers 5 in-flight 1 MB produce batches with room to spare
READ_AHEAD_FRAMES = 64       # ... and small requests pipelined by a client that reads no answer
FRAME_OVERHEAD = 256         # what a queued frame costs beyond its bytes (object, tuple, timestamp)
log = logging.getLogger("broker_emu.server")
API_VERSIONS = int(ApiKey.API_VERSIONS)


class Connection:
    def __init__(self, cluster: "Cluster", broker: "Broker", stream: trio.abc.Stream, addr: str, protocol: str | None = None,
                 *, backend: Backend | None = None, via_bootstrap: bool = False):
        self.cluster, self.broker, self.stream, self.addr = cluster, broker, stream, addr
        # came in through the cluster's bootstrap address (broker_emu/front_door.py), not the broker's own
        self.via_bootstrap = via_bootstrap
        # how requests are answered: the broker's handlers, or (broker_emu.proxy) the upstream
        self.backend: Backend = HandlerBackend(cluster) if backend is None else backend
        self.protocol: str = protocol or cluster.security.protocol   # the listener's (broker_emu/listeners.py)
        self.id = next(cluster.conn_ids)  # per cluster, so traces are reproducible
        self.client_id: str | None = None
        self.closed = False
        self.scope = trio.CancelScope()
        self._queued_bytes = 0
        self._queued_frames = 0
        self._held_big_buffer = False   # a partial frame of BIG_BUFFER_BYTES or more was buffered
        self._drained = trio.Event()
        self.peer_closed = False
        self._current: trio.CancelScope | None = None  # the request being handled
        self._busy = False                                 # a request is being handled
        self.inflight: dict[int, tuple[int, float, Any]] = {}   # correlation id -> the request being handled
        self.close_delay_s = 0.0   # a slow_close rule's delay
        self.muted_until_ms = 0.0                          # a throttle's mute (KIP-219) lasts until then
        # opt-in: called with (connection, frame) for every request frame read, before it is
        # decoded (tools/capture_corpus.py records real clients' requests this way)
        self._tap = getattr(cluster, "frame_tap", None)
        # SASL listeners: the exchange's state, consulted before any other API runs
        self.sasl = SaslSession(cluster.security) if self.protocol.startswith("SASL_") else None

    # -- lifecycle ----------------------------------------------------------------------------
    def trace(self, kind: str, **fields: Any) -> None:
        self.cluster.trace.emit(kind, broker=self.broker.id, conn=self.id, client_addr=self.addr,
                                client_id=fields.pop("client_id", self.client_id), **fields)

    def closed_by(self, who: str, reason: str) -> None:
        if not self.closed:
            self.closed = True
            self.trace(Kind.CONN_CLOSE, details={"closed_by": who, "reason": reason})

    def abort(self, reason: str) -> None:
        """Close from the broker side (broker stopped, fault, bad input)."""
        self.closed_by("broker", reason)
        self.scope.cancel()

    async def run(self) -> None:
        try:
            async with trio.open_nursery() as tasks:   # the backend's own (the proxy's upstream reader)
                await self._serve(tasks)
                tasks.cancel_scope.cancel()
        finally:
            await self.backend.aclose()

    async def _serve(self, tasks: trio.Nursery) -> None:
        self.broker.connections.add(self)
        self.trace(Kind.CONN_OPEN, **({"details": {"via": "bootstrap"}} if self.via_bootstrap else {}))
        try:
            with self.scope:
                if not await fault_steps.on_connect(self) or not await self.backend.open(self, tasks):
                    return
                async with trio.open_nursery() as nursery:
                    send, recv = trio.open_memory_channel(float("inf"))  # bounded in bytes by _reader
                    nursery.start_soon(self._reader, send)
                    await self._processor(recv)
                    nursery.cancel_scope.cancel()
        finally:
            self.broker.connections.discard(self)
            self.closed_by("broker", "connection ended")
            ended = getattr(self.cluster, "connection_ended", None)   # the emulator's cluster; not the proxy's
            if ended is not None:
                ended(self.broker.id, self.id)
            if self._held_big_buffer:
                release_free_memory()   # else the allocator keeps a big partial frame's pages
            try:
                if self.close_delay_s:
                    await trio.sleep(self.close_delay_s)   # slow_close: the socket closes that much later
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    await trio.aclose_forcefully(self.stream)

    async def _reader(self, send: trio.MemorySendChannel) -> None:
        reader = FrameReader(self.stream, self.cluster.config["socket.request.max.bytes"])
        async with send:
            while True:
                try:
                    frames = await reader.receive()
                except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                    if isinstance(exc.__cause__, ssl.SSLError):   # e.g. no client certificate (ssl.client.auth)
                        self.abort(f"TLS failed: {exc.__cause__.reason or exc.__cause__}")
                        return
                    frames = None
                except FrameTooLargeError as exc:
                    self.abort(str(exc))
                    return
                if frames is None:
                    self._peer_closed(reader.buffered)
                    return  # closing ``send`` lets the processor drain what was received
                if reader.buffered >= BIG_BUFFER_BYTES:
                    self._held_big_buffer = True
                for frame in frames:
                    if self._tap is not None:
                        self._tap(self, frame)
                    if not self._busy and self._queued_bytes == 0 and self._answers_at_once(frame):
                        if not await self._run_one(frame, at_once=True):
                            self.scope.cancel()
                            return
                        continue
                    self._queued_bytes += len(frame) + FRAME_OVERHEAD
                    self._queued_frames += 1
                    send.send_nowait((frame, self.cluster.now_ms()))
                while self._queued_bytes > READ_AHEAD_BYTES or self._queued_frames >= READ_AHEAD_FRAMES:
                    self._drained = trio.Event()
                    await self._drained.wait()

    def _peer_closed(self, partial: int) -> None:
        """The client closed its end. Like the broker, requests received whole before the close
        are still processed (their responses are dropped): the one being handled has done its
        synchronous part (an append, a join) and stops waiting; each queued one runs its
        synchronous part only. Kafka would finish the parked request first; we do not keep a
        closed connection's waits alive (a black-hole fault would never end)."""
        self.closed_by("client", "end of stream" if partial == 0 else f"end of stream inside a frame ({partial} bytes buffered)")
        self.peer_closed = True
        if self._current is not None:
            self._current.cancel()

    async def _processor(self, recv: trio.MemoryReceiveChannel) -> None:
        async for frame, arrived_ms in recv:
            self._queued_bytes -= len(frame) + FRAME_OVERHEAD
            self._queued_frames -= 1
            self._drained.set()
            if not await self._run_one(frame, arrived_ms) and not self.peer_closed:
                return

    def _answers_at_once(self, frame: Frame) -> bool:
        """Whether the reader may handle this request itself instead of handing it to the
        processor task: nothing ahead of it, an API the backend answers without waiting
        (``Backend.answers_at_once``), and no fault rules (a rule could delay it, and the reader
        must keep reading while a request waits, to see the client go away)."""
        if len(frame) < 2 or self.cluster.faults.rules or self.peer_closed or (self.sasl is not None and self.sasl.raw_tokens):
            return False
        return self.backend.answers_at_once(frame)

    @property
    def in_reader(self) -> bool:
        """The request being handled is the reader's own (``_answers_at_once``, no cancel scope): it must not wait."""
        return self._busy and self._current is None

    async def _run_one(self, frame: Frame, arrived_ms: float | None = None, at_once: bool = False) -> bool:
        """Handle one request, containing handler bugs to this connection; False: close it.
        ``at_once``: the reader runs it itself (``_answers_at_once``), so no close of the peer can
        be seen meanwhile and the request needs no cancel scope of its own (entering one is a
        tenth of a Metadata round trip's own cost)."""
        self._busy = True
        try:
            if at_once:
                return await self._process(frame, arrived_ms)
            with trio.CancelScope() as self._current:
                if self.peer_closed:
                    self._current.cancel()  # run up to the first wait only
                return await self._process(frame, arrived_ms)
        except Exception as exc:  # a bug outside a handler closes this connection, never the cluster
            self.cluster.trace.emit(Kind.HANDLER_ERROR, broker=self.broker.id, conn=self.id, client_id=self.client_id,
                                    client_addr=self.addr, details={
                                        "stage": "pipeline", "error": f"{type(exc).__name__}: {exc}"})
            log.error("broker %s: connection %s failed", self.broker.id, self.id, exc_info=exc)
            self.abort(f"internal error: {type(exc).__name__}: {exc}")
            return False
        finally:
            self._current = None
            self._busy = False
        return True   # the scope was cancelled: the request ended there, the connection stays

    # -- one request --------------------------------------------------------------------------
    async def _process(self, frame: Frame, arrived_ms: float | None = None) -> bool:
        """Decode one request, check its version and let the SASL gate see it; False means the
        connection must close."""
        if self.sasl is not None and self.sasl.raw_tokens:
            return await raw_sasl_token(self, frame)
        repeat = repeat_key(frame)
        before = decoded_before(repeat, frame)
        if before is not None:
            header, body, anomalies = before
        else:
            anomalies = []
            try:
                header = decode_request_header(frame, anomalies)
            except ProtocolError as exc:
                self.abort(f"corrupt request header: {exc}")
                return False
        if header.client_id != self.client_id:
            self.client_id = header.client_id   # else keep the one string: trace events share it
        ctx = RequestContext(self.cluster, self.broker, self.id, self.addr, header.api_key, header.api_version,
                             header.correlation_id, self.client_id, self, repeat)
        rng = self.backend.advertised(header.api_key)   # checked on a repeat too: profiles differ per cluster
        if rng is None or not rng[0] <= header.api_version <= rng[1]:
            if header.api_key == API_VERSIONS:
                return await self._api_versions_fallback(header)
            if not self.backend.passes_through:
                self.trace(Kind.RECV, correlation_id=header.correlation_id, api_key=header.api_key,
                           api_version=header.api_version, details={"unsupported": True})
                self.abort(f"unsupported API key {header.api_key} version {header.api_version}")
                return False
            body = None
        elif before is None:
            body = self._decode(frame, header, anomalies, repeat)
            if body is None and not self.backend.passes_through:
                return False
        if self.sasl is not None and not await sasl_admits(self, ctx, body):
            return False
        if anomalies and body is not None:
            # accepted as Kafka accepts it (codec.decode_request), and kept in the trace so a
            # conformance report can still show what the client sent
            self.trace(Kind.REQUEST_ANOMALY, correlation_id=header.correlation_id, api_key=header.api_key,
                       api=ApiKey(header.api_key).api_name, api_version=header.api_version,
                       details={"anomalies": anomalies, "bytes": len(frame)})
        return await self._handle(ctx, header, body, frame, arrived_ms)

    def _decode(self, frame: Frame, header: RequestHeader, anomalies: list[str], repeat: bytes | None) -> Any:
        """The request's body; None when it does not parse (the connection is closed, unless
        the backend passes such requests through)."""
        try:
            _, body = decode_request(frame, header, records_as_views=True, anomalies=anomalies)
        except ProtocolError as exc:
            if not self.backend.passes_through:
                self.abort(f"malformed request: {exc}")
            return None
        remember_decoded(repeat, header, body, anomalies)
        return body

    async def _api_versions_fallback(self, header: RequestHeader) -> bool:
        """A too-new ApiVersions gets UNSUPPORTED_VERSION in the v0 layout (KIP-511), listing
        the ApiVersions range we do serve, so the client can retry with a version we know."""
        lo, hi = self.backend.advertised(API_VERSIONS) or (0, 0)  # always registered
        body = {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": [{"api_key": API_VERSIONS, "min_version": lo, "max_version": hi}]}
        self.trace(Kind.RECV, correlation_id=header.correlation_id, api_key=API_VERSIONS, api="ApiVersions",
                   api_version=header.api_version, details={"too_new": True})
        return await self.send(encode_response(API_VERSIONS, 0, header.correlation_id, body),
                               header.correlation_id, API_VERSIONS, header.api_version, [ErrorCode.UNSUPPORTED_VERSION])

    async def _handle(self, ctx: RequestContext, header: RequestHeader, body: Any, frame: Frame,
                      arrived_ms: float | None = None) -> bool:
        """Handle one decoded request; while it is handled it is listed in ``inflight`` as (api key,
        the time of its recv event, body): the console derives the rest when it draws, not every
        request here."""
        fields = ctx.trace_fields()
        topics, received_ms = self._trace_recv(ctx, body, fields, arrived_ms)
        if not self.backend.lists_in_flight:
            return await self._answer(ctx, header, body, frame, fields, topics)
        self.inflight[ctx.correlation_id] = (ctx.api_key, received_ms, body)   # read by the console only
        try:
            return await self._answer(ctx, header, body, frame, fields, topics)
        finally:
            self.inflight.pop(ctx.correlation_id, None)

    async def _answer(self, ctx: RequestContext, header: RequestHeader, body: Any, frame: Frame,
                      fields: dict[str, Any], topics: list[tuple[str, int | None]]) -> bool:
        """faults -> answer (the backend's) -> quota and throttle -> encode -> send."""
        backend = self.backend
        decision = fault_steps.decide(self, ctx.api_key, ctx.api_version, topics, fields, body)
        ctx.lock_late_ms = decision.lock_late_ms   # read by the ShareFetch handler as it acquires
        try:
            if not decision.applied:
                answer = await backend.answer(ctx, header, body, frame)
            elif not await fault_steps.before(self, decision, ctx.api_key,
                                              self._late_call(ctx, header, body, frame, fields) if decision.hold else None):
                return False
            else:
                answer = await fault_steps.answer(decision, ctx.api_key, lambda: backend.answer(ctx, header, body, frame),
                                                  lambda code: backend.error_answer(ctx, body, code),
                                                  lambda response: backend.without_brokers(ctx, response))
        except CloseConnection as exc:
            self.abort(exc.reason)
            return False
        if answer is None:  # acks=0 produce: nothing goes back
            return True
        reply = backend.encode(self, ctx, body, answer)
        if reply is None:
            return False
        if self.cluster.faults.held_requests.held and decision.hold is None:   # a late request is nobody's "next"
            fault_steps.observe(self, ctx.api_key, body, reply[1])
        quota_ms = backend.quota_ms(ctx, len(frame), reply)
        if decision.throttle_ms or quota_ms:
            decision.throttle_ms = max(decision.throttle_ms, quota_ms)
            reply = backend.throttled(self, ctx, body, reply, decision.throttle_ms)
            if reply is None:
                return False
        if decision.applied or decision.throttle_ms:
            sent = await fault_steps.send(self, reply[0], reply[1], decision, fields)
        else:
            sent = await self.send(reply[0], ctx.correlation_id, ctx.api_key, ctx.api_version, reply[1], fields)
        if self.sasl is not None and self.sasl.close_after_answer:
            self.abort("SASL authentication failed")
            return False
        return sent

    def _late_call(self, ctx: RequestContext, header: RequestHeader, body: Any, frame: Frame,
                   fields: dict[str, Any]) -> fault_steps.LateCall:
        """How a held request is answered once its client has gone (``faults/apply.hold``): by
        the backend, with nobody to send the answer to; its error codes go to the trace."""

        async def answer() -> list[int] | None:
            try:
                answer = await self.backend.late_answer(ctx, header, body, frame)
            except CloseConnection:
                return None
            reply = None if answer is None else self.backend.encode(self, ctx, body, answer)
            return None if reply is None else reply[1]

        return fault_steps.LateCall(fields, body, answer)

    def _trace_recv(self, ctx: RequestContext, body: Any, fields: dict[str, Any],
                    arrived_ms: float | None) -> tuple[list[tuple[str, int | None]], float]:
        """Trace the request's arrival; return the (topic, partition) pairs it names and the
        event's time."""
        cluster = self.cluster
        if body is not None:
            topics, details = request_facts(ctx.repeat, cluster, ctx.api_key, body)
        else:   # passed through unread (broker_emu.proxy)
            topics, details = [], {"undecoded": True}
        if arrived_ms is not None and arrived_ms < cluster.now_ms():
            # it waited behind earlier requests (answers go in order; a throttle mutes the
            # connection): when it reached the broker is what the client did, ``t_ms`` is when
            # the broker got to it
            details["arrived_ms"] = arrived_ms
        return topics, cluster.trace.emit_request(RECV, fields, details).t_ms

    def encode(self, ctx: RequestContext, body: Any, response: Mapping[str, Any]) -> tuple[bytes, list[int]] | None:
        """The answer's bytes and error codes; an answer this version cannot carry gets Kafka's
        error answer instead, and None means the connection was closed."""
        try:
            return encode_with_errors(ctx.api_key, ctx.api_version, ctx.correlation_id, response, ctx.repeat)
        except Exception as exc:
            fallback = self.handler_failed(ctx, body, exc, "encoder")
            if fallback is None:
                return None
            try:
                return encode_with_errors(ctx.api_key, ctx.api_version, ctx.correlation_id, fallback)
            except Exception as again:
                self.handler_failed(ctx, body, again, "error answer", answer=False)
                return None

    def handler_failed(self, ctx: RequestContext, body: Any, exc: Exception, stage: str,
                        answer: bool = True) -> Mapping[str, Any] | None:
        """An unexpected exception while serving a request is a bug: it goes to the trace as
        ``handler_error`` (with the request) and to the log, and the request gets the answer
        Kafka gives then — ``KafkaApis.handle`` catches it and sends the request's own error
        response with UNKNOWN_SERVER_ERROR (``RequestHandlerHelper.handleError``). Only when even
        that answer cannot be built is the connection closed (None)."""
        where = traceback.extract_tb(exc.__traceback__)[-3:]
        self.cluster.trace.emit(Kind.HANDLER_ERROR, **ctx.trace_fields(), details={
            "stage": stage, "error": f"{type(exc).__name__}: {exc}",
            "at": [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} {f.name}" for f in where]})
        log.error("broker %s: %s failed on %s v%s (correlation id %s)", self.broker.id, stage,
                  ApiKey(ctx.api_key).api_name, ctx.api_version, ctx.correlation_id, exc_info=exc)
        if answer:
            try:
                return error_response(ctx.api_key, ctx.api_version, body, ErrorCode.UNKNOWN_SERVER_ERROR)
            except Exception as inner:   # noqa: BLE001 — no answer fits: the connection goes
                exc = inner
        self.abort(f"internal error ({stage}): {type(exc).__name__}: {exc}")
        return None

    async def send(self, out: bytes, correlation_id: int, api_key: int, version: int, errors, fields=None) -> bool:
        # Traced as the answer goes out, before the write: a client that reads it and closes at
        # once must not appear in the trace to have closed first (trio may run the reader's EOF
        # before this task resumes). A write that fails is followed by the close that says so;
        # nothing is traced as sent on a connection already closed.
        if self.closed:
            return False
        fields = fields or {"broker": self.broker.id, "conn": self.id, "client_id": self.client_id,
                            "client_addr": self.addr, "correlation_id": correlation_id, "api_key": api_key,
                            "api": ApiKey(api_key).api_name, "api_version": version}
        self.cluster.trace.emit_request(SEND, fields, {"errors": sorted(set(errors))} if errors else None)
        try:
            await socket_io.send_all(self.stream, out)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.closed_by("client", "reset while sending a response")
            return False
        return True
