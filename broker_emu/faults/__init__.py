"""Fault injection: one model (``rules``), one decision engine (``engine``), three fronts
(Python on the cluster, YAML scenario files, the HTTP control API), and short names for common
rules (``named``: latency, jitter, bandwidth, timeout, reset, slow-close, error, black-hole)."""

from broker_emu.faults.engine import Decision, FaultEngine, RequestFacts
from broker_emu.faults.rules import Action, FaultConfigError, Match, Rule, parse_rule

__all__ = ["Action", "Decision", "FaultConfigError", "FaultEngine", "Match", "RequestFacts", "Rule", "parse_rule"]
