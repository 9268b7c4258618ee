"""Deciding which rules apply to a request or a new connection. Pure: no I/O, time passed in.

Determinism: each rule draws from its own RNG seeded by (cluster seed, rule id), and draws only
for requests that match and are in its active window, so the same seed and the same request
sequence give the same decisions, whatever other rules exist.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from broker_emu.faults.late import LateRequests
from broker_emu.faults.named import NamedFaults
from broker_emu.faults.rules import Action, FaultConfigError, Rule, check_rule, parse_rule

TERMINAL = ("black_hole", "close_before", "reset", "close_after", "error", "partial_response", "no_brokers")
# Every request walks every rule: a bound keeps a script (or a fuzzer) that adds rules in a loop
# from slowing the cluster to a crawl or growing it without end.
MAX_RULES = 10_000


@dataclass(frozen=True)
class RequestFacts:
    """What a rule can match on, extracted once per request."""

    broker: int
    api_key: int
    api_version: int
    client_id: str | None
    connection: int
    topics: frozenset[tuple[str, int | None]] = frozenset()  # (topic, partition or None)
    bootstrap: bool = False   # the connection came in through the cluster's bootstrap address
    transactional_id: str | None = None
    acknowledgements: bool = False   # it carries share acknowledgements (rules.Match.acknowledgements)


@dataclass
class Decision:
    delay_request_ms: float = 0.0
    delay_response_ms: float = 0.0
    throttle_ms: float = 0.0
    bytes_per_s: int = 0           # the slowest bandwidth rule: the response is held len / bytes_per_s
    stop_broker_ms: float | None = None   # stop the broker this long after the request was read
    lock_late_ms: float = 0.0      # the locks a ShareFetch takes expire this long after their deadline
    terminal: Any = None           # the first terminal Action, if any
    hold: Rule | None = None       # the first hold rule: the request waits for its condition (faults/late.py)
    applied: list[Rule] = field(default_factory=list)
    drawn_ms: dict[int, float] = field(default_factory=dict)   # rule id -> the delay its jitter drew

    @property
    def empty(self) -> bool:
        return not self.applied


def _matches(rule: Rule, facts: RequestFacts) -> bool:
    m = rule.match
    if m.broker is not None and m.broker != facts.broker:
        return False
    if m.api is not None and m.api != facts.api_key:
        return False
    if m.api_version is not None and m.api_version != facts.api_version:
        return False
    if m.client_id is not None and m.client_id != facts.client_id:
        return False
    if m.connection is not None and m.connection != facts.connection:
        return False
    if m.bootstrap is not None and m.bootstrap != facts.bootstrap:
        return False
    if m.transactional_id is not None and m.transactional_id != facts.transactional_id:
        return False
    if m.acknowledgements is not None and m.acknowledgements != facts.acknowledgements:
        return False
    if m.topic is not None or m.partition is not None:
        return any((m.topic is None or t == m.topic) and (m.partition is None or p is None or p == m.partition)
                   for t, p in facts.topics)
    return True


class FaultEngine(NamedFaults):
    """``clock``: the owner's time in ms (the cluster's or the proxy's), read by the named-fault
    methods (``faults.latency(...)``) that add a rule now; ``add`` takes the time explicitly."""

    def __init__(self, seed: int = 0, brokers: Iterable[int] | None = None, clock: Callable[[], float] | None = None):
        self.seed = seed
        self.clock = clock or (lambda: 0.0)
        self.brokers = set(brokers) if brokers is not None else None
        self.rules: dict[int, Rule] = {}
        # requests a hold rule holds now (not ``late``: that is the named fault); clearing the rules leaves them held
        self.held_requests = LateRequests()
        self._rngs: dict[int, random.Random] = {}
        self._next_id = 1
        self._watchers: list[Callable[[], None]] = []

    def watch(self, changed: Callable[[], None]) -> Callable[[], None]:
        """Call ``changed`` after every change of the rules (the TCP listeners' SYN gates,
        broker_emu/dropped_connects.py, act on it before ``add`` returns); returns the unwatch."""
        self._watchers.append(changed)
        return lambda: self._watchers.remove(changed) if changed in self._watchers else None

    def _changed(self) -> None:
        for changed in list(self._watchers):
            changed()

    def add(self, raw: Mapping[str, Any] | Rule, now_ms: float) -> Rule:
        """Validate and add a rule (all-or-nothing: a bad rule changes nothing). A ``Rule`` built
        in Python is checked as strictly as a dict from HTTP or YAML."""
        if len(self.rules) >= MAX_RULES:
            raise FaultConfigError("rule", f"{MAX_RULES} rules are active already; remove some first")
        if isinstance(raw, Rule):
            check_rule(raw, self.brokers)
            rule = raw
        else:
            rule = parse_rule(raw, self._next_id, self.brokers)
        rule.id = self._next_id
        rule.added_ms = now_ms
        self._next_id += 1
        self.rules[rule.id] = rule
        self._rngs[rule.id] = random.Random(f"{self.seed}:{rule.id}")
        self._changed()
        return rule

    def remove(self, rule_id: int) -> bool:
        self._rngs.pop(rule_id, None)
        removed = self.rules.pop(rule_id, None) is not None
        if removed:
            self._changed()
        return removed

    def clear(self) -> int:
        n = len(self.rules)
        self.rules.clear()
        self._rngs.clear()
        if n:
            self._changed()
        return n

    def _fires(self, rule: Rule, now_ms: float) -> bool:
        if not rule.active(now_ms):
            return False
        rule.matched += 1
        if rule.matched <= rule.after:
            return False
        if rule.probability < 1.0 and self._rngs[rule.id].random() >= rule.probability:
            return False
        rule.applied += 1
        return True

    def _jittered(self, rule_id: int, action: Action, decision: Decision) -> float:
        """A delay with its jitter: uniform in [max(0, ms - jitter_ms), ms + jitter_ms], drawn from
        the rule's own seeded RNG (the same seed and requests give the same delays); the draw is
        kept in the decision, for the trace."""
        if not action.jitter_ms:
            return action.ms
        low = max(0.0, action.ms - action.jitter_ms)
        decision.drawn_ms[rule_id] = round(self._rngs[rule_id].uniform(low, action.ms + action.jitter_ms), 3)
        return decision.drawn_ms[rule_id]

    def decide(self, facts: RequestFacts, now_ms: float) -> Decision:
        decision = Decision()
        for rule in list(self.rules.values()):
            if rule.action.connection_level or not _matches(rule, facts) or not self._fires(rule, now_ms):
                continue
            action = rule.action
            decision.applied.append(rule)
            if action.type == "delay_request":
                decision.delay_request_ms += self._jittered(rule.id, action, decision)
            elif action.type == "delay_response":
                decision.delay_response_ms += self._jittered(rule.id, action, decision)
            elif action.type == "bandwidth":
                decision.bytes_per_s = min(action.bytes_per_s, decision.bytes_per_s or action.bytes_per_s)
            elif action.type == "throttle":
                decision.throttle_ms = max(decision.throttle_ms, action.ms)
            elif action.type == "stop_broker":
                decision.stop_broker_ms = min(action.ms, decision.stop_broker_ms if decision.stop_broker_ms is not None
                                              else action.ms)
            elif action.type == "hold":
                decision.hold = decision.hold or rule
            elif action.type == "lock_late":
                decision.lock_late_ms = max(decision.lock_late_ms, action.ms)
            elif decision.terminal is None:
                decision.terminal = action
        return decision

    def on_connect(self, broker: int, connection: int, now_ms: float, only: str | None = None,
                   skip: str | None = None, bootstrap: bool = False) -> list[Rule]:
        """Connection-level rules that fire for a new connection on ``broker`` (``only``/``skip``:
        one action type, for the in-memory connect path that handles drop_connects itself)."""
        fired = []
        for rule in list(self.rules.values()):
            m = rule.match
            if not rule.action.connection_level:
                continue
            if (only is not None and rule.action.type != only) or (skip is not None and rule.action.type == skip):
                continue
            if (m.broker is not None and m.broker != broker) or (m.connection is not None and m.connection != connection):
                continue
            if m.bootstrap is not None and m.bootstrap != bootstrap:
                continue
            if self._fires(rule, now_ms):
                fired.append(rule)
        return fired

    def syn_drop_rules(self, broker: int, now_ms: float) -> list[Rule]:
        """The drop_connects rules that cover ``broker``'s own TCP listeners now (the kernel drops
        the SYNs: broker_emu/dropped_connects.py). The rule's window and ``times`` (counted over
        the attempts seen) hold; ``after`` and ``probability`` cannot be drawn per attempt, since
        no attempt is seen before its SYN is dropped; a rule matching one connection id or only
        the bootstrap address never covers a broker's listener (an attempt has no id yet)."""
        return [rule for rule in self.rules.values()
                if rule.action.type == "drop_connects" and rule.active(now_ms) and rule.match.connection is None
                and rule.match.broker in (None, broker) and rule.match.bootstrap is not True]

    def next_syn_drop_change_ms(self, now_ms: float) -> float | None:
        """The next time a drop_connects rule's window opens or closes, if one will."""
        times = []
        for rule in self.rules.values():
            if rule.action.type != "drop_connects":
                continue
            ends = rule.start_ms + rule.duration_ms if rule.duration_ms is not None else None
            times += [t for t in (rule.start_ms, ends) if t is not None and t > now_ms]
        return min(times, default=None)
