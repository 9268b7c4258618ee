"""`broker-emu conformance --jobs N`: cells side by side in worker processes, the phase-timed ones
held to run alone afterwards, results in the serial order, and the same verdicts as serially."""

from __future__ import annotations

import json

from conformance.main import main
from conformance.parallel_plan import held_serial, order
from conformance.scenarios import BY_ID

SCENARIOS = ["kip19.produce-black-hole", "kip266.poll-empty-at-deadline", "txn.coordinator-aborts-at-check-interval"]


def _run(tmp_path, name: str, *extra: str) -> list[dict]:
    out = tmp_path / f"{name}.json"
    argv = ["conformance", "--client", "ours", "--client", "ours-blocking", "--json", str(out), *extra]
    for sid in SCENARIOS:
        argv += ["--scenario", sid]
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    return doc["results"] if isinstance(doc, dict) else doc


def test_side_by_side_gives_the_serial_runs_verdicts_in_its_order(tmp_path):
    serial = _run(tmp_path, "serial")
    parallel = _run(tmp_path, "parallel", "--jobs", "3")
    assert [(r["scenario"], r["client"]) for r in parallel] == [(r["scenario"], r["client"]) for r in serial]
    assert [r["status"] for r in parallel] == [r["status"] for r in serial]
    assert {r["status"] for r in parallel} <= {"pass", "n/a"} and len(parallel) == 6


def test_the_coordinators_check_phase_is_held_to_run_alone():
    assert held_serial(BY_ID["txn.coordinator-aborts-at-check-interval"])
    assert held_serial(BY_ID["txn.read-committed-behind-open-transaction"])
    assert not held_serial(BY_ID["kip19.produce-black-hole"])


def test_cells_go_out_longest_first():
    cells = [("a", "ours"), ("b", "java"), ("c", "java")]
    assert order(cells, {"ours"}, {("c", "java"): 80.0}) == [("c", "java"), ("b", "java"), ("a", "ours")]
