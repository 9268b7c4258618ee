"""One client connection through the proxy: the emulator's connection pipeline
(``broker_emu.server.Connection``: framing, read-ahead, one request at a time, connection faults,
``conn_close`` with ``closed_by``), whose handler is the upstream broker.

Each client connection gets its own upstream connection, opened once the connection faults
have let it through, so the upstream sees what the client does: a client that goes away closes
the upstream connection, and an upstream that closes closes the client's (``closed_by``
"broker"). Requests go upstream one at a time, as the emulator handles them, so a fault on one
request holds the ones behind it exactly as on the emulator.

A request the codec can read (API and version known, body well formed) is decoded for the
trace and fault matching (its topics), but forwarded as the bytes the client sent; the answer is
decoded for the trace's error codes and re-encoded only when the proxy changes it (addresses,
ApiVersions, an injected throttle). Anything the codec cannot read goes through byte for byte.
"""

from __future__ import annotations

import logging
import struct
from typing import TYPE_CHECKING, Any

import trio

from broker_emu.context import API_NAMES
from broker_emu.faults import Decision
from broker_emu.faults import apply as fault_steps
from broker_emu.handlers import error_codes, error_response, request_details, topics_of
from broker_emu.proxy.answers import ADDRESS_APIS, address_entries, cap_api_versions, produce_acks
from broker_emu.proxy.upstream import Node, Upstream, UpstreamError
from broker_emu.repeated_requests import encode_with_errors
from broker_emu.server import Connection
from client.protocol import (
    ApiKey,
    RequestHeader,
    decode_request,
    decode_request_header,
    decode_response,
    encode_response,
    supported_versions,
)
from client.protocol.errors import ProtocolError
from client.protocol.framing import Frame

if TYPE_CHECKING:
    from broker_emu.proxy.proxy import Proxy, ProxyBroker

log = logging.getLogger("broker_emu.proxy")
_SIZE = struct.Struct(">i")
PRODUCE, METADATA, API_VERSIONS = int(ApiKey.PRODUCE), int(ApiKey.METADATA), int(ApiKey.API_VERSIONS)
MAX_TOPIC_IDS = 100_000
Answer = tuple[bytes, list[int], Any]   # frame with size prefix, error codes, decoded body (or None)


def codec_knows(api_key: int, version: int) -> bool:
    try:
        lo, hi = supported_versions(api_key)
    except ProtocolError:
        return False
    return lo <= version <= hi


