"""The history checker over many runs' Parquet, in Spark SQL: the same anomalies, by the same
definitions, as the pure checker (conformance/chaos/checker.py, whose module doc gives them,
after Jepsen's ``jepsen.tests.kafka``), one row per anomaly with its witness (the indices of the
operations involved), for every run (client, seed, plant) of a directory of histories
(conformance/chaos/history_parquet.py) at once.

    spark = get_session()                                  # conformance/spark_session.py
    found = check_histories(spark, "out/histories")        # a DataFrame of anomalies
    per_run(found, runs)                                   # counts per run and anomaly

Each step is a temporary view (``chaos_h_*``); runs never mix (every join and window is keyed by
``client, seed, plant``). tests/conformance/chaos/test_chaos_history_spark.py checks that it counts what
the pure checker counts, planted bugs included.
"""

from __future__ import annotations

from typing import Any

from conformance.chaos.checker import ANOMALIES, INFORMATIONAL
from conformance.chaos.checker_spark_cycles import cycles_frame

RUN = "client, seed, plant"
KEY = "topic, partition"


def _on(a: str, b: str, *columns: str) -> str:
    names = ["client", "seed", "plant", *columns]
    return " AND ".join(f"{a}.{c} <=> {b}.{c}" for c in names)


VIEWS: list[tuple[str, str]] = [
    # each completed init_transactions with its transactional.id, and when a producer was fenced:
    # the first such init by another producer after its own (checker.fenced_at)
    ("chaos_h_inits", f"""
        SELECT {RUN}, process, index, from_json(detail, 'transactional_id string').transactional_id AS tid
        FROM chaos_h_ops WHERE f = 'init_txn' AND type = 'ok' AND detail IS NOT NULL"""),
    ("chaos_h_fenced", f"""
        SELECT o.client, o.seed, o.plant, o.process, min(f.index) AS fenced_at
        FROM (SELECT {RUN}, process, min_by(tid, index) AS tid, min(index) AS index FROM chaos_h_inits
              GROUP BY {RUN}, process) o
        JOIN chaos_h_inits f ON {_on('f', 'o')} AND f.tid = o.tid AND f.process <> o.process AND f.index > o.index
        GROUP BY o.client, o.seed, o.plant, o.process"""),
    # a transaction's outcome (checker.txn_outcomes)
    ("chaos_h_txns", f"""
        SELECT t.client, t.seed, t.plant, t.process, t.txn,
               CASE WHEN t.outcome = 'unknown' AND coalesce(t.commit_inv, 9e18) > f.fenced_at THEN 'aborted'
                    ELSE t.outcome END AS outcome
        FROM (SELECT {RUN}, process, txn,
                     CASE WHEN max(f = 'commit_txn' AND type = 'ok') THEN 'committed'
                          WHEN min(CASE WHEN f = 'abort_txn' AND type = 'ok' THEN index END)
                               < coalesce(min(CASE WHEN f = 'commit_txn' AND type = 'invoke' THEN index END), 9e18)
                          THEN 'aborted' ELSE 'unknown' END AS outcome,
                     min(CASE WHEN f = 'commit_txn' AND type = 'invoke' THEN index END) AS commit_inv
              FROM chaos_h_ops WHERE txn IS NOT NULL AND f IN ('begin', 'commit_txn', 'abort_txn')
              GROUP BY {RUN}, process, txn) t
        LEFT JOIN chaos_h_fenced f ON {_on('f', 't', 'process')}"""),
    # every send with its completion (checker.writes_of)
    ("chaos_h_sends", f"""
        SELECT i.client, i.seed, i.plant, i.process, i.index AS inv, c.index AS done, i.topic,
               coalesce(c.partition, i.partition) AS partition, i.value, i.txn,
               CASE WHEN c.type = 'ok' AND c.offset >= 0 THEN c.offset END AS offset,
               coalesce(c.type = 'ok' AND (i.txn IS NULL OR t.outcome = 'committed'), false) AS acked,
               coalesce(t.outcome = 'aborted', false) AS failed,
               CASE WHEN i.txn IS NOT NULL THEN coalesce(t.outcome, 'unknown') END AS outcome
        FROM chaos_h_ops i
        LEFT JOIN chaos_h_ops c ON {_on('c', 'i')} AND c.invoke = i.index AND c.f = 'send' AND c.type <> 'invoke'
        LEFT JOIN chaos_h_txns t ON {_on('t', 'i', 'process', 'txn')}
        WHERE i.f = 'send' AND i.type = 'invoke'"""),
    # every record a poll returned (checker.reads_of)
    ("chaos_h_reads", f"""
        SELECT {RUN}, process, index, txn, pos, r.topic, r.partition, r.offset, r.value
        FROM (SELECT {RUN}, process, index, txn, posexplode(records) AS (pos, r) FROM chaos_h_ops
              WHERE f = 'poll' AND type = 'ok')"""),
    ("chaos_h_read_values", f"SELECT DISTINCT {RUN}, {KEY}, value FROM chaos_h_reads"),
    # must have committed (checker.mark_committed)
    ("chaos_h_seen_txns", f"""
        SELECT DISTINCT s.client, s.seed, s.plant, s.process, s.txn FROM chaos_h_sends s
        JOIN chaos_h_read_values v ON {_on('v', 's', 'topic', 'partition', 'value')}
        WHERE s.outcome = 'unknown'"""),
    ("chaos_h_writes", f"""
        SELECT s.*, NOT s.failed AND (s.acked OR v.value IS NOT NULL OR t.txn IS NOT NULL) AS committed,
               v.value IS NOT NULL AS was_read
        FROM chaos_h_sends s
        LEFT JOIN chaos_h_read_values v ON {_on('v', 's', 'topic', 'partition', 'value')}
        LEFT JOIN chaos_h_seen_txns t ON {_on('t', 's', 'process', 'txn')} AND s.outcome = 'unknown'"""),
    # the version order and its dense indices (checker.VersionOrder)
    ("chaos_h_order", f"""
        SELECT *, dense_rank() OVER (PARTITION BY {RUN}, {KEY} ORDER BY offset) - 1 AS idx FROM (
            SELECT {RUN}, {KEY}, offset, value FROM chaos_h_writes
            WHERE committed AND topic IS NOT NULL AND partition IS NOT NULL AND offset IS NOT NULL
            UNION SELECT {RUN}, {KEY}, offset, value FROM chaos_h_reads)"""),
    ("chaos_h_value_index", f"""
        SELECT {RUN}, {KEY}, value, min(idx) AS first_idx, max(idx) AS last_idx FROM chaos_h_order
        GROUP BY {RUN}, {KEY}, value"""),
]


