"""Judging a run: every contract of the scenario over the evidence, into a Result."""

from __future__ import annotations

from conformance.model import Evidence, Result, Scenario, Status


def judge(scenario: Scenario, client: str, evidence: Evidence) -> Result:
    result = Result(scenario.id, client, Status.PASS, trace=evidence.trace)
    failures = []
    for contract in scenario.contracts:
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
    return result