class ProxyConnection(Connection):
    def __init__(self, proxy: "Proxy", broker: "ProxyBroker", stream: trio.abc.Stream, addr: str):
        # the proxy offers the part of Cluster the pipeline uses (trace, faults, config, conn_ids...)
        super().__init__(proxy, broker, stream, addr)  # type: ignore[arg-type]
        self.proxy = proxy
        self.upstream_address = broker.upstream
        self.upstream: Upstream | None = None
        self._links: trio.Nursery | None = None

    # -- lifecycle: the upstream connection lives and dies with the client's --------------------
    async def run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self._links = nursery
                await super().run()
                nursery.cancel_scope.cancel()
        finally:
            if self.upstream is not None:
                await self.upstream.aclose()

    async def _connection_faults(self) -> bool:
        if not await super()._connection_faults():
            return False
        host, port = self.upstream_address
        try:
            self.upstream = await Upstream.connect(host, port, self._upstream_closed)
        except UpstreamError as exc:
            self.abort(str(exc))
            return False
        assert self._links is not None
        self._links.start_soon(self.upstream.pump)
        return True

    def _upstream_closed(self, reason: str) -> None:
        self.abort(reason)

    def _answers_at_once(self, frame: Frame) -> bool:
        """Never: every request waits on the upstream, and the reader must keep reading while it
        does, so that a client that gives up is seen (and its upstream connection closed) even
        when the upstream never answers (measured: the emulator's shortcut would save ~0.1 ms
        of a proxied Metadata round trip, benchmarks/proxy.py)."""
        return False

    # -- one request ----------------------------------------------------------------------------
    async def _process(self, frame: Frame, arrived_ms: float | None = None) -> bool:
        try:
            header = decode_request_header(frame)
        except ProtocolError as exc:
            self.abort(f"corrupt request header: {exc}")
            return False
        if header.client_id != self.client_id:
            self.client_id = header.client_id
        if header.api_key == API_VERSIONS and not codec_knows(API_VERSIONS, header.api_version):
            # Passed through, a newer ApiVersions answer (Kafka 4.4 serves v5) could not be capped,
            # and the client would then use Metadata versions whose addresses we cannot rewrite,
            # and connect around the proxy. Kafka's own downgrade path (KIP-511) instead: the
            # client retries with a version the proxy reads.
            return await self._api_versions_fallback(header)
        fields = {"broker": self.broker.id, "conn": self.id, "client_id": self.client_id, "client_addr": self.addr,
                  "correlation_id": header.correlation_id, "api_key": header.api_key,
                  "api": API_NAMES.get(header.api_key), "api_version": header.api_version}
        body = self._decode(frame, header, fields)
        topics = topics_of(self.proxy, header.api_key, body) if body is not None else []
        details = request_details(topics, header.api_key, body)
        if body is None:
            details["undecoded"] = True
        if arrived_ms is not None and arrived_ms < self.proxy.now_ms():
            details["arrived_ms"] = arrived_ms
        self.proxy.trace.emit("recv", **fields, details=details or None)
        decision = fault_steps.decide(self, header.api_key, header.api_version, topics, fields)
        if not await fault_steps.before(self, decision, header.api_key):
            return False
        return await self._answer(frame, header, body, decision, fields)

    def _api_versions_range(self) -> tuple[int, int]:
        return supported_versions(API_VERSIONS)

    def _decode(self, frame: Frame, header: RequestHeader, fields: dict[str, Any]) -> Any:
        """The request's body, or None when the codec cannot read it (it goes through as is).
        What Kafka accepts but a strict read would not is traced as on the emulator."""
        if not codec_knows(header.api_key, header.api_version):
            return None
        anomalies: list[str] = []
        try:
            body = decode_request(frame, header, records_as_views=True, anomalies=anomalies)[1]
        except ProtocolError:
            return None
        if anomalies:
            self.proxy.trace.emit("request_anomaly", **fields, details={"anomalies": anomalies, "bytes": len(frame)})
        return body

    async def _answer(self, frame: Frame, header: RequestHeader, body: Any, decision: Decision,
                      fields: dict[str, Any]) -> bool:
        terminal = decision.terminal
        answer: Answer | None
        try:
            if terminal is not None and terminal.type == "error":
                answer = self._injected_error(header, body, terminal.error)
            else:
                answer = await self._forward(frame, header, body)
        except UpstreamError as exc:
            self.abort(str(exc))
            return False
        if terminal is not None and terminal.type == "close_after":
            self.abort(f"fault: close_after {header.api_key}")
            return False
        if answer is None:  # acks=0 produce: nothing comes back
            return True
        out, errors, decoded = answer
        if decision.throttle_ms:
            out = self._throttled(header, out, decoded, decision.throttle_ms)
        return await fault_steps.send(self, out, errors, decision, fields)

    def _injected_error(self, header: RequestHeader, body: Any, code: int) -> Answer:
        if body is None:
            raise UpstreamError(f"fault: cannot inject an error into {API_NAMES.get(header.api_key, header.api_key)} "
                                f"v{header.api_version}: the proxy's codec cannot read that request")
        response = error_response(header.api_key, header.api_version, body, code)
        out, errors = encode_with_errors(header.api_key, header.api_version, header.correlation_id, response)
        return out, errors, response

    def _throttled(self, header: RequestHeader, out: bytes, decoded: Any, throttle_ms: float) -> bytes:
        if decoded is None and codec_knows(header.api_key, header.api_version):
            try:   # a cached answer: read it back
                decoded = decode_response(header.api_key, header.api_version, out[4:])[1]
            except ProtocolError:
                decoded = None
        if decoded is None or "throttle_time_ms" not in decoded:
            return out   # the mute still happens; the answer cannot say so
        decoded["throttle_time_ms"] = max(int(throttle_ms), decoded.get("throttle_time_ms") or 0)
        return encode_response(header.api_key, header.api_version, header.correlation_id, decoded)

    # -- the upstream round trip ----------------------------------------------------------------
    async def _forward(self, frame: Frame, header: RequestHeader, body: Any) -> Answer | None:
        upstream = self.upstream
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