ANOMALY_QUERIES: dict[str, str] = {
    "inconsistent-offsets": f"""
        SELECT o.client, o.seed, o.plant, o.topic, o.partition, collect_set(w.index) AS ops,
               'offset ' || o.offset AS what
        FROM (SELECT {RUN}, {KEY}, offset FROM chaos_h_order GROUP BY {RUN}, {KEY}, offset
              HAVING count(DISTINCT value) > 1) o
        JOIN chaos_h_claims w ON {_on('w', 'o', 'topic', 'partition', 'offset')}
        GROUP BY o.client, o.seed, o.plant, o.topic, o.partition, o.offset""",
    "duplicate": f"""
        SELECT d.client, d.seed, d.plant, d.topic, d.partition, collect_set(w.index) AS ops,
               'value ' || cast(d.value AS string) AS what
        FROM (SELECT {RUN}, {KEY}, value FROM chaos_h_order GROUP BY {RUN}, {KEY}, value
              HAVING count(DISTINCT offset) > 1) d
        JOIN chaos_h_claims w ON {_on('w', 'd', 'topic', 'partition', 'value')}
        GROUP BY d.client, d.seed, d.plant, d.topic, d.partition, d.value""",
    "lost-write": f"""
        SELECT w.client, w.seed, w.plant, w.topic, w.partition,
               filter(array(w.inv, w.done, b.furthest), x -> x IS NOT NULL) AS ops,
               'offset ' || w.offset AS what
        FROM chaos_h_writes w
        JOIN chaos_h_value_index i ON {_on('i', 'w', 'topic', 'partition', 'value')}
        JOIN chaos_h_bounds b ON {_on('b', 'w', 'topic', 'partition')}
        WHERE w.committed AND w.offset IS NOT NULL AND NOT w.was_read AND i.last_idx <= b.bound""",
    "poll-skip": """
        SELECT client, seed, plant, topic, partition, array_distinct(array(prev_index, index)) AS ops,
               'offset ' || prev_offset || ' then ' || offset AS what
        FROM chaos_h_poll_pairs WHERE idx - prev_idx > 1""",
    "nonmonotonic-poll": """
        SELECT client, seed, plant, topic, partition, array_distinct(array(prev_index, index)) AS ops,
               'offset ' || prev_offset || ' then ' || offset AS what
        FROM chaos_h_poll_pairs WHERE idx - prev_idx < 1""",
    "nonmonotonic-send": """
        SELECT client, seed, plant, topic, partition, array(prev_inv, prev_done, inv, done) AS ops,
               'offset ' || prev_offset || ' then ' || offset AS what
        FROM chaos_h_send_pairs WHERE idx - prev_idx < 1""",
    "aborted-read": f"""
        SELECT r.client, r.seed, r.plant, r.topic, r.partition,
               filter(array(w.inv, w.done, r.index), x -> x IS NOT NULL) AS ops, 'offset ' || r.offset AS what
        FROM chaos_h_reads r
        JOIN chaos_h_isolation c ON {_on('c', 'r', 'process')} AND c.isolation = 'read_committed'
        JOIN chaos_h_writes w ON {_on('w', 'r', 'topic', 'partition', 'value')} AND w.failed""",
    "uncommitted-read": f"""
        SELECT r.client, r.seed, r.plant, r.topic, r.partition,
               filter(array(w.inv, w.done, m.inv, r.index), x -> x IS NOT NULL) AS ops, 'offset ' || r.offset AS what
        FROM chaos_h_reads r
        JOIN chaos_h_isolation c ON {_on('c', 'r', 'process')} AND c.isolation = 'read_committed'
        JOIN chaos_h_writes w ON {_on('w', 'r', 'topic', 'partition', 'value')} AND w.txn IS NOT NULL AND NOT w.failed
        LEFT JOIN (SELECT {RUN}, process, txn, min(index) AS inv FROM chaos_h_ops
                   WHERE f = 'commit_txn' AND type = 'invoke' AND txn IS NOT NULL GROUP BY {RUN}, process, txn) m
          ON {_on('m', 'w', 'process', 'txn')}
        WHERE m.inv IS NULL OR m.inv > r.index""",
    "fenced-write": f"""
        SELECT s.client, s.seed, s.plant, s.topic, s.partition,
               filter(array(f.fenced_at, s.inv, s.done), x -> x IS NOT NULL) AS ops, 'offset ' || s.offset AS what
        FROM chaos_h_sends s
        JOIN chaos_h_fenced f ON {_on('f', 's', 'process')} AND f.fenced_at < s.inv
        WHERE s.offset IS NOT NULL AND s.topic IS NOT NULL AND s.partition IS NOT NULL""",
}

