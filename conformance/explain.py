"""Timelines for teaching: one scenario run by our client in virtual time, drawn from the real
trace in lanes — the application call, the client's requests (each with its timeout window),
the broker and its purgatory — so server-side and client-side timeouts are seen side by side."""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from typing import Any

from broker_emu.trace import Kind, TraceEvent
from broker_emu.trace_reading import closed_by, exchanges, purgatory_stays
from client.errors import ErrorCode
from conformance import attribution as A
from conformance.model import Result, Scenario


@dataclass
class Span:
    lane: str
    start: float
    end: float
    label: str
    kind: str       # "call", "request", "timeout-client", "purgatory", "timeout-server", "ok", "error", "backoff"
    clock: str = ""  # the timeout that ended it ("request.timeout.ms = 30000 ms"), as attributed


@dataclass
class Mark:
    lane: str
    t: float
    label: str


LANES = ("application", "client requests", "wire", "broker", "purgatory", "controller", "transaction coordinator",
         "group coordinator", "share partitions", "who gave up first")


def build(trace: list[TraceEvent], config: dict[str, Any] | None = None, tol_ms: float = 1.0,
          scale: float = 1.0) -> tuple[list[Span], list[Mark]]:
    """The timeline's spans and marks, lane by lane (LANES). ``config`` is the client's (Kafka's
    defaults where it says nothing); each give-up is attributed to the clock that fired then
    (conformance/attribution.py), within ``tol_ms`` (exact in virtual time). ``scale``: a
    real-time run's timeouts were divided by it; labels show them as the scenario sets them."""
    spans: list[Span] = []
    marks: list[Mark] = []
    config = config or {}
    calls = A.calls(trace)
    _application(spans, marks, calls, config, tol_ms, scale)
    _client_requests(trace, spans, calls, config, tol_ms, scale)
    if scale == 1.0:   # a real-time run scales its timeouts, not its backoffs: only exact runs are read
        _backoffs(trace, spans, config, tol_ms)
        _connection_attempts(trace, spans, config)
    _broker(trace, spans, marks)
    _purgatory(trace, spans, scale)
    _controller(trace, spans, scale)
    _transactions(trace, spans, marks, scale)
    _consumer_groups(trace, spans, marks, scale)
    _share_partitions(trace, spans, marks, scale)
    _wire(trace, marks)
    _who_gave_up_first(spans, marks)
    marks.sort(key=lambda m: (m.t, m.lane, m.label))  # events at one instant: a stable order
    # trio runs ready tasks in a deliberately varying order, so two requests sent at one virtual
    # instant may reach the trace either way round: order by time, then by name
    spans.sort(key=lambda s: (s.start, s.end, s.label))
    return spans, marks


def _error_name(code: int) -> str:
    """``REQUEST_TIMED_OUT (7)``: the name a student can look up, and the number on the wire."""
    try:
        return f"{ErrorCode(code).name} ({code})"
    except ValueError:
        return f"error {code}"


def _ms(value: Any, scale: float) -> str:
    return f"{float(value) * scale:g} ms"


def _application(spans: list[Span], marks: list[Mark], calls: list[A.Call],
                 config: dict[str, Any], tol_ms: float, scale: float) -> None:
    for call in calls:
        if call.end is None:
            continue
        result = call.result or {}
        ok = bool(result.get("ok"))
        clock = A.named(A.call_end(call, config, tol_ms), scale)
        outcome = "returned" if ok else f"raised {result.get('error')}"
        label = f"{call.op}() {outcome}" + (f" when {clock} ran out" if clock else "")
        spans.append(Span("application", call.start, call.end, label, "ok" if ok else "error", clock))
        if result.get("message"):
            marks.append(Mark("application", call.end, result["message"]))


