"""Reading a trace back: the one home for the questions contracts, timelines, campaigns and
reports ask of it.

- ``exchanges``: each request the broker received, paired with its answer (if one went out)
  and with the close of its connection (if one came after it).
- ``abandoned``: requests whose connection the client closed while the broker still owed the
  answer — how a Kafka client gives up on a request (KIP-19: NetworkClient closes the connection
  when request.timeout.ms passes; there is no cancel in the protocol).
- ``purgatory_stays``: each parked request, from entering the purgatory to its completion or
  expiry (the broker's own timeout: REQUEST_TIMED_OUT for a produce, an ordinary end for a
  long-poll Fetch).
- ``first_to_give_up``: on the first parked produce, whether the client (dropping the
  connection) or the broker (expiring it in the purgatory) gave up first.

A connection is identified by (broker, conn); a request on it by its correlation id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from broker_emu.trace import Kind, TraceEvent

ConnKey = tuple[int | None, int | None]


def conn_key(event: TraceEvent) -> ConnKey:
    return event.broker, event.conn


def closed_by(event: TraceEvent) -> str | None:
    """"client" or "broker" for a conn_close; None for any other event."""
    return event.details.get("closed_by") if event.kind == Kind.CONN_CLOSE else None


def _same_api(event: TraceEvent, api: str | None) -> bool:
    return api is None or (event.api or "").lower() == api.lower()


@dataclass(frozen=True)
class Exchange:
    request: TraceEvent               # the recv
    answer: TraceEvent | None         # the send with its correlation id, on its connection
    close: TraceEvent | None          # the first close of its connection at or after the request

    @property
    def api(self) -> str | None:
        return self.request.api

    @property
    def wait_ms(self) -> float | None:
        """How long the broker took to answer (None: it never did)."""
        return None if self.answer is None else self.answer.t_ms - self.request.t_ms

    @property
    def abandoned(self) -> bool:
        """The client closed the connection before the answer went out."""
        if self.close is None or closed_by(self.close) != "client":
            return False
        return self.answer is None or self.close.t_ms < self.answer.t_ms

    @property
    def abandoned_after_ms(self) -> float | None:
        return self.close.t_ms - self.request.t_ms if self.abandoned and self.close is not None else None


def exchanges(trace: Iterable[TraceEvent], api: str | None = None) -> list[Exchange]:
    """Every request received (of ``api``, when given), in arrival order."""
    events = list(trace)
    answers: dict[tuple[ConnKey, int | None], TraceEvent] = {}
    closes: dict[ConnKey, list[TraceEvent]] = {}
    for e in events:
        if e.kind == Kind.SEND:
            answers.setdefault((conn_key(e), e.correlation_id), e)
        elif e.kind == Kind.CONN_CLOSE:
            closes.setdefault(conn_key(e), []).append(e)
    out = []
    for e in events:
        if e.kind != Kind.RECV or not _same_api(e, api):
            continue
        close = next((c for c in closes.get(conn_key(e), ()) if c.t_ms >= e.t_ms), None)
        out.append(Exchange(e, answers.get((conn_key(e), e.correlation_id)), close))
    return out


def abandoned(trace: Iterable[TraceEvent], api: str | None = None) -> list[Exchange]:
    """One exchange per client-side close that left an answer owed: the first request (of
    ``api``) it abandoned. Closing an idle connection (a bootstrap one) abandons nothing."""
    seen: set[int] = set()
    out = []
    for x in exchanges(trace, api):
        if x.abandoned and x.close is not None and id(x.close) not in seen:
            seen.add(id(x.close))
            out.append(x)
    return out


@dataclass(frozen=True)
class Stay:
    """A request's time in a purgatory."""

    enter: TraceEvent
    end: TraceEvent | None            # purgatory_complete or purgatory_expire (None: still parked)

    @property
    def expired(self) -> bool:
        return self.end is not None and self.end.kind == Kind.PURGATORY_EXPIRE

    @property
    def timeout_ms(self) -> float | None:
        value = self.enter.details.get("timeout_ms")
        return None if value is None else float(value)

    @property
    def duration_ms(self) -> float | None:
        return None if self.end is None else self.end.t_ms - self.enter.t_ms


def purgatory_stays(trace: Iterable[TraceEvent], api: str | None = None) -> list[Stay]:
    events = list(trace)
    ends: dict[tuple[ConnKey, int | None, str | None], TraceEvent] = {}
    for e in events:
        if e.kind in (Kind.PURGATORY_COMPLETE, Kind.PURGATORY_EXPIRE):
            ends.setdefault((conn_key(e), e.correlation_id, e.api), e)
    return [Stay(e, ends.get((conn_key(e), e.correlation_id, e.api))) for e in events
            if e.kind == Kind.PURGATORY_ENTER and _same_api(e, api)]


@dataclass(frozen=True)
class GaveUp:
    who: str                          # "client", "broker" or "none"
    stay: Stay | None                 # the parked request it is about
    close: TraceEvent | None = None   # the client's close, when the client gave up first

    @property
    def after_ms(self) -> float | None:
        """How long after the request entered the purgatory the first side gave up."""
        if self.stay is None:
            return None
        if self.who == "client" and self.close is not None:
            return self.close.t_ms - self.stay.enter.t_ms
        return self.stay.duration_ms if self.who == "broker" else None


def first_to_give_up(trace: Iterable[TraceEvent], api: str = "Produce") -> GaveUp:
    """Broker and client race on the first request parked in ``api``'s purgatory (Kafka's Sender
    puts request.timeout.ms in the produce's timeout_ms): the broker expires it, the client drops
    the connection. Only the produce purgatory is a timeout; a long poll ending is its normal end."""
    events = list(trace)
    stay = next(iter(purgatory_stays(events, api)), None)
    if stay is None:
        return GaveUp("none", None)
    close = next((e for e in events if e.kind == Kind.CONN_CLOSE and conn_key(e) == conn_key(stay.enter)
                  and closed_by(e) == "client" and e.t_ms >= stay.enter.t_ms), None)
    expire_t = stay.end.t_ms if stay.expired and stay.end is not None else None
    if close is not None and (expire_t is None or close.t_ms < expire_t):
        return GaveUp("client", stay, close)
    return GaveUp("broker" if expire_t is not None else "none", stay)
