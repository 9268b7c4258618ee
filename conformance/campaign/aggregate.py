"""Campaign statistics with Spark SQL over the persisted rows (never by re-running the runs:
every query reads the Parquet, or a DataFrame built from it).

Every aggregate is per scenario x client x params (the canonical JSON of the run's overrides);
chaos seeds (family ``Chaos``) are summed per client x params, with their worst seeds.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from conformance.campaign.chaos_runs import FAMILY as CHAOS_FAMILY
from conformance.campaign.chaos_runs import replay_command as chaos_replay_command

KEY = ("scenario", "client", "params")
PERCENTILES = "array(0.5, 0.95, 0.99)"


def register(spark, rows_df) -> None:
    """Temp views ``runs`` and ``events`` over one rows DataFrame (the Parquet)."""
    rows_df.where("record = 'run'").createOrReplaceTempView("runs")
    rows_df.where("record = 'event'").createOrReplaceTempView("events")


def _rows(df) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]


def per_key(spark) -> list[dict[str, Any]]:
    """Pass rate, overshoot and disconnect-error percentiles, lost/duplicated per key."""
    return _rows(spark.sql(f"""
        SELECT scenario, client, params, count(*) AS runs,
               sum(CASE WHEN status = 'pass' THEN 1 ELSE 0 END) AS passed,
               sum(CASE WHEN status = 'fail' THEN 1 ELSE 0 END) AS failed,
               sum(CASE WHEN status = 'error' THEN 1 ELSE 0 END) AS errors,
               sum(CASE WHEN status = 'n/a' THEN 1 ELSE 0 END) AS na,
               CAST(avg(CASE WHEN status = 'pass' THEN 1.0 WHEN status IN ('fail', 'error') THEN 0.0 END) AS double) AS pass_rate,
               count(overshoot_ms) AS overshoot_n,
               percentile(overshoot_ms, {PERCENTILES}) AS overshoot_pct,
               max(overshoot_ms) AS overshoot_max,
               count(disconnect_error_ms) AS disconnect_n,
               percentile(disconnect_error_ms, {PERCENTILES}) AS disconnect_error_pct,
               max(abs(disconnect_error_ms)) AS disconnect_error_absmax,
               first(request_timeout_ms, true) AS request_timeout_ms,
               first(client_version, true) AS client_version,
               coalesce(sum(lost), 0) AS lost, coalesce(sum(duplicated), 0) AS duplicated
        FROM runs GROUP BY scenario, client, params ORDER BY scenario, client, params"""))


def attempts_histogram(spark) -> list[dict[str, Any]]:
    """How many requests of the run's main API the broker received per run, counted from the
    trace events: (key, attempts, runs with that many)."""
    return _rows(spark.sql("""
        WITH per_run AS (
            SELECT r.scenario, r.client, r.params, r.run_id,
                   count(e.run_id) AS attempts
            FROM runs r LEFT JOIN events e
              ON e.run_id = r.run_id AND e.kind = 'recv' AND e.ev_api = r.api
            WHERE r.api IS NOT NULL
            GROUP BY r.scenario, r.client, r.params, r.run_id)
        SELECT scenario, client, params, attempts, count(*) AS runs
        FROM per_run GROUP BY scenario, client, params, attempts
        ORDER BY scenario, client, params, attempts"""))


def first_timeout(spark) -> list[dict[str, Any]]:
    """Which side timed out first on a parked produce, by the timeout_ms the broker got over the
    client's own request timeout (librdkafka's: socket.timeout.ms)."""
    return _rows(spark.sql("""
        SELECT scenario, client, round(purgatory_timeout_ms / coalesce(client_timeout_ms, request_timeout_ms), 3) AS ratio,
               first_timeout AS side, count(*) AS runs
        FROM runs WHERE first_timeout IS NOT NULL AND first_timeout <> 'none'
              AND coalesce(client_timeout_ms, request_timeout_ms) > 0
        GROUP BY scenario, client, round(purgatory_timeout_ms / coalesce(client_timeout_ms, request_timeout_ms), 3),
                 first_timeout
        ORDER BY scenario, client, ratio, side"""))


def violations(spark) -> list[dict[str, Any]]:
    return _rows(spark.sql("""
        SELECT scenario, client, get_json_object(details, '$.contract') AS contract, count(*) AS runs
        FROM events WHERE kind = 'violation'
        GROUP BY scenario, client, get_json_object(details, '$.contract') ORDER BY runs DESC, scenario"""))


def replay_command(scenario: str, client: str, params: str, seed: int) -> str:
    from conformance.client_names import cli_name

    args = ["broker-emu", "conformance", "--scenario", scenario, "--client", cli_name(client), "--seed", str(seed)]
    for key, value in sorted(json.loads(params).items()):
        args += ["--param", f"{key}={json.dumps(value) if not isinstance(value, str) else value}"]
    return shlex.join(args)


def worst_runs(spark, limit: int = 20) -> list[dict[str, Any]]:
    """Failed and errored runs first, then the largest overshoot or disconnect error (chaos
    seeds have their own list, ``chaos_worst_seeds``)."""
    rows = _rows(spark.sql(f"""
        SELECT run_id, scenario, client, params, seed, rep, status, message, overshoot_ms, disconnect_error_ms
        FROM runs WHERE family <> '{CHAOS_FAMILY}'
        ORDER BY CASE WHEN status IN ('fail', 'error') THEN 0 ELSE 1 END,
                 greatest(coalesce(overshoot_ms, 0), coalesce(abs(disconnect_error_ms), 0)) DESC, run_id
        LIMIT {int(limit)}"""))
    for r in rows:
        r["replay"] = replay_command(r["scenario"], r["client"], r["params"], r["seed"])
    return rows


CHAOS_COUNTS = ("sent", "acked", "acked_without_offset", "failed_records", "failed_but_stored", "unresolved",
                "lost", "misplaced", "dup_in_epoch", "dup_across_epochs", "reordered", "consumer_missed",
                "consumer_wrong")
# what acks=all + idempotence must never show; a seed with any is "fail" (conformance/chaos/accounting.py BAD)
CHAOS_BAD = "coalesce(lost, 0) + coalesce(misplaced, 0) + coalesce(dup_in_epoch, 0) + " \
            "coalesce(consumer_missed, 0) + coalesce(consumer_wrong, 0)"
CHAOS_ODD = "coalesce(dup_across_epochs, 0) + coalesce(reordered, 0) + coalesce(failed_records, 0) + " \
            "coalesce(unresolved, 0) + coalesce(acked_without_offset, 0)"


def chaos_per_config(spark) -> list[dict[str, Any]]:
    """Per client x parameters: seeds by status and every accounting count summed."""
    sums = ",\n               ".join(f"coalesce(sum({c}), 0) AS {c}" for c in CHAOS_COUNTS)
    return _rows(spark.sql(f"""
        SELECT client, params, count(*) AS seeds, min(seed) AS first_seed, max(seed) AS last_seed,
               sum(CASE WHEN status = 'pass' THEN 1 ELSE 0 END) AS passed,
               sum(CASE WHEN status = 'fail' THEN 1 ELSE 0 END) AS bad_seeds,
               sum(CASE WHEN status = 'error' THEN 1 ELSE 0 END) AS errors,
               sum(CASE WHEN status = 'n/a' THEN 1 ELSE 0 END) AS na,
               {sums},
               coalesce(sum(simulated_s), 0) AS simulated_s, coalesce(sum(wall_s), 0) AS wall_s
        FROM runs WHERE family = '{CHAOS_FAMILY}' GROUP BY client, params ORDER BY client, params"""))


def chaos_actions(spark) -> list[dict[str, Any]]:
    """Chaos actions that fired (not skipped), per client x parameters x kind."""
    return _rows(spark.sql(f"""
        SELECT client, params, action, sum(n) AS steps
        FROM (SELECT client, params, explode(from_json(actions, 'map<string,int>')) AS (action, n)
              FROM runs WHERE family = '{CHAOS_FAMILY}' AND actions IS NOT NULL)
        GROUP BY client, params, action ORDER BY client, params, steps DESC, action"""))


def chaos_worst_seeds(spark, limit: int = 20) -> list[dict[str, Any]]:
    """Broken seeds first (errors, then most lost/misplaced/duplicated in epoch/consumer
    differences), then the most duplicated across epochs, reordered, failed or unresolved, then
    the slowest to converge (longest run time); each with its ``broker-emu chaos`` replay."""
    rows = _rows(spark.sql(f"""
        SELECT run_id, client, params, seed, status, {CHAOS_BAD} AS bad, {CHAOS_ODD} AS odd,
               {", ".join(CHAOS_COUNTS)}, simulated_s, message
        FROM runs WHERE family = '{CHAOS_FAMILY}'
        ORDER BY CASE status WHEN 'error' THEN 0 WHEN 'fail' THEN 1 WHEN 'pass' THEN 2 ELSE 3 END,
                 {CHAOS_BAD} DESC, {CHAOS_ODD} DESC, simulated_s DESC, run_id
        LIMIT {int(limit)}"""))
    for r in rows:
        r["replay"] = chaos_replay_command(r["client"], r["params"], r["seed"])
    return rows


def chaos_seeds(spark) -> list[dict[str, Any]]:
    """One line per seed (the report's strip): status, bad and odd counts."""
    return _rows(spark.sql(f"""
        SELECT client, params, seed, status, {CHAOS_BAD} AS bad, {CHAOS_ODD} AS odd
        FROM runs WHERE family = '{CHAOS_FAMILY}' ORDER BY client, params, seed, run_id"""))


def totals(spark) -> dict[str, Any]:
    row = spark.sql(f"""
        SELECT count(*) AS runs, sum(CASE WHEN status = 'pass' THEN 1 ELSE 0 END) AS passed,
               sum(CASE WHEN status = 'fail' THEN 1 ELSE 0 END) AS failed,
               sum(CASE WHEN status = 'error' THEN 1 ELSE 0 END) AS errors,
               sum(CASE WHEN status = 'n/a' THEN 1 ELSE 0 END) AS na,
               sum(simulated_s) AS simulated_s, sum(wall_s) AS run_wall_s,
               sum(CASE WHEN family = '{CHAOS_FAMILY}' THEN 1 ELSE 0 END) AS chaos_seeds
        FROM runs""").collect()[0].asDict()
    row["events"] = spark.sql("SELECT count(*) AS n FROM events").collect()[0]["n"]
    return row


def summarise(spark, rows_df) -> dict[str, Any]:
    """All aggregates. ``rows_df`` is read from the persisted Parquet and cached for the
    queries below (one scan); it is never the lineage that executed the runs."""
    rows_df = rows_df.cache()
    try:
        register(spark, rows_df)
        summary: dict[str, Any] = {
            "totals": totals(spark), "per_key": per_key(spark), "attempts": attempts_histogram(spark),
            "first_timeout": first_timeout(spark), "violations": violations(spark), "worst_runs": worst_runs(spark),
            "chaos": {"per_config": [], "actions": [], "worst_seeds": [], "seeds": []}}
        if summary["totals"]["chaos_seeds"]:     # four queries fewer for a campaign without chaos
            summary["chaos"] = {"per_config": chaos_per_config(spark), "actions": chaos_actions(spark),
                                "worst_seeds": chaos_worst_seeds(spark), "seeds": chaos_seeds(spark)}
        return summary
    finally:
        rows_df.unpersist()
