"""The conformance suite against a real Apache Kafka (``broker-emu conformance --broker kafka``).

One real cluster per run (a JVM start costs 10+ s), the proxy (``broker_emu.proxy``) in front of
it per scenario: the client talks to the proxy, which applies the scenario's wire faults (delays,
black holes, injected errors) and writes the trace the server-side contracts read. What the broker
itself does (answers, purgatory expiries, group waits) is Kafka's own.

- Topics and groups get run-unique names (``t`` -> ``t-<run>-<n>``): the cluster is shared by every
  scenario and client, and a scenario must start from an empty log. Deleting and re-creating ``t``
  instead would race Kafka's asynchronous deletion (and the clients' cached topic ids). The evidence
  is translated back (trace topics, listed topic names, the log snapshot) before judging, so the
  scenario's contracts read the names they were written with.
- Evidence only the emulator records (purgatory events) is re-derived from the wire: a Produce
  answered REQUEST_TIMED_OUT is a purgatory stay that expired (timeout_ms: the client's
  request.timeout.ms, which Kafka clients send as the Produce's timeout_ms); an acks=all Produce
  answered late (past ``PARKED_MS``) is a stay that completed. The log snapshot comes from the
  real cluster's high watermarks.
- ``kafka_support`` says whether a scenario can run there, and if not why (the report shows it).
- A feature a scenario finalizes (``transaction.version=1``) is fixed when a cluster's storage is
  formatted (StorageTool's --feature), so the scenarios are grouped by the levels they need and each
  group gets a cluster formatted with them; Kafka 4.4's own levels need no group of their own.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import threading
import time
import uuid
from dataclasses import replace
from typing import Any, Callable, Iterator

from broker_emu.proxy.proxy import run_proxy_in_thread
from broker_emu.trace import Kind, TraceEvent
from broker_emu.trace_reading import exchanges
from conformance.adapters.base import Adapter, RunEnv
from conformance.client_capabilities import name_the_capability
from conformance.cluster_setup import add_fault_rules, scale_config, scale_fault
from conformance.judging import judge
from conformance.model import Evidence, Outcome, Result, Scenario, Status
from conformance.runner import REAL_TIME_SLACK_MS, _run_blocking
from conformance.upstreams import (
    KAFKA_CLUSTER_CONFIG,
    TOPIC_LEVEL,
    EmulatorUpstream,
    KafkaUpstream,
    Upstream,
    proxy_rules,
)

REQUEST_TIMED_OUT = 7
PARKED_MS = 50.0   # an acks=all Produce answered later than this (scaled ms) waited for its followers
MS = ".ms"
BROKER_INTERNAL = ("reads the emulator's events inside its broker (share partitions' locks): through the proxy the "
                   "trace has only the wire")


# -- can it run on Kafka? --------------------------------------------------------------------------

def kafka_support(scenario: Scenario, brokers: int) -> str:
    """"" when the scenario can run on a real ``brokers``-node cluster behind the proxy, else why not."""
    if scenario.not_on_kafka:
        return scenario.not_on_kafka
    named = max(BrokerNumbers.named(scenario), default=-1)
    if named >= brokers:
        return f"names broker {named}: a {brokers}-node cluster has brokers 0-{brokers - 1} (run with --kafka-brokers {named + 1})"
    for rule in scenario.faults:
        why = _rule_support(rule, brokers)
        if why:
            return why
    return _config_support(scenario.broker_config)


def _rule_support(rule: dict[str, Any], brokers: int) -> str:
    if "move_leader" in rule and ("when" in rule or rule.get("at_ms")):
        return ("moves a partition's leader at a set time: the controller of a real cluster elects "
                "leaders itself (a reassignment is not a timed, instant move)")
    if "replication" in rule:
        if brokers < 2:
            return "stalls or slows a follower: a 1-node cluster has none (run with --kafka-brokers 3)"
        return ""
    if "move_cluster_behind_bootstrap" in rule:
        return ("replaces every broker with new ones behind the bootstrap address: a real cluster's broker set "
                "cannot be swapped behind the proxy")
    action = rule.get("action")
    kind = action.get("type") if isinstance(action, dict) else action
    if kind == "stop_broker":
        return ("stops a broker: through the proxy that is only a network partition, the real broker keeps "
                "its leaderships, so no failover happens")
    return ""


# the levels StorageTool formats a Kafka 4.4 cluster with when it is given none (Features'
# defaults for the release's metadata version): transaction version 2 is the default since 4.0
KAFKA_DEFAULT_FEATURES: dict[str, int] = {"transaction.version": 2}


def cluster_features(scenario: Scenario) -> dict[str, int]:
    """The feature levels the scenario's cluster must be formatted with, beyond Kafka 4.4's own."""
    return {key: int(value) for key, value in scenario.broker_config.items()
            if key in KAFKA_DEFAULT_FEATURES and int(value) != KAFKA_DEFAULT_FEATURES[key]}


def _config_support(config: dict[str, Any]) -> str:
    """Broker settings the shared cluster already has (KAFKA_CLUSTER_CONFIG), or a topic can carry, or
    a feature its storage is formatted with (``cluster_features``)."""
    for key, value in config.items():
        if key in TOPIC_LEVEL or key in KAFKA_DEFAULT_FEATURES:
            continue
        have = KAFKA_CLUSTER_CONFIG.get(key, "unset")
        if have != value:
            return (f"broker setting {key}={value}: the shared Kafka cluster runs with {key}={have}, "
                    "it cannot be changed per scenario and is no topic config")
    return ""


# -- broker numbers ------------------------------------------------------------------------------

class BrokerNumbers:
    """A scenario names brokers 0, 1, 2 as the emulator numbers them; a real cluster's nodes have
    ids of their own (the Kafka launcher's start at 1). Scenario broker ``i`` is the upstream's
    ``i``-th node by id, both ways: the fault rules and the bootstrap brokers go up in the
    upstream's ids, the trace comes back in the scenario's. A leader placed at the start
    (``move_leader`` at 0 ms) is the first replica the topic is created with (``KafkaUpstream``):
    Kafka's preferred leader, elected at creation."""

    def __init__(self, ids: list[int]):
        self.ids = sorted(ids)

    @staticmethod
    def named(scenario: Scenario) -> list[int]:
        """Every broker number the scenario names (faults, leader moves, bootstrap brokers)."""
        out = list(scenario.bootstrap_brokers)
        for rule in scenario.faults:
            for key, field in (("match", "broker"), ("move_leader", "broker"), ("replication", "follower")):
                if isinstance(rule.get(key), dict) and isinstance(rule[key].get(field), int):
                    out.append(rule[key][field])
        return out

    def up(self, broker: int) -> int:
        return self.ids[broker]

    def back(self, node: int | None) -> int | None:
        return self.ids.index(node) if node in self.ids else node

    def scenario(self, scenario: Scenario) -> Scenario:
        """The scenario with its brokers named by the upstream's ids."""
        def rule(raw: dict[str, Any]) -> dict[str, Any]:
            out = dict(raw)
            for key, field in (("match", "broker"), ("move_leader", "broker"), ("replication", "follower")):
                if isinstance(out.get(key), dict) and isinstance(out[key].get(field), int):
                    out[key] = {**out[key], field: self.up(out[key][field])}
            return out
        return replace(scenario, faults=tuple(rule(r) for r in scenario.faults),
                       bootstrap_brokers=tuple(self.up(b) for b in scenario.bootstrap_brokers))

    def trace(self, trace: list[TraceEvent]) -> list[TraceEvent]:
        return [e if e.broker is None else replace(e, broker=self.back(e.broker)) for e in trace]


# -- run-unique names ----------------------------------------------------------------------------

def rename(scenario: Scenario, tag: str) -> tuple[Scenario, dict[str, str]]:
    """The scenario with its topics and groups renamed ``<name>-<tag>``; and new name -> old."""
    names = {name: f"{name}-{tag}" for name, _, _ in scenario.topics}
    for step in scenario.steps:
        for key in ("topic", "group"):
            if isinstance(step.args.get(key), str):
                names.setdefault(step.args[key], f"{step.args[key]}-{tag}")
    steps = tuple(replace(s, args={k: names.get(v, v) if k in ("topic", "group") and isinstance(v, str) else v
                                   for k, v in s.args.items()}) for s in scenario.steps)
    renamed = replace(scenario, topics=tuple((names[n], p, rf) for n, p, rf in scenario.topics), steps=steps,
                      faults=tuple(_rename_rule(r, names) for r in scenario.faults))
    return renamed, {new: old for old, new in names.items()}


def _rename_rule(rule: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    out = dict(rule)
    for key in ("match", "replication", "move_leader"):
        if isinstance(out.get(key), dict) and isinstance(out[key].get("topic"), str):
            out[key] = {**out[key], "topic": names.get(out[key]["topic"], out[key]["topic"])}
    return out


def unrename_trace(trace: list[TraceEvent], back: dict[str, str]) -> list[TraceEvent]:
    out = []
    for e in trace:
        topics = (e.details or {}).get("topics")
        if topics:
            e = replace(e, details={**e.details, "topics": sorted({back.get(t, t) for t in topics})})
        out.append(e)
    return out


def unrename_outcomes(outcomes: list[Outcome], back: dict[str, str]) -> list[Outcome]:
    """Topic listings in the scenario's own names (the run's other topics are left as they are)."""
    def name(v: Any) -> Any:
        return back.get(v, v) if isinstance(v, str) else v
    return [replace(o, value=[name(v) for v in o.value]) if isinstance(o.value, list) else o for o in outcomes]


def unrename_snapshot(snap: dict[str, Any], back: dict[str, str]) -> dict[str, Any]:
    def key(k: str) -> str:
        topic, _, part = k.rpartition("-")
        return f"{back.get(topic, topic)}-{part}"
    return {field: {key(k): v for k, v in values.items()} for field, values in snap.items()}


# -- purgatory stays, from the wire --------------------------------------------------------------

def derive_purgatory(trace: list[TraceEvent], config: dict[str, Any]) -> list[TraceEvent]:
    """The trace with a purgatory stay for each Produce that waited on the broker, read from its
    answer (the proxy cannot see inside the broker): error 7 -> enter at the request, expire at the
    answer; an acks=all answer later than PARKED_MS -> enter, complete; an acks=all Produce the
    client abandoned after PARKED_MS, which reached the broker (no swallowing fault) -> enter only
    (still parked when the client gave up). ``details.derived`` marks them."""
    acks_all = str(config.get("acks", "all")).lower() in ("all", "-1")
    swallowed = {(e.broker, e.conn, e.correlation_id) for e in trace if e.kind == Kind.FAULT_APPLIED
                 and _action_type(e) in ("black_hole", "error", "close_after", "partial_response")}
    extra: list[TraceEvent] = []
    for x in exchanges(trace, "Produce"):
        r = x.request
        errors = (x.answer.details or {}).get("errors") or [] if x.answer is not None else []
        expired = REQUEST_TIMED_OUT in errors
        abandoned = (x.answer is None and acks_all and (x.abandoned_after_ms or 0.0) > PARKED_MS
                     and (r.broker, r.conn, r.correlation_id) not in swallowed)
        if not (expired or abandoned or (acks_all and (x.wait_ms or 0.0) > PARKED_MS)):
            continue
        ids: dict[str, Any] = {"broker": r.broker, "conn": r.conn, "client_id": r.client_id, "correlation_id": r.correlation_id,
               "api_key": r.api_key, "api": r.api, "api_version": r.api_version}
        held = sum(_action_ms(e) for e in trace if e.kind == Kind.FAULT_APPLIED and _action_type(e) == "delay_request"
                   and (e.broker, e.conn, e.correlation_id) == (r.broker, r.conn, r.correlation_id))
        # the broker's clock starts once the proxy forwarded the request (after a delay_request)
        extra.append(TraceEvent(r.t_ms + held, Kind.PURGATORY_ENTER, **ids,
                                details={"timeout_ms": config.get("request.timeout.ms"), "derived": True}))
        if x.answer is not None:
            end = Kind.PURGATORY_EXPIRE if expired else Kind.PURGATORY_COMPLETE
            extra.append(TraceEvent(x.answer.t_ms, end, **ids, details={"derived": True}))
    return sorted([*trace, *extra], key=lambda e: e.t_ms)


def _action_ms(event: TraceEvent) -> float:
    action = (event.details or {}).get("action")
    return float(action.get("ms") or 0.0) if isinstance(action, dict) else 0.0


def _action_type(event: TraceEvent) -> str | None:
    action = (event.details or {}).get("action")
    return action.get("type") if isinstance(action, dict) else action


# -- one scenario through the proxy ----------------------------------------------------------------

_cells = itertools.count(1)


def run_via_proxy(scenario: Scenario, adapter: Adapter, scale: float, upstream: Upstream, run_tag: str) -> Result:
    """One scenario, one client, the proxy in front of ``upstream``; judged on the proxy's trace."""
    scale = scenario.scale_in(scale)
    wall = time.perf_counter()
    numbers = BrokerNumbers(upstream.node_ids())
    renamed, back = rename(numbers.scenario(scenario), f"{run_tag}-{next(_cells)}")
    client_id = f"conformance-{adapter.name}"
    steps = tuple(replace(s, timeout_s=None if s.timeout_s is None else s.timeout_s / scale) for s in renamed.steps)
    with upstream.cell(renamed, scale) as cell:
        with run_proxy_in_thread(cell.bootstrap) as tp:
            proxy: Any = tp.cluster
            if renamed.front_door:   # a bootstrap address of its own, leading to (scenario) broker 0
                tp.acall(proxy.open_front_door, numbers.up(0))
            tp.call(add_fault_rules, proxy, [scale_fault(rule, scale) for rule in proxy_rules(renamed)])
            env = RunEnv(_client_bootstrap(tp, cell, renamed), client_id, scale_config(scenario.client_config, scale), scale)
            with _lag_after_first_produce(tp, cell):
                outcomes = _run_blocking(adapter, steps, env)
            trace = tp.call(lambda: list(proxy.trace.events))
            # resume stalled followers before the proxy stops: stopping it with an upstream broker
            # paused took up to its 10 s join, long enough for KRaft to fence that broker
            getattr(cell, "resume_all", lambda: None)()
        snap = cell.snapshot()
    trace = derive_purgatory(numbers.trace(unrename_trace(trace, back)), env.config)
    evidence = Evidence(unrename_outcomes(outcomes, back), trace, env.config, scale, unrename_snapshot(snap, back),
                        client_id, slack_ms=REAL_TIME_SLACK_MS, steps=steps)
    on_the_wire = replace(scenario, contracts=tuple(c for c in scenario.contracts if not c.broker_internal))
    result = judge(on_the_wire, adapter.name, evidence, adapter.lacks)
    result.contracts += [(c.name, Status.NA, BROKER_INTERNAL) for c in scenario.contracts if c.broker_internal]
    result.evidence = evidence
    result.wall_s = time.perf_counter() - wall
    return result


@contextlib.contextmanager
def _lag_after_first_produce(tp: Any, cell: Any) -> Iterator[None]:
    """A lagging follower (a paused node) copies the first batch ``lag`` s after the Produce that
    carried it reached the proxy: resumed then, by a watcher thread."""
    lagging: list[tuple[int, float]] = list(getattr(cell, "lagging", []))
    if not lagging:
        yield
        return
    done = threading.Event()

    def seen() -> bool:
        return bool(tp.call(lambda: any(e.kind == Kind.RECV and e.api == "Produce" for e in tp.cluster.trace.events)))

    def watch() -> None:
        while not done.is_set() and not seen():
            done.wait(0.005)
        for node, lag in lagging:
            if not done.wait(lag):
                cell.resume(node)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(5)


def _client_bootstrap(tp: Any, cell: Any, scenario: Scenario) -> str:
    """Every proxied broker, or the proxy's front door when the scenario has one, or the
    scenario's bootstrap brokers (already in the upstream's ids);
    with a stalled (paused) follower only the leader's listener, so that the client's first
    Metadata does not wait on a stopped process."""
    if scenario.front_door:
        return str(tp.cluster.front_door)
    if scenario.bootstrap_brokers:
        return ",".join("{}:{}".format(*tp.call(tp.cluster.local_address, b)) for b in scenario.bootstrap_brokers)
    if not any("replication" in r for r in scenario.faults):
        return str(tp.bootstrap)
    spec = next(r["replication"] for r in scenario.faults if "replication" in r)
    leader = cell.leader(spec["topic"], spec.get("partition") or 0)
    host, port = tp.call(tp.cluster.local_address, leader)
    return f"{host}:{port}"


# -- a whole run -----------------------------------------------------------------------------------

def cell_or_na(scenario: Scenario, adapter: Adapter, brokers: int) -> Result | None:
    """The N/A result when this client cannot run this scenario on a real cluster, else None."""
    why = kafka_support(scenario, brokers)
    if not why:
        ok, why = adapter.supports_scenario(scenario)
        why = "" if ok else name_the_capability(adapter, scenario, why)
    if not why and adapter.virtual_time:
        why = "virtual time needs the embedded emulator"
    return Result(scenario.id, adapter.name, Status.NA, message=why) if why else None


def run_cells(scenarios: list[Scenario], adapters: list[Adapter], scale: float, upstream: Upstream,
              progress: Callable[[int, int, Result], None] | None = None) -> list[Result]:
    tag = uuid.uuid4().hex[:6]
    results: list[Result] = []
    total = len(scenarios) * len(adapters)
    for adapter in adapters:
        available, why = adapter.available()
        try:
            for scenario in scenarios:
                result = (cell_or_na(scenario, adapter, upstream.brokers) if available
                          else Result(scenario.id, adapter.name, Status.NA, message=why))
                if result is None:
                    try:
                        result = run_via_proxy(scenario, adapter, scale, upstream, tag)
                    except Exception as exc:   # the run broke: an error cell, never a silent pass
                        result = Result(scenario.id, adapter.name, Status.ERROR, message=f"{type(exc).__name__}: {exc}")
                results.append(result)
                if progress:
                    progress(len(results), total, result)
        finally:
            adapter.shutdown()
    return results


@contextlib.contextmanager
def kafka_upstream(brokers: int, features: dict[str, int] | None = None) -> Iterator[KafkaUpstream]:
    """One real cluster for the run (or for the scenarios that need ``features``), with the
    settings the scenarios share."""
    launcher = importlib.import_module("conformance.realkafka.cluster")   # the launcher (bash dev/install-kafka)

    with launcher.apache_kafka_cluster(brokers=brokers, config=dict(KAFKA_CLUSTER_CONFIG), features=features) as k:
        up = KafkaUpstream(k)
        up.warm_up()
        yield up


def by_features(scenarios: list[Scenario], brokers: int) -> list[tuple[dict[str, int], list[Scenario]]]:
    """The scenarios grouped by the feature levels their cluster needs, Kafka's own levels first; a
    scenario that cannot run on Kafka anyway (its N/A says why) goes with the first group rather
    than starting a cluster of its own."""
    groups: dict[tuple[tuple[str, int], ...], list[Scenario]] = {}
    for scenario in scenarios:
        features = {} if kafka_support(scenario, brokers) else cluster_features(scenario)
        groups.setdefault(tuple(sorted(features.items())), []).append(scenario)
    return [(dict(key), group) for key, group in sorted(groups.items(), key=lambda kv: len(kv[0]))]


def _in_order(scenarios: list[Scenario], adapters: list[Adapter], results: list[Result]) -> list[Result]:
    """Results of several clusters back in one run's order: client by client, scenario by scenario."""
    by_cell = {(r.scenario, r.client): r for r in results}
    return [by_cell[(s.id, a.name)] for a in adapters for s in scenarios if (s.id, a.name) in by_cell]


def run_on_kafka(scenarios: list[Scenario], adapters: list[Adapter], scale: float, brokers: int,
                 progress: Callable[[int, int, Result], None] | None = None) -> list[Result]:
    results: list[Result] = []
    for features, group in by_features(scenarios, brokers):
        with kafka_upstream(brokers, features) as up:
            results += run_cells(group, adapters, scale, up, progress)
    return _in_order(scenarios, adapters, results)


def run_differential(scenarios: list[Scenario], adapters: list[Adapter], scale: float, brokers: int, reruns: int = 2,
                     progress: Callable[[int, int, Result], None] | None = None) -> tuple[list[Result], list[Result], list[Any]]:
    """The differential: every cell on one real cluster (one per group of feature levels), then on
    the emulator of the same size, both through the proxy; each cell with a difference run
    ``reruns`` times more on both sides (``differential.settle``). Returns the Kafka results, the
    emulator's and the settled rows."""
    from conformance import differential as D

    kafka: list[Result] = []
    emulator: list[Result] = []
    rows: list[Any] = []
    for features, group in by_features(scenarios, brokers):
        with kafka_upstream(brokers, features) as up:
            k_group = run_cells(group, adapters, scale, up, progress)
            e_group = run_cells(group, adapters, scale, EmulatorUpstream(brokers), progress)
            group_rows = D.differential(e_group, k_group)
            by_id = {s.id: s for s in group}
            by_name = {a.name: a for a in adapters}
            again: dict[tuple[str, str], list[tuple[Result, Result]]] = {}
            for sid, client in D.to_confirm(group_rows):
                for _ in range(reruns):
                    k = run_cells([by_id[sid]], [by_name[client]], scale, up)[0]
                    e = run_cells([by_id[sid]], [by_name[client]], scale, EmulatorUpstream(brokers))[0]
                    again.setdefault((sid, client), []).append((e, k))
        kafka += k_group
        emulator += e_group
        rows += D.settle(group_rows, again)
    return _in_order(scenarios, adapters, kafka), _in_order(scenarios, adapters, emulator), rows


def support_table(scenarios: list[Scenario], brokers: int) -> list[tuple[str, str]]:
    return [(s.id, kafka_support(s, brokers) or "runs") for s in scenarios]

