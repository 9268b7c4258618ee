"""Waiting for the cluster to reach a state, instead of sleeping and hoping.

    seen = await cluster.wait_for("group", group="g", state="Stable", members=3, timeout=5)
    await cluster.wait_for("partition", topic="t", partition=0, high_watermark=10)

What can be waited for (``KINDS``): a group's state and member count; a partition's high
watermark and log end offset (at least), ISR size and leader (exactly); a fault rule's hits (at
least); a transactional id's state; the number of open connections (exactly, on one broker or
all); trace events of a kind (at least ``count``, since ``since_ms`` if given).

Theory of operation. A wait checks its condition, then sleeps on trio's clock until the next trace
event (every change a request or a timer makes is followed by one) or ``POLL_S`` at the latest,
for changes no event marks (a follower's fetch moving a high watermark), and checks again. Under a
``MockClock`` the sleep lets the clock jump, so a wait costs no wall time and never spins. On
timeout it raises ``WaitTimeout`` naming what it waited for and what it saw last. The target is
the cluster, or the proxy (which has faults, connections and a trace, but no groups or logs).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable

import trio

from broker_emu.trace import Kind
from kafka_common.wakeup import Wakeup

POLL_S = 0.05
MAX_TIMEOUT_S = 3600.0
GROUP_STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Assigning", "Reconciling")
TXN_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort")
KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {   # kind -> (required, optional) arguments
    "group": (("group",), ("state", "members")),
    "partition": (("topic", "partition"), ("high_watermark", "log_end_offset", "isr_size", "leader")),
    "fault": (("id",), ("hits",)),
    "transaction": (("transactional_id", "state"), ()),
    "connections": (("count",), ("broker",)),
    "trace": (("kind",), ("count", "since_ms", "api", "client_id")),
}


class WaitArgumentError(ValueError):
    """A wait that cannot be: ``field`` names the argument."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class WaitTimeout(TimeoutError):
    """The condition did not hold within the timeout; ``seen`` is what was last observed."""

    def __init__(self, message: str, seen: dict[str, Any], waited_s: float):
        self.seen, self.waited_s = seen, waited_s
        super().__init__(message)


@dataclass
class Condition:
    subject: str                                              # "group g"
    wanted: str                                               # "state Stable with 3 members"
    check: Callable[[], tuple[bool, dict[str, Any], str]]     # -> (met, seen, seen as words)


