"""Named faults: Toxiproxy's vocabulary (latency, jitter, bandwidth, timeout, reset, slow-close)
plus Kafka's own (error, black-hole), each a function that returns an ordinary rule dict for the
one rule engine. Nothing here is a new mechanism: a named fault is the rule you could have written
by hand (``docs/faults.md`` gives the mapping), so it is validated, traced (``fault_applied``) and
shown (console, ``GET /faults``) like any other.

    from broker_emu.faults import named
    named.latency(ms=500, jitter_ms=100, api="Produce")   # -> {"match": ..., "action": ..., "name": "latency"}

    handle = cluster.faults.latency(api="Produce", ms=500)  # added now: .id, .hits, .clear()
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from broker_emu.faults.rules import FaultConfigError, show, suggest

# rule keys every named fault takes: the match (api, broker, topic, ...) and the schedule
MATCH_SELECTORS = ("api", "broker", "topic", "partition", "client_id", "api_version", "connection", "bootstrap",
                   "transactional_id")
SCHEDULE = ("probability", "count", "after", "duration_ms", "at_ms", "name")
CONNECTION_SELECTORS = ("broker", "connection", "bootstrap")   # what a connection-level rule can match


@dataclass(frozen=True)
class Named:
    params: tuple[str, ...]          # the fault's own arguments, in order
    required: tuple[str, ...]
    action: Callable[..., dict[str, Any]]
    summary: str
    connection_level: bool = False
    fixed: tuple[tuple[str, Any], ...] = ()   # match keys the fault always sets (and so does not take)

    def selectors(self) -> tuple[str, ...]:
        base = CONNECTION_SELECTORS if self.connection_level else MATCH_SELECTORS
        return tuple(s for s in base if s not in dict(self.fixed))


def _delay(ms: float = 0.0, jitter_ms: float = 0.0) -> dict[str, Any]:
    return {"type": "delay_request", "ms": ms} | ({"jitter_ms": jitter_ms} if jitter_ms else {})


def _timeout(ms: float = 0.0) -> dict[str, Any]:
    return {"type": "black_hole"} | ({"close_ms": ms} if ms else {})


STARVE_MODES = ("silent", "no-brokers")


def _starve(mode: str = "silent") -> dict[str, Any]:
    """Metadata that never helps: never answered (``silent``: the client's request.timeout.ms
    closes the connection), or answered with the topics and no brokers (``no-brokers``: Java's
    NetworkClient ignores such an answer and counts the refresh as failed)."""
    if mode not in STARVE_MODES:
        raise FaultConfigError("mode", f"metadata-starve mode must be one of {', '.join(STARVE_MODES)}, got "
                                       f"{show(mode)}{suggest(str(mode), STARVE_MODES)}")
    return {"type": "black_hole"} if mode == "silent" else {"type": "no_brokers"}


NAMED: dict[str, Named] = {
    "latency": Named(("ms", "jitter_ms"), ("ms",), _delay,
                     "hold each matching request ms (± jitter_ms) before handling it: delay_request"),
    "jitter": Named(("jitter_ms", "ms"), ("jitter_ms",), lambda jitter_ms, ms=0.0: _delay(ms, jitter_ms),
                    "hold each matching request a random time in [max(0, ms - jitter_ms), ms + jitter_ms] "
                    "(ms defaults to 0): delay_request with jitter_ms"),
    "bandwidth": Named(("bytes_per_s",), ("bytes_per_s",), lambda bytes_per_s: {"type": "bandwidth", "bytes_per_s": bytes_per_s},
                       "hold each matching response for its size / bytes_per_s, then write it: bandwidth"),
    "timeout": Named(("ms",), (), _timeout,
                     "swallow the matching request and everything after it on the connection; close the "
                     "connection ms later (0 or absent: hold it forever): black_hole with close_ms"),
    "reset": Named((), (), lambda: {"type": "reset"},
                   "reset the connection (TCP RST) when the matching request arrives, unanswered and unhandled"),
    "slow-close": Named(("ms",), ("ms",), lambda ms: {"type": "slow_close", "ms": ms},
                        "when a matching connection ends, the broker's end closes ms later: slow_close",
                        connection_level=True),
    "error": Named(("error",), ("error",), lambda error: {"type": "error", "error": error},
                   "answer the matching request with a Kafka error (a name like NOT_LEADER_OR_FOLLOWER or a code): error"),
    "black-hole": Named((), (), lambda: {"type": "black_hole"},
                        "read the matching request, never answer, keep the connection open: black_hole"),
    # KIP-1102: a broker may tell a client its metadata is stale; Java's client goes back to
    # bootstrap.servers at once (NetworkClient.DefaultMetadataUpdater, Metadata v13+ only)
    "rebootstrap": Named((), (), lambda: {"type": "error", "error": "REBOOTSTRAP_REQUIRED"},
                         "answer Metadata with REBOOTSTRAP_REQUIRED (the top-level error of Metadata v13+, "
                         "KIP-1102): error on api Metadata", fixed=(("api", "Metadata"),)),
    # a request delayed past its client's timeout, landing later (faults/late.py): under transaction
    # version 1 a late EndTxn or Produce lands in the producer's next transaction
    "late": Named(("until", "ms"), ("until",), lambda until, ms=0.0: {"type": "hold", "until": until} | ({"ms": ms} if ms else {}),
                  "hold the matching request unhandled until its producer's next InitProducerId, AddPartitionsToTxn, "
                  "EndTxn or next-transaction Produce is answered (until), or ms; then handle it, even after its "
                  "client has gone: hold"),
    "metadata-starve": Named(("mode",), (), _starve,
                             "Metadata never helps: never answered (mode silent, the default: black_hole) or "
                             "answered with no brokers (mode no-brokers: no_brokers)", fixed=(("api", "Metadata"),)),
    # KIP-932: the broker's lock clock itself, late (a busy timer, a paused broker): what the client
    # was told (AcquisitionLockTimeoutMs) is not when the record goes back to the group
    "lock-late": Named(("ms",), ("ms",), lambda ms: {"type": "lock_late", "ms": ms},
                       "the records a matching ShareFetch acquires are locked ms past their deadline: the "
                       "broker's expiry runs late, the answer still gives the group's lock: lock_late on api "
                       "ShareFetch", fixed=(("api", "ShareFetch"),)),
}


def spec(name: str) -> Named:
    key = name.replace("_", "-") if isinstance(name, str) else name
    if key not in NAMED:
        raise FaultConfigError("fault", f"unknown fault {show(name)}{suggest(str(name), NAMED)}; known: {', '.join(NAMED)}")
    return NAMED[key]


def rule(name: str, **kwargs: Any) -> dict[str, Any]:
    """The rule dict of a named fault: ``rule("latency", ms=500, api="Produce", count=2)``.
    Arguments are the fault's own (``NAMED[name].params``), the match selectors and the schedule
    (``count`` is the rule's ``times``). Values are checked where the rule is added."""
    s, key = spec(name), name.replace("_", "-")
    selectors = s.selectors()
    known = s.params + selectors + SCHEDULE
    for arg in kwargs:
        if arg not in known:
            hint = suggest(arg, known)
            if not hint and arg in dict(s.fixed):
                hint = f" ({key} always matches {arg} {dict(s.fixed)[arg]})"
            elif not hint and arg in MATCH_SELECTORS:
                hint = f" ({key} acts on connections: it matches on {', '.join(CONNECTION_SELECTORS)} only)"
            raise FaultConfigError(arg, f"not an argument of {key}{hint}; takes: {', '.join(known)}")
    missing = [p for p in s.required if kwargs.get(p) is None]
    if missing:
        raise FaultConfigError(missing[0], f"{key} needs {missing[0]}")
    raw: dict[str, Any] = {"action": s.action(**{p: kwargs[p] for p in s.params if kwargs.get(p) is not None}),
                           "name": kwargs.get("name") or key}
    match = dict(s.fixed) | {k: kwargs[k] for k in selectors if kwargs.get(k) is not None}
    if match:
        raw["match"] = match
    if kwargs.get("count") is not None:
        raw["times"] = kwargs["count"]
    raw |= {k: kwargs[k] for k in ("probability", "after", "duration_ms", "at_ms") if kwargs.get(k) is not None}
    return raw


def latency(ms: float, jitter_ms: float = 0.0, **selectors: Any) -> dict[str, Any]:
    return rule("latency", ms=ms, jitter_ms=jitter_ms, **selectors)


def jitter(jitter_ms: float, ms: float = 0.0, **selectors: Any) -> dict[str, Any]:
    return rule("jitter", jitter_ms=jitter_ms, ms=ms, **selectors)


def bandwidth(bytes_per_s: int, **selectors: Any) -> dict[str, Any]:
    return rule("bandwidth", bytes_per_s=bytes_per_s, **selectors)


def timeout(ms: float = 0.0, **selectors: Any) -> dict[str, Any]:
    return rule("timeout", ms=ms, **selectors)


def reset(**selectors: Any) -> dict[str, Any]:
    return rule("reset", **selectors)


def slow_close(ms: float, **selectors: Any) -> dict[str, Any]:
    return rule("slow-close", ms=ms, **selectors)


def error(error: str | int, **selectors: Any) -> dict[str, Any]:
    return rule("error", error=error, **selectors)


def black_hole(**selectors: Any) -> dict[str, Any]:
    return rule("black-hole", **selectors)


def late(until: str, ms: float = 0.0, **selectors: Any) -> dict[str, Any]:
    return rule("late", until=until, ms=ms, **selectors)


def rebootstrap(**selectors: Any) -> dict[str, Any]:
    return rule("rebootstrap", **selectors)


def lock_late(ms: float, **selectors: Any) -> dict[str, Any]:
    return rule("lock-late", ms=ms, **selectors)


def metadata_starve(mode: str = "silent", **selectors: Any) -> dict[str, Any]:
    return rule("metadata-starve", mode=mode, **selectors)


class FaultHandle:
    """A rule added by name: its id, its counters (``hits``: times it fired; ``matched``: requests
    or connections it matched, fired or not) and ``clear()`` to remove it."""

    def __init__(self, engine: Any, rule: Any):
        self._engine, self.rule = engine, rule

    @property
    def id(self) -> int:
        return int(self.rule.id)

    @property
    def hits(self) -> int:
        return int(self.rule.applied)

    @property
    def matched(self) -> int:
        return int(self.rule.matched)

    @property
    def active(self) -> bool:
        return self._engine.rules.get(self.id) is self.rule

    def clear(self) -> bool:
        return bool(self._engine.remove(self.id))

    def __repr__(self) -> str:
        return f"<fault {self.id} {self.rule.name or self.rule.action.type}: {self.hits} hits>"


class NamedFaults:
    """The named faults as methods of the fault engine (``cluster.faults.latency(...)``), each
    adding its rule at the engine's clock and returning a ``FaultHandle``."""

    def add_named(self, name: str, **kwargs: Any) -> FaultHandle:
        engine: Any = self
        return FaultHandle(engine, engine.add(rule(name, **kwargs), engine.clock()))

    def latency(self, ms: float, jitter_ms: float = 0.0, **selectors: Any) -> FaultHandle:
        return self.add_named("latency", ms=ms, jitter_ms=jitter_ms, **selectors)

    def jitter(self, jitter_ms: float, ms: float = 0.0, **selectors: Any) -> FaultHandle:
        return self.add_named("jitter", jitter_ms=jitter_ms, ms=ms, **selectors)

    def bandwidth(self, bytes_per_s: int, **selectors: Any) -> FaultHandle:
        return self.add_named("bandwidth", bytes_per_s=bytes_per_s, **selectors)

    def timeout(self, ms: float = 0.0, **selectors: Any) -> FaultHandle:
        return self.add_named("timeout", ms=ms, **selectors)

    def reset(self, **selectors: Any) -> FaultHandle:
        return self.add_named("reset", **selectors)

    def slow_close(self, ms: float, **selectors: Any) -> FaultHandle:
        return self.add_named("slow-close", ms=ms, **selectors)

    def error(self, error: str | int, **selectors: Any) -> FaultHandle:
        return self.add_named("error", error=error, **selectors)

    def black_hole(self, **selectors: Any) -> FaultHandle:
        return self.add_named("black-hole", **selectors)

    def late(self, until: str, ms: float = 0.0, **selectors: Any) -> FaultHandle:
        return self.add_named("late", until=until, ms=ms, **selectors)

    def rebootstrap(self, **selectors: Any) -> FaultHandle:
        return self.add_named("rebootstrap", **selectors)

    def metadata_starve(self, mode: str = "silent", **selectors: Any) -> FaultHandle:
        return self.add_named("metadata-starve", mode=mode, **selectors)


class BlockingFaultHandle:
    """``FaultHandle`` for a cluster on another thread: every read runs on the cluster's thread."""

    def __init__(self, call: Callable[..., Any], handle: FaultHandle):
        self._call, self._handle = call, handle
        self.id = handle.id

    @property
    def hits(self) -> int:
        return int(self._call(lambda: self._handle.hits))

    @property
    def matched(self) -> int:
        return int(self._call(lambda: self._handle.matched))

    @property
    def active(self) -> bool:
        return bool(self._call(lambda: self._handle.active))

    def clear(self) -> bool:
        return bool(self._call(self._handle.clear))


class BlockingFaults:
    """The named faults of a cluster running on its own thread (``kafka_cluster.faults``):
    ``call(fn)`` runs ``fn`` on that thread; ``engine()`` returns its fault engine there."""

    def __init__(self, call: Callable[..., Any], engine: Callable[[], Any]):
        self._call, self._engine = call, engine

    def add_named(self, name: str, **kwargs: Any) -> BlockingFaultHandle:
        return BlockingFaultHandle(self._call, self._call(lambda: self._engine().add_named(name, **kwargs)))

    def latency(self, ms: float, jitter_ms: float = 0.0, **selectors: Any) -> BlockingFaultHandle:
        return self.add_named("latency", ms=ms, jitter_ms=jitter_ms, **selectors)

    def jitter(self, jitter_ms: float, ms: float = 0.0, **selectors: Any) -> BlockingFaultHandle:
        return self.add_named("jitter", jitter_ms=jitter_ms, ms=ms, **selectors)

    def bandwidth(self, bytes_per_s: int, **selectors: Any) -> BlockingFaultHandle:
        return self.add_named("bandwidth", bytes_per_s=bytes_per_s, **selectors)

    def timeout(self, ms: float = 0.0, **selectors: Any) -> BlockingFaultHandle:
        return self.add_named("timeout", ms=ms, **selectors)

    def reset(self, **selectors: Any) -> BlockingFaultHandle:
        return self.add_named("reset", **selectors)

    def slow_close(self, ms: float, **selectors: Any) -> BlockingFaultHandle:
        return self.add_named("slow-close", ms=ms, **selectors)

    def error(self, error: str | int, **selectors: Any) -> BlockingFaultHandle:
        return self.add_named("error", error=error, **selectors)

    def black_hole(self, **selectors: Any) -> BlockingFaultHandle:
        return self.add_named("black-hole", **selectors)

    def late(self, until: str, ms: float = 0.0, **selectors: Any) -> BlockingFaultHandle:
        return self.add_named("late", until=until, ms=ms, **selectors)

    def rebootstrap(self, **selectors: Any) -> BlockingFaultHandle:
        return self.add_named("rebootstrap", **selectors)

    def metadata_starve(self, mode: str = "silent", **selectors: Any) -> BlockingFaultHandle:
        return self.add_named("metadata-starve", mode=mode, **selectors)

    def clear(self) -> int:
        return int(self._call(lambda: self._engine().clear()))
