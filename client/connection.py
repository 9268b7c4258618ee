"""Sans-io connection core: correlation ids, the in-flight table, request deadlines, framing.

No sockets, no clock: every method that needs the time takes ``now`` (seconds on whatever
clock the driver uses), and the driver asks ``next_deadline()`` when to call
``handle_timeouts(now)`` (aioquic's shape). Responses for requests that were abandoned (timed
out, or failed by a disconnect) are dropped, never delivered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from client.protocol import decode_response, encode_request
from client.protocol.framing import FrameSplitter


@dataclass
class InFlight:
    correlation_id: int
    api_key: int
    api_version: int
    sent_at: float
    deadline: float                       # sent_at + this request's timeout
    timeout: float
    expects_response: bool = True
    result: Any = None                    # filled by the driver (an Event, a future...)
    extra: dict = field(default_factory=dict)


class ConnectionCore:
    def __init__(self, client_id: str | None, max_frame: int = 104_857_600):
        self.client_id = client_id
        self._next_corr = 0
        self._in_flight: dict[int, InFlight] = {}
        self._order: list[int] = []       # responses arrive in request order
        self._splitter = FrameSplitter(max_frame)
        self.outgoing = bytearray()       # bytes the driver must write

    # -- sending ---------------------------------------------------------------------------
    def send(self, api_key: int, api_version: int, body: Any, now: float, timeout: float,
             expects_response: bool = True) -> InFlight:
        corr = self._next_corr
        self._next_corr = (self._next_corr + 1) & 0x7FFFFFFF
        self.outgoing += encode_request(api_key, api_version, corr, self.client_id, body)
        req = InFlight(corr, api_key, api_version, now, now + timeout, timeout, expects_response)
        if expects_response:
            self._in_flight[corr] = req
            self._order.append(corr)
        return req

    def take_outgoing(self) -> bytes:
        data = bytes(self.outgoing)
        self.outgoing.clear()
        return data

    # -- receiving -------------------------------------------------------------------------
    def receive(self, data: bytes) -> list[tuple[InFlight, Any]]:
        """Feed bytes; returns (request, decoded body) for each completed request. Frames for
        correlation ids we no longer wait for are dropped."""
        done = []
        for frame in self._splitter.feed(data):
            corr = int.from_bytes(frame[:4], "big", signed=True)
            req = self._in_flight.pop(corr, None)
            if req is None:
                continue  # abandoned earlier: never delivered
            if corr in self._order:
                self._order.remove(corr)
            _, body = decode_response(req.api_key, req.api_version, frame)
            done.append((req, body))
        return done

    # -- time ------------------------------------------------------------------------------
    def next_deadline(self) -> float | None:
        return min((r.deadline for r in self._in_flight.values()), default=None)

    def handle_timeouts(self, now: float) -> list[InFlight]:
        """Requests whose deadline has passed. The connection must then be closed (KIP-19: on an
        ordered connection the only way to abandon a request is to drop the connection)."""
        return [r for r in self._in_flight.values() if r.deadline <= now]

    def abandon_all(self) -> list[InFlight]:
        """The connection is going away: every in-flight request fails."""
        pending = list(self._in_flight.values())
        self._in_flight.clear()
        self._order.clear()
        return pending

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)