def _client_requests(trace: list[TraceEvent], spans: list[Span], calls: list[A.Call], config: dict[str, Any],
                     tol_ms: float, scale: float) -> None:
    for x in exchanges(trace):
        e = x.request
        if e.api in ("ApiVersions",):
            continue
        if x.answer is not None and not x.abandoned:
            errors = [int(n) for n in x.answer.details.get("errors") or []]
            spans.append(Span("client requests", e.t_ms, x.answer.t_ms,
                              f"{e.api}" + (f" -> {', '.join(_error_name(c) for c in errors)}" if errors else ""), "request"))
        elif x.abandoned and x.close is not None:
            clock = A.named(A.abandoned_request(e.api, e.t_ms, x.close.t_ms, calls, config, tol_ms), scale)
            if clock:
                spans.append(Span("client requests", e.t_ms, x.close.t_ms,
                                  f"{e.api} unanswered: the client gave up when {clock} ran out, "
                                  "and closed the connection", "timeout-client", clock))
            elif (x.abandoned_after_ms or 0.0) < 50:   # closed at once (shutting down, a bootstrap connection): no timeout
                spans.append(Span("client requests", e.t_ms, max(x.close.t_ms, e.t_ms),
                                  f"{e.api} unanswered: the client closed the connection at once (not a timeout)",
                                  "request"))
            else:
                spans.append(Span("client requests", e.t_ms, x.close.t_ms,
                                  f"{e.api} unanswered: the client closed the connection after "
                                  f"{_ms(x.close.t_ms - e.t_ms, scale)} (no timeout of its configuration ends there)",
                                  "request"))


def _backoffs(trace: list[TraceEvent], spans: list[Span], config: dict[str, Any], tol_ms: float) -> None:
    """The wait between a failed request and the client's next one of the same API, labelled a
    retry backoff only when its length fits the backoff the configuration gives that retry."""
    failures: dict[tuple[str | None, str | None], int] = {}   # (client, api): failures in a row
    ended: dict[tuple[str | None, str | None], float] = {}     # (client, api): when the last one failed
    for x in exchanges(trace):
        key, e = (x.request.client_id, x.api), x.request
        if key in ended:
            gap = e.t_ms - ended.pop(key)
            lo, hi, clock = A.retry_backoff(failures[key] - 1, config)
            if gap > tol_ms and lo - tol_ms <= gap <= hi + tol_ms:
                spans.append(Span("client requests", e.t_ms - gap, e.t_ms, f"backoff before retrying {e.api}: "
                                  f"{_ms(gap, 1.0)} of {A.named([clock])}", "backoff", A.named([clock])))
        if x.abandoned and x.close is not None:
            end: float | None = x.close.t_ms
        elif x.answer is not None and x.answer.details.get("errors"):
            end = x.answer.t_ms
        else:
            end = None
        if end is None:
            failures.pop(key, None)
        else:
            failures[key] = failures.get(key, 0) + 1
            ended[key] = end


def _connection_attempts(trace: list[TraceEvent], spans: list[Span], config: dict[str, Any]) -> None:
    """Connection attempts a broker dropped (no request was ever sent): each one the client gave
    up on before its next, named by the set-up timeout when the gap fits that attempt's window."""
    drops: dict[int | None, list[float]] = {}
    for e in trace:
        if e.kind == Kind.CONNECT_DROPPED:
            drops.setdefault(e.broker, []).append(e.t_ms)
    for broker, times in drops.items():
        for n, (t0, t1) in enumerate(zip(times, times[1:])):
            lo, hi, clock = A.connection_attempt(n, config)
            if lo <= t1 - t0 <= hi:
                spans.append(Span("client requests", t0, t1, f"connection attempt {n + 1} to broker {broker} dropped: "
                                  f"abandoned when {A.named([clock])} ran out, then retried", "timeout-client",
                                  A.named([clock])))


def _late(e: TraceEvent, held: dict[Any, float], spans: list[Span], marks: list[Mark]) -> None:
    """A held request (the ``hold`` fault): read and left unhandled until released, then handled,
    its answer dropped when its client has gone (what tears a transaction under version 1)."""
    d = e.details
    if e.kind == Kind.LATE_HOLD:
        held[d.get("held")] = e.t_ms
    elif e.kind == Kind.LATE_RELEASE and d.get("held") in held:
        client = "its client still waiting" if d.get("connection_open") else "its client gone"
        spans.append(Span("broker", held.pop(d["held"]), e.t_ms, f"{e.api} held by the broker, unhandled, until "
                          f"released {d.get('reason', '')} ({client})", "request"))
    elif e.kind == Kind.LATE_ANSWER:
        errors = ", ".join(_error_name(c) for c in d.get("errors") or ())
        marks.append(Mark("broker", e.t_ms, f"late {e.api} handled: answered {errors or 'without error'}, "
                                            "the answer dropped (no connection left to send it on)"))


