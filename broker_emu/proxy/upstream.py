"""The proxy's side towards the upstream cluster: one TCP connection per client connection
(``Upstream``), and the discovery of the upstream's brokers at start (``discover``).

An ``Upstream`` carries whole frames: the client's request frame goes out as it came (size
prefix added back), and the upstream's answers come back as whole frames, in order, read by a
task of their own so that an upstream that closes while the client is idle is seen at once.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

import trio

from client.protocol import ApiKey
from client.protocol.codec import decode_response, encode_request, supported_versions
from client.protocol.errors import ProtocolError
from client.protocol.framing import Frame, FrameSplitter, FrameTooLargeError

MAX_RESPONSE = 2**31 - 1          # answers are as big as the upstream makes them (fetch.max.bytes)
CONNECT_TIMEOUT_S = 10.0
_SIZE = struct.Struct(">i")
_SPLIT_SEND = 64 * 1024           # above this, prefix and frame go out in two writes (no copy)


class UpstreamError(OSError):
    """The upstream could not be reached, or said something that is not Kafka."""


@dataclass(frozen=True)
class Node:
    node_id: int
    host: str
    port: int


class Upstream:
    """One connection to an upstream broker. ``receive`` returns the next answer frame
    (without its size prefix); when the upstream closes, ``on_close`` is called with the reason
    and ``receive`` raises ``UpstreamError``."""

    def __init__(self, stream: trio.abc.Stream, on_close: Callable[[str], None]):
        self.stream = stream
        self._on_close = on_close
        self._send_answers, self._answers = trio.open_memory_channel[bytes](float("inf"))
        self.closed_reason: str | None = None

    @classmethod
    async def connect(cls, host: str, port: int, on_close: Callable[[str], None]) -> "Upstream":
        try:
            with trio.fail_after(CONNECT_TIMEOUT_S):
                stream = await trio.open_tcp_stream(host, port)
        except (OSError, trio.TooSlowError) as exc:
            raise UpstreamError(f"cannot connect to upstream {host}:{port}: {exc or 'timed out'}") from None
        return cls(stream, on_close)

    async def send(self, frame: Frame) -> None:
        """Send one request frame (``frame`` without its size prefix)."""
        try:
            if len(frame) > _SPLIT_SEND:
                await self.stream.send_all(_SIZE.pack(len(frame)))
                await self.stream.send_all(frame)
            else:
                await self.stream.send_all(_SIZE.pack(len(frame)) + frame)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise UpstreamError(f"upstream connection broke while sending: {exc}") from None

    async def receive(self) -> bytes:
        try:
            return await self._answers.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise UpstreamError(self.closed_reason or "upstream closed the connection") from None

    async def pump(self) -> None:
        """Read answers until the upstream closes (run as a task)."""
        splitter = FrameSplitter(MAX_RESPONSE)
        reason = "upstream closed the connection"
        async with self._send_answers:
            while True:
                try:
                    data = await self.stream.receive_some(1 << 20)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                    reason, data = f"upstream connection broke: {exc or type(exc).__name__}", b""
                if not data:
                    break
                try:
                    frames = splitter.feed(bytes(data))
                except FrameTooLargeError as exc:
                    reason = f"upstream sent a bad frame: {exc}"
                    break
                for frame in frames:
                    self._send_answers.send_nowait(frame)
            self.closed_reason = reason   # before the channel closes: a waiting receive reports it
        self._on_close(reason)

    async def aclose(self) -> None:
        with trio.CancelScope(shield=True), trio.move_on_after(1):
            await trio.aclose_forcefully(self.stream)


# -- discovery ---------------------------------------------------------------------------------

async def _call(stream: trio.SocketStream, splitter: FrameSplitter, api_key: int, version: int,
                correlation_id: int, body: dict) -> dict:
    await stream.send_all(encode_request(api_key, version, correlation_id, "broker-emu-proxy", body))
    while True:
        data = await stream.receive_some(1 << 20)
        if not data:
            raise UpstreamError(f"upstream closed the connection during {ApiKey(api_key).api_name}")
        frames = splitter.feed(bytes(data))
        if frames:
            cid, answer = decode_response(api_key, version, frames[0])
            if cid != correlation_id:
                raise UpstreamError(f"upstream answered correlation id {cid}, expected {correlation_id}")
            return answer


def _metadata_version(api_versions: dict) -> int:
    lo, hi = supported_versions(ApiKey.METADATA)
    for entry in api_versions.get("api_keys") or ():
        if entry["api_key"] == ApiKey.METADATA:
            version = min(hi, entry["max_version"])
            if version < max(lo, entry["min_version"], 1):
                raise UpstreamError(f"upstream serves Metadata v{entry['min_version']}-{entry['max_version']}, "
                                    f"the proxy's codec v{lo}-{hi}")
            return version
    raise UpstreamError("upstream does not advertise Metadata in ApiVersions")


async def discover_one(host: str, port: int) -> tuple[list[Node], str | None]:
    """The upstream's brokers and cluster id, asked from ``host:port``: ApiVersions v0 (every
    Kafka answers it), then Metadata for no topics at the newest version both sides know."""
    upstream = await Upstream.connect(host, port, lambda reason: None)
    stream = upstream.stream
    assert isinstance(stream, trio.SocketStream)
    splitter = FrameSplitter(MAX_RESPONSE)
    try:
        with trio.fail_after(CONNECT_TIMEOUT_S):
            versions = await _call(stream, splitter, ApiKey.API_VERSIONS, 0, 1, {})
            if versions.get("error_code"):
                raise UpstreamError(f"upstream refused ApiVersions v0 with error {versions['error_code']}")
            version = _metadata_version(versions)
            meta = await _call(stream, splitter, ApiKey.METADATA, version, 2,
                               {"topics": [], "allow_auto_topic_creation": False})
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
        raise UpstreamError(f"upstream {host}:{port}: {exc}") from None
    except trio.TooSlowError:
        raise UpstreamError(f"upstream {host}:{port} did not answer within {CONNECT_TIMEOUT_S:.0f} s") from None
    except (ProtocolError, FrameTooLargeError) as exc:
        raise UpstreamError(f"upstream {host}:{port} does not speak Kafka: {exc}") from None
    finally:
        await upstream.aclose()
    nodes = [Node(b["node_id"], b["host"], b["port"]) for b in meta["brokers"]]
    if not nodes:
        raise UpstreamError(f"upstream {host}:{port} lists no brokers in its Metadata")
    return nodes, meta.get("cluster_id")


def parse_bootstrap(text: str) -> list[tuple[str, int]]:
    """``host:port[,host:port...]``; raises ValueError naming the bad entry."""
    out = []
    for part in text.split(","):
        host, sep, port = part.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"--upstream wants HOST:PORT[,HOST:PORT...], got {part.strip()!r}")
        out.append((host.strip("[]"), int(port)))
    return out


async def discover(bootstrap: list[tuple[str, int]]) -> tuple[list[Node], str | None]:
    """Ask each bootstrap server in turn until one answers."""
    errors = []
    for host, port in bootstrap:
        try:
            return await discover_one(host, port)
        except UpstreamError as exc:
            errors.append(str(exc))
    raise UpstreamError("no upstream bootstrap server answered: " + "; ".join(errors))
