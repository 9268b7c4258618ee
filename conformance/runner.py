"""Run scenarios against clients and judge them from both sides of the wire.

Real-time clients run against a cluster on its own thread, with every timeout (client config,
fault delays, broker timers) divided by ``scale``; contracts divide their expectations by the
same factor. Virtual-time adapters (our client) run under trio's MockClock at full length.
"""

from __future__ import annotations

import difflib
import time
from dataclasses import dataclass, replace
from typing import Callable, Iterable

import trio

from broker_emu import syn_gate
from broker_emu.runtime import run_cluster_in_thread
from conformance.adapters.base import Adapter, RealTimeAdapter, RunEnv
from conformance.client_capabilities import name_the_capability
from conformance.cluster_setup import apply_setup, bootstrap_of, real_time_broker_config, scale_config, snapshot
from conformance.judging import judge
from conformance.model import Evidence, Operation, Outcome, Result, Scenario, Status
from conformance.scenarios_security import needs_sasl
from conformance.virtual import run_virtual_time

# Real-time runs share two cores with the emulator and the client's own threads: timing
# contracts allow this much absolute slack on top of their own tolerance (documented).
REAL_TIME_SLACK_MS = 150.0


def run_real_time(scenario: Scenario, adapter: Adapter, scale: float) -> Result:
    scale = scenario.scale_in(scale)
    broker_config = real_time_broker_config(scenario.broker_config, scale)
    client_id = f"conformance-{adapter.name}"
    wall = time.perf_counter()
    with run_cluster_in_thread(brokers=scenario.brokers, topics=scenario.topics, config=broker_config) as tc:
        cluster = tc.cluster
        assert cluster is not None  # start() returned: the cluster is up
        tc.call(apply_setup, cluster, scenario, scale)
        env = RunEnv(tc.call(bootstrap_of, cluster, scenario), client_id, scale_config(scenario.client_config, scale), scale)
        steps = tuple(replace(s, timeout_s=None if s.timeout_s is None else s.timeout_s / scale) for s in scenario.steps)
        outcomes = _run_blocking(adapter, steps, env)
        trace = tc.call(lambda: list(cluster.trace.events))
        snap = tc.call(snapshot, cluster)
        simulated = tc.call(cluster.now_ms) / 1000
    evidence = Evidence(outcomes, trace, env.config, scale, snap, client_id, slack_ms=REAL_TIME_SLACK_MS, steps=steps)
    result = judge(scenario, adapter.name, evidence, adapter.lacks)
    result.evidence = evidence
    result.wall_s = time.perf_counter() - wall
    result.simulated_s = simulated * scale
    return result


def _run_blocking(adapter: Adapter, steps: tuple[Operation, ...], env: RunEnv) -> list[Outcome]:
    """Run the steps from this (non-trio) thread: a RealTimeAdapter's own blocking code, or the
    async ``run`` of an adapter that subclassed Adapter directly, in a trio loop of its own."""
    if isinstance(adapter, RealTimeAdapter):
        return adapter.run_blocking(steps, env)
    return trio.run(adapter.run, steps, env)


def external_ok(scenario: Scenario) -> bool:
    """Scenarios that need neither faults nor broker settings can run against any Kafka."""
    return not scenario.needs_faults and not scenario.faults and not scenario.broker_config


def run_external(scenario: Scenario, adapter: Adapter, bootstrap: str, scale: float) -> Result:
    """Against a broker we do not run: client-side contracts only; server-side ones are N/A
    because there is no trace."""
    scale = scenario.scale_in(scale)
    wall = time.perf_counter()
    env = RunEnv(bootstrap, f"conformance-{adapter.name}", scale_config(scenario.client_config, scale), scale)
    steps = tuple(replace(s, timeout_s=None if s.timeout_s is None else s.timeout_s / scale) for s in scenario.steps)
    outcomes = _run_blocking(adapter, steps, env)
    client_side = replace(scenario, contracts=tuple(c for c in scenario.contracts if c.side == "client"))
    result = judge(client_side, adapter.name, Evidence(outcomes, [], env.config, scale, None, env.client_id,
                                                       slack_ms=REAL_TIME_SLACK_MS, steps=steps), adapter.lacks)
    result.contracts += [(c.name, Status.NA, "needs the broker's trace") for c in scenario.contracts if c.side != "client"]
    result.wall_s = time.perf_counter() - wall
    return result


@dataclass
class Plan:
    scenarios: list[Scenario]
    adapters: list[Adapter]
    scale: float = 30.0
    bootstrap: str | None = None   # run against this broker instead of the embedded emulator


def run_plan(plan: Plan, progress: Callable[[int, int, Result], None] | None = None) -> list[Result]:
    results: list[Result] = []
    total = len(plan.scenarios) * len(plan.adapters)
    for adapter in plan.adapters:
        try:
            results += _run_adapter(plan, adapter, total, len(results), progress)
        finally:
            adapter.shutdown()
    return results