def _broker(trace: list[TraceEvent], spans: list[Span], marks: list[Mark]) -> None:
    held: dict[Any, float] = {}
    for e in trace:
        if e.kind in (Kind.LATE_HOLD, Kind.LATE_RELEASE, Kind.LATE_ANSWER):
            _late(e, held, spans, marks)
        elif e.kind == Kind.FAULT_APPLIED:
            # a connection rule names no API: on broker N (a SYN gate closing, broker_emu/dropped_connects.py)
            on = e.api if e.api is not None else f"broker {e.broker}"
            marks.append(Mark("broker", e.t_ms, f"fault: {e.details['action']['type']} on {on}"))
        elif e.kind == Kind.ISR_CHANGE and "shrink" in e.details and "replica_lag_time_max_ms" in e.details:
            d = e.details
            marks.append(Mark("broker", e.t_ms, f"ISR of {d['topic']}-{d['partition']} shrank to {d['isr']}: follower(s) "
                                               f"{d['shrink']} not caught up for replica.lag.time.max.ms = "
                                               f"{d['replica_lag_time_max_ms']} ms (server side)"))
        elif e.kind in (Kind.LEADER_CHANGE, Kind.ISR_CHANGE, Kind.BROKER_STOP, Kind.BROKER_START):
            marks.append(Mark("broker", e.t_ms, f"{e.kind.replace('_', ' ')} {e.details}"))
        elif closed_by(e) == "client":
            marks.append(Mark("broker", e.t_ms, f"client closed conn {e.conn}"))


def _purgatory(trace: list[TraceEvent], spans: list[Span], scale: float) -> None:
    for stay in purgatory_stays(trace):
        start, end = stay.enter, stay.end
        if end is None:
            continue
        if start.api == "Fetch":   # a long poll ending at max_wait_ms is the normal case, not an error
            label = ("held Fetch: long poll ended at max_wait_ms (fetch.max.wait.ms), answered with what it had"
                     if stay.expired else "held Fetch: data arrived, answered early")
            spans.append(Span("purgatory", start.t_ms, end.t_ms, label, "request"))
            continue
        timeout = stay.timeout_ms if stay.timeout_ms is not None else end.details.get("timeout_ms")
        clock = ("" if not stay.expired else f"the {start.api}'s timeout_ms" if timeout is None
                 else f"the {start.api}'s timeout_ms = {_ms(timeout, scale)}")
        label = (f"parked {start.api}: REQUEST_TIMED_OUT when {clock} ran out (server side)"
                 if stay.expired else f"parked {start.api}: completed")
        spans.append(Span("purgatory", start.t_ms, end.t_ms, label, "timeout-server" if stay.expired else "ok", clock))


def _controller(trace: list[TraceEvent], spans: list[Span], scale: float) -> None:
    """An admin write whose timeout_ms became the KRaft controller's deadline and passed before
    the controller got to it: a server-side timeout, drawn from the request's arrival."""
    for e in trace:
        if e.kind == Kind.CONTROLLER_DEADLINE:
            timeout = float(e.details["timeout_ms"])
            clock = f"the {e.details['api']}'s timeout_ms = {_ms(timeout, scale)}"
            done = "the change was made, not yet everywhere" if e.details.get("applied") else "nothing changed"
            spans.append(Span("controller", e.t_ms - max(timeout, 0.0), e.t_ms,
                              f"{e.details['api']}: the controller's deadline ({clock}) passed before it got to the "
                              f"request: REQUEST_TIMED_OUT, {done} (server side)", "timeout-server", clock))


