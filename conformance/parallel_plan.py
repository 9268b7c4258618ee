"""`broker-emu conformance --jobs N`: the matrix's runs side by side, in N worker processes.

Almost all of a matrix's wall time is real-time clients waiting on scaled timeouts while the CPU
idles, so independent runs can share the machine. Each run keeps its own cluster and ports, as
in the serial run. The unit of work is one cell (a scenario for a client): a single slow cell
(franz-go's KIP-91 run takes 82 s) would otherwise hold a whole client's column behind it. A
worker keeps each client's adapter for every cell it runs, so the Java and Go adapters' helper
programs start once per worker, not once per cell, and are shut down when the worker ends.

Cells whose contracts read the phase of a broker's periodic check run one at a time, after the
others, on a quiet machine (``held_serial``): the transaction coordinator checks every 333 ms
(scaled), and a contract places the abort at the first check after the timeout at its nominal
instant. With six runs side by side on two cores a check ran 10 ms late (343 ms for 333), after a
transaction that had just timed out, and the cell failed although the coordinator did what Kafka's
does; run alone it passes.

Cells go out longest first: by the wall time each took in the last report (``out/conformance.json``,
which the main job writes), else real-time clients' cells before virtual-time ones. The results
come back in the serial run's order.

Scenarios and adapters hold closures (contracts, steps' callables), which do not cross a process
boundary: a worker rebuilds them from the scenario ids, the parameter overrides and the seed, and
sends back only the results. Workers are spawned, not forked: the parent may hold threads.
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from conformance.model import Result, Status


@dataclass(frozen=True)
class Recipe:
    """How a worker rebuilds the plan's scenarios: ids, ``--param`` overrides, ``--seed``."""
    scenario_ids: tuple[str, ...]
    overrides: tuple[tuple[str, Any], ...] = ()
    seed: int | None = None
    scale: float = 30.0
    bootstrap: str | None = None


_ADAPTERS: dict[str, Any] = {}   # in a worker: each client's adapter, kept for every cell it runs


def _shutdown_adapters() -> None:
    for adapter in _ADAPTERS.values():
        adapter.shutdown()


def _worker_started() -> None:
    # runs as the worker process ends (multiprocessing's finalizers), closing the helpers it started
    multiprocessing.util.Finalize(None, _shutdown_adapters, exitpriority=10)


def _cell(task: tuple[Recipe, str, str]) -> Result:
    """One scenario for one client, in a worker process."""
    from conformance.params import apply_params
    from conformance.runner import Plan, _run_cell, default_adapters
    from conformance.scenarios import BY_ID

    recipe, adapter_name, scenario_id = task
    scenario = BY_ID[scenario_id]
    if recipe.overrides or recipe.seed is not None:
        scenario = apply_params(scenario, dict(recipe.overrides), recipe.seed)
    if adapter_name not in _ADAPTERS:
        (_ADAPTERS[adapter_name],) = [a for a in default_adapters() if a.name == adapter_name]
    adapter = _ADAPTERS[adapter_name]
    available, why = adapter.available()
    if not available:
        return Result(scenario.id, adapter.name, Status.NA, message=why)
    return _run_cell(Plan([scenario], [adapter], recipe.scale, recipe.bootstrap), adapter, scenario)


def expected_walls(report: Path) -> dict[tuple[str, str], float]:
    """How long each cell took in an earlier report (its JSON); empty when there is none."""
    try:
        doc = json.loads(report.read_text())
    except (OSError, ValueError):
        return {}
    rows = doc.get("results", []) if isinstance(doc, dict) else doc
    return {(r["scenario"], r["client"]): float(r.get("wall_s") or 0.0) for r in rows
            if isinstance(r, dict) and "scenario" in r and "client" in r}


def order(cells: list[tuple[str, str]], virtual: set[str], walls: dict[tuple[str, str], float]) -> list[tuple[str, str]]:
    """Longest first: the last report's wall times, else a real-time cell before a virtual one."""
    def guess(cell: tuple[str, str]) -> float:
        scenario, client = cell
        return walls.get(cell, 0.1 if client in virtual else 5.0)
    return sorted(cells, key=guess, reverse=True)


def run_cells(recipe: Recipe, adapter_names: list[str], virtual: set[str], jobs: int, report: Path | None = None,
              progress: Callable[[int, int, Result], None] | None = None) -> list[Result]:
    """The plan's results, in serial order (client by client, scenario by scenario)."""
    cells = [(sid, name) for name in adapter_names for sid in recipe.scenario_ids]
    walls = expected_walls(report) if report is not None else {}
    tasks = [(recipe, client, sid) for sid, client in order(cells, virtual, walls)]
    found: dict[tuple[str, str], Result] = {}
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(jobs, initializer=_worker_started) as pool:
        for result in pool.imap_unordered(_cell, tasks):
            found[(result.scenario, result.client)] = result
            if progress:
                progress(len(found), len(cells), result)
        pool.close()
        pool.join()
    return [found[cell] for cell in cells]


# broker settings whose periodic check a contract times to its nominal phase (see the docstring)
PHASED = ("transaction.abort.timed.out.transaction.cleanup.interval.ms",)


def held_serial(scenario: Any) -> bool:
    return any(key in scenario.broker_config for key in PHASED)


def run_parallel(scenarios: list[Any], adapters: list[Any], recipe: Recipe, jobs: int, report: Path | None,
                 progress: Callable[[int, int, Result], None] | None = None) -> list[Result]:
    """Every cell, ``jobs`` at a time except the held ones, which follow one at a time here; the
    results in the serial run's order."""
    from conformance.runner import Plan, run_plan

    held = [s for s in scenarios if held_serial(s)]
    side_by_side = Recipe(tuple(i for i in recipe.scenario_ids if i not in {s.id for s in held}), recipe.overrides,
                          recipe.seed, recipe.scale, recipe.bootstrap)
    total = len(scenarios) * len(adapters)
    done: list[Result] = []

    def tell(_: int, __: int, result: Result) -> None:
        done.append(result)
        if progress:
            progress(len(done), total, result)

    found = {(r.scenario, r.client): r for r in run_cells(side_by_side, [a.name for a in adapters],
                                                          {a.name for a in adapters if a.virtual_time}, jobs, report, tell)}
    if held:
        found.update({(r.scenario, r.client): r for r in run_plan(Plan(held, adapters, recipe.scale, recipe.bootstrap), tell)})
    return [found[(s.id, a.name)] for a in adapters for s in scenarios]
