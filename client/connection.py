"""Sans-io connection core: correlation ids, the in-flight table, request deadlines, framing.

Theory of operation
-------------------
No sockets, no clock. Every method that needs the time takes ``now`` (seconds, on whatever clock
the driver uses). ``send`` encodes a request into ``data_to_send()`` and records it in flight
with its send time and its own timeout (request.timeout.ms by default; a caller may give another,
e.g. JoinGroup's rebalance timeout + margin, or a smaller one: min(time left, request.timeout.ms)).
``receive`` splits bytes into frames and matches each to the oldest request in flight: a Kafka
broker answers one connection's requests strictly in order (Kafka's SocketServer mutes it until
the answer is sent), so a response whose correlation id is not the oldest one is a protocol
violation and the connection is beyond repair (``CorrelationIdMismatch``; Java's NetworkClient fails the same way).

The driver sleeps until ``next_deadline()`` and calls ``handle_timeouts(now)``, which returns the
requests past their deadline (aioquic's shape). It must then close the connection: on an
ordered connection the only way to give up on one request is to drop the connection, or every
later answer would queue behind the missing one (KIP-19). ``close()`` hands back everything
still in flight so the driver can fail it.

A caller that stops waiting (cancelled) ``abandon``s its request: it stays in the order (its
answer still has to be read off the wire) and still counts for timeouts, but its answer is
dropped, never delivered, and not even decoded.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from client.protocol import ProtocolError
from client.protocol.codec import decode_response, encode_request_parts
from client.protocol.framing import FrameSplitter
from client.protocol.wire import SPLICE_MIN


def _decode(req: InFlight, frame: bytes) -> Any:
    """A broker that does not know our ApiVersions version answers UNSUPPORTED_VERSION in the
    v0 format (KIP-511), so an ApiVersions answer that does not parse at our version is read as v0
    (Java's ApiVersionsResponse.parse falls back the same way)."""
    try:
        return decode_response(req.api_key, req.api_version, frame)[1]
    except ProtocolError:
        if req.api_key != 18 or req.api_version == 0:
            raise
        return decode_response(req.api_key, 0, frame)[1]


class CorrelationIdMismatch(ValueError):
    def __init__(self, got: int, expected: int | None):
        self.got, self.expected = got, expected
        want = "no request in flight" if expected is None else f"the oldest request in flight has {expected}"
        super().__init__(f"response with correlation id {got}, but {want}: the connection is out of step")


@dataclass(eq=False, slots=True)
class InFlight:
    correlation_id: int
    api_key: int
    api_version: int
    sent_at: float
    timeout: float                        # seconds; deadline = sent_at + timeout
    deadline: float
    setting: str = "request.timeout.ms"   # the setting that governs ``timeout`` (for messages)
    expects_response: bool = True
    abandoned: bool = False
    waiter: Any = None                    # the driver's business (an Event, a future...)


class ConnectionCore:
    def __init__(self, client_id: str | None, max_frame: int = 104_857_600):
        self.client_id = client_id
        self._next_corr = 0
        self._queue: deque[InFlight] = deque()   # in send order = answer order
        self._splitter = FrameSplitter(max_frame)
        self._outgoing: list[bytes] = []

    # -- sending ---------------------------------------------------------------------------
    def send(self, api_key: int, api_version: int, body: Any, now: float, timeout: float, *,
             setting: str = "request.timeout.ms", expects_response: bool = True) -> InFlight:
        """Encode a request. Without a response expected (Produce acks=0) nothing is tracked:
        the broker never answers, so there is nothing to time out."""
        corr = self._next_corr
        self._next_corr = (corr + 1) & 0x7FFFFFFF
        self._outgoing.extend(encode_request_parts(api_key, api_version, corr, self.client_id, body))
        req = InFlight(corr, api_key, api_version, now, timeout, now + timeout, setting, expects_response)
        if expects_response:
            self._queue.append(req)
        return req

    def data_to_send(self) -> bytes:
        data = b"".join(self._outgoing)
        self._outgoing.clear()
        return data

    def buffers_to_send(self) -> list[bytes]:
        """What ``data_to_send`` joins: small frames joined, large record batches as they are
        (not copied once more)."""
        out: list[bytes] = []
        small: list[bytes] = []
        for part in self._outgoing:
            if len(part) >= SPLICE_MIN:
                if small:
                    out.append(b"".join(small))
                    small = []
                out.append(part)
            else:
                small.append(part)
        if small:
            out.append(b"".join(small))
        self._outgoing.clear()
        return out

    # -- receiving -------------------------------------------------------------------------
    def receive(self, data: bytes | bytearray) -> list[tuple[InFlight, Any]]:
        """Feed received bytes; returns (request, decoded body) per completed request that is
        still wanted. Raises CorrelationIdMismatch, FrameTooLargeError (ValueErrors) or
        CorruptFrameError (a ProtocolError) if
        the stream is broken (the driver closes the connection)."""
        done = []
        for frame in self._splitter.feed(bytes(data)):
            corr = int.from_bytes(frame[:4], "big", signed=True)
            head = self._queue[0] if self._queue else None
            if head is None or head.correlation_id != corr:
                raise CorrelationIdMismatch(corr, head.correlation_id if head else None)
            self._queue.popleft()
            if head.abandoned:
                continue  # nobody waits for it any more: dropped, never delivered
            done.append((head, _decode(head, frame)))
        return done

    def abandon(self, req: InFlight) -> None:
        req.abandoned = True
        req.waiter = None

    # -- time ------------------------------------------------------------------------------
    def next_deadline(self) -> float | None:
        return min((r.deadline for r in self._queue), default=None)

    def handle_timeouts(self, now: float) -> list[InFlight]:
        """Requests whose deadline has passed (``deadline <= now``), oldest first."""
        return [r for r in self._queue if r.deadline <= now]

    # -- closing ---------------------------------------------------------------------------
    def close(self) -> list[InFlight]:
        """The connection is going away: every request still in flight (abandoned ones too,
        the driver skips those) is handed back and forgotten."""
        pending = list(self._queue)
        self._queue.clear()
        self._outgoing.clear()
        return pending

    @property
    def in_flight(self) -> int:
        """Requests on the wire awaiting an answer, abandoned ones included (they still hold
        a place in the broker's queue)."""
        return len(self._queue)

    def oldest(self) -> InFlight | None:
        return self._queue[0] if self._queue else None