def _transactions(trace: list[TraceEvent], spans: list[Span], marks: list[Mark], scale: float) -> None:
    """The coordinator's side of each transaction: how long it stayed open (ended by EndTxn, or
    by the coordinator's timeout check: a server-side timeout), its state changes, its markers."""
    began: dict[str, float] = {}
    for e in trace:
        if e.kind == Kind.TXN_STATE:
            tid, to, reason = e.details["transactional_id"], e.details["to"], str(e.details.get("reason", ""))
            if to == "Ongoing":
                began[tid] = e.t_ms
            elif to in ("PrepareCommit", "PrepareAbort") and tid in began:
                timeout = e.details.get("timeout_ms")
                clock = f"transaction.timeout.ms = {_ms(timeout, scale)}" if timeout is not None else ""
                label = (f"{tid}: open past {clock}, aborted at the coordinator's check (server side)"
                         if clock else f"{tid}: open until {reason}")
                spans.append(Span("transaction coordinator", began.pop(tid), e.t_ms, label,
                                  "timeout-server" if clock else "ok", clock))
            marks.append(Mark("transaction coordinator", e.t_ms, f"{tid} {e.details['from']} -> {to} ({reason}), epoch {e.details['epoch']}"))
        elif e.kind == Kind.TXN_LOG_LOAD:
            d = e.details
            spans.append(Span("transaction coordinator", e.t_ms, float(d["until_ms"]),
                              f"broker {e.broker} loads __transaction_state-{d['log_partition']} (coordinator moved from "
                              f"broker {d['from']}): COORDINATOR_LOAD_IN_PROGRESS", "ok", ""))
        elif e.kind == Kind.TXN_MARKER:
            kind = "commit" if e.details["commit"] else "abort"
            marks.append(Mark("transaction coordinator", e.t_ms,
                              f"{kind} marker written to {e.details['topic']}-{e.details['partition']} at offset {e.details['offset']}"))


def _consumer_groups(trace: list[TraceEvent], spans: list[Span], marks: list[Mark], scale: float) -> None:
    """KIP-848 groups as their coordinator runs them: each member's epoch and assignment, the
    group epoch, and a member fenced by the broker's session timer or its rebalance timeout (a
    server-side timeout, drawn from when the timer started)."""
    names: dict[str, str] = {}   # member ids are random UUIDs: name members by order of arrival

    def member(d: dict) -> str:
        return f"{d['group']}/" + names.setdefault(str(d["member"]), f"member-{len(names) + 1}")

    for e in trace:
        d = e.details
        if e.kind == Kind.GROUP_MEMBER_FENCED:
            who = member(d)
            if d["reason"] == "left":
                marks.append(Mark("group coordinator", e.t_ms, f"{who} left, released {d.get('released')}"))
                continue
            consumer = "group.share.session.timeout.ms" if d.get("type") == "share" else "group.consumer.session.timeout.ms"
            timer = {"session": "session.timeout.ms" if d.get("protocol") == "classic" else consumer, "join": "its rebalance timeout",
                     "sync": "its rebalance timeout"}.get(d["reason"], "its rebalance timeout")
            why = {"join": " (told to rejoin)", "sync": " (no SyncGroup)"}.get(d["reason"], "" if d["reason"] == "session"
                                                                                else " (revocation)")
            clock = f"{timer} = {_ms(d['timeout_ms'], scale)}"
            spans.append(Span("group coordinator", e.t_ms - float(d["timeout_ms"]), e.t_ms,
                              f"{who}: silent past {clock}{why}, fenced (server side); released {d.get('released')}",
                              "timeout-server", clock))
        elif e.kind == Kind.GROUP_MEMBER_EPOCH:
            marks.append(Mark("group coordinator", e.t_ms, f"{member(d)} epoch {d['from']} -> "
                                                          f"{d['to']} ({d['state']}): owns {d['assigned']}"
                                                          + (f", revoking {d['revoking']}" if d.get("revoking") else "")))
        elif e.kind == Kind.GROUP_CONVERTED:
            marks.append(Mark("group coordinator", e.t_ms, f"{d['group']} is now a {d['to']} group (members {d['members']})"))
        elif e.kind in (Kind.GROUP_MEMBER_EXPIRED, Kind.GROUP_MEMBER_REMOVED, Kind.GROUP_REBALANCE):
            _classic_group(e, member, spans, marks, scale)
        elif e.kind == Kind.GROUP_EPOCH:
            reason = re.sub(MEMBER_IN_REASON, lambda m: member({"group": "", "member": m.group(1)})[1:],
                            str(d["reason"]))
            marks.append(Mark("group coordinator", e.t_ms, f"{d['group']} group epoch {d['group_epoch']}: {reason}"))


