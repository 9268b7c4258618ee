"""The campaign matrix: a YAML file expanded into one row per run.

    name: small
    clients: [ours]               # ours = broker-emu (async) in virtual time; or adapter names
    seeds: [1, 2, 3]              # or {count: 10, start: 0}
    repetitions: 1
    runs:                         # groups; each is scenarios x grid x clients x seeds x repetitions
      - scenarios: [kip19.produce-black-hole, KIP-91]   # ids, id prefixes or families
        grid:
          request.timeout.ms: [10000, 30000]
          fault.ms: [5000, 20000]

    chaos:                        # failover chaos (docs/chaos.md): one run per client x parameters x seed
      - clients: [ours]           # ours (virtual time); confluent, kafka-python, aiokafka (real time)
        seeds: {count: 200}
        duration: 8               # seconds of chaos per seed; also interval, producers, partitions
        grid: {duration: [4, 8]}  # optional: vary any of those four

A group may override ``clients``, ``seeds`` and ``repetitions``. Without ``runs`` the top level
itself is the one group (none when the matrix has only ``chaos``). Parameter keys:
conformance/params.py; chaos parameters: conformance/campaign/chaos_runs.py.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from conformance.campaign import chaos_runs, client_versions
from conformance.client_names import ALIASES
from conformance.params import ParamError, apply_params
from conformance.runner import UnknownName, select
from conformance.scenarios import CATALOGUE

CLIENT_ALIASES = ALIASES   # the command line's client names (conformance/client_names.py)
TOP_KEYS = {"name", "description", "clients", "seeds", "repetitions", "runs", "scenarios", "grid", "chaos", "scale"}
GROUP_KEYS = {"scenarios", "grid", "clients", "seeds", "repetitions"}
CHAOS_KEYS = {"clients", "seeds", "grid", *chaos_runs.PARAMS}


class MatrixError(ValueError):
    pass


@dataclass(frozen=True)
class Run:
    run_id: int
    scenario: str
    family: str
    client: str
    params: str      # canonical JSON (sorted keys): the grouping key of every aggregate
    seed: int
    rep: int

    def as_row(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "scenario": self.scenario, "family": self.family, "client": self.client,
                "params": self.params, "seed": self.seed, "rep": self.rep}


def _seeds(raw: Any) -> list[int]:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return [raw]
    if isinstance(raw, list) and all(isinstance(s, int) for s in raw):
        return raw
    if isinstance(raw, dict) and set(raw) <= {"count", "start"}:
        start = int(raw.get("start", 0))
        return list(range(start, start + int(raw["count"])))
    raise MatrixError(f"seeds: a list of integers or {{count: N, start: S}}, got {raw!r}")


def _grid(raw: Any) -> list[dict[str, Any]]:
    if raw is None:
        return [{}]
    if not isinstance(raw, dict):
        raise MatrixError(f"grid: a mapping of parameter -> list of values, got {raw!r}")
    keys = sorted(raw)
    values = [v if isinstance(v, list) else [v] for v in (raw[k] for k in keys)]
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]


def client_name(alias: str) -> str:
    """An adapter's name from its alias, keeping a pinned version (``confluent@2.12.0``)."""
    name, version = client_versions.split(alias)
    name = CLIENT_ALIASES.get(name, name)
    return name if version is None else f"{name}@{version}"


def expand(doc: dict[str, Any]) -> list[Run]:
    if not isinstance(doc, dict):
        raise MatrixError("a matrix is a YAML mapping")
    unknown = set(doc) - TOP_KEYS
    if unknown:
        raise MatrixError(f"unknown top-level key(s) {sorted(unknown)}; known: {sorted(TOP_KEYS)}")
    groups = doc.get("runs") or [{k: doc[k] for k in ("scenarios", "grid") if k in doc}]
    if "chaos" in doc and not doc.get("runs") and "scenarios" not in doc:
        groups = []                  # a chaos-only matrix: not every scenario of the catalogue
    runs: list[Run] = []
    for i, group in enumerate(groups):
        bad = set(group) - GROUP_KEYS
        if bad:
            raise MatrixError(f"runs[{i}]: unknown key(s) {sorted(bad)}; known: {sorted(GROUP_KEYS)}")
        try:
            scenarios = select(CATALOGUE, group.get("scenarios"))
        except UnknownName as exc:
            raise MatrixError(f"runs[{i}]: {exc}") from None
        clients = [client_name(c) for c in group.get("clients", doc.get("clients", ["ours"]))]
        for c in clients:
            try:
                client_versions.check(c)
            except client_versions.ClientVersionError as exc:
                raise MatrixError(f"runs[{i}]: {exc}") from None
        seeds = _seeds(group.get("seeds", doc.get("seeds", [0])))
        reps = int(group.get("repetitions", doc.get("repetitions", 1)))
        for scenario, params, client, seed, rep in itertools.product(
                scenarios, _grid(group.get("grid")), clients, seeds, range(reps)):
            try:
                apply_params(scenario, params, seed)   # reject unknown parameters before any run
            except ParamError as exc:
                raise MatrixError(f"runs[{i}]: {exc}") from None
            runs.append(Run(len(runs), scenario.id, scenario.family, client,
                            json.dumps(params, sort_keys=True), seed, rep))
    return _expand_chaos(doc, runs)


def _expand_chaos(doc: dict[str, Any], runs: list[Run]) -> list[Run]:
    """``chaos:`` groups (a list, or one mapping): clients x grid x seeds, one run per seed; a
    group's ``seeds`` default to the top level's, else to ``broker-emu chaos``'s count."""
    raw = doc.get("chaos")
    for i, group in enumerate(raw if isinstance(raw, list) else [] if raw is None else [raw]):
        if not isinstance(group, dict):
            raise MatrixError(f"chaos[{i}]: a mapping of clients, seeds, grid, {', '.join(chaos_runs.PARAMS)}")
        bad = set(group) - CHAOS_KEYS
        if bad:
            raise MatrixError(f"chaos[{i}]: unknown key(s) {sorted(bad)}; known: {sorted(CHAOS_KEYS)}")
        fixed = {k: group[k] for k in chaos_runs.PARAMS if k in group}
        for alias in group.get("clients", doc.get("clients", ["ours"])):
            client = client_name(alias)
            for combo in _grid(group.get("grid")):
                try:
                    params = chaos_runs.resolve_params(client, {**fixed, **combo})
                except chaos_runs.ChaosParamError as exc:
                    raise MatrixError(f"chaos[{i}]: {exc}") from None
                default = {"count": chaos_runs.default_seed_count(client)}
                for seed in _seeds(group.get("seeds", doc.get("seeds", default))):
                    runs.append(Run(len(runs), chaos_runs.SCENARIO, chaos_runs.FAMILY, client,
                                    json.dumps(params, sort_keys=True), seed, 0))
    return runs


def load(path: str) -> tuple[dict[str, Any], list[Run]]:
    import yaml

    with open(path) as f:
        doc = yaml.safe_load(f)
    return doc, expand(doc)
