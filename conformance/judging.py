"""Judging a run: every contract of the scenario over the evidence, into a Result."""

from __future__ import annotations

from typing import Mapping

from conformance.model import Evidence, Result, Scenario, Status


def judge(scenario: Scenario, client: str, evidence: Evidence, lacks: Mapping[str, str] | None = None) -> Result:
    """``lacks``: the client's settings it has no counterpart for (``Adapter.lacks``), with why;
    a contract holding the client to one of them is N/A, and the rest decide. Every contract
    N/A: the result is N/A."""
    result = Result(scenario.id, client, Status.PASS, trace=evidence.trace)
    failures, judged = [], 0
    for contract in scenario.contracts:
        if contract.setting is not None and lacks and contract.setting in lacks:
            result.contracts.append((contract.name, Status.NA, lacks[contract.setting]))
            continue
        judged += 1
        try:
            verdict = contract.check(evidence)
        except Exception as exc:  # a contract bug must show, not pass
            result.contracts.append((contract.name, Status.ERROR, f"{type(exc).__name__}: {exc}"))
            failures.append(f"{contract.name}: contract error {exc}")
            continue
        status = Status.PASS if verdict.passed else Status.FAIL
        result.contracts.append((contract.name, status, verdict.figure if verdict.passed else verdict.message))
        if verdict.figure:
            result.figures[contract.name] = verdict.figure
        if verdict.timing is not None:
            result.timings[contract.name] = verdict.timing
        if not verdict.passed:
            failures.append(f"{contract.name}: {verdict.message}")
    if failures:
        result.status = Status.FAIL
        result.message = "; ".join(failures)
    elif not judged and scenario.contracts:
        result.status = Status.NA
        result.message = "; ".join(detail for _, _, detail in result.contracts)
    return result
