"""What our in-process adapter writes into the cluster's trace about the application's calls, so a
timeline can draw them and tell which clock ended them (conformance/attribution.py): a step's
start (with the call's own timeout), the start of its timed call (after any set-up the step does
first: a warm-up call, a first poll, a member joining), and its end (with the timed call's
elapsed time and outcome)."""

from __future__ import annotations

import trio

from broker_emu.trace import Kind
from conformance.adapters.base import RunEnv
from conformance.model import Operation, Outcome


def step_started(env: RunEnv, step: Operation) -> None:
    timeout = {} if step.timeout_s is None else {"timeout_ms": step.timeout_s * 1000}
    env.cluster.trace.emit(Kind.APP_CALL, client_id=env.client_id, details={"op": step.kind, "phase": "start", **timeout})


def timed_start(env: RunEnv, step: Operation) -> float:
    """Now, on trio's clock: the timed call starts here (its timeout counts from here)."""
    env.cluster.trace.emit(Kind.APP_CALL, client_id=env.client_id, details={"op": step.kind, "phase": "timed"})
    return trio.current_time()


def step_ended(env: RunEnv, step: Operation, outcome: Outcome) -> None:
    env.cluster.trace.emit(Kind.APP_CALL, client_id=env.client_id, details={
        "op": step.kind, "phase": "end", "ok": outcome.ok, "error": outcome.error_type,
        "message": outcome.error_message, "elapsed_ms": outcome.elapsed_s * 1000})