PAIR_VIEWS: list[tuple[str, str]] = [
    # which operation put each (offset, value) into the order: witnesses
    ("chaos_h_claims", f"""
        SELECT {RUN}, {KEY}, offset, value, index FROM chaos_h_reads
        UNION ALL SELECT {RUN}, {KEY}, offset, value, inv FROM chaos_h_writes
        WHERE committed AND offset IS NOT NULL
        UNION ALL SELECT {RUN}, {KEY}, offset, value, done FROM chaos_h_writes
        WHERE committed AND offset IS NOT NULL"""),
    # per key the highest first index of a value read, and a poll that read it (checker._lost_and_unseen)
    ("chaos_h_bounds", f"""
        SELECT {RUN}, {KEY}, max(first_idx) AS bound, max_by(index, struct(first_idx, -index)) AS furthest FROM (
            SELECT r.client, r.seed, r.plant, r.topic, r.partition, r.index, i.first_idx FROM chaos_h_reads r
            JOIN chaos_h_value_index i ON {_on('i', 'r', 'topic', 'partition', 'value')})
        GROUP BY {RUN}, {KEY}"""),
    ("chaos_h_isolation", f"""
        SELECT {RUN}, process, max_by(from_json(detail, 'isolation string').isolation, index) AS isolation
        FROM chaos_h_ops WHERE f = 'assign' AND detail IS NOT NULL GROUP BY {RUN}, process"""),
    # what resets a consumer's place in a key: a seek on it, an assignment without it (checker._polls)
    ("chaos_h_resets", f"""
        SELECT {RUN}, process, topic, partition, index FROM chaos_h_ops WHERE f = 'seek' AND type = 'ok'
        UNION ALL
        SELECT a.client, a.seed, a.plant, a.process, k.topic, k.partition, a.index
        FROM (SELECT {RUN}, process, index,
                     transform(from_json(detail, 'partitions array<array<string>>').partitions,
                               p -> p[0] || ':' || p[1]) AS kept
              FROM chaos_h_ops WHERE f = 'assign' AND type = 'ok' AND detail IS NOT NULL) a
        JOIN (SELECT DISTINCT {RUN}, process, {KEY} FROM chaos_h_reads) k ON {_on('k', 'a', 'process')}
        WHERE NOT array_contains(a.kept, k.topic || ':' || k.partition)"""),
    ("chaos_h_poll_pairs", f"""
        SELECT *, lag(idx) OVER w AS prev_idx, lag(offset) OVER w AS prev_offset, lag(index) OVER w AS prev_index
        FROM (SELECT *, sum(reset) OVER (PARTITION BY {RUN}, process, {KEY} ORDER BY index, pos
                                        ROWS UNBOUNDED PRECEDING) AS segment
              FROM (SELECT r.client, r.seed, r.plant, r.process, r.topic, r.partition, r.index, r.pos, r.offset,
                           o.idx, 0 AS reset FROM chaos_h_reads r
                    JOIN (SELECT DISTINCT {RUN}, {KEY}, offset, idx FROM chaos_h_order) o
                      ON {_on('o', 'r', 'topic', 'partition', 'offset')}
                    UNION ALL SELECT {RUN}, process, {KEY}, index, -1, NULL, NULL, 1 FROM chaos_h_resets))
        WHERE reset = 0
        WINDOW w AS (PARTITION BY {RUN}, process, {KEY}, segment ORDER BY index, pos)"""),
    ("chaos_h_send_pairs", f"""
        SELECT *, lag(idx) OVER w AS prev_idx, lag(offset) OVER w AS prev_offset, lag(inv) OVER w AS prev_inv,
               lag(done) OVER w AS prev_done
        FROM (SELECT w.client, w.seed, w.plant, w.process, w.topic, w.partition, w.inv, w.done, w.offset, o.idx
              FROM chaos_h_writes w
              JOIN (SELECT DISTINCT {RUN}, {KEY}, offset, idx FROM chaos_h_order) o
                ON {_on('o', 'w', 'topic', 'partition', 'offset')}
              WHERE w.acked AND w.committed)
        WINDOW w AS (PARTITION BY {RUN}, process, {KEY} ORDER BY inv)"""),
]

