"""The fault model: a rule = match + action + schedule. Parsed from plain dicts (Python, YAML,
HTTP JSON all use this one parser), validated with errors that name the offending field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from client.errors import ErrorCode
from client.protocol import ApiKey

REQUEST_ACTIONS = {
    "delay_request": ("ms",),      # hold the request before handling it
    "delay_response": ("ms",),     # handle it, hold the response
    "black_hole": (),              # read it, never answer, keep the connection open
    "close_before": (),            # close the connection instead of handling
    "close_after": (),             # handle it (side effects happen), close instead of answering
    "error": ("error",),           # answer with this error code (per partition where it has them)
    "throttle": ("ms",),           # throttle_time_ms in the response, then mute the connection (KIP-219)
    "partial_response": (),        # write half the response frame, then stall
}
CONNECTION_ACTIONS = {
    "refuse_connections": (),      # close new connections at once
    "accept_never_read": (),       # accept, never read a byte
    "slow_accept": ("ms",),        # accept, then wait before reading
    "drop_connects": (),           # the connection attempt never completes (SYNs dropped): the
                                   # client's socket.connection.setup.timeout.ms must fire. In-memory
                                   # connections only; a TCP handshake completes in the kernel, so on
                                   # TCP it acts as accept_never_read
}
ACTIONS = {**REQUEST_ACTIONS, **CONNECTION_ACTIONS}
MATCH_KEYS = ("broker", "api", "api_version", "topic", "partition", "client_id", "connection")
RULE_KEYS = ("match", "action", "times", "after", "probability", "duration_ms", "at_ms", "id", "name")


class FaultConfigError(ValueError):
    """A rule that cannot be accepted; ``field`` names where it is wrong."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


@dataclass(frozen=True)
class Match:
    broker: int | None = None
    api: int | None = None
    api_version: int | None = None
    topic: str | None = None
    partition: int | None = None
    client_id: str | None = None
    connection: int | None = None

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

    @property
    def connection_level(self) -> bool:
        return self.type in CONNECTION_ACTIONS

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.type}
        if "ms" in ACTIONS[self.type]:
            d["ms"] = self.ms
        if self.type == "error":
            d["error"] = ErrorCode(self.error).name if self.error in ErrorCode._value2member_map_ else self.error
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


def _int(value: Any, where: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise FaultConfigError(where, f"expected an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise FaultConfigError(where, f"must be >= {minimum}, got {value}")
    return value


def _ms(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FaultConfigError(where, f"expected milliseconds as a number, got {value!r}")
    if value < 0:
        raise FaultConfigError(where, f"must not be negative, got {value}")
    return float(value)


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
            names = ", ".join(k.api_name for k in ApiKey)
            raise FaultConfigError(where, f"unknown API {value!r} (known: {names})") from None
    raise FaultConfigError(where, f"expected an API name or key, got {value!r}")


def parse_error_code(value: Any, where: str = "action.error") -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        name = value.upper()
        if name in ErrorCode.__members__:
            return int(ErrorCode[name])
        if name.lstrip("-").isdigit():
            return int(name)
    raise FaultConfigError(where, f"unknown Kafka error {value!r} (use a name like REQUEST_TIMED_OUT or a code)")


def parse_match(raw: Any, brokers: set[int] | None = None) -> Match:
    if raw is None:
        return Match()
    if not isinstance(raw, Mapping):
        raise FaultConfigError("match", f"expected an object, got {raw!r}")
    for key in raw:
        if key not in MATCH_KEYS:
            raise FaultConfigError(f"match.{key}", f"unknown key (known: {', '.join(MATCH_KEYS)})")
    broker = raw.get("broker")
    if broker is not None:
        broker = _int(broker, "match.broker", 0)
        if brokers is not None and broker not in brokers:
            raise FaultConfigError("match.broker", f"no broker {broker} (brokers: {sorted(brokers)})")
    topic = raw.get("topic")
    if topic is not None and not isinstance(topic, str):
        raise FaultConfigError("match.topic", f"expected a string, got {topic!r}")
    client_id = raw.get("client_id")
    if client_id is not None and not isinstance(client_id, str):
        raise FaultConfigError("match.client_id", f"expected a string, got {client_id!r}")
    return Match(
        broker=broker,
        api=parse_api(raw["api"]) if raw.get("api") is not None else None,
        api_version=_int(raw["api_version"], "match.api_version", 0) if raw.get("api_version") is not None else None,
        topic=topic,
        partition=_int(raw["partition"], "match.partition", 0) if raw.get("partition") is not None else None,
        client_id=client_id,
        connection=_int(raw["connection"], "match.connection", 0) if raw.get("connection") is not None else None,
    )


def parse_action(raw: Any) -> Action:
    if isinstance(raw, str):
        raw = {"type": raw}
    if not isinstance(raw, Mapping) or "type" not in raw:
        raise FaultConfigError("action", f"expected an object with a 'type', got {raw!r}")
    kind = raw["type"]
    if kind not in ACTIONS:
        raise FaultConfigError("action.type", f"unknown action {kind!r} (known: {', '.join(ACTIONS)})")
    for key in raw:
        if key != "type" and key not in ACTIONS[kind]:
            raise FaultConfigError(f"action.{key}", f"not a parameter of {kind!r} (takes: {', '.join(ACTIONS[kind]) or 'nothing'})")
    ms = 0.0
    if "ms" in ACTIONS[kind]:
        if "ms" not in raw:
            raise FaultConfigError("action.ms", f"{kind!r} needs 'ms'")
        ms = _ms(raw["ms"], "action.ms")
    error = parse_error_code(raw["error"]) if kind == "error" else 0
    if kind == "error" and "error" not in raw:
        raise FaultConfigError("action.error", "'error' needs an error name or code")
    return Action(kind, ms, error)


def parse_rule(raw: Any, rule_id: int, brokers: set[int] | None = None) -> Rule:
    """Build a Rule from a dict; raises FaultConfigError naming the bad field."""
    if not isinstance(raw, Mapping):
        raise FaultConfigError("rule", f"expected an object, got {raw!r}")
    for key in raw:
        if key not in RULE_KEYS:
            raise FaultConfigError(key, f"unknown key (known: {', '.join(RULE_KEYS)})")
    if "action" not in raw:
        raise FaultConfigError("action", "a rule needs an action")
    probability = raw.get("probability", 1.0)
    if isinstance(probability, bool) or not isinstance(probability, (int, float)) or not 0.0 <= probability <= 1.0:
        raise FaultConfigError("probability", f"must be a number in [0, 1], got {probability!r}")
    return Rule(
        id=rule_id,
        match=parse_match(raw.get("match"), brokers),
        action=parse_action(raw["action"]),
        times=_int(raw["times"], "times", 1) if raw.get("times") is not None else None,
        after=_int(raw.get("after", 0), "after", 0),
        probability=float(probability),
        duration_ms=_ms(raw["duration_ms"], "duration_ms") if raw.get("duration_ms") is not None else None,
        at_ms=_ms(raw["at_ms"], "at_ms") if raw.get("at_ms") is not None else None,
        name=str(raw["name"]) if raw.get("name") is not None else None,
    )
