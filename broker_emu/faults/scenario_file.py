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
from typing import Any

import trio
import yaml

from broker_emu.faults.engine import FaultEngine
from broker_emu.faults.rules import FaultConfigError

EVENT_VERBS = ("stop_broker", "start_broker", "move_leader", "replication")
TOP_KEYS = ("seed", "brokers", "topics", "config", "faults", "events", "name", "description")


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


def _parse_event(raw: Any, i: int, broker_ids: set[int]) -> Event:
    where = f"events[{i}]"
    if not isinstance(raw, dict):
        raise _err(where, f"expected a mapping, got {raw!r}")
    at = raw.get("at_ms", 0)
    if isinstance(at, bool) or not isinstance(at, (int, float)) or at < 0:
        raise _err(f"{where}.at_ms", f"must be a non-negative number, got {at!r}")
    verbs = [k for k in raw if k != "at_ms"]
    if len(verbs) != 1 or verbs[0] not in EVENT_VERBS:
        raise _err(where, f"needs exactly one of {', '.join(EVENT_VERBS)} (got {verbs})")
    verb = verbs[0]
    value = raw[verb]
    if verb in ("stop_broker", "start_broker"):
        if value not in broker_ids:
            raise _err(f"{where}.{verb}", f"no broker {value!r} (brokers: {sorted(broker_ids)})")
        return Event(float(at), verb, {"broker": value})
    if not isinstance(value, dict):
        raise _err(f"{where}.{verb}", f"expected a mapping, got {value!r}")
    if verb == "move_leader":
        for key in ("topic", "partition", "broker"):
            if key not in value:
                raise _err(f"{where}.move_leader.{key}", "missing")
        if value["broker"] not in broker_ids:
            raise _err(f"{where}.move_leader.broker", f"no broker {value['broker']!r}")
        return Event(float(at), verb, dict(value))
    mode = value.get("mode")
    if mode not in ("stall", "lag", "normal"):
        raise _err(f"{where}.replication.mode", f"must be stall, lag or normal, got {mode!r}")
    if mode == "lag" and not value.get("lag_ms"):
        raise _err(f"{where}.replication.lag_ms", "mode lag needs lag_ms > 0")
    follower = value.get("follower")
    if follower is not None and follower not in broker_ids:
        raise _err(f"{where}.replication.follower", f"no broker {follower!r}")
    return Event(float(at), verb, {"topic": value.get("topic"), "partition": value.get("partition"),
                                  "follower": follower, "mode": mode, "lag_ms": float(value.get("lag_ms", 0))})


def parse_scenario(doc: Any, default_brokers: int = 3) -> ScenarioFile:
    if doc is None:
        return ScenarioFile()
    if not isinstance(doc, dict):
        raise _err("scenario", "the file must hold a mapping at the top")
    for key in doc:
        if key not in TOP_KEYS:
            raise _err(key, f"unknown key (known: {', '.join(TOP_KEYS)})")
    seed = doc.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise _err("seed", f"must be an integer, got {seed!r}")
    brokers = doc.get("brokers")
    if brokers is not None and (isinstance(brokers, bool) or not isinstance(brokers, int) or brokers < 1):
        raise _err("brokers", f"must be a positive integer, got {brokers!r}")
    ids = set(range(brokers or default_brokers))
    topics = []
    for i, t in enumerate(doc.get("topics") or []):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise _err(f"topics[{i}]", "needs a name")
        parts, rf = t.get("partitions", 1), t.get("replication_factor", min(3, len(ids)))
        if not isinstance(parts, int) or parts < 1:
            raise _err(f"topics[{i}].partitions", f"must be a positive integer, got {parts!r}")
        if not isinstance(rf, int) or not 1 <= rf <= len(ids):
            raise _err(f"topics[{i}].replication_factor", f"must be 1..{len(ids)}, got {rf!r}")
        topics.append((t["name"], parts, rf))
    config = doc.get("config") or {}
    if not isinstance(config, dict):
        raise _err("config", "must be a mapping of broker config names to values")
    faults = doc.get("faults") or []
    probe = FaultEngine(brokers=ids)
    for i, raw in enumerate(faults):
        try:
            probe.add(raw, 0)
        except FaultConfigError as exc:
            raise _err(f"faults[{i}].{exc.field}", str(exc).split(": ", 1)[-1]) from None
    events = sorted((_parse_event(raw, i, ids) for i, raw in enumerate(doc.get("events") or [])), key=lambda e: e.at_ms)
    return ScenarioFile(seed, brokers, topics, dict(config), list(faults), events)


def load_scenario(text: str, default_brokers: int = 3) -> ScenarioFile:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _err("yaml", f"not valid YAML: {exc}") from None
    return parse_scenario(doc, default_brokers)


async def apply_event(target: Any, event: Event) -> None:
    a = event.args
    if event.verb == "stop_broker":
        await target.stop_broker(a["broker"])
    elif event.verb == "start_broker":
        await target.start_broker(a["broker"])
    elif event.verb == "move_leader":
        target.move_leader(a["topic"], a["partition"], a["broker"])
    else:
        target.set_replication(a["topic"], a["partition"], a["follower"], a["mode"], a["lag_ms"])


async def run_events(target: Any, events: list[Event]) -> None:
    """Play events at their ``at_ms`` (cluster time, ms since start)."""
    for event in events:
        delay = (event.at_ms - target.now_ms()) / 1000.0
        if delay > 0:
            await trio.sleep(delay)
        await apply_event(target, event)
