"""The fault model: a rule = match + action + schedule. Parsed from plain dicts (Python, YAML,
HTTP JSON all use this one parser), validated with errors that name the offending field.
"""

from __future__ import annotations

import difflib
import math
import re
import reprlib
from dataclasses import dataclass, field
from typing import Any, Mapping

from broker_emu.faults.late import HOLD_UNTIL
from client.errors import ErrorCode
from client.protocol import ApiKey

REQUEST_ACTIONS = {
    "delay_request": ("ms",),      # hold the request before handling it
    "delay_response": ("ms",),     # handle it, hold the response
    "black_hole": (),              # read it, never answer, keep the connection open
    "close_before": (),            # close the connection instead of handling
    "reset": (),                   # the same with a TCP RST instead of a FIN: the client reads ECONNRESET
    "close_after": (),             # handle it (side effects happen), close instead of answering
    "error": ("error",),           # answer with this error code (per partition where it has them)
    "throttle": ("ms",),           # throttle_time_ms in the response, then mute the connection (KIP-219)
    "partial_response": (),        # write half the response frame, then stall
    "no_brokers": (),              # handle it, answer without the brokers list (Metadata: the topics
                                   # stay; Java's client ignores such an answer, so it starves)
    "bandwidth": ("bytes_per_s",), # hold the response for its size / bytes_per_s, then write it
    "hold": ("until",),            # read it, leave it unhandled until ``until`` (faults/late.py), then handle
                                   # it even if the client has gone (its answer is dropped then)
    "lock_late": ("ms",),          # the records a matching ShareFetch acquires: their lock expires ms after its
                                   # deadline (the broker's expiry runs late; the answer still says the
                                   # group's lock). Handled as usual otherwise; through the proxy it does nothing
    "stop_broker": ("ms",),        # the broker that read it stops: ms 0, before handling it (a crash on
                                   # receipt); ms > 0, that long after it was read (e.g. during a long
                                   # poll, or with a Produce parked in the purgatory)
}
CONNECTION_ACTIONS = {
    "refuse_connections": (),      # close new connections at once
    "accept_never_read": (),       # accept, never read a byte
    "slow_accept": ("ms",),        # accept, then wait before reading
    "drop_connects": (),           # the connection attempt never completes (SYNs dropped): the
                                   # client's socket.connection.setup.timeout.ms must fire. On a
                                   # broker's TCP listener the kernel drops the SYNs (a full accept
                                   # queue: broker_emu/syn_gate.py)
    "slow_close": ("ms",),         # when the connection ends (either side), the broker's end closes ms later
}
ACTIONS = {**REQUEST_ACTIONS, **CONNECTION_ACTIONS}
# Parameters an action may take besides its required ones (absent or 0: not applied)
OPTIONAL_PARAMS = {
    "delay_request": ("jitter_ms",),   # the delay is drawn uniformly from [max(0, ms - jitter_ms), ms + jitter_ms]
    "delay_response": ("jitter_ms",),  # (from the rule's own RNG, seeded by the cluster seed and the rule id)
    "black_hole": ("close_ms",),       # close the connection this long after swallowing the request
    "hold": ("ms",),                   # the fallback: released this long after it was held at the latest
}
MAX_BYTES_PER_S = 2**31 - 1
REPLICATION_MODES = ("stall", "lag", "normal")
REPLICATION_KEYS = ("topic", "partition", "follower", "mode", "lag_ms")
# Bounds every front checks (HTTP, Python, YAML). Durations end up in Kafka's int32 millisecond
# fields (throttle_time_ms) and in trio deadlines, so they are finite and at most int32: ~24.8 days.
MAX_MS = 2**31 - 1
INT16_MAX, INT32_MAX, INT64_MAX = 2**15 - 1, 2**31 - 1, 2**63 - 1
MAX_STRING = 32767                 # Kafka's STRING: an int16 length
MATCH_KEYS = ("broker", "api", "api_version", "topic", "partition", "client_id", "connection", "bootstrap",
              "transactional_id", "acknowledgements")
RULE_KEYS = ("match", "action", "times", "after", "probability", "duration_ms", "at_ms", "id", "name")


class FaultConfigError(ValueError):
    """A rule that cannot be accepted; ``field`` names where it is wrong."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


def _error_name(code: Any) -> Any:
    """Kafka's name for a known error code; any other value as given."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return code


