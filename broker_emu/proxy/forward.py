"""How the proxy answers a client connection's requests: the backend (``broker_emu.backend``) of the
emulator's own pipeline (``broker_emu.server.Connection``: framing, read-ahead, one request at a
time, the fault sequence, ``conn_close`` with ``closed_by``), which forwards each request to the
upstream broker.

Each client connection gets its own upstream connection, opened once the connection faults
have let it through, so the upstream sees what the client does: a client that goes away closes
the upstream connection, and an upstream that closes closes the client's (``closed_by``
"broker"). Requests go upstream one at a time, as the emulator handles them, so a fault on one
request holds the ones behind it exactly as on the emulator.

A request the codec can read (API and version known, body well formed) is decoded for the
trace and fault matching (its topics), but forwarded as the bytes the client sent; the answer is
decoded for the trace's error codes and re-encoded only when the proxy changes it (addresses,
ApiVersions, an injected throttle). Anything the codec cannot read goes through byte for byte.
The versions served are the codec's (``advertised``): a too-new ApiVersions gets the pipeline's
KIP-511 answer instead of passing through, since a newer ApiVersions answer could not be capped,
and the client would then use Metadata versions whose addresses we cannot rewrite, and connect
around the proxy.
"""

from __future__ import annotations

import logging
import struct
import uuid
from collections.abc import Iterable
from typing import Any, Protocol

import trio

from broker_emu import server
from broker_emu.backend import Backend, Connection, Reply
from broker_emu.context import API_NAMES, RequestContext
from broker_emu.handlers import CloseConnection, error_codes, error_response
from broker_emu.proxy.answers import ADDRESS_APIS, AnswerCache, address_entries, cap_api_versions, produce_acks
from broker_emu.proxy.upstream import Node, Upstream, UpstreamError
from broker_emu.repeated_requests import encode_with_errors
from client.protocol import ApiKey
from client.protocol.codec import RequestHeader, decode_response, encode_response, supported_versions
from client.protocol.errors import ProtocolError
from client.protocol.framing import Frame

log = logging.getLogger("broker_emu.proxy")
_SIZE = struct.Struct(">i")
PRODUCE, METADATA, API_VERSIONS = int(ApiKey.PRODUCE), int(ApiKey.METADATA), int(ApiKey.API_VERSIONS)
MAX_TOPIC_IDS = 100_000
LATE_ANSWER_BOUND_S = 120.0   # a late request's own upstream round trip, bounded so its task ends
Answer = Reply   # frame with size prefix, error codes, decoded body (or None)


class ProxyView(Protocol):
    """What a forwarding connection uses of the proxy (``proxy.Proxy``, which imports this
    module to serve its listeners)."""

    answers: AnswerCache
    topic_names: dict[uuid.UUID, str]

    def local_address(self, node_id: int) -> tuple[str, int]: ...
    async def learn(self, nodes: Iterable[Node]) -> None: ...


class UpstreamBroker(Protocol):
    upstream: tuple[str, int]   # where the proxy reaches this broker now


def codec_knows(api_key: int, version: int) -> bool:
    try:
        lo, hi = supported_versions(api_key)
    except ProtocolError:
        return False
    return lo <= version <= hi