_SHARE_ENDS = (Kind.SHARE_ACKNOWLEDGE, Kind.SHARE_RELEASE, Kind.SHARE_ARCHIVE, Kind.SHARE_RENEW)


def _share_partitions(trace: list[TraceEvent], spans: list[Span], marks: list[Mark], scale: float) -> None:
    """KIP-932: the broker's lock clock. Each acquisition lock that ran out is a span from the
    acquisition (or RENEW) to the broker taking the records back (a server-side timeout the
    member did not beat); a lock the member ended in time (accepted, released, rejected, renewed)
    is a span to that moment; releases, archives and renewals are marked."""
    names: dict[str, str] = {}   # member ids are random UUIDs (the member makes its own): name members by order of arrival

    def member(d: dict) -> str:
        return names.setdefault(str(d.get("member")), f"member-{len(names) + 1}")

    for i, e in enumerate(trace):
        d = e.details
        if e.kind == Kind.SHARE_ACQUIRE:
            member(d)   # named when it first acquires, whatever ends its lock
        where = f"{d.get('group')}/{d.get('topic')}-{d.get('partition')} {d.get('offsets')}"
        if e.kind == Kind.SHARE_LOCK_EXPIRED:
            clock = f"share.record.lock.duration.ms = {_ms(d['lock_duration_ms'], scale)}"
            late = f", {_ms(d['late_ms'], scale)} late (lock-late fault)" if d.get("late_ms") else ""
            spans.append(Span("share partitions", float(d["locked_at_ms"]), e.t_ms,
                              f"{where}: locked for {member(d)} past {clock}{late}, taken back "
                              f"(server side), delivery count {d.get('delivery_counts')}", "timeout-server", clock))
        elif e.kind in (Kind.SHARE_ACQUIRE, Kind.SHARE_RENEW):
            end = _lock_end(trace[i + 1:], e)
            if end is not None:
                ended: dict[str, str] = {Kind.SHARE_RENEW: "renewed", Kind.SHARE_ACKNOWLEDGE: "accepted"}
                how = ended.get(end.kind, f"{end.kind.removeprefix('share_')}d ({end.details.get('reason')})")
                spans.append(Span("share partitions", float(d["locked_at_ms"]), end.t_ms,
                                  f"{where}: locked for {member(d)}"
                                  + (f", delivery count {d['delivery_counts']}" if "delivery_counts" in d else "")
                                  + f"; {how} before it ran out", "ok"))
        if e.kind in (Kind.SHARE_RELEASE, Kind.SHARE_ARCHIVE, Kind.SHARE_RENEW):
            marks.append(Mark("share partitions", e.t_ms, f"{where}: {e.kind.removeprefix('share_')} "
                                                          f"({d.get('reason', 'renewed')})"))


def _offsets(e: TraceEvent) -> set[int]:
    return {o for first, last in e.details.get("offsets") or [] for o in range(first, last + 1)}


def _lock_end(later: list[TraceEvent], lock: TraceEvent) -> TraceEvent | None:
    """What ended ``lock`` (an acquire or renew) before it expired: the member's first later
    acknowledgement, release, archive or renewal of one of its records; None if it expired or
    still stood when the run ended."""
    d, held = lock.details, _offsets(lock)
    where = (d.get("group"), d.get("topic"), d.get("partition"))
    for e in later:
        x = e.details
        if (x.get("group"), x.get("topic"), x.get("partition")) != where or not held & _offsets(e):
            continue
        if e.kind == Kind.SHARE_LOCK_EXPIRED and x.get("locked_at_ms") == d.get("locked_at_ms"):
            return None
        if e.kind in _SHARE_ENDS and x.get("member") == d.get("member"):
            return e
    return None


