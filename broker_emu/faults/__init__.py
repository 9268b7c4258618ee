"""Fault injection: one model (``rules``), one decision engine (``engine``), three fronts
(Python on the cluster, YAML scenario files, the HTTP control API), and short names for common
rules (``named``: latency, jitter, bandwidth, timeout, reset, slow-close, error, black-hole)."""

# Only for broker_emu/cluster.py, which imports FaultEngine from here: the engine imports its
# siblings, so this re-export puts the package in an import cycle (tolerated, by name, in
# tests/structure/test_layers.py). Once cluster.py imports broker_emu.faults.engine, delete it.
from broker_emu.faults.engine import FaultEngine

__all__ = ["FaultEngine"]
