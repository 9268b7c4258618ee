"""Parameter overrides for one scenario run (campaign grids, ``conformance --replay``).

A scenario is a fixed teaching example; a campaign varies it. Overrides are flat keys:

    request.timeout.ms, delivery.timeout.ms, linger.ms, retries, acks...  client config (Kafka's names)
    broker.<key>         broker config, e.g. broker.replica.lag.time.max.ms
    fault.ms             the ``ms`` of every timed fault action (delay_response, delay_request, throttle)
    fault.times          how many requests each matching fault rule hits
    fault.probability    each request-matching rule fires with this probability (seeded)
    fault.at_ms          when scheduled faults (leader moves) happen
    timeout.ms           the API deadline of every step that has one (poll(timeout), committed(timeout))

``seed`` sets the emulator's ``emu.seed`` (fault RNGs, ids). Contracts that read their expected
times from the config (``"request.timeout.ms"``) or the step (``"timeout"``) follow the overrides.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.model import Scenario

FAULT_KEYS = ("fault.ms", "fault.times", "fault.probability", "fault.at_ms")


class ParamError(ValueError):
    pass


def _fault(rule: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    out = dict(rule)
    is_request_rule = "match" in out
    action = out.get("action")
    if "fault.ms" in params and isinstance(action, dict) and "ms" in action:
        out["action"] = {**action, "ms": params["fault.ms"]}
    if "fault.times" in params and is_request_rule:
        out["times"] = int(params["fault.times"])
    if "fault.probability" in params and is_request_rule:
        out["probability"] = float(params["fault.probability"])
    if "fault.at_ms" in params and "at_ms" in out:
        out["at_ms"] = params["fault.at_ms"]
    return out


def apply_params(scenario: Scenario, params: dict[str, Any] | None = None, seed: int | None = None) -> Scenario:
    """The scenario with ``params`` applied; the original is unchanged (scenarios are frozen)."""
    params = dict(params or {})
    client = dict(scenario.client_config)
    broker = dict(scenario.broker_config)
    for key, value in params.items():
        if key in FAULT_KEYS or key == "timeout.ms":
            continue
        if key.startswith("broker."):
            broker[key[len("broker."):]] = value
        elif "." in key or key in ("retries", "acks"):
            client[key] = value
        else:
            raise ParamError(f"unknown parameter {key!r} (see conformance/params.py)")
    if seed is not None:
        broker["emu.seed"] = int(seed)
    steps = scenario.steps
    if "timeout.ms" in params:
        steps = tuple(s if s.timeout_s is None else replace(s, timeout_s=float(params["timeout.ms"]) / 1000) for s in steps)
    faults = tuple(_fault(f, params) for f in scenario.faults)
    return replace(scenario, client_config=client, broker_config=broker, steps=steps, faults=faults)


def parse_param(text: str) -> tuple[str, Any]:
    """``key=value`` from the command line; the value is read as YAML (numbers, true, null)."""
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ParamError(f"--param wants KEY=VALUE, got {text!r}")
    return key.strip(), yaml.safe_load(value)
