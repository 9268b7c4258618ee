"""Chaos seeds as campaign runs (no Spark here): one seed of ``broker-emu chaos`` executed into
rows of the campaign's schema, so the same Spark job, Parquet and SQL carry them.

A matrix's ``chaos:`` groups (conformance/campaign/matrix.py) expand to one run per client,
parameter set and seed, with scenario ``chaos`` and family ``Chaos``; ``params`` is the canonical
JSON of the seed's parameters (``duration``, ``interval``, ``producers``, ``partitions``, every
one resolved, the producers' ``acks`` / ``enable.idempotence`` when given, and ``txn: true``
for the transactional workload, ``--txn``, of the clients that have one: the complete replay key).

A seed's run row carries the accounting of conformance/chaos/accounting.py (sent, acknowledged,
lost, misplaced, duplicated within / across producer epochs, reordered, failed, the consumer's
view). Its status is "fail" exactly when ``broker-emu chaos`` would exit 1 for it (what the
producers' settings promise broken: under acks=all an acknowledged record lost or misplaced,
with idempotence a duplicate within an epoch; or a consumer that did not read exactly the log;
or an anomaly the history checker named in the clients' history, conformance/chaos/checker.py),
"error" when the seed itself broke, "n/a" when the client is not installed. Its events are the
chaos actions as they fired (``chaos_action``) and one ``violation`` per broken guarantee, with
examples (an anomaly's witness: the client operations involved). A third-party client's seed runs in a process of its own (execute.py).
"""

from __future__ import annotations

import json
import time
from typing import Any

from conformance.chaos.cli import DEFAULTS, TXN_CLIENTS, seed_line, seed_runner
from conformance.chaos.readback import SeedResult
from conformance.chaos.realtime import READ_UP_S, SETTLE_S

SCENARIO = "chaos"
FAMILY = "Chaos"
# campaign client name (a pinned release, confluent-kafka@2.12.0, included) -> `broker-emu chaos --client`
CHAOS_CLIENTS = {"broker-emu (async)": "ours", "confluent-kafka": "confluent-kafka", "kafka-python": "kafka-python",
                 "aiokafka": "aiokafka", "java": "java", "franz-go": "franz-go", "sarama": "sarama"}
# a real-time seed's process is killed after its duration plus this: its flush and the consumer's
# read-up (conformance/chaos/realtime.py), and a minute for its processes (JVMs) to start
REAL_TIME_SLACK_S = SETTLE_S + READ_UP_S + 60.0


def chaos_client(client: str) -> str | None:
    from conformance.campaign.client_versions import split

    return CHAOS_CLIENTS.get(split(client)[0])


def run_limit_s(params: str) -> float:
    """How long a real-time seed's process may run before it counts as hung."""
    return float(json.loads(params).get("duration", 60.0)) + REAL_TIME_SLACK_S


PARAMS = ("duration", "interval", "producers", "partitions", "acks", "enable.idempotence", "txn")
SETTINGS = ("acks", "enable.idempotence")   # the producers' settings; in params only when given
# what each broken guarantee is called in the violations table
GUARANTEES = {"lost": "no acknowledged record lost", "misplaced": "no acknowledged record misplaced",
              "dup_in_epoch": "no duplicate within a producer epoch",
              "consumer_missed": "the consumer read every committed record",
              "consumer_wrong": "the consumer read only what the log holds"}
# run-row column -> accounting total (conformance/chaos/accounting.py FIELDS)
COUNTS = {"sent": "sent", "acked": "acked", "acked_without_offset": "acked_without_offset",
          "failed_records": "failed", "failed_but_stored": "failed_but_stored", "unresolved": "unresolved",
          "in_log": "stored", "lost": "lost", "misplaced": "misplaced", "dup_in_epoch": "dup_in_epoch",
          "dup_across_epochs": "dup_across_epochs", "reordered": "reordered"}


class ChaosParamError(ValueError):
    pass


def resolve_params(client: str, given: dict[str, Any]) -> dict[str, Any]:
    """The seed's complete parameters: ``given`` over the client's defaults (``broker-emu
    chaos``'s: 8 virtual s at 0.1 s for ours, 60 real s at 0.02 s for the others), checked as
    the command checks them."""
    name = chaos_client(client)
    if name is None:
        raise ChaosParamError(f"chaos runs the clients {sorted(CHAOS_CLIENTS)}, not {client!r}")
    unknown = set(given) - set(PARAMS)
    if unknown:
        raise ChaosParamError(f"unknown chaos parameter(s) {sorted(unknown)}; known: {list(PARAMS)}")
    _, duration, interval = DEFAULTS[name]
    out = {"duration": duration, "interval": interval, "producers": 3, "partitions": 3, **given}
    try:
        numbers = {"duration": float(out["duration"]), "interval": float(out["interval"]),
                   "producers": int(out["producers"]), "partitions": int(out["partitions"])}
    except (TypeError, ValueError) as exc:
        raise ChaosParamError(f"chaos parameters are numbers: {exc}") from None
    if numbers["duration"] < 2 or numbers["interval"] <= 0 or numbers["producers"] < 1 or numbers["partitions"] < 1:
        raise ChaosParamError(f"chaos needs duration >= 2, interval > 0, producers and partitions >= 1: {numbers}")
    if "txn" in given and (not isinstance(given["txn"], bool) or (given["txn"] and name not in TXN_CLIENTS)):
        raise ChaosParamError(f"txn is true or false, and true only for {', '.join(TXN_CLIENTS)} (the clients with "
                              f"a transactional workload), not {given['txn']!r} for {name}")
    return {**numbers, **_settings(given), **({"txn": True} if given.get("txn") else {})}