@dataclass(frozen=True)
class Match:
    broker: int | None = None
    api: int | None = None
    api_version: int | None = None
    topic: str | None = None
    partition: int | None = None
    client_id: str | None = None
    connection: int | None = None
    # True: only connections that came in through the cluster's bootstrap address (broker_emu/front_door.py);
    # False: only those to a broker's own address
    bootstrap: bool | None = None
    transactional_id: str | None = None   # named in the body (Produce, InitProducerId, EndTxn, ...)
    # True: only requests carrying a share group's acknowledgements — every ShareAcknowledge, and a ShareFetch
    # with acknowledgement batches (KIP-932 lets a client piggyback them there: franz-go's FlushAcks does when
    # a fetch is due); False: only requests without. A fault that means "the acknowledgements never arrive"
    # must catch both carriers.
    acknowledgements: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in MATCH_KEYS if getattr(self, k) is not None}
        if self.api is not None:
            d["api"] = ApiKey(self.api).api_name
        return d


@dataclass(frozen=True)
class Action:
    type: str
    ms: float = 0.0
    error: int = 0
    jitter_ms: float = 0.0      # delay_request, delay_response
    close_ms: float = 0.0       # black_hole
    bytes_per_s: int = 0        # bandwidth
    until: str = ""             # hold: the condition that releases the request (faults/late.py HOLD_UNTIL)

    @property
    def connection_level(self) -> bool:
        return self.type in CONNECTION_ACTIONS

    def params(self) -> dict[str, Any]:
        """The action's parameters as a rule dict writes them (optional ones only when set)."""
        d: dict[str, Any] = {key: getattr(self, key) for key in ACTIONS[self.type]}
        d |= {key: getattr(self, key) for key in OPTIONAL_PARAMS.get(self.type, ()) if getattr(self, key)}
        return d

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.type, **self.params()}
        if self.type == "error":
            d["error"] = _error_name(self.error)
        return d