# a member's id in a coordinator's reason: classic ids are "client.id-UUID", and a client.id may hold spaces
MEMBER_IN_REASON = re.compile(r"member (.+?)(?= joined| left| session expired| changed|$)")


def _classic_group(e: TraceEvent, member: Any, spans: list[Span], marks: list[Mark], scale: float) -> None:
    """A classic group as its coordinator runs it: a member silent past the session timeout *it*
    sent in JoinGroup, expelled by the broker (a server-side timeout on a client's number), one
    that did not rejoin or sync within the rebalance timeout, and each rebalance."""
    d = e.details
    if e.kind == Kind.GROUP_MEMBER_EXPIRED:
        clock = f"session.timeout.ms = {_ms(d['session_timeout_ms'], scale)}"
        spans.append(Span("group coordinator", e.t_ms - float(d["session_timeout_ms"]), e.t_ms,
                          f"{member(d)}: silent past its {clock} (the member's number, enforced by the broker), "
                          "expelled (server side)", "timeout-server", clock))
    elif e.kind == Kind.GROUP_MEMBER_REMOVED:
        marks.append(Mark("group coordinator", e.t_ms, f"{member(d)} removed: {d['reason']}"))
    else:
        reason = re.sub(MEMBER_IN_REASON, lambda m: member({"group": "", "member": m.group(1)})[1:], str(d["reason"]))
        marks.append(Mark("group coordinator", e.t_ms, f"{d['group']} rebalance ({reason}); rebalance timeout "
                                                      f"{_ms(d['rebalance_timeout_ms'], scale)}"))


def _wire(trace: list[TraceEvent], marks: list[Mark]) -> None:
    for e in trace:   # the wire: what crossed it, each way (ApiVersions left out, as above)
        if e.kind == Kind.RECV and e.api not in ("ApiVersions", None):
            marks.append(Mark("wire", e.t_ms, f"-> {e.api} (conn {e.conn})"))
        elif e.kind == Kind.SEND and e.api not in ("ApiVersions", None):
            marks.append(Mark("wire", e.t_ms, f"<- {e.api} (conn {e.conn})"))


def _who_gave_up_first(spans: list[Span], marks: list[Mark]) -> None:
    first = min((sp for sp in spans if sp.kind in ("timeout-client", "timeout-server")), key=lambda sp: sp.end, default=None)
    if first is not None:
        if first.kind == "timeout-client":
            side = f"the client ({first.clock}): it closed the connection"
        elif first.lane == "transaction coordinator":
            side = f"the broker ({first.clock}, at its coordinator's check): it aborted the transaction and fenced the producer"
        elif first.lane == "controller":
            side = f"the broker ({first.clock}, its controller's deadline): it answered REQUEST_TIMED_OUT"
        elif first.lane == "group coordinator" and first.clock.startswith("session.timeout.ms"):
            side = f"the broker (its group coordinator, on the member's {first.clock}): it expelled the member"
        elif first.lane == "group coordinator":
            side = f"the broker (its group coordinator's {first.clock}): it fenced the member and moved its partitions"
        else:
            side = f"the broker ({first.clock}, in its purgatory): it answered REQUEST_TIMED_OUT"
        marks.append(Mark("who gave up first", first.end, f"first to give up: {side}"))


def _end(spans: list[Span], marks: list[Mark]) -> float:
    return max([s.end for s in spans] + [m.t for m in marks] + [1.0])


def render_text(title: str, spans: list[Span], marks: list[Mark], width: int = 60, end: float | None = None) -> str:
    end = end or _end(spans, marks)
    scale = width / end
    lines = [title, f"time axis: 0 .. {end / 1000:.2f} s ({end / width / 1000:.2f} s per column)", ""]
    fill = {"timeout-client": "!", "timeout-server": "#", "error": "x", "backoff": "."}
    for lane in LANES:
        if lane == "wire":
            continue   # one line per frame is too much for a terminal; the SVG/HTML has this lane
        lane_spans = [s for s in spans if s.lane == lane]
        lane_marks = [m for m in marks if m.lane == lane]
        if not lane_spans and not lane_marks:
            continue
        lines.append(f"{lane}:")
        for s in lane_spans:
            a, b = int(s.start * scale), max(int(s.end * scale), int(s.start * scale) + 1)
            bar = " " * a + fill.get(s.kind, "=") * (b - a)
            lines.append(f"  |{bar:<{width}}| {s.start / 1000:8.3f}-{s.end / 1000:8.3f} s  {s.label}")
        for m in lane_marks:
            pos = min(int(m.t * scale), width - 1)
            lines.append(f"  |{' ' * pos + '^':<{width}}| {m.t / 1000:8.3f} s           {m.label}")
    lines += ["", "legend: = request/call   ! client-side timeout   # server-side timeout   x call failed   . backoff",
              "        (--out FILE.html adds the wire lane: every frame each way)"]
    return "\n".join(lines)