def _run_adapter(plan: Plan, adapter: Adapter, total: int, done: int,
                 progress: Callable[[int, int, Result], None] | None) -> list[Result]:
    results: list[Result] = []
    available, why = adapter.available()
    for scenario in plan.scenarios:
        result = _run_cell(plan, adapter, scenario) if available else Result(scenario.id, adapter.name, Status.NA, message=why)
        results.append(result)
        if progress:
            progress(done + len(results), total, result)
    return results


def applicable(scenario: Scenario, adapter: Adapter) -> tuple[bool, str]:
    """Whether ``adapter`` can run ``scenario`` on the emulator, and if not why (an N/A cell):
    the one decision for the suite's runs and a campaign's."""
    ok, why_not = adapter.supports_scenario(scenario)
    why_not = why_not if ok else name_the_capability(adapter, scenario, why_not)   # "lacks X: ..." (docs/clients.md)
    if ok and needs_sasl(scenario) and not adapter.sasl:
        ok, why_not = False, f"the {adapter.name} adapter does not pass SASL settings to its client yet"
    return ok, why_not


def _run_cell(plan: Plan, adapter: Adapter, scenario: Scenario) -> Result:
    ok, why_not = applicable(scenario, adapter)
    if ok and plan.bootstrap and (adapter.virtual_time or not external_ok(scenario)):
        ok, why_not = False, ("virtual time needs the embedded emulator" if adapter.virtual_time
                              else "needs fault injection or broker settings")
    if ok and not adapter.virtual_time and not syn_gate.DROPS_SYNS and any(_drops_connects(rule) for rule in scenario.faults):
        ok, why_not = False, "dropped connection attempts need Linux"
    if not ok:
        return Result(scenario.id, adapter.name, Status.NA, message=why_not)
    try:
        return (run_external(scenario, adapter, plan.bootstrap, plan.scale) if plan.bootstrap
                else run_one(scenario, adapter, plan.scale))
    except Exception as exc:  # the run broke: an error cell, never a silent pass
        return Result(scenario.id, adapter.name, Status.ERROR, message=f"{type(exc).__name__}: {exc}")


def _drops_connects(rule: dict) -> bool:
    action = rule.get("action")
    return (action.get("type") if isinstance(action, dict) else action) == "drop_connects"


def run_one(scenario: Scenario, adapter: Adapter, scale: float) -> Result:
    if adapter.virtual_time:
        return run_virtual_time(scenario, adapter)
    return run_real_time(scenario, adapter, scale)


def default_adapters() -> list[Adapter]:
    from conformance.adapters.aiokafka import AiokafkaAdapter
    from conformance.adapters.confluent import ConfluentAdapter
    from conformance.adapters.go_clients import FranzGoAdapter, SaramaAdapter
    from conformance.adapters.java_client import JavaAdapter, JavaConsumerProtocolAdapter
    from conformance.adapters.kafka_python import KafkaPythonAdapter
    from conformance.adapters.kafkajs_client import KafkajsAdapter
    from conformance.adapters.kcat import KcatAdapter
    from conformance.adapters.ours import OurAdapter, OurBlockingAdapter

    return [OurAdapter(), OurBlockingAdapter(), ConfluentAdapter(), KafkaPythonAdapter(), AiokafkaAdapter(), KcatAdapter(),
            JavaAdapter(), JavaConsumerProtocolAdapter(), FranzGoAdapter(), SaramaAdapter(), KafkajsAdapter()]


class UnknownName(ValueError):
    """A scenario id or client name that names nothing: one line, with the name meant when one is close."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``; did you mean 'x'?`` when ``name`` is close to one of ``known``, else ``""``."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_client(name: str, known: Iterable[str]) -> UnknownName:
    known = sorted(known)
    hint = did_you_mean(name, known)
    return UnknownName(f"unknown client {name!r}{hint}" if hint else f"unknown client {name!r} (known: {', '.join(known)})")


def _matches(scenario: Scenario, wanted: str) -> bool:
    return scenario.id == wanted or scenario.id.startswith(wanted.rstrip("*")) or scenario.family == wanted


def select(scenarios: Iterable[Scenario], ids: list[str] | None) -> list[Scenario]:
    """The scenarios ``ids`` name (ids, id prefixes, families); UnknownName for one that names none."""
    scenarios = list(scenarios)
    if not ids:
        return scenarios
    for wanted in ids:
        if not any(_matches(s, wanted) for s in scenarios):
            names = [s.id for s in scenarios] + sorted({s.family for s in scenarios})
            raise UnknownName(f"no scenario matches {wanted!r}{did_you_mean(wanted, names)} (broker-emu conformance --list)")
    return [s for s in scenarios if any(_matches(s, wanted) for wanted in ids)]
