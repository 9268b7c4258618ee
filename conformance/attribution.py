"""Which clock ended it: the setting or timer behind each give-up in a run, decided from the run's
configuration and its trace, never assumed.

A client closes a connection with a request unanswered, or an application call returns at a
deadline, because some clock fired. Several may be running at once, and teaching the wrong one is
the confusion the timelines exist to clear up: a consumer's OffsetFetch abandoned after 5 s with
request.timeout.ms at 30 s was ended by the call's own timeout (KIP-266: each request's timeout is
min(time left in the call, request.timeout.ms)); a record's last attempt cut short at 120 s by
delivery.timeout.ms (KIP-91), not by its request timeout. So every clock that could have ended a
span is listed with the instant it would fire, and the span is attributed to the one that fires
when it ended (within ``tol_ms``: exact in virtual time, the run's slack in real time); when none
does, nothing is claimed.

Client clocks: request.timeout.ms from a request's send (librdkafka's socket.timeout.ms too, when
the run sets it); for a request sent while its connection is being set up (ApiVersions, SASL), the
connection set-up timeout, a window: it doubles per attempt up to its max and is jittered; the enclosing call's timeout (its explicit ``timeout``, else
default.api.timeout.ms for the consumer calls that fall back to it); delivery.timeout.ms and
max.block.ms from a produce call's start (the batch is created within it). Broker timers carry
their values in the trace (the Produce's timeout_ms, a member's session or rebalance timeout, the
transaction's timeout) and are named from there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable

from broker_emu.trace import Kind, TraceEvent

# Kafka's defaults for the clocks below (ProducerConfig, ConsumerConfig, CommonClientConfigs)
DEFAULTS = {"request.timeout.ms": 30_000, "default.api.timeout.ms": 60_000, "delivery.timeout.ms": 120_000,
            "max.block.ms": 60_000, "socket.connection.setup.timeout.ms": 10_000,
            "socket.connection.setup.timeout.max.ms": 30_000, "retry.backoff.ms": 100, "retry.backoff.max.ms": 1000,
            "reconnect.backoff.max.ms": 1000, "metadata.recovery.rebootstrap.trigger.ms": 300_000}
BACKOFF_JITTER = 0.2   # KIP-580: retry n waits retry.backoff.ms * 2**n, ±20 %, at most retry.backoff.max.ms
# requests a connection sends before it is ready: the connection set-up timeout covers them (KIP-601;
# librdkafka: "TCP connection setup as well SSL and SASL handshake")
SETUP_APIS = frozenset({"ApiVersions", "SaslHandshake", "SaslAuthenticate"})
SETUP_JITTER = 0.2   # ClusterConnectionStates: each attempt's timeout is jittered by ±20 %
# calls that fall back to default.api.timeout.ms when given no timeout (KafkaConsumer, KIP-266)
DEFAULT_API_CALLS = frozenset({"committed", "commit_sync", "position", "end_offsets", "beginning_offsets",
                               "offsets_for_times", "list_topics", "partitions_for", "close"})
PRODUCE_CALLS = frozenset({"produce", "produce_pipelined"})
# transactional calls bounded by max.block.ms (KafkaProducer.initTransactions/commitTransaction...)
MAX_BLOCK_CALLS = PRODUCE_CALLS | {"init_transactions", "commit_transaction", "abort_transaction",
                                   "send_offsets_to_transaction", "transaction"}


@dataclass(frozen=True)
class Clock:
    """A timeout that fired: the setting (or timer) and its value in the run."""

    setting: str
    ms: float
    side: str = "client"        # "client" | "broker"
    note: str = ""              # how it varies ("doubles per attempt up to ..., ±20 %")

    def __str__(self) -> str:
        return f"{self.setting} = {self.ms:g} ms"


@dataclass(frozen=True)
class Call:
    """An application call, as the trace saw it (our adapter writes its step's start, the start of
    the timed call after any set-up, and its end with the timed call's elapsed time)."""

    op: str
    start: float                 # the step's start
    end: float | None            # the step's end (after any tear-down)
    timeout_ms: float | None     # the timeout the call was given; None: none (a default applies)
    timed_from: float = 0.0      # when the timed call began: its clocks start here
    timed_end: float | None = None   # when the timed call returned or raised
    result: dict[str, Any] | None = None   # its end event's details: ok, error, message


def calls(trace: Iterable[TraceEvent]) -> list[Call]:
    out: list[Call] = []
    open_: dict[str, Call] = {}
    for e in trace:
        if e.kind != Kind.APP_CALL:
            continue
        op, phase = e.details["op"], e.details["phase"]
        if phase == "start":
            open_[op] = Call(op, e.t_ms, None, e.details.get("timeout_ms"), e.t_ms)
        elif phase == "timed" and op in open_:
            open_[op] = replace(open_[op], timed_from=e.t_ms)
        elif phase == "end" and op in open_:
            c = open_.pop(op)
            elapsed = e.details.get("elapsed_ms")
            out.append(replace(c, end=e.t_ms, timed_end=e.t_ms if elapsed is None else c.timed_from + float(elapsed),
                               result=dict(e.details)))
    return out + list(open_.values())
def _setting(config: dict[str, Any], key: str) -> float:
    value = config.get(key, DEFAULTS[key])
    return float(value)


def call_clocks(call: Call, config: dict[str, Any]) -> list[tuple[float, Clock]]:
    """The clocks a call runs under, each with the instant it fires (all exact)."""
    out: list[tuple[float, Clock]] = []
    if call.timeout_ms is not None:
        out.append((call.timed_from + call.timeout_ms, Clock(f"{call.op}()'s timeout", call.timeout_ms)))
    elif call.op in DEFAULT_API_CALLS:
        ms = _setting(config, "default.api.timeout.ms")
        out.append((call.timed_from + ms, Clock("default.api.timeout.ms", ms)))
    if call.op in PRODUCE_CALLS:
        ms = _setting(config, "delivery.timeout.ms")
        out.append((call.timed_from + ms, Clock("delivery.timeout.ms", ms)))
    if call.op in MAX_BLOCK_CALLS:
        ms = _setting(config, "max.block.ms")
        out.append((call.timed_from + ms, Clock("max.block.ms", ms)))
    return out


Window = tuple[float, float, Clock]   # fires somewhere in [first, last]: a jittered, growing timeout


def request_clocks(api: str | None, sent_ms: float, config: dict[str, Any]) -> list[Window]:
    ms = _setting(config, "request.timeout.ms")
    out: list[Window] = [(sent_ms + ms, sent_ms + ms, Clock("request.timeout.ms", ms))]
    if "socket.timeout.ms" in config:   # librdkafka's own request timeout
        t = float(config["socket.timeout.ms"])
        out.append((sent_ms + t, sent_ms + t, Clock("socket.timeout.ms", t)))
    if api in SETUP_APIS:   # doubles per attempt up to its max, jittered (ClusterConnectionStates)
        base, cap = _setting(config, "socket.connection.setup.timeout.ms"), _setting(config, "socket.connection.setup.timeout.max.ms")
        out.append((sent_ms + base * (1 - SETUP_JITTER), sent_ms + max(base, cap) * (1 + SETUP_JITTER),
                    Clock("socket.connection.setup.timeout.ms", base,
                          note=f" (doubling per attempt up to {max(base, cap):g} ms, ±{SETUP_JITTER:.0%})")))
    return out


def retry_backoff(retry: int, config: dict[str, Any]) -> Window:
    """The window in which the ``retry``-th retry's backoff (0 for the first) ends, measured from
    the failure before it (the client's ExponentialBackoff, KIP-580)."""
    base, cap = _setting(config, "retry.backoff.ms"), _setting(config, "retry.backoff.max.ms")
    term = base * 2 ** retry
    lo, hi = min(term * (1 - BACKOFF_JITTER), cap), min(term * (1 + BACKOFF_JITTER), cap)
    return (lo, hi, Clock("retry.backoff.ms", base, note=f" (x2 per retry, ±{BACKOFF_JITTER:.0%}, at most "
                                                      f"retry.backoff.max.ms = {cap:g} ms; KIP-580)"))


def connection_attempt(attempt: int, config: dict[str, Any]) -> Window:
    """From one dropped connection attempt to the next: the ``attempt``-th set-up timeout (0 for
    the first; doubling up to its max, ±20 %: ClusterConnectionStates, KIP-601), then at most
    reconnect.backoff.max.ms before the next attempt."""
    base, cap = _setting(config, "socket.connection.setup.timeout.ms"), _setting(config, "socket.connection.setup.timeout.max.ms")
    term = min(base * 2 ** attempt, max(base, cap))
    lo, hi = term * (1 - SETUP_JITTER), min(term * (1 + SETUP_JITTER), max(base, cap)) + _setting(config, "reconnect.backoff.max.ms")
    return (lo, hi, Clock("socket.connection.setup.timeout.ms", base,
                          note=f" (doubling per attempt up to {max(base, cap):g} ms, ±{SETUP_JITTER:.0%}; KIP-601)"))


def running(all_calls: list[Call], sent_ms: float, closed_ms: float) -> list[Call]:
    """The calls in progress while a request was outstanding: the one it was sent for, and any
    whose deadline may have ended it later (close(timeout) ends a fetch a poll sent)."""
    return [c for c in all_calls if c.start <= closed_ms and (c.end is None or sent_ms <= c.end)]


def which(at_ms: float, candidates: list[Window], tol_ms: float) -> list[Clock]:
    """The clocks that fire at ``at_ms`` (within ``tol_ms`` of their instant or window): the
    nearest, and any that fire together with it; none when no clock fires then. A clock that
    fires at an instant says more than one whose window merely holds it, so windows count only
    when no instant matches."""
    def distance(first: float, last: float) -> float:
        return 0.0 if first <= at_ms <= last else min(abs(first - at_ms), abs(last - at_ms))

    near = [(distance(lo, hi), lo == hi, c) for lo, hi, c in candidates if distance(lo, hi) <= tol_ms]
    near = [n for n in near if n[1]] or near
    if not near:
        return []
    best = min(d for d, _, _ in near)
    seen: list[Clock] = []
    for d, _, c in sorted(near, key=lambda n: n[0]):
        if d <= best + max(tol_ms / 10, 0.5) and c not in seen:
            seen.append(c)
    return seen


def abandoned_request(api: str | None, sent_ms: float, closed_ms: float, all_calls: list[Call], config: dict[str, Any],
                      tol_ms: float) -> list[Clock]:
    """The clocks that ended a request the client gave up on (closing its connection)."""
    candidates = request_clocks(api, sent_ms, config)
    for c in running(all_calls, sent_ms, closed_ms):
        candidates += [(t, t, clock) for t, clock in call_clocks(c, config)]
    found = which(closed_ms, candidates, tol_ms)
    if not found and api == "Metadata" and str(config.get("metadata.recovery.strategy", "rebootstrap")).lower() == "rebootstrap":
        # KIP-1102: the trigger counts from the first Metadata attempt that has not helped, which may be
        # this request or one before it, so the rebootstrap that closes it comes at most the trigger after its send
        trigger = _setting(config, "metadata.recovery.rebootstrap.trigger.ms")
        found = which(closed_ms, [(sent_ms, sent_ms + trigger, Clock(
            "metadata.recovery.rebootstrap.trigger.ms", trigger,
            note=" (KIP-1102: counted from the first Metadata attempt that did not help; the client rebootstraps)"))],
            tol_ms)
    return found


def call_end(call: Call, config: dict[str, Any], tol_ms: float) -> list[Clock]:
    """The clocks that ended a call (it returned or raised at their deadline), if any."""
    if call.timed_end is None:
        return []
    return which(call.timed_end, [(t, t, clock) for t, clock in call_clocks(call, config)], tol_ms)


def named(clocks: list[Clock], scale: float = 1.0) -> str:
    """'request.timeout.ms = 30000 ms', or several joined: they fired together. ``scale``: a
    real-time run's values were divided by it; shown as the scenario sets them."""
    return " and ".join(f"{c.setting} = {c.ms * scale:g} ms{c.note}" for c in clocks)