COLORS = {"call": "#4a90d9", "ok": "#4caf50", "error": "#e53935", "request": "#90a4ae", "backoff": "#fdd835",
          "timeout-client": "#fb8c00", "timeout-server": "#8e24aa"}


CHAR_PX = 6.3   # a generous average width of an 11 px sans-serif character


def _wrap(text: str, chars: int) -> list[str]:
    """``text`` in lines of at most ``chars`` characters, broken at spaces where it can be."""
    lines: list[str] = []
    while len(text) > chars:
        cut = text.rfind(" ", 0, chars + 1)
        cut = cut if cut > chars // 2 else chars
        lines.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    return lines + [text]


def _label(text: str, at: float, y: float, left: float, width: float) -> tuple[str, int]:
    """A label that stays inside the drawing, and the lines it takes: on one line to the right of
    its anchor (or to its left, near the right edge) when it fits; else wrapped, never cut, in
    the room on the wider side (a student needs the whole explanation)."""
    room_right, room_left = width - 8 - at, at - left
    if len(text) * CHAR_PX <= room_right:
        lines, anchor = [text], "start"
    elif len(text) * CHAR_PX <= room_left:
        lines, anchor = [text], "end"
    else:
        anchor = "start" if room_right >= room_left else "end"
        lines = _wrap(text, max(int(max(room_right, room_left) / CHAR_PX) - 1, 20))
    pos = at if anchor == "start" else at - 8
    spans = "".join(f'<tspan x="{pos:.1f}" dy="{0 if i == 0 else LINE_PX}">{html.escape(line)}</tspan>'
                    for i, line in enumerate(lines))
    return (f'<text class="label" x="{pos:.1f}" y="{y}" font-size="11" text-anchor="{anchor}">{spans}</text>',
            len(lines))


LINE_PX = 13


def _step(end: float, most: int = 10) -> float:
    """A tick step of 1, 2 or 5 times a power of ten giving at most ``most`` intervals."""
    raw = max(end / most, 1e-9)
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _tick_label(t: float, step: float, end: float) -> str:
    """Milliseconds on an axis shorter than 2 s, else seconds with as many decimals as the step
    needs: every tick reads differently."""
    if end < 2000:
        return f"{t:.0f} ms" if step >= 1 else f"{t:.1f} ms"
    decimals = max(0, -math.floor(math.log10(step / 1000) + 1e-9))
    return f"{t / 1000:.{decimals}f} s"


def ticks(end: float) -> list[tuple[float, str]]:
    step = _step(end)
    return [(i * step, _tick_label(i * step, step, end)) for i in range(int(end / step + 1e-9) + 1)]


