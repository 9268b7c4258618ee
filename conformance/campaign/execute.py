"""One campaign run, self-contained (no Spark here): the scenario with its parameters, judged,
turned into rows. A run that fails or breaks yields rows too (status + violation events),
never an exception, so a Spark task never fails because a client did.

Rows share one flat schema (``ROW_FIELDS``): ``record`` is "run" (one per run, the figures
below) or "event" (the server trace, plus "violation" events for failed contracts). A chaos
seed (family ``Chaos``) is run by conformance/campaign/chaos_runs.py into the same schema: its
accounting in the run row, its chaos actions as events.
"""

from __future__ import annotations

import json
import time
from typing import Any

from broker_emu.trace_reading import abandoned, first_to_give_up
from conformance.campaign.chaos_runs import FAMILY as CHAOS_FAMILY
from conformance.campaign.chaos_runs import execute_chaos
from conformance.model import Evidence, Result, Status

# (name, arrow/spark type)
ROW_FIELDS: tuple[tuple[str, str], ...] = (
    ("record", "string"), ("run_id", "long"), ("scenario", "string"), ("family", "string"), ("client", "string"),
    ("params", "string"), ("seed", "long"), ("rep", "int"),
    # run figures
    ("status", "string"), ("message", "string"), ("op", "string"), ("api", "string"),
    ("deadline_ms", "double"), ("elapsed_ms", "double"), ("overshoot_ms", "double"),
    ("request_timeout_ms", "double"), ("client_timeout_ms", "double"), ("request_own_timeout_ms", "double"),
    ("disconnect_error_ms", "double"),
    ("first_timeout", "string"), ("purgatory_timeout_ms", "double"),
    ("sent", "int"), ("acked", "int"), ("in_log", "int"), ("lost", "int"), ("duplicated", "int"),
    ("scale", "double"), ("wall_s", "double"), ("simulated_s", "double"), ("client_version", "string"),
    # chaos seeds' accounting (conformance/chaos/accounting.py), beside sent, acked, in_log, lost, duplicated
    ("acked_without_offset", "int"), ("failed_records", "int"), ("failed_but_stored", "int"), ("unresolved", "int"),
    ("misplaced", "int"), ("dup_in_epoch", "int"), ("dup_across_epochs", "int"), ("reordered", "int"),
    ("consumer_missed", "int"), ("consumer_wrong", "int"), ("actions", "string"),
    # event fields
    ("t_ms", "double"), ("kind", "string"), ("broker", "int"), ("conn", "int"), ("correlation_id", "int"),
    ("ev_api", "string"), ("details", "string"),
)
OP_API = {"produce": "Produce", "poll": "Fetch", "committed": "OffsetFetch", "commit_sync": "OffsetCommit",
          "position": "ListOffsets", "end_offsets": "ListOffsets", "beginning_offsets": "ListOffsets",
          "offsets_for_times": "ListOffsets", "list_topics": "Metadata", "partitions_for": "Metadata",
          "join_group_held": "JoinGroup"}

_ADAPTERS: dict[str, Any] = {}


def adapter_for(name: str):
    """The adapter of a client name, a pinned version (``kafka-python@2.0.2``) included."""
    from conformance.campaign.client_versions import split

    name = split(name)[0]
    if not _ADAPTERS:
        from conformance.runner import default_adapters

        _ADAPTERS.update({a.name: a for a in default_adapters()})
    if name not in _ADAPTERS:
        raise ValueError(f"unknown client {name!r}; known: {sorted(_ADAPTERS)}")
    return _ADAPTERS[name]


def _deadline_ms(ev: Evidence, op: str, error: str | None) -> float | None:
    """The API deadline the call is bound by: its own timeout when it has one; otherwise the
    setting that bounds a timed-out call (KIP-91 for produce, KIP-266 default for consumers)."""
    step = next((s for s in ev.steps if s.kind == op), None)
    if step is not None and step.timeout_s is not None:
        return step.timeout_s * 1000
    if error != "TimeoutException":
        return None
    if op == "produce" and ev.config.get("retries") == 0 and step is not None and step.args.get("warm_up", True):
        return float(ev.config.get("request.timeout.ms", 30_000))   # one attempt: its request timeout bounds it
    if op == "produce":
        key = "delivery.timeout.ms" if step is None or step.args.get("warm_up", True) else "max.block.ms"
        return float(ev.config.get(key, 120_000 if key == "delivery.timeout.ms" else 60_000))
    return float(ev.config.get("default.api.timeout.ms", 60_000))


# calls whose requests carry min(time left, request.timeout.ms) (KIP-266: Java's consumer and
# admin calls with a deadline); a produce or a poll sends with request.timeout.ms whatever the
# call's own bound (the request outlives the poll; delivery.timeout.ms bounds the record)
DEADLINE_BOUND_CALLS = frozenset({"committed", "position", "end_offsets", "beginning_offsets", "offsets_for_times",
                                  "list_topics", "partitions_for", "commit_sync", "admin_list_topics"})


# librdkafka's own request timeout is socket.timeout.ms (60 s by default, which its adapters scale);
# request.timeout.ms only becomes the Produce's timeout_ms for the broker (docs/findings.md)
LIBRDKAFKA_CLIENTS = frozenset({"confluent-kafka", "kcat"})


def client_timeout_ms(client: str, config: dict[str, Any], scale: float) -> float | None:
    """The timeout after which the client itself abandons a request."""
    from conformance.adapters.base import scaled_ms
    from conformance.campaign.client_versions import split

    if split(client)[0] in LIBRDKAFKA_CLIENTS:
        return float(config.get("socket.timeout.ms", scaled_ms(60_000, scale)))
    value = config.get("request.timeout.ms")
    return float(value) if value is not None else None