UNSEEN = f"""
    SELECT {RUN}, {KEY}, array(inv, done) AS ops, 'offset ' || offset AS what FROM chaos_h_writes
    WHERE acked AND topic IS NOT NULL AND partition IS NOT NULL AND NOT was_read"""


def check_histories(spark, histories: Any):
    """Every anomaly of every run in ``histories`` (a Parquet path or a DataFrame of history
    rows): a DataFrame of (client, seed, plant, kind, topic, partition, ops, what), ``ops`` the
    witness's operation indices; ``kind`` "unseen" for acknowledged writes never read, G0 and
    G1c-ww for the cycles Kafka allows (conformance/chaos/checker_spark_cycles.py)."""
    frame = spark.read.parquet(histories) if isinstance(histories, str) else histories
    frame.createOrReplaceTempView("chaos_h_ops")
    for name, query in VIEWS + PAIR_VIEWS:
        spark.sql(query).createOrReplaceTempView(name)
    parts = [f"SELECT {RUN}, '{kind}' AS kind, {KEY}, array_sort(ops) AS ops, what FROM ({query})"
             for kind, query in ANOMALY_QUERIES.items()]
    parts.append(f"SELECT {RUN}, 'unseen' AS kind, {KEY}, ops, what FROM ({UNSEEN})")
    return spark.sql(" UNION ALL ".join(parts)).unionByName(cycles_frame(spark))


