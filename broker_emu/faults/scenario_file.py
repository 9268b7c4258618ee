"""Scenario files (YAML): a cluster set-up, fault rules and timed cluster events.

    seed: 7
    brokers: 3
    topics:
      - {name: orders, partitions: 3, replication_factor: 3}
    config: {replica.lag.time.max.ms: 10000}
    faults:
      - match: {broker: 1, api: Produce}
        action: {type: black_hole}
        times: 1
      - latency: {api: Fetch, ms: 200, jitter_ms: 50}   # a named fault (docs/faults.md)
    events:
      - {at_ms: 0, replication: {topic: orders, mode: stall}}
      - {at_ms: 5000, stop_broker: 1}
      - {at_ms: 6000, move_leader: {topic: orders, partition: 0, broker: 2}}
      - {at_ms: 8000, start_broker: 1}

Loading validates everything (errors name the path, e.g. ``events[2].move_leader.broker``)
before anything is applied; ``run_events`` then plays the events on trio's clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from broker_emu.faults import named
from broker_emu.faults.engine import FaultEngine
from broker_emu.faults.rules import (
    INT32_MAX,
    FaultConfigError,
    check_int,
    check_keys,
    check_ms,
    check_str,
    parse_replication,
    show,
)

EVENT_VERBS = ("stop_broker", "start_broker", "move_leader", "replication")
TOP_KEYS = ("seed", "brokers", "topics", "config", "faults", "events", "name", "description")
MAX_BROKERS, MAX_PARTITIONS = 1000, 10_000   # a typo must not make the cluster build for an hour


@dataclass(frozen=True)
class Event:
    at_ms: float
    verb: str
    args: dict[str, Any]


@dataclass
class ScenarioFile:
    seed: int = 0
    brokers: int | None = None
    topics: list[tuple[str, int, int]] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def _err(path: str, message: str) -> FaultConfigError:
    return FaultConfigError(path, message)


def _broker_ref(value: Any, where: str, broker_ids: set[int]) -> int:
    value = check_int(value, where, 0, INT32_MAX)
    if value not in broker_ids:
        raise _err(where, f"no broker {value} (brokers: {sorted(broker_ids)})")
    return value


def _parse_event(raw: Any, i: int, broker_ids: set[int]) -> Event:
    where = f"events[{i}]"
    if not isinstance(raw, dict):
        raise _err(where, f"expected a mapping, got {show(raw)}")
    at = check_ms(raw.get("at_ms", 0), f"{where}.at_ms")
    verbs = [k for k in raw if k != "at_ms"]
    if len(verbs) != 1 or verbs[0] not in EVENT_VERBS:
        raise _err(where, f"needs exactly one of {', '.join(EVENT_VERBS)} (got {show(verbs)})")
    verb = verbs[0]
    value = raw[verb]
    if verb in ("stop_broker", "start_broker"):
        return Event(at, verb, {"broker": _broker_ref(value, f"{where}.{verb}", broker_ids)})
    if not isinstance(value, dict):
        raise _err(f"{where}.{verb}", f"expected a mapping, got {show(value)}")
    if verb == "move_leader":
        prefix = f"{where}.move_leader."
        check_keys(value, ("topic", "partition", "broker"), prefix)
        for key in ("topic", "partition", "broker"):
            if key not in value:
                raise _err(prefix + key, "missing")
        return Event(at, verb, {"topic": check_str(value["topic"], prefix + "topic"),
                                "partition": check_int(value["partition"], prefix + "partition", 0, INT32_MAX),
                                "broker": _broker_ref(value["broker"], prefix + "broker", broker_ids)})
    cmd = parse_replication(value, f"{where}.replication.", broker_ids)
    return Event(at, verb, {"topic": cmd.topic, "partition": cmd.partition, "follower": cmd.follower,
                            "mode": cmd.mode, "lag_ms": cmd.lag_ms})


def _list(doc: dict, key: str) -> list:
    value = doc.get(key) or []
    if not isinstance(value, list):
        raise _err(key, f"must be a list, got {show(value)}")
    return value


def _parse_topic(t: Any, i: int, brokers: int) -> tuple[str, int, int]:
    if not isinstance(t, dict) or not isinstance(t.get("name"), str):
        raise _err(f"topics[{i}]", "needs a name")
    check_keys(t, ("name", "partitions", "replication_factor"), f"topics[{i}].")
    parts = check_int(t.get("partitions", 1), f"topics[{i}].partitions", 1, MAX_PARTITIONS)
    rf = t.get("replication_factor", min(3, brokers))
    if isinstance(rf, bool) or not isinstance(rf, int) or not 1 <= rf <= brokers:
        raise _err(f"topics[{i}].replication_factor", f"must be 1..{brokers}, got {show(rf)}")
    return check_str(t["name"], f"topics[{i}].name", 249), parts, rf


def parse_scenario(doc: Any, default_brokers: int = 3) -> ScenarioFile:
    if doc is None:
        return ScenarioFile()
    if not isinstance(doc, dict):
        raise _err("scenario", "the file must hold a mapping at the top")
    check_keys(doc, TOP_KEYS, "")
    seed = check_int(doc.get("seed", 0), "seed")
    brokers = doc.get("brokers")
    if brokers is not None:
        brokers = check_int(brokers, "brokers", 1, MAX_BROKERS)
    ids = set(range(brokers or default_brokers))
    topics = [_parse_topic(t, i, len(ids)) for i, t in enumerate(_list(doc, "topics"))]
    config = doc.get("config") or {}
    if not isinstance(config, dict):
        raise _err("config", "must be a mapping of broker config names to values")
    faults = [_named(raw, i) for i, raw in enumerate(_list(doc, "faults"))]
    probe = FaultEngine(brokers=ids)
    for i, raw in enumerate(faults):
        try:
            probe.add(raw, 0)
        except FaultConfigError as exc:
            raise _err(f"faults[{i}].{exc.field}", str(exc).split(": ", 1)[-1]) from None
    events = sorted((_parse_event(raw, i, ids) for i, raw in enumerate(_list(doc, "events"))), key=lambda e: e.at_ms)
    return ScenarioFile(seed, brokers, topics, dict(config), list(faults), events)


def _named(raw: Any, i: int) -> Any:
    """``- latency: {api: Produce, ms: 500}``: a named fault (``broker_emu.faults.named``), read as
    the rule it stands for; anything else is a rule as it is."""
    if not isinstance(raw, dict) or len(raw) != 1:
        return raw
    ((name, args),) = raw.items()
    if not isinstance(name, str) or name.replace("_", "-") not in named.NAMED:
        return raw
    args = {} if args is None else args
    if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
        raise _err(f"faults[{i}].{name}", f"expected a mapping of arguments, got {show(args)}")
    try:
        return named.rule(name, **args)
    except FaultConfigError as exc:
        raise _err(f"faults[{i}].{name}.{exc.field}", str(exc).split(": ", 1)[-1]) from None


def load_scenario(text: str, default_brokers: int = 3) -> ScenarioFile:
    # imported here: YAML's parser costs `serve` about a twentieth of its start-up, and only a
    # scenario file needs it (parse_scenario, MAX_BROKERS and run_events do not)
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _err("yaml", f"not valid YAML: {exc}") from None
    except RecursionError:
        raise _err("yaml", "nested too deeply") from None
    return parse_scenario(doc, default_brokers)


class EventTarget(Protocol):
    """What a scenario's events act on: the cluster, or the proxy (which refuses the leadership
    and replication events)."""

    def now_ms(self) -> float: ...
    async def stop_broker(self, broker_id: int) -> None: ...
    async def start_broker(self, broker_id: int) -> None: ...
    def move_leader(self, topic: str, partition: int, broker_id: int) -> None: ...
    def set_replication(self, topic: str | None, partition: int | None, follower: int | None, mode: str,
                        lag_ms: float) -> None: ...


async def apply_event(target: EventTarget, event: Event) -> None:
    a = event.args
    if event.verb == "stop_broker":
        await target.stop_broker(a["broker"])
    elif event.verb == "start_broker":
        await target.start_broker(a["broker"])
    elif event.verb == "move_leader":
        target.move_leader(a["topic"], a["partition"], a["broker"])
    else:
        target.set_replication(a["topic"], a["partition"], a["follower"], a["mode"], a["lag_ms"])


async def run_events(target: EventTarget, events: list[Event]) -> None:
    """Play events at their ``at_ms`` (cluster time, ms since start)."""
    for event in events:
        delay = (event.at_ms - target.now_ms()) / 1000.0
        if delay > 0:
            await trio.sleep(delay)
        await apply_event(target, event)