def request_own_timeout_ms(op: str | None, request_timeout_ms: float, deadline_ms: float | None) -> float:
    """The timeout the abandoned request itself ran under: for a call bound by a deadline, at
    most the deadline (its first request goes out with about all of it left)."""
    if op in DEADLINE_BOUND_CALLS and deadline_ms is not None:
        return min(request_timeout_ms, deadline_ms)
    return request_timeout_ms


def figures(result: Result) -> dict[str, Any]:
    ev = result.evidence
    out: dict[str, Any] = {}
    if ev is None:
        return out
    outcome = ev.outcomes[0] if ev.outcomes else None
    step = ev.steps[0] if ev.steps else None
    op = outcome.operation if outcome else (step.kind if step else None)
    out["op"], out["api"] = op, OP_API.get(op or "")
    out["scale"] = ev.scale
    rt = ev.config.get("request.timeout.ms")
    out["request_timeout_ms"] = float(rt) if rt is not None else None
    if outcome is not None:
        out["elapsed_ms"] = outcome.elapsed_s * 1000
        deadline = _deadline_ms(ev, outcome.operation, outcome.error_type)
        out["deadline_ms"] = deadline
        # overshoot only where the deadline is what ended the call (timeouts, polls)
        if deadline is not None and (outcome.error_type == "TimeoutException" or op == "poll"):
            out["overshoot_ms"] = out["elapsed_ms"] - deadline
    client_rt = client_timeout_ms(result.client, ev.config, ev.scale)
    out["client_timeout_ms"] = client_rt
    # the run's own API only: a client process that exits with, say, a Metadata request in
    # flight abandons it, which says nothing about its request timeout
    dropped = abandoned(ev.events(), out["api"])
    if dropped and client_rt is not None:
        own = request_own_timeout_ms(op, client_rt, out.get("deadline_ms"))
        out["request_own_timeout_ms"] = own
        out["disconnect_error_ms"] = (dropped[0].abandoned_after_ms or 0.0) - own
    first = first_to_give_up(ev.events())
    out["first_timeout"] = first.who
    out["purgatory_timeout_ms"] = first.stay.timeout_ms if first.stay is not None else None
    if op == "produce" and step is not None and ev.cluster is not None:
        sent = int(step.args.get("count", 1))
        topic = step.args["topic"]
        in_log = sum(n for k, n in ev.cluster.get("log_end_offsets", {}).items() if k.rsplit("-", 1)[0] == topic)
        acked = sent if outcome is not None and outcome.ok else 0
        out.update(sent=sent, acked=acked, in_log=in_log, lost=max(0, acked - in_log), duplicated=max(0, in_log - sent))
    return out


def execute(run: dict[str, Any], scale: float = 30.0) -> list[dict[str, Any]]:
    """Rows for one run (see module doc). ``scale``: real-time clients' timeout divisor. A
    real-time client's run, a chaos seed's included, goes to a child process
    (conformance/campaign/isolated.py): its crash or hang becomes that run's error row and
    violation."""
    if not is_virtual_time(run["client"]):
        from conformance.campaign.chaos_runs import run_limit_s
        from conformance.campaign.isolated import execute_isolated

        return execute_isolated(run, scale, run_limit_s(run["params"]) if run["family"] == CHAOS_FAMILY else None)
    return execute_here(run, scale)


def is_virtual_time(client: str) -> bool:
    try:
        return bool(adapter_for(client).virtual_time)
    except ValueError:
        return True   # an unknown client: execute_here writes its error row


def execute_here(run: dict[str, Any], scale: float = 30.0) -> list[dict[str, Any]]:
    """One run in this process."""
    from conformance.params import apply_params
    from conformance.runner import applicable, run_one
    from conformance.scenarios import BY_ID

    base = {k: run[k] for k in ("run_id", "scenario", "family", "client", "params", "seed", "rep")}
    if run["family"] == CHAOS_FAMILY:
        return execute_chaos(run, base)
    wall = time.perf_counter()
    adapter = None
    try:
        scenario = apply_params(BY_ID[run["scenario"]], json.loads(run["params"]), run["seed"])
        adapter = adapter_for(run["client"])
        ok, why = adapter.available()
        if ok:
            ok, why = applicable(scenario, adapter)
        result = run_one(scenario, adapter, scale) if ok else Result(scenario.id, adapter.name, Status.NA, message=why)
    except Exception as exc:  # noqa: BLE001 - the run broke: an error row, never a failed Spark task
        result = Result(run["scenario"], run["client"], Status.ERROR, message=f"{type(exc).__name__}: {exc}")
    from conformance.campaign.client_versions import installed_version

    version = installed_version(run["client"])
    if version is None and adapter is not None:
        version = adapter.client_version()
    rows = [{**base, "record": "run", "status": result.status.value, "message": result.message[:2000],
             "wall_s": time.perf_counter() - wall, "simulated_s": result.simulated_s,
             "client_version": version, **figures(result)}]
    for e in result.trace:
        rows.append({**base, "record": "event", "t_ms": e.t_ms, "kind": e.kind, "broker": e.broker, "conn": e.conn,
                     "correlation_id": e.correlation_id, "ev_api": e.api,
                     "details": json.dumps(e.details, default=str, separators=(",", ":")) if e.details else None})
    end_ms = result.simulated_s * 1000
    for name, status, detail in result.contracts:
        if status in (Status.FAIL, Status.ERROR):
            rows.append({**base, "record": "event", "t_ms": end_ms, "kind": "violation",
                         "details": json.dumps({"contract": name, "status": status.value, "detail": detail})})
    if result.status is Status.ERROR and not result.contracts:
        rows.append({**base, "record": "event", "t_ms": end_ms, "kind": "violation",
                     "details": json.dumps({"contract": "run", "status": "error", "detail": result.message})})
    return rows