def render_svg(title: str, spans: list[Span], marks: list[Mark], width: int = 1100, end: float | None = None) -> str:
    end = end or _end(spans, marks)
    left, plot = 150, width - 170
    x = lambda t: left + t / end * plot
    heading = _wrap(title, int((width - 20) / 8.5))   # bold 16 px: wrapped, never cut
    rows, y = [], 40 + 18 * (len(heading) - 1)
    out = ['<text class="title" x="10" y="20" font-weight="bold">' + "".join(
        f'<tspan x="10" dy="{0 if i == 0 else 18}">{html.escape(line)}</tspan>' for i, line in enumerate(heading)) + "</text>"]
    for lane in LANES:
        items = [s for s in spans if s.lane == lane]
        lane_marks = [m for m in marks if m.lane == lane]
        if not items and not lane_marks:
            continue
        out.append(f'<text x="10" y="{y + 14}" class="lane" font-size="13">{lane}</text>')
        for s in items:
            w = max(x(s.end) - x(s.start), 2)
            out.append(f'<rect class="span {s.kind}" x="{x(s.start):.1f}" y="{y}" width="{w:.1f}" height="18" '
                       f'fill="{COLORS.get(s.kind, "#999")}"><title>{html.escape(s.label)}</title></rect>')
            text, lines = _label(f"{s.label} ({s.start / 1000:.3f}-{s.end / 1000:.3f} s)", x(s.start) + 3, y + 32, left, width)
            out.append(text)
            y += 40 + LINE_PX * (lines - 1)
        for m in lane_marks:
            text, lines = _label(f"{m.label} ({m.t / 1000:.3f} s)", x(m.t) + 4, y + 13, left, width)
            out.append(f'<line x1="{x(m.t):.1f}" x2="{x(m.t):.1f}" y1="{y}" y2="{y + 16}" stroke="#333"/>' + text)
            y += 22 + LINE_PX * (lines - 1)
        rows.append(y)
        y += 12
    axis = "".join(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="30" y2="{y}" stroke="#eee"/>'
                   f'<text x="{x(t):.1f}" y="{y + 14}" font-size="10" text-anchor="middle">{label}</text>'
                   for t, label in ticks(end))
    legend = ("".join(f'<rect x="{10 + i * 170}" y="{y + 26}" width="12" height="12" fill="{COLORS[k]}"/>'
                      f'<text x="{26 + i * 170}" y="{y + 36}" font-size="11">{html.escape(name)}</text>'
                      for i, (k, name) in enumerate(LEGEND)))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y + 50}" font-family="sans-serif">'
            f'{axis}{"".join(out)}{legend}</svg>')


LEGEND = (("request", "request, answered"), ("ok", "call returned"), ("error", "call failed"),
          ("timeout-client", "a client clock gave up"), ("timeout-server", "a broker timer gave up"),
          ("backoff", "a retry backoff"))


def explain(scenario: Scenario, client: str | None = None, scale: float = 30.0) -> tuple[Result, list[Span], list[Mark]]:
    """Run ``scenario`` with one client and build its timeline. Our async face runs in virtual
    time at full length; any other client runs in real time with timeouts divided by ``scale``,
    and its timeline is stretched back by the scale the run used (``scale``, or the scenario's
    ``max_scale`` when that is lower: ``Scenario.scale_in``) so both read on Kafka's real time axis."""
    from conformance.adapters.ours import OurAdapter
    from conformance.virtual import run_virtual_time

    if client is None or client == OurAdapter.name:
        result = run_virtual_time(scenario, OurAdapter())
        spans, marks = build(result.trace, result.evidence.config if result.evidence else None)
        return result, spans, marks
    from conformance.runner import Plan, default_adapters, run_plan, unknown_client

    adapters = {a.name: a for a in default_adapters()}
    if client not in adapters:
        raise unknown_client(client, adapters)
    result = run_plan(Plan([scenario], [adapters[client]], scale=scale))[0]
    ev = result.evidence
    spans, marks = build(result.trace, ev.config if ev else None, ev.slack_ms if ev else 1.0, ev.scale if ev else 1.0)
    used = ev.scale if ev else scenario.scale_in(scale)
    for sp in spans:
        sp.start, sp.end = sp.start * used, sp.end * used
    for m in marks:
        m.t *= used
    return result, spans, marks


def render_compare_text(panels: list[tuple[str, list[Span], list[Mark]]], width: int = 60) -> str:
    """Several timelines one above the other on one time axis."""
    end = max(_end(sp, mk) for _, sp, mk in panels)
    return ("\n\n" + "-" * (width + 4) + "\n\n").join(render_text(t, sp, mk, width, end) for t, sp, mk in panels)


def render_compare_svg(panels: list[tuple[str, list[Span], list[Mark]]], width: int = 1100) -> str:
    end = max(_end(sp, mk) for _, sp, mk in panels)
    return "<br/>".join(render_svg(t, sp, mk, width, end) for t, sp, mk in panels)
