"""Reusable contracts. Client-side ones read the outcomes; server-side ones read the trace.

Times in the trace are ms since cluster start; expected times are given in the scenario's
unscaled milliseconds and compared after dividing by ``Evidence.scale``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Iterable

from broker_emu.trace import Kind, TraceEvent
from broker_emu.trace_reading import abandoned, closed_by, exchanges, purgatory_stays
from conformance.model import Contract, Evidence, Outcome, Timing, Verdict


def _fmt_s(ms: float) -> str:
    return f"{ms / 1000:.2f} s"


def _outcome(ev: Evidence, operation: str | None) -> Outcome | None:
    for o in ev.outcomes:
        if operation is None or o.operation == operation:
            return o
    return None


def expected_ms(ev: Evidence, spec: float | str, operation: str | None = None) -> float:
    """An expected time in the run's own (scaled) milliseconds. ``spec`` is unscaled ms, a config
    key (``"request.timeout.ms"``: the value the client actually ran with, already scaled),
    ``"timeout"``: the deadline of the ``operation`` step (also already scaled), or ``"fault.ms"``:
    the delay of the first timed fault the broker applied. Keys make a
    contract follow parameter overrides (conformance/params.py)."""
    if isinstance(spec, str):
        if spec == "fault.ms":
            # the delay the broker actually applied (trace times are already scaled)
            applied = next((e for e in ev.events(Kind.FAULT_APPLIED) if "ms" in (e.details.get("action") or {})), None)
            if applied is None:
                raise ValueError("no timed fault was applied in this run")
            return float(applied.details["action"]["ms"])
        if spec == "timeout":
            timeout_s = _step_timeout_s(ev, operation)
            if timeout_s is None:
                raise ValueError(f"no {operation} step with a timeout in this run")
            return timeout_s * 1000
        return float(ev.config[spec])
    return spec / ev.scale


def _step_timeout_s(ev: Evidence, operation: str | None) -> float | None:
    """The deadline of the first ``operation`` step that has one (already scaled)."""
    return next((s.timeout_s for s in ev.steps if s.kind == operation and s.timeout_s is not None), None)


# -- client side -----------------------------------------------------------------------------

def outcome_is(operation: str, *, ok: bool | None = None, error: str | Iterable[str] | None = None,
               message_mentions: Iterable[str] = ()) -> Contract:
    """The operation succeeded (``ok=True``) or failed with one of the named error types."""
    errors = {error} if isinstance(error, str) else set(error or ())
    words = tuple(message_mentions)

    def check(ev: Evidence) -> Verdict:
        o = _outcome(ev, operation)
        if o is None:
            return Verdict(False, message=f"no outcome recorded for {operation}")
        got = "ok" if o.ok else f"{o.error_type}: {o.error_message}"
        if ok is not None and o.ok != ok:
            return Verdict(False, got, f"{operation} expected {'success' if ok else 'failure'}, got {got}")
        if errors and (o.ok or o.error_type not in errors):
            return Verdict(False, got, f"{operation} expected {' or '.join(sorted(errors))}, got {got}")
        missing = [w for w in words if w.lower() not in (o.error_message or "").lower()]
        if missing:
            return Verdict(False, got, f"error message does not mention {missing}: {o.error_message!r}")
        return Verdict(True, got)

    return Contract(f"{operation} outcome", check)


def returns_within(operation: str, expected: float | str, *, early_ms: float = 0.0, late_ms: float = 0.0,
                   late_fraction: float = 0.0) -> Contract:
    """The call returned at ``expected_ms`` (scaled), no earlier than ``early_ms`` before and no
    later than max(late_ms, late_fraction * expected) after."""

    def check(ev: Evidence) -> Verdict:
        o = _outcome(ev, operation)
        if o is None:
            return Verdict(False, message=f"no outcome recorded for {operation}")
        want = expected_ms(ev, expected, operation)
        got = o.elapsed_s * 1000
        slack = max(late_ms / ev.scale, late_fraction * want, ev.slack_ms)
        figure = f"returned at {_fmt_s(got)} of {_fmt_s(want)}"
        timing = Timing(got, want)
        if got < want - max(early_ms / ev.scale, ev.slack_ms / 5):
            return Verdict(False, figure, f"{operation} returned {want - got:.1f} ms before its deadline", timing=timing)
        if got > want + slack:
            return Verdict(False, figure, f"{operation} overshot its deadline by {got - want:.1f} ms (allowed {slack:.1f} ms)", timing=timing)
        return Verdict(True, figure, timing=timing)

    setting = expected if isinstance(expected, str) and expected not in ("timeout", "fault.ms") else None
    return Contract(f"{operation} returns at its deadline", check, setting=setting)


# -- server side -----------------------------------------------------------------------------

def _first(events: list[TraceEvent], pred) -> TraceEvent | None:
    return next((e for e in events if pred(e)), None)


def client_disconnects_after(api: str, expected: float | str, tolerance_ms: float, *, tolerance_fraction: float = 0.0) -> Contract:
    """The client closed the connection that carried the first ``api`` request about
    ``expected_ms`` after the broker received it (KIP-19: request.timeout.ms)."""

    def check(ev: Evidence) -> Verdict:
        first = next(iter(exchanges(ev.events(), api)), None)
        if first is None:
            return Verdict(False, message=f"the broker never received {api}")
        recv, close = first.request, first.close
        if close is None:
            return Verdict(False, "no disconnect", f"the connection that carried {api} (conn {recv.conn}) was never closed")
        if closed_by(close) != "client":
            return Verdict(False, f"closed by {closed_by(close)}", f"conn {recv.conn} was closed by the broker ({close.details.get('reason')}), not the client")
        want = expected_ms(ev, expected)
        got = close.t_ms - recv.t_ms
        tol = max(tolerance_ms / ev.scale, tolerance_fraction * want, ev.slack_ms)
        figure = f"disconnect at {_fmt_s(got)} of {_fmt_s(want)}"
        timing = Timing(got, want)
        if abs(got - want) > tol:
            return Verdict(False, figure, f"client closed conn {recv.conn} {got:.1f} ms after {api}, expected {want:.1f} ± {tol:.1f} ms", timing=timing)
        return Verdict(True, figure, timing=timing)

    return Contract(f"disconnect at request.timeout.ms after {api}", check, side="server")


def metadata_before_retry(api: str) -> Contract:
    """After the client dropped the connection carrying ``api``, it asked for Metadata before
    sending ``api`` again (KIP-19: refresh metadata, then retry)."""

    def check(ev: Evidence) -> Verdict:
        recvs = ev.events(Kind.RECV)
        first = _first(recvs, lambda e: (e.api or "").lower() == api.lower())
        if first is None:
            return Verdict(False, message=f"the broker never received {api}")
        close = _first(ev.events(Kind.CONN_CLOSE), lambda e: e.conn == first.conn and e.broker == first.broker and e.t_ms >= first.t_ms)
        after = [e for e in recvs if e.t_ms >= (close.t_ms if close else first.t_ms) and e is not first]
        retry = _first(after, lambda e: (e.api or "").lower() == api.lower())
        if retry is None:
            return Verdict(False, "no retry", f"{api} was not sent again")
        # The refresh may reach the broker before the close does: the client closes one connection
        # and sends Metadata on another, and the broker sees the two in either order (real time).
        since = max(first.t_ms, close.t_ms - ev.slack_ms) if close else first.t_ms
        # Java (Sender, NetworkClient.poll) and kafka-python ask for both at once, each sent when its
        # new connection is ready: a refresh on a connection opened before the retry arrived counts.
        opened = {(e.broker, e.conn): e.t_ms for e in ev.events(Kind.CONN_OPEN) if e.t_ms >= since}
        meta = _first(recvs, lambda e: e.api == "Metadata" and since <= e.t_ms and (
            e.t_ms <= retry.t_ms or (opened.get((e.broker, e.conn), math.inf) < retry.t_ms
                                     and e.t_ms <= retry.t_ms + ev.slack_ms)))
        if meta is None:
            return Verdict(False, "retry without Metadata", f"{api} was retried at {retry.t_ms:.0f} ms without a Metadata request first")
        new_conn = (retry.broker, retry.conn) != (first.broker, first.conn)
        figure = f"Metadata at {_fmt_s(meta.t_ms)}, retry at {_fmt_s(retry.t_ms)} on broker {retry.broker}"
        if not new_conn:
            return Verdict(False, figure, f"the retry went out on the same connection {first.conn}")
        return Verdict(True, figure)

    return Contract(f"Metadata before {api} retry, on a new connection", check, side="server")


def no_client_disconnect(api: str | None = None, within_ms: float | None = None,
                         held_ms: float | None = None) -> Contract:
    """The client never dropped a connection with an ``api`` request outstanding (a slow broker
    or a long-poll is not a dead one). ``within_ms``: only during that window after the first
    ``api`` request (scaled), so a client's own close after the operation does not count.
    ``held_ms``: only requests outstanding longer than that (scaled) plus the run's timing slack
    when dropped — a client that takes a long poll for a dead broker gives up on a Fetch after
    its own request timeout, while the broker holds it for up to fetch.max.wait.ms; one dropped
    within that hold is the client closing after its poll returned (franz-go, aiokafka and
    kafka-python do, inside a window that starts at the first Fetch: docs/findings.md)."""

    def check(ev: Evidence) -> Verdict:
        dropped = abandoned(ev.events(), api)
        if within_ms is not None:
            first = next((e for e in ev.events(Kind.RECV, api)), None)
            limit = (first.t_ms if first else 0.0) + within_ms / ev.scale
            dropped = [x for x in dropped if x.close is not None and x.close.t_ms < limit]
        if held_ms is not None:
            dropped = [x for x in dropped if (x.abandoned_after_ms or 0.0) > held_ms / ev.scale + ev.slack_ms]
        if dropped and dropped[0].close is not None:
            close, req = dropped[0].close, dropped[0].request
            return Verdict(False, f"{len(dropped)} request(s) abandoned",
                           f"client closed conn {close.conn} on broker {close.broker} at {close.t_ms:.0f} ms with "
                           f"{req.api} (corr {req.correlation_id}, sent at {req.t_ms:.0f} ms) unanswered")
        return Verdict(True, f"{len(ev.events(Kind.CONN_OPEN))} connections, no request abandoned")

    return Contract(f"no {api or 'request'} abandoned by a disconnect", check, side="server")


def purgatory_expires_after(timeout_ms: float, tolerance_ms: float) -> Contract:
    """The broker's purgatory expired the produce ``timeout_ms`` after it entered, answering
    REQUEST_TIMED_OUT (server-side timeout)."""

    def check(ev: Evidence) -> Verdict:
        stay = next(iter(purgatory_stays(ev.events())), None)
        if stay is None:
            return Verdict(False, message="no request entered the purgatory")
        if not stay.expired or stay.duration_ms is None:
            return Verdict(False, "no expiry", f"the parked request (corr {stay.enter.correlation_id}) never expired")
        want = timeout_ms / ev.scale
        got = stay.duration_ms
        figure = f"purgatory expiry at {_fmt_s(got)} of {_fmt_s(want)}"
        timing = Timing(got, want)
        if abs(got - want) > tolerance_ms / ev.scale:
            return Verdict(False, figure, f"expired {got:.1f} ms after entering, expected {want:.1f} ms", timing=timing)
        return Verdict(True, figure, timing=timing)

    return Contract("purgatory REQUEST_TIMED_OUT at timeout_ms", check, side="server")


def request_count(api: str, *, at_least: int = 0, at_most: int | None = None) -> Contract:
    def check(ev: Evidence) -> Verdict:
        n = len(ev.events(Kind.RECV, api))
        figure = f"{n} {api} request(s)"
        if n < at_least or (at_most is not None and n > at_most):
            bound = f"between {at_least} and {at_most}" if at_most is not None else f"at least {at_least}"
            return Verdict(False, figure, f"expected {bound} {api} requests, the broker saw {n}")
        return Verdict(True, figure)

    return Contract(f"{api} request count", check, side="server")


def retry_on_new_leader(api: str) -> Contract:
    """The first ``api`` request went to one broker; after the leader moved, the request that
    succeeded went to another."""

    def check(ev: Evidence) -> Verdict:
        recvs = ev.events(Kind.RECV, api)
        if not recvs:
            return Verdict(False, message=f"the broker never received {api}")
        answered = {(e.broker, e.conn, e.correlation_id) for e in ev.events(Kind.SEND, api) if not e.details.get("errors")}
        ok = [e for e in recvs if (e.broker, e.conn, e.correlation_id) in answered]
        if not ok:
            return Verdict(False, "never succeeded", f"no {api} was answered without an error")
        first, last = recvs[0], ok[-1]
        figure = f"first {api} to broker {first.broker}, success on broker {last.broker} at {_fmt_s(last.t_ms)}"
        if last.broker == first.broker:
            return Verdict(False, figure, f"the {api} that succeeded went to the old leader {first.broker}")
        return Verdict(True, figure)

    return Contract(f"{api} retried on the new leader", check, side="server")


def honours_throttle(api: str, throttle_ms: float | str) -> Contract:
    """After a response carrying throttle_time_ms, the client waited that long before sending the
    next ``api`` request to that broker (KIP-219; the broker also mutes the connection)."""

    def check(ev: Evidence) -> Verdict:
        sends = [e for e in ev.events(Kind.SEND, api)]
        if not sends:
            return Verdict(False, message=f"no {api} response was sent")
        first = sends[0]
        # when a request reached the broker, not when the muted broker read it: the broker's own
        # mute (KIP-219) must not make a client that ignores the throttle look compliant; and a
        # request pipelined before the throttled answer went out could not have known of it
        def arrived(e):
            return (e.details or {}).get("arrived_ms", e.t_ms)

        nxt = next((e for e in ev.events(Kind.RECV, api) if e.broker == first.broker and arrived(e) > first.t_ms), None)
        if nxt is None:
            return Verdict(False, "no second request", f"the client sent no second {api} to broker {first.broker} "
                                                       "after the throttled answer")
        want = expected_ms(ev, throttle_ms)
        gap = arrived(nxt) - first.t_ms
        figure = f"next {api} {gap:.0f} ms after a {want:.0f} ms throttle"
        if gap < want - max(1.0, ev.slack_ms / 5):
            return Verdict(False, figure, f"the client sent {api} again after {gap:.0f} ms, inside the {want:.0f} ms throttle")
        return Verdict(True, figure)

    return Contract(f"{api} throttle honoured", check, side="server")


def held_without_disconnect(api: str, longer_than: float | str) -> Contract:
    """The broker held ``api`` (answered more than ``longer_than`` ms after it arrived: JoinGroup waiting for the
    other members) and the client did not take the wait for a dead broker: no client-side close of that connection
    before the answer (one closed ``longer_than`` in, less the run's slack, was held too: never answered, it fails)."""

    def check(ev: Evidence) -> Verdict:
        pairs = exchanges(ev.events(), api)
        if not pairs:
            return Verdict(False, message=f"the broker never received {api}")
        want = expected_ms(ev, longer_than)
        held = [x for x in pairs if (x.wait_ms or 0.0) > want or (x.abandoned_after_ms or 0.0) >= want - ev.slack_ms]
        if not held:
            longest = max((x.wait_ms for x in pairs if x.wait_ms is not None), default=0.0)
            return Verdict(False, f"longest {api} wait {_fmt_s(longest)}",
                           f"no {api} was held longer than {want:.0f} ms (the scenario did not exercise a held request)")
        x = held[0]
        figure = f"{api} held {_fmt_s(x.wait_ms if x.wait_ms is not None else x.abandoned_after_ms or 0.0)}"
        if x.abandoned and x.close is not None:
            return Verdict(False, figure, f"the client closed conn {x.request.conn} "
                                          f"{x.close.t_ms - x.request.t_ms:.0f} ms into the wait")
        return Verdict(True, figure)

    return Contract(f"{api} held without a client disconnect", check, side="server")


def nothing_outlives_the_call(api: str, operation: str, *, min_attempts: int = 2) -> Contract:
    """Retries shrink to the time left (KIP-266 with the min rule): every ``api`` request the
    client gave up on was abandoned (its connection closed by the client) no later than the
    call itself returned, and there were at least ``min_attempts`` attempts."""

    def check(ev: Evidence) -> Verdict:
        o = _outcome(ev, operation)
        recvs = ev.events(Kind.RECV, api)
        if o is None or not recvs:
            return Verdict(False, message=f"no {operation} outcome or no {api} request")
        timeout_s = _step_timeout_s(ev, operation)
        # the first attempt goes out as the call starts; the deadline is the call's, not its return
        call_end = recvs[0].t_ms + (timeout_s if timeout_s is not None else o.elapsed_s) * 1000
        closes = [e for e in ev.events(Kind.CONN_CLOSE) if closed_by(e) == "client"
                  and any(e.conn == r.conn and e.broker == r.broker for r in recvs)]
        last = max((e.t_ms for e in closes), default=None)
        figure = f"{len(recvs)} attempt(s), last abandoned at {_fmt_s((last or 0) - recvs[0].t_ms)}"
        if len(recvs) < min_attempts:
            return Verdict(False, figure, f"expected at least {min_attempts} {api} attempts, the broker saw {len(recvs)}")
        tol = max(5.0, ev.slack_ms)
        if last is None or last > call_end + tol:
            return Verdict(False, figure, f"a {api} attempt was still in flight {((last or 0) - call_end):.0f} ms after "
                                          f"{operation}'s deadline (its request timeout was not min(time left, request.timeout.ms))")
        return Verdict(True, figure)

    return Contract(f"no {api} attempt outlives {operation}", check, side="server")


def _names_setting(message: str, setting: str) -> bool:
    """Whether ``message`` names ``setting`` as Kafka spells it (``delivery.timeout.ms``) or as a
    client whose settings are keyword arguments does (kafka-python's ``delivery_timeout_ms``): an
    application reads the name it wrote in its own configuration."""
    return setting in message or setting.replace(".", "_") in message


def error_names(operation: str, *words: str) -> Contract:
    """The failure explains itself: its message names each of ``words`` (the settings involved),
    in Kafka's spelling or in the client's own keyword spelling."""

    def check(ev: Evidence) -> Verdict:
        o = _outcome(ev, operation)
        if o is None or o.ok:
            return Verdict(False, message=f"{operation} did not fail")
        missing = [w for w in words if not _names_setting(o.error_message or "", w)]
        figure = f"names {', '.join(w for w in words if w not in missing)}"
        if missing:
            return Verdict(False, figure, f"the message does not name {', '.join(missing)}: {o.error_message!r}")
        return Verdict(True, figure)

    return Contract(f"{operation} error names the settings", check)


def attempted_once(first_apis: tuple[str, ...], api: str) -> Contract:
    """Attempt-then-check with no time left: the call still went to the network (at least one
    of ``first_apis`` — e.g. FindCoordinator, then OffsetFetch — reached the broker), and did
    not repeat ``api``. (Java, too, sends FindCoordinator when the coordinator is unknown.)"""

    def check(ev: Evidence) -> Verdict:
        counts = {a: len(ev.events(Kind.RECV, a)) for a in first_apis}
        figure = ", ".join(f"{n} {a}" for a, n in counts.items())
        if sum(counts.values()) == 0:
            return Verdict(False, figure, f"nothing reached the broker: the call gave up before attempting ({' or '.join(first_apis)})")
        if counts.get(api, 0) > 1:
            return Verdict(False, figure, f"{api} was sent {counts[api]} times with no time left")
        return Verdict(True, figure)

    return Contract("attempted once with timeout 0", check, side="server")


def attempted_once_when_warm(api: str) -> Contract:
    """Attempt-then-check with no time left, on a warm client (the step's ``warm_up``): after the
    warm-up's ``api`` was answered, the timed call sent ``api`` exactly once (so neither the
    warm-up nor background lookups stand in for the call's own attempt)."""

    def check(ev: Evidence) -> Verdict:
        # by the trace's order, not its times: in virtual time both happen at the same instant
        events = ev.events()
        answered = next((i for i, e in enumerate(events) if e.kind == Kind.SEND and e.api == api), None)
        if answered is None:
            return Verdict(False, f"0 {api}", f"the warm-up's {api} was never answered: the client was not warm")
        again = [e for e in events[answered + 1:] if e.kind == Kind.RECV and e.api == api]
        figure = f"{len(again)} {api} after the warm-up's"
        if not again:
            return Verdict(False, figure, f"nothing reached the broker: the call gave up before attempting {api}")
        if len(again) > 1:
            return Verdict(False, figure, f"{api} was sent {len(again)} times with no time left")
        return Verdict(True, figure)

    return Contract("attempted once with timeout 0, warm", check, side="server")


def setup_timeout_grows(broker: int) -> Contract:
    """KIP-601: a connection attempt that never completes is abandoned at
    socket.connection.setup.timeout.ms, the next gets twice as long (±20 % jitter), up to
    socket.connection.setup.timeout.max.ms. Read from the broker's side: the gaps between the
    attempts it saw (each gap = one setup timeout plus a short reconnect backoff); on TCP, where
    the kernel drops the SYNs, the attempts are the client's sockets in SYN_SENT towards the
    broker, read from this host's socket table (broker_emu/dropped_connects.py)."""

    def check(ev: Evidence) -> Verdict:
        attempts = [e.t_ms for e in ev.trace if e.kind == "connect_dropped" and e.broker == broker]
        base = expected_ms(ev, "socket.connection.setup.timeout.ms")
        cap = expected_ms(ev, "socket.connection.setup.timeout.max.ms")
        backoff = expected_ms(ev, "reconnect.backoff.max.ms")
        gaps = [b - a for a, b in itertools.pairwise(attempts)]
        figure = "attempt gaps " + ", ".join(_fmt_s(g) for g in gaps)
        if len(gaps) < 3:
            return Verdict(False, figure, f"expected at least 4 connection attempts to broker {broker}, saw {len(attempts)}")
        for i, gap in enumerate(gaps):
            want = min(base * 2 ** i, cap)
            low, high = 0.8 * want - ev.slack_ms, min(1.2 * want, cap) + backoff + ev.slack_ms
            if not low <= gap <= high:
                return Verdict(False, figure, f"attempt {i + 2} came {gap:.0f} ms after the previous one, expected "
                                              f"{low:.0f}..{high:.0f} ms (setup timeout {want:.0f} ms ±20 % plus backoff)")
        return Verdict(True, figure)

    return Contract("connection setup timeout grows per attempt (KIP-601)", check, side="server",
                    setting="socket.connection.setup.timeout.max.ms")


def replies_in_order_behind(parked_api: str, api: str) -> Contract:
    """A parked request holds up everything behind it on its connection (Kafka answers in order): the
    first ``api`` request that arrived on its connection while it was parked was answered after it."""

    def check(ev: Evidence) -> Verdict:
        enter = next((e for e in ev.events(Kind.PURGATORY_ENTER, parked_api)), None)
        if enter is None:
            return Verdict(False, message=f"no {parked_api} was parked")
        answer = next((e for e in ev.events(Kind.SEND, parked_api) if e.conn == enter.conn and e.correlation_id == enter.correlation_id), None)
        order = {id(e): i for i, e in enumerate(ev.events())}

        def queued(e: TraceEvent) -> bool:   # franz-go's next Produce arrived after the answer
            arrived, until = (e.details or {}).get("arrived_ms"), answer.t_ms if answer else math.inf
            if arrived is not None:
                return enter.t_ms <= arrived < until
            # in memory only the read is traced, and the broker reads a connection's next request only once it has
            # answered the one before (as Kafka's SocketServer mutes it): in virtual time the read and the answer
            # share an instant, so the trace's order says which came first — a request read after the answer was
            # not shown to have been queued behind it
            return enter.t_ms <= e.t_ms <= until and (answer is None or order[id(e)] < order[id(answer)])
        behind = next((e for e in ev.events(Kind.RECV, api) if e.conn == enter.conn and e.correlation_id != enter.correlation_id and queued(e)), None)
        if answer is None or behind is None:
            return Verdict(False, "nothing queued", f"no {api} arrived on conn {enter.conn} while {parked_api} was parked")
        reply = next((e for e in ev.events(Kind.SEND, api) if e.conn == behind.conn and e.correlation_id == behind.correlation_id), None)
        figure = f"{api} waited {_fmt_s((reply or behind).t_ms - (behind.details or {}).get('arrived_ms', behind.t_ms))} behind the parked {parked_api}"
        if reply is not None and reply.t_ms < answer.t_ms:
            return Verdict(False, figure, f"{api} was answered before the parked {parked_api} ahead of it")
        return Verdict(True, figure)

    return Contract(f"{api} answered after the parked {parked_api} ahead of it", check, side="server")


# -- failover and faithfulness --------------------------------------------------------

# Real-time clients keep fixed internal timers that --scale cannot shrink (librdkafka scans its
# topics and re-validates leaders once a second): a scaled bound is never below this, in real ms.
REAL_TIME_FLOOR_MS = 2500.0


def resumes_on_survivor(api: str, within: float | str, *, late_fraction: float = 0.0) -> Contract:
    """After a broker stopped, the client's next ``api`` request reached a surviving broker within
    ``within`` (scaled; in real-time runs at least REAL_TIME_FLOOR_MS) of the stop: the disconnect
    is seen at once, metadata comes from a survivor (never only from the dead bootstrap broker)
    and the request goes to the new leader (KIP-19)."""

    def check(ev: Evidence) -> Verdict:
        stop = _first(ev.events(Kind.BROKER_STOP), lambda e: True)
        if stop is None:
            return Verdict(False, message="no broker stopped in this run (the fault never fired)")
        want = expected_ms(ev, within, api)
        if ev.scale > 1:
            want = max(want, REAL_TIME_FLOOR_MS)
        limit = want + max(late_fraction * want, ev.slack_ms)
        nxt = _first(ev.events(Kind.RECV, api), lambda e: e.t_ms >= stop.t_ms and e.broker != stop.broker)
        if nxt is None:
            return Verdict(False, "never", f"no {api} reached a surviving broker after broker {stop.broker} stopped "
                                           f"at {_fmt_s(stop.t_ms)} (allowed {limit:.0f} ms)")
        gap = nxt.t_ms - stop.t_ms
        figure = f"{api} on broker {nxt.broker} {gap:.0f} ms after broker {stop.broker} stopped"
        if gap > limit:
            return Verdict(False, figure, f"{figure}: allowed {limit:.0f} ms")
        return Verdict(True, figure)

    return Contract(f"{api} resumes on a surviving broker", check, side="server")


def no_broker_close() -> Contract:
    """The broker closed none of the client's connections: every request it sent was one the
    broker accepts (a request Kafka accepts must not cost the client its connection)."""

    def check(ev: Evidence) -> Verdict:
        closed = [e for e in ev.events(Kind.CONN_CLOSE) if closed_by(e) == "broker"]
        anomalies = ev.events(Kind.REQUEST_ANOMALY)
        note = f"; {len(anomalies)} request(s) accepted as Kafka does ({anomalies[0].details['anomalies'][0]})" if anomalies else ""
        if closed:
            return Verdict(False, f"{len(closed)} closed by the broker",
                           f"the broker closed conn {closed[0].conn}: {closed[0].details.get('reason')}")
        return Verdict(True, f"{len(ev.events(Kind.CONN_OPEN))} connections, none closed by the broker{note}")

    return Contract("no connection closed by the broker", check, side="server")


def value_includes(operation: str, item: Any) -> Contract:
    """The operation's result (e.g. the topics listed) includes ``item``."""

    def check(ev: Evidence) -> Verdict:
        o = _outcome(ev, operation)
        if o is None or not o.ok:
            return Verdict(False, message=f"{operation} did not succeed")
        got = o.value or []
        return Verdict(item in got, f"{len(got)} item(s)", f"{operation} returned {got!r}, without {item!r}")

    return Contract(f"{operation} includes {item!r}", check)