KINDS = (*ANOMALIES, "unseen", *INFORMATIONAL)     # the pure checker's Check.counts()


def per_run(found, runs) -> dict[tuple[str, int, str], dict[str, int]]:
    """Counts per run and anomaly (every kind present, 0 when none), for ``runs`` (the
    (client, seed, plant) triples checked: a run without anomalies has no row in ``found``)."""
    out = {run: dict.fromkeys(KINDS, 0) for run in runs}
    for row in found.groupBy("client", "seed", "plant", "kind").count().collect():
        out.setdefault((row["client"], row["seed"], row["plant"]), dict.fromkeys(KINDS, 0))
        out[row["client"], row["seed"], row["plant"]][row["kind"]] = row["count"]
    return out


def runs_of(spark, histories: str) -> list[tuple[str, int, str]]:
    rows = spark.read.parquet(histories).select("client", "seed", "plant").distinct().collect()
    return sorted((r["client"], r["seed"], r["plant"]) for r in rows)


def check_directory(directory: str, master: str | None = None, out=print) -> int:
    """``broker-emu chaos --check-histories DIR``: every history in DIR checked on Spark; one
    line per run with anomalies, the totals, and the first witnesses. Exit status 1 if any run
    has an anomaly (unseen writes and the informational cycles apart)."""
    from conformance.spark_session import get_session

    spark = get_session(master, "broker-emu chaos histories")
    found = check_histories(spark, directory).cache()
    runs = runs_of(spark, directory)
    counts = per_run(found, runs)
    totals = dict.fromkeys(KINDS, 0)
    for run, by_kind in sorted(counts.items()):
        for kind, n in by_kind.items():
            totals[kind] += n
        named = [f"{kind} {n}" for kind, n in by_kind.items() if n and kind in ANOMALIES]
        if named:
            out(f"{run[0]} seed {run[1]}" + (f" plant {run[2]}" if run[2] else "") + f": {', '.join(named)}")
    out(f"{len(runs)} histories: " + ", ".join(f"{kind} {n}" for kind, n in totals.items()))
    judged = ", ".join(f"'{kind}'" for kind in ANOMALIES)
    for row in found.where(f"kind IN ({judged})").orderBy("client", "seed", "plant", "kind").limit(5).collect():
        out(f"  e.g. {row['client']} seed {row['seed']} {row['kind']} {row['topic']}-{row['partition']} "
            f"{row['what']}: operations {list(row['ops'])}")
    return 1 if any(totals[kind] for kind in ANOMALIES) else 0