def _one_of(value: Any, choices: tuple[str, ...], field: str) -> str:
    if not isinstance(value, str):
        raise WaitArgumentError(field, f"expected one of {', '.join(choices)}, got {value!r}"[:300])
    for choice in choices:
        if choice.lower() == value.lower():
            return choice
    close = difflib.get_close_matches(value, choices, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise WaitArgumentError(field, f"unknown {field} {value[:100]!r}{hint}; known: {', '.join(choices)}")


def _count(value: Any, field: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= 2**63 - 1:
        raise WaitArgumentError(field, f"expected an integer >= {minimum}, got {value!r}"[:300])
    return value


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 32767:
        raise WaitArgumentError(field, f"expected a non-empty string, got {value!r}"[:300])
    return value


def _group(target: Any, group: Any, state: Any = None, members: Any = None) -> Condition:
    group = _text(group, "group")
    state = _one_of(state, GROUP_STATES, "state") if state is not None else None
    members = _count(members, "members") if members is not None else None
    if state is None and members is None:
        raise WaitArgumentError("state", "wait for a state, a member count or both")
    wanted = " with ".join(filter(None, [f"state {state}" if state else "", f"{members} members" if members is not None else ""]))

    def check() -> tuple[bool, dict[str, Any], str]:
        coordinator = getattr(target, "groups", None)
        g = coordinator.groups.get(group) if coordinator is not None else None
        if g is None:
            return False, {"group": group, "state": None, "members": 0}, "no such group yet"
        seen = {"group": group, "state": g.state, "members": len(g.members)}
        met = (state is None or g.state == state) and (members is None or len(g.members) == members)
        return met, seen, f"{g.state} with {len(g.members)}"
    return Condition(f"group {group}", wanted, check)


def _partition(target: Any, topic: Any, partition: Any, high_watermark: Any = None, log_end_offset: Any = None,
               isr_size: Any = None, leader: Any = None) -> Condition:
    topic, index = _text(topic, "topic"), _count(partition, "partition")
    bounds = {"high_watermark": high_watermark, "log_end_offset": log_end_offset, "isr_size": isr_size, "leader": leader}
    wanted_values = {k: _count(v, k, -1 if k == "leader" else 0) for k, v in bounds.items() if v is not None}
    if not wanted_values:
        raise WaitArgumentError("high_watermark", "wait for high_watermark, log_end_offset, isr_size or leader")
    at_least = ("high_watermark", "log_end_offset")
    wanted = ", ".join(f"{k.replace('_', ' ')} {'>= ' if k in at_least else ''}{v}" for k, v in wanted_values.items())

    def check() -> tuple[bool, dict[str, Any], str]:
        find = getattr(target, "partition", None)
        p = find(topic, index) if callable(find) and hasattr(target, "topics") else None
        if p is None:
            return False, {"topic": topic, "partition": index, "exists": False}, "no such partition yet"
        seen = {"topic": topic, "partition": index, "exists": True, "leader": p.leader, "isr": list(p.isr),
                "isr_size": len(p.isr), "high_watermark": p.high_watermark, "log_end_offset": p.log_end_offset}
        met = all(seen[k] >= v if k in at_least else seen[k] == v for k, v in wanted_values.items())
        return met, seen, ", ".join(f"{k.replace('_', ' ')} {seen[k]}" for k in wanted_values)
    return Condition(f"partition {topic}-{index}", wanted, check)


def _fault(target: Any, id: Any, hits: Any = 1) -> Condition:
    rule_id, hits = _count(id, "id"), _count(hits, "hits")

    def check() -> tuple[bool, dict[str, Any], str]:
        rule = target.faults.rules.get(rule_id)
        if rule is None:
            return False, {"id": rule_id, "active": False, "hits": None}, "no such rule (never added, or removed)"
        seen = {"id": rule_id, "active": True, "hits": rule.applied, "matched": rule.matched}
        return rule.applied >= hits, seen, f"{rule.applied} hits ({rule.matched} matched)"
    return Condition(f"fault {rule_id}", f"{hits} hits", check)


def _transaction(target: Any, transactional_id: Any, state: Any) -> Condition:
    tid, state = _text(transactional_id, "transactional_id"), _one_of(state, TXN_STATES, "state")

    def check() -> tuple[bool, dict[str, Any], str]:
        txn = getattr(target, "txn", None)
        meta = txn.describe(tid) if txn is not None else None
        now = meta.state.value if meta is not None else None
        return now == state, {"transactional_id": tid, "state": now}, now or "no such transactional id yet"
    return Condition(f"transactional id {tid}", f"state {state}", check)


def _connections(target: Any, count: Any, broker: Any = None) -> Condition:
    count = _count(count, "count")
    if broker is not None and _count(broker, "broker") not in target.brokers:
        raise WaitArgumentError("broker", f"no broker {broker} (brokers: {sorted(target.brokers)})")

    def check() -> tuple[bool, dict[str, Any], str]:
        n = sum(len(b.connections) for i, b in target.brokers.items() if broker is None or i == broker)
        return n == count, {"count": n, "broker": broker}, f"{n} open"
    return Condition("connections" + (f" to broker {broker}" if broker is not None else ""), f"{count} open", check)


def _trace(target: Any, kind: Any, count: Any = 1, since_ms: Any = None, api: Any = None, client_id: Any = None) -> Condition:
    kind = _one_of(kind, tuple(k.value for k in Kind), "kind")
    count = _count(count, "count", 1)
    if since_ms is not None and (isinstance(since_ms, bool) or not isinstance(since_ms, (int, float)) or not since_ms == since_ms):
        raise WaitArgumentError("since_ms", f"expected a number of milliseconds, got {since_ms!r}"[:300])
    api = _text(api, "api") if api is not None else None
    client_id = _text(client_id, "client_id") if client_id is not None else None

    def check() -> tuple[bool, dict[str, Any], str]:
        events = target.trace.query(since_ms=since_ms, kind=kind, api=api, client_id=client_id)
        last = events[-1] if events else None
        seen = {"kind": kind, "count": len(events), "last": {"t_ms": last.t_ms, "broker": last.broker, "conn": last.conn,
                                                             "api": last.api, "details": last.details} if last else None}
        return len(events) >= count, seen, f"{len(events)}"
    return Condition(f"trace {kind}" + (f" ({api})" if api else ""), f"{count} event{'s' * (count != 1)}", check)


BUILDERS: dict[str, Callable[..., Condition]] = {"group": _group, "partition": _partition, "fault": _fault,
                                                 "transaction": _transaction, "connections": _connections, "trace": _trace}


def condition(target: Any, what: str, **params: Any) -> Condition:
    """Validate a wait's arguments (``WaitArgumentError`` naming the bad one) and build it."""
    if what not in KINDS:
        close = difflib.get_close_matches(str(what), KINDS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise WaitArgumentError("what", f"cannot wait for {str(what)[:100]!r}{hint}; known: {', '.join(KINDS)}")
    required, optional = KINDS[what]
    for key in params:
        if key not in required + optional:
            close = difflib.get_close_matches(key, required + optional, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise WaitArgumentError(key, f"not an argument of a {what} wait{hint}; takes: {', '.join(required + optional)}")
    for key in required:
        if params.get(key) is None:
            raise WaitArgumentError(key, f"a {what} wait needs {key}")
    return BUILDERS[what](target, **{k: v for k, v in params.items() if v is not None})


def check_timeout(timeout: Any, maximum: float = MAX_TIMEOUT_S) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 <= timeout <= maximum:
        raise WaitArgumentError("timeout", f"expected seconds from 0 to {maximum:g}, got {timeout!r}"[:300])
    return float(timeout)


async def wait_until(target: Any, cond: Condition, timeout: float) -> dict[str, Any]:
    """Wait on trio's clock until ``cond`` holds: what was seen, or ``WaitTimeout``."""
    start = trio.current_time()
    deadline = start + timeout
    traced = Wakeup()   # set by the next trace event
    unsubscribe = target.trace.subscribe(lambda _event: traced.set())
    try:
        while True:
            met, seen, words = cond.check()
            if met:
                return seen
            now = trio.current_time()
            if now >= deadline:
                raise WaitTimeout(f"{cond.subject}: waited {timeout:g} s for {cond.wanted}; last seen {words}", seen, now - start)
            await traced.sleep_until(min(deadline, now + POLL_S))
            traced.new_cycle()
    finally:
        unsubscribe()


async def wait_for(target: Any, what: str, timeout: float = 5.0, **params: Any) -> dict[str, Any]:
    """``cluster.wait_for``: build the condition, then wait for it at most ``timeout`` seconds."""
    cond = condition(target, what, **params)
    return await wait_until(target, cond, check_timeout(timeout))


class Waits:
    """``wait_for`` as a method of what has a trace (the cluster, the proxy)."""

    async def wait_for(self, what: str, timeout: float = 5.0, **params: Any) -> dict[str, Any]:
        """Wait until a state is reached (``KINDS``: what, and its arguments), at most ``timeout``
        seconds on trio's clock: what was seen, or ``WaitTimeout`` with what was last seen."""
        return await wait_for(self, what, timeout, **params)