def _settings(given: dict[str, Any]) -> dict[str, Any]:
    """acks ("all" or "1") and enable.idempotence, as given; acks=1 without idempotence, as Kafka
    requires (ProducerConfig refuses an explicit enable.idempotence=true with acks other than all)."""
    out: dict[str, Any] = {}
    if "acks" in given:
        acks = str(given["acks"]).lower()
        if acks not in ("all", "-1", "1"):
            raise ChaosParamError(f"chaos acks is all or 1, not {given['acks']!r}")
        out["acks"] = "all" if acks in ("all", "-1") else "1"
    if "enable.idempotence" in given:
        if not isinstance(given["enable.idempotence"], bool):
            raise ChaosParamError(f"enable.idempotence is true or false, not {given['enable.idempotence']!r}")
        out["enable.idempotence"] = given["enable.idempotence"]
    if out.get("acks") == "1":
        if out.get("enable.idempotence"):
            raise ChaosParamError("enable.idempotence=true needs acks=all (Kafka's ProducerConfig refuses it)")
        out["enable.idempotence"] = False
    return out


def seed_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    """resolve_params' output as ``run_seed``'s keyword arguments."""
    kwargs = {k: v for k, v in params.items() if k not in SETTINGS}
    return {**kwargs, "acks": params.get("acks", "all"), "idempotence": params.get("enable.idempotence", True)}


def default_seed_count(client: str) -> int:
    return DEFAULTS[chaos_client(client) or "ours"][0]


def replay_command(client: str, params: str, seed: int) -> str:
    from conformance.chaos.cli import replay_command as chaos_replay

    name = chaos_client(client) or "ours"
    given = json.loads(params)
    try:
        full = resolve_params(client, given)
    except ChaosParamError:   # a row that broke on its parameters: replay them as they were
        _, duration, interval = DEFAULTS[name]
        full = {"duration": duration, "interval": interval, "producers": 3, "partitions": 3, **given}
    return chaos_replay(name, seed_kwargs(full), seed)


def execute_chaos(run: dict[str, Any], base: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows for one chaos seed (see module doc); never raises."""
    wall = time.perf_counter()
    try:
        run_seed, why = seed_runner(chaos_client(run["client"]) or run["client"])
        if run_seed is None:
            return [{**base, "record": "run", "status": "n/a", "message": why, "wall_s": time.perf_counter() - wall}]
        kwargs = seed_kwargs(resolve_params(run["client"], json.loads(run["params"])))
        if chaos_client(run["client"]) != "ours":
            kwargs["history"] = True   # ours records its history always; a third-party kit when asked
        result = run_seed(int(run["seed"]), **kwargs)
    except Exception as exc:  # noqa: BLE001 - the seed broke: an error row, never a failed Spark task
        message = _describe(exc)
        return [{**base, "record": "run", "status": "error", "message": message[:2000],
                 "wall_s": time.perf_counter() - wall},
                {**base, "record": "event", "t_ms": 0.0, "kind": "violation",
                 "details": json.dumps({"contract": "run", "status": "error", "detail": message})}]
    from conformance.campaign.client_versions import installed_version

    rows = seed_rows(result, base, time.perf_counter() - wall)
    rows[0]["client_version"] = installed_version(run["client"])
    return rows


def _describe(exc: BaseException) -> str:
    """``Type: message``; for a trio nursery's exception group, of every exception inside."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


def seed_rows(result: SeedResult, base: dict[str, Any], wall_s: float) -> list[dict[str, Any]]:
    totals = result.accounting.totals()
    counts = {column: int(totals[field]) for column, field in COUNTS.items()}
    message = seed_line(result) + "".join(f" | {note}" for note in result.notes[2:])
    run = {**base, "record": "run", "status": "fail" if result.bad() else "pass", "message": message[:2000],
           **counts, "duplicated": counts["dup_in_epoch"] + counts["dup_across_epochs"],
           "consumer_missed": result.consumer["consumer_missed"], "consumer_wrong": result.consumer["consumer_wrong"],
           "actions": json.dumps(result.actions, sort_keys=True), "simulated_s": result.seconds, "wall_s": wall_s}
    rows = [run]
    for when, line in result.executed:
        rows.append({**base, "record": "event", "t_ms": when * 1000, "kind": "chaos_action",
                     "details": json.dumps({"action": line})})
    examples = result.accounting.examples()
    end_ms = result.seconds * 1000
    for key, contract in GUARANTEES.items():
        if run[key] and (key.startswith("consumer_") or key in result.judged):
            detail = examples.get(key) or result.consumer.get("consumer_examples", [])
            rows.append({**base, "record": "event", "t_ms": end_ms, "kind": "violation",
                         "details": json.dumps({"contract": contract, "status": "fail", "count": run[key],
                                                "detail": detail[:3]})})
    return rows + anomaly_rows(result, base, end_ms)


def anomaly_rows(result: SeedResult, base: dict[str, Any], end_ms: float) -> list[dict[str, Any]]:
    """One ``violation`` per anomaly class the history checker named and the producers'
    settings forbid (conformance/chaos/checker.py), with its first witness."""
    if result.check is None:
        return []
    rows = []
    for kind in result.judged_anomalies:
        found = result.check.anomalies[kind]
        if found:
            first = found[0].as_dict()
            rows.append({**base, "record": "event", "t_ms": end_ms, "kind": "violation",
                         "details": json.dumps({"contract": f"client history: no {kind}", "status": "fail",
                                                "count": len(found), "detail": [first["what"], *first["witness"]]})})
    return rows