class UpstreamBackend:
    passes_through = True    # what the codec cannot read is the upstream's to judge
    lists_in_flight = False

    def __init__(self, proxy: ProxyView, broker: UpstreamBroker):
        self.proxy = proxy
        self.upstream_address = broker.upstream
        self.upstream: Upstream | None = None

    # -- lifecycle: the upstream connection lives and dies with the client's --------------------
    async def open(self, conn: Connection, tasks: trio.Nursery) -> bool:
        """Opened once the connection faults have let the client's connection through; an
        upstream that closes closes the client's (``closed_by`` "broker")."""
        host, port = self.upstream_address
        try:
            self.upstream = await Upstream.connect(host, port, conn.abort)
        except UpstreamError as exc:
            conn.abort(str(exc))
            return False
        tasks.start_soon(self.upstream.pump)
        return True

    async def aclose(self) -> None:
        if self.upstream is not None:
            await self.upstream.aclose()

    def advertised(self, api_key: int) -> tuple[int, int] | None:
        try:
            return supported_versions(api_key)
        except ProtocolError:
            return None

    def answers_at_once(self, frame: Frame) -> bool:
        """Never: every request waits on the upstream, and the reader must keep reading while it
        does, so that a client that gives up is seen (and its upstream connection closed) even
        when the upstream never answers (measured: the emulator's shortcut would save ~0.1 ms
        of a proxied Metadata round trip, benchmarks/proxy.py)."""
        return False

    # -- one request ----------------------------------------------------------------------------
    async def answer(self, ctx: RequestContext, header: RequestHeader, body: Any, frame: Frame) -> Answer | None:
        try:
            return await self._forward(frame, header, body)
        except UpstreamError as exc:
            raise CloseConnection(str(exc)) from None

    async def late_answer(self, ctx: RequestContext, header: RequestHeader, body: Any, frame: Frame) -> Answer | None:
        """A held request whose client has gone (the ``hold`` fault) goes upstream on a
        connection of its own: the client's upstream connection closed with it. Upstream, a
        request is not tied to its connection (a producer's EndTxn or Produce names its
        producer id and epoch), so the broker handles it as the one it would have read before
        the client's close reached it."""
        host, port = self.upstream_address
        try:
            upstream = await Upstream.connect(host, port, lambda reason: None)
        except UpstreamError as exc:
            raise CloseConnection(str(exc)) from None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(upstream.pump)
                with trio.move_on_after(LATE_ANSWER_BOUND_S):
                    answer = await self._forward(frame, header, body, upstream)
                    nursery.cancel_scope.cancel()
                    return answer
                nursery.cancel_scope.cancel()
            raise CloseConnection(f"the upstream did not answer a late request in {LATE_ANSWER_BOUND_S:g} s")
        except UpstreamError as exc:
            raise CloseConnection(str(exc)) from None
        finally:
            await upstream.aclose()

    def error_answer(self, ctx: RequestContext, body: Any, code: int) -> Answer:
        if body is None:
            raise CloseConnection(f"fault: cannot inject an error into {API_NAMES.get(ctx.api_key, ctx.api_key)} "
                                  f"v{ctx.api_version}: the proxy's codec cannot read that request")
        response = error_response(ctx.api_key, ctx.api_version, body, code)
        out, errors = encode_with_errors(ctx.api_key, ctx.api_version, ctx.correlation_id, response)
        return out, errors, response

    def without_brokers(self, ctx: RequestContext, answer: Answer) -> Answer:
        """The upstream's Metadata answer read (a cached one again), its brokers list emptied and
        encoded anew: the topics and their leaders stay as the upstream said."""
        out, errors, decoded = answer
        key, version = ctx.api_key, ctx.api_version
        if decoded is None:
            if not codec_knows(key, version):
                raise CloseConnection(f"fault: no_brokers cannot rewrite {API_NAMES.get(key, key)} v{version}: "
                                      "the proxy's codec cannot read that answer")
            decoded = decode_response(key, version, out[4:])[1]
        if "brokers" not in decoded:
            return answer
        emptied = {**decoded, "brokers": []}
        return encode_response(key, version, ctx.correlation_id, emptied), errors, emptied

    def encode(self, conn: Connection, ctx: RequestContext, body: Any, answer: Answer) -> Reply:
        return answer   # already bytes: as the upstream sent them, or rewritten

    def quota_ms(self, ctx: RequestContext, request_bytes: int, reply: Reply) -> float:
        return 0.0   # the upstream's quotas throttle in its own answers

    def throttled(self, conn: Connection, ctx: RequestContext, body: Any, reply: Reply, throttle_ms: float) -> Reply:
        out, errors, decoded = reply
        key, version = ctx.api_key, ctx.api_version
        if decoded is None and codec_knows(key, version):
            try:   # a cached answer: read it back
                decoded = decode_response(key, version, out[4:])[1]
            except ProtocolError:
                decoded = None
        if decoded is None or "throttle_time_ms" not in decoded:
            return reply   # the mute still happens; the answer cannot say so
        decoded["throttle_time_ms"] = max(int(throttle_ms), decoded.get("throttle_time_ms") or 0)
        return encode_response(key, version, ctx.correlation_id, decoded), errors, decoded

    # -- the upstream round trip ----------------------------------------------------------------
    async def _forward(self, frame: Frame, header: RequestHeader, body: Any, upstream: Upstream | None = None) -> Answer | None:
        upstream = upstream or self.upstream
        assert upstream is not None
        await upstream.send(frame)
        if header.api_key == PRODUCE:
            acks = body["acks"] if body is not None else produce_acks(frame, header.size, header.api_version)
            if acks == 0:
                return None
        answer = await upstream.receive()
        if len(answer) < 4:
            raise UpstreamError(f"upstream sent an answer of {len(answer)} bytes")
        correlation_id = _SIZE.unpack_from(answer)[0]
        if correlation_id != header.correlation_id:
            raise UpstreamError(f"upstream answered correlation id {correlation_id} to request {header.correlation_id}")
        return await self._translate(header, answer)

    async def _translate(self, header: RequestHeader, answer: bytes) -> Answer:
        """The answer as the client gets it: as the upstream sent it, unless it carries
        addresses or versions to change."""
        key, version = header.api_key, header.api_version
        passthrough: Answer = (_SIZE.pack(len(answer)) + answer, [], None)
        if not codec_knows(key, version):
            return passthrough
        rewrites = key in ADDRESS_APIS or key == API_VERSIONS
        if rewrites:
            hit = self.proxy.answers.get(key, version, answer)
            if hit is not None:
                return hit[0], hit[1], None
        try:
            _, decoded = decode_response(key, version, answer)
        except ProtocolError as exc:
            log.warning("proxy: passing through an answer the codec cannot read (%s v%s): %s",
                        API_NAMES.get(key, key), version, exc)
            return passthrough
        errors = error_codes(decoded)
        if not rewrites:
            return passthrough[0], errors, decoded
        if key == API_VERSIONS:
            changed = cap_api_versions(decoded)
        else:
            changed = await self._rewrite_addresses(key, version, decoded)
        out = encode_response(key, version, header.correlation_id, decoded) if changed else passthrough[0]
        self.proxy.answers.put(key, version, answer, out, errors)
        return out, errors, decoded

    async def _rewrite_addresses(self, key: int, version: int, decoded: Any) -> bool:
        entries = list(address_entries(key, version, decoded))
        await self.proxy.learn(Node(e[id_field], e["host"], e["port"]) for e, id_field in entries)
        for entry, id_field in entries:
            entry["host"], entry["port"] = self.proxy.local_address(entry[id_field])
        if key == METADATA:
            if len(self.proxy.topic_names) > MAX_TOPIC_IDS:
                self.proxy.topic_names.clear()   # a bound, not a policy: the next answers fill it again
            for topic in decoded.get("topics") or ():
                if topic.get("topic_id") is not None and topic.get("name"):
                    self.proxy.topic_names[topic["topic_id"]] = topic["name"]
        return bool(entries)


def proxy_connection(proxy: ProxyView, broker: UpstreamBroker, stream: trio.abc.Stream, addr: str, *,
                     via_bootstrap: bool = False) -> server.Connection:
    """One client connection through the proxy: the emulator's pipeline with the upstream as its
    backend (the proxy offers the part of Cluster the pipeline uses: trace, faults, config,
    conn_ids...). ``via_bootstrap``: it came in through the proxy's front door."""
    backend: Backend = UpstreamBackend(proxy, broker)
    # the proxy stands in for the cluster (trace, faults, security, conn_ids, stop_broker...): the
    # connection and its RequestContext are typed for Cluster, a Protocol for both is still to come
    return server.Connection(proxy, broker, stream, addr, backend=backend,  # type: ignore[arg-type]
                             via_bootstrap=via_bootstrap)