@dataclass
class Rule:
    id: int
    match: Match
    action: Action
    times: int | None = None          # apply at most this many times
    after: int = 0                     # skip the first ``after`` matching requests
    probability: float = 1.0           # seeded; see engine
    duration_ms: float | None = None   # active for this long after it starts
    at_ms: float | None = None         # starts at this cluster time (default: when added)
    name: str | None = None
    # state
    added_ms: float = 0.0
    matched: int = 0
    applied: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def start_ms(self) -> float:
        return self.at_ms if self.at_ms is not None else self.added_ms

    def active(self, now_ms: float) -> bool:
        if now_ms < self.start_ms:
            return False
        if self.duration_ms is not None and now_ms >= self.start_ms + self.duration_ms:
            return False
        return self.times is None or self.applied < self.times

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "match": self.match.to_dict(), "action": self.action.to_dict(),
                             "after": self.after, "probability": self.probability,
                             "matched": self.matched, "applied": self.applied}
        for k in ("times", "duration_ms", "at_ms", "name"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        return d


_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 60
_repr.maxlevel = 2


def show(value: Any) -> str:
    """A short repr for error messages: a bad value may be a megabyte of JSON."""
    return _repr.repr(value)


def suggest(word: str, choices: Any) -> str:
    """`` (did you mean 'latency'?)`` or nothing (``_`` and ``-`` count as the same)."""
    close = difflib.get_close_matches(str(word).replace("_", "-"), [str(c).replace("_", "-") for c in choices], n=1, cutoff=0.6)
    if not close:
        return ""
    original = next(c for c in choices if str(c).replace("_", "-") == close[0])
    return f" (did you mean {original!r}?)"


def check_int(value: Any, where: str, minimum: int | None = None, maximum: int = INT64_MAX) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise FaultConfigError(where, f"expected an integer, got {show(value)}")
    if minimum is not None and value < minimum:
        raise FaultConfigError(where, f"must be >= {minimum}, got {show(value)}")
    if value > maximum:
        raise FaultConfigError(where, f"must be <= {maximum}, got {show(value)}")
    return value


def check_ms(value: Any, where: str) -> float:
    """A duration or instant in milliseconds: a finite number in [0, MAX_MS] (NaN and Infinity,
    which Python's JSON and YAML both accept, never reach a timer)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FaultConfigError(where, f"expected milliseconds as a number, got {show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise FaultConfigError(where, f"must be a finite number of milliseconds, got {value}")
    if value < 0:
        raise FaultConfigError(where, f"must not be negative, got {show(value)}")
    if value > MAX_MS:
        raise FaultConfigError(where, f"must be at most {MAX_MS} ms (Kafka's int32 milliseconds), got {show(value)}")
    return float(value)


def check_bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise FaultConfigError(where, f"expected true or false, got {show(value)}")
    return value


def check_str(value: Any, where: str, max_len: int = MAX_STRING) -> str:
    if not isinstance(value, str):
        raise FaultConfigError(where, f"expected a string, got {show(value)}")
    if len(value) > max_len:
        raise FaultConfigError(where, f"longer than {max_len} characters")
    return value


def check_keys(raw: Mapping[Any, Any], known: tuple[str, ...], prefix: str) -> None:
    for key in raw:
        if key not in known:
            raise FaultConfigError(f"{prefix}{key}", f"unknown key (known: {', '.join(known)})")


def parse_api(value: Any, where: str = "match.api") -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return int(ApiKey(value))
        except ValueError:
            raise FaultConfigError(where, f"unknown API key {value}") from None
    if isinstance(value, str):
        try:
            return int(ApiKey.from_name(value))
        except ValueError:
            names = [k.api_name for k in ApiKey]
            hint = suggest(value, names) or f" (known: {', '.join(names)})"
            raise FaultConfigError(where, f"unknown API {show(value)}{hint}") from None
    raise FaultConfigError(where, f"expected an API name or key, got {value!r}")


def parse_error_code(value: Any, where: str = "action.error") -> int:
    """A Kafka error name (``REQUEST_TIMED_OUT``) or code; codes are int16 on the wire."""
    if isinstance(value, str):
        name = value.strip().upper()
        if name in ErrorCode.__members__:
            return int(ErrorCode[name])
        if not re.fullmatch(r"-?[0-9]{1,6}", name):
            hint = suggest(name, list(ErrorCode.__members__)) or " (use a name like REQUEST_TIMED_OUT or a code)"
            raise FaultConfigError(where, f"unknown Kafka error {show(value)}{hint}")
        value = int(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise FaultConfigError(where, f"unknown Kafka error {show(value)} (use a name like REQUEST_TIMED_OUT or a code)")
    if not -INT16_MAX - 1 <= value <= INT16_MAX:
        raise FaultConfigError(where, f"error codes are int16 on the wire, got {show(value)}")
    return value


def parse_match(raw: Any, brokers: set[int] | None = None) -> Match:
    if raw is None:
        return Match()
    if not isinstance(raw, Mapping):
        raise FaultConfigError("match", f"expected an object, got {show(raw)}")
    check_keys(raw, MATCH_KEYS, "match.")
    broker = raw.get("broker")
    if broker is not None:
        broker = check_int(broker, "match.broker", 0, INT32_MAX)
        if brokers is not None and broker not in brokers:
            raise FaultConfigError("match.broker", f"no broker {broker} (brokers: {sorted(brokers)})")

    def optional(key: str, check: Any, *args: Any) -> Any:
        return check(raw[key], f"match.{key}", *args) if raw.get(key) is not None else None

    return Match(
        broker=broker,
        api=parse_api(raw["api"]) if raw.get("api") is not None else None,
        api_version=optional("api_version", check_int, 0, INT16_MAX),
        topic=optional("topic", check_str),
        partition=optional("partition", check_int, 0, INT32_MAX),
        client_id=optional("client_id", check_str),
        connection=optional("connection", check_int, 0),
        bootstrap=optional("bootstrap", check_bool),
        transactional_id=optional("transactional_id", check_str),
        acknowledgements=optional("acknowledgements", check_bool),
    )


def parse_action(raw: Any) -> Action:
    if isinstance(raw, str):
        raw = {"type": raw}
    if not isinstance(raw, Mapping):
        raise FaultConfigError("action", f"expected an object with a 'type', got {show(raw)}")
    kind = raw.get("type")
    if not isinstance(kind, str) or kind not in ACTIONS:
        raise FaultConfigError("action.type", f"unknown action {show(kind)} (known: {', '.join(ACTIONS)})")
    takes = ACTIONS[kind] + OPTIONAL_PARAMS.get(kind, ())
    for key in raw:
        if key != "type" and key not in takes:
            raise FaultConfigError(f"action.{key}", f"not a parameter of {kind!r} (takes: {', '.join(takes) or 'nothing'})")
    for key in ACTIONS[kind]:
        if raw.get(key) is None:
            raise FaultConfigError(f"action.{key}", f"{kind!r} needs {key!r}" + (" (an error name or code)" if key == "error" else ""))
    ms = check_ms(raw["ms"], "action.ms") if "ms" in takes and raw.get("ms") is not None else 0.0
    error = parse_error_code(raw["error"]) if kind == "error" else 0
    optional = {key: check_ms(raw[key], f"action.{key}") for key in ("jitter_ms", "close_ms")
                if key in takes and raw.get(key) is not None}
    rate = check_int(raw["bytes_per_s"], "action.bytes_per_s", 1, MAX_BYTES_PER_S) if kind == "bandwidth" else 0
    until = _parse_until(raw["until"], ms) if kind == "hold" else ""
    return Action(kind, ms, error, bytes_per_s=rate, until=until, **optional)


def _parse_until(value: Any, fallback_ms: float) -> str:
    if not isinstance(value, str) or value not in HOLD_UNTIL:
        hint = suggest(str(value), list(HOLD_UNTIL)) or f" (known: {', '.join(HOLD_UNTIL)})"
        raise FaultConfigError("action.until", f"unknown hold condition {show(value)}{hint}")
    if value == "delay" and not fallback_ms:
        raise FaultConfigError("action.ms", "hold until 'delay' needs 'ms' > 0")
    return value


def parse_rule(raw: Any, rule_id: int, brokers: set[int] | None = None) -> Rule:
    """Build a Rule from a dict; raises FaultConfigError naming the bad field."""
    if not isinstance(raw, Mapping):
        raise FaultConfigError("rule", f"expected an object, got {show(raw)}")
    check_keys(raw, RULE_KEYS, "")
    if raw.get("action") is None:
        raise FaultConfigError("action", "a rule needs an action")
    probability = raw.get("probability", 1.0)
    if isinstance(probability, bool) or not isinstance(probability, (int, float)) or not 0.0 <= probability <= 1.0:
        raise FaultConfigError("probability", f"must be a number in [0, 1], got {show(probability)}")

    def optional(key: str, check: Any, *args: Any) -> Any:
        return check(raw[key], key, *args) if raw.get(key) is not None else None

    optional("id", check_int, 0)  # accepted (a listed rule can be posted back) and ignored
    return Rule(
        id=rule_id,
        match=parse_match(raw.get("match"), brokers),
        action=parse_action(raw["action"]),
        times=optional("times", check_int, 1),
        after=check_int(raw.get("after", 0), "after", 0),
        probability=float(probability),
        duration_ms=optional("duration_ms", check_ms),
        at_ms=optional("at_ms", check_ms),
        name=optional("name", check_str),
    )


def check_rule(rule: Rule, brokers: set[int] | None = None) -> None:
    """Validate a Rule built in Python (``faults.add(Rule(...))``) exactly as a dict would be."""
    action = rule.action
    params = ACTIONS.get(action.type, ()) if isinstance(action.type, str) else ()
    optional = OPTIONAL_PARAMS.get(action.type, ()) if isinstance(action.type, str) else ()
    raw: dict[str, Any] = {
        "match": {k: getattr(rule.match, k) for k in MATCH_KEYS if getattr(rule.match, k) is not None},
        "action": {"type": action.type} | ({k: getattr(action, k) for k in params})
                  | {k: getattr(action, k) for k in optional if getattr(action, k)},
        "after": rule.after, "probability": rule.probability,
    }
    raw |= {k: getattr(rule, k) for k in ("times", "duration_ms", "at_ms", "name") if getattr(rule, k) is not None}
    parse_rule(raw, rule.id, brokers)


@dataclass(frozen=True)
class ReplicationCommand:
    topic: str | None
    partition: int | None
    follower: int | None
    mode: str
    lag_ms: float


def parse_replication(raw: Any, prefix: str = "", brokers: set[int] | None = None) -> ReplicationCommand:
    """The replication command (HTTP ``POST /replication``, scenario ``replication:`` events);
    fields are named ``{prefix}lag_ms`` and so on. ``brokers``: check the follower exists."""
    if not isinstance(raw, Mapping):
        raise FaultConfigError(prefix.rstrip(".") or "body", f"expected an object, got {show(raw)}")
    check_keys(raw, REPLICATION_KEYS, prefix)
    mode = raw.get("mode")
    if not isinstance(mode, str) or mode not in REPLICATION_MODES:
        raise FaultConfigError(f"{prefix}mode", f"must be one of {', '.join(REPLICATION_MODES)}, got {show(mode)}")
    topic = check_str(raw["topic"], f"{prefix}topic") if raw.get("topic") is not None else None
    partition = check_int(raw["partition"], f"{prefix}partition", 0, INT32_MAX) if raw.get("partition") is not None else None
    if partition is not None and topic is None:
        raise FaultConfigError(f"{prefix}partition", "a partition needs a topic")
    follower = check_int(raw["follower"], f"{prefix}follower", 0, INT32_MAX) if raw.get("follower") is not None else None
    if follower is not None and brokers is not None and follower not in brokers:
        raise FaultConfigError(f"{prefix}follower", f"no broker {follower} (brokers: {sorted(brokers)})")
    lag_ms = check_ms(raw["lag_ms"], f"{prefix}lag_ms") if raw.get("lag_ms") is not None else 0.0
    if mode == "lag" and not lag_ms:
        raise FaultConfigError(f"{prefix}lag_ms", "mode 'lag' needs 'lag_ms' > 0")
    return ReplicationCommand(topic, partition, follower, mode, lag_ms)
