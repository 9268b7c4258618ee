"""The server-side trace: every event on the wire and in the purgatory, as structured records.

It is the evidence the conformance suite judges, the input of campaigns and of timelines.
Times are milliseconds since cluster start on trio's clock (virtual in tests).

Event kinds: conn_open, recv, fault_applied, purgatory_enter, purgatory_complete,
purgatory_expire, send, conn_close (with ``closed_by`` "client" or "broker" and a ``reason``),
and cluster-level: broker_stop, broker_start, leader_change, isr_change, replication_mode.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import IO, Any, Callable, Iterable

KINDS = (
    "conn_open", "recv", "fault_applied", "purgatory_enter", "purgatory_complete",
    "purgatory_expire", "send", "conn_close",
    "broker_stop", "broker_start", "leader_change", "isr_change", "replication_mode",
    "group_rebalance", "group_member_expired", "group_member_removed", "app_call", "request_anomaly", "handler_error",
    "log_evicted",
)


class HandlerErrors:
    """Every handler_error of every cluster in this process: a bug in the emulator, which the test
    suite turns into a failure of the test that caused it (tests/conftest.py)."""

    def __init__(self, keep: int = 100):
        self.count = 0
        self.recent: deque[TraceEvent] = deque(maxlen=keep)

    def record(self, event: TraceEvent) -> None:
        self.count += 1
        self.recent.append(event)

    def since(self, count: int) -> list[TraceEvent]:
        """Those recorded after ``count`` was read (the newest ``keep`` of them)."""
        n = min(self.count - count, len(self.recent))
        return list(self.recent)[-n:] if n > 0 else []


HANDLER_ERRORS = HandlerErrors()


@dataclass(slots=True)
class TraceEvent:
    t_ms: float
    kind: str
    broker: int | None = None
    conn: int | None = None
    client_id: str | None = None
    client_addr: str | None = None
    correlation_id: int | None = None
    api_key: int | None = None
    api: str | None = None
    api_version: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        d = {k: v for k, v in asdict(self).items() if v is not None and v != {}}
        return json.dumps(d, separators=(",", ":"), default=str)


# What an event costs in memory, roughly: the slotted object and its details dict, plus the
# strings it alone may hold. An estimate, cheap enough for every event, that keeps the ring's
# budget honest against hostile input (a 32 KB client id on every request).
EVENT_BYTES = 360
DETAIL_BYTES = 120
DEFAULT_MAX_BYTES = 64 << 20


def event_bytes(event: TraceEvent) -> int:
    return (EVENT_BYTES + DETAIL_BYTES * len(event.details) + len(event.client_id or "")
            + len(event.client_addr or ""))


class Trace:
    """The events in memory as a ring bounded in bytes (``max_bytes``, broker config
    ``emu.trace.max.bytes``: the oldest go first, counted in ``dropped``), optionally mirrored to
    a JSONL file that keeps every event."""

    def __init__(self, clock: Callable[[], float], sink: IO[str] | None = None, max_bytes: int = DEFAULT_MAX_BYTES):
        self._clock = clock  # seconds, trio's clock; t_ms is relative to construction
        self._start = clock()
        self._sink = sink
        self.max_bytes = max_bytes
        self.events: deque[TraceEvent] = deque()
        self._sizes: deque[int] = deque()
        self.bytes = 0
        self.dropped = 0
        self._listeners: list[Callable[[TraceEvent], None]] = []

    def now_ms(self) -> float:
        return round((self._clock() - self._start) * 1000.0, 3)

    def emit(self, kind: str, **fields: Any) -> TraceEvent:
        details = fields.pop("details", None) or {}
        event = TraceEvent(self.now_ms(), kind, details=details, **fields)
        if kind == "handler_error":
            HANDLER_ERRORS.record(event)
        size = event_bytes(event)
        self.events.append(event)
        self._sizes.append(size)
        self.bytes += size
        while self.bytes > self.max_bytes and len(self.events) > 1:
            self.events.popleft()   # the JSONL sink, when there is one, keeps everything
            self.bytes -= self._sizes.popleft()
            self.dropped += 1
        if self._sink is not None:
            self._sink.write(event.to_json() + "\n")
            self._sink.flush()
        for listener in self._listeners:
            listener(event)
        return event

    def subscribe(self, listener: Callable[[TraceEvent], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def query(self, *, since_ms: float | None = None, client_id: str | None = None,
              api: str | None = None, kind: str | Iterable[str] | None = None,
              broker: int | None = None, conn: int | None = None) -> list[TraceEvent]:
        kinds = {kind} if isinstance(kind, str) else set(kind) if kind is not None else None
        out = []
        for e in self.events:
            if since_ms is not None and e.t_ms < since_ms:
                continue
            if client_id is not None and e.client_id != client_id:
                continue
            if api is not None and (e.api or "").lower() != api.lower():
                continue
            if kinds is not None and e.kind not in kinds:
                continue
            if broker is not None and e.broker != broker:
                continue
            if conn is not None and e.conn != conn:
                continue
            out.append(e)
        return out

    def to_jsonl(self, events: Iterable[TraceEvent] | None = None) -> str:
        return "".join(e.to_json() + "\n" for e in (self.events if events is None else events))
