"""Cycles between committed transactions in Spark SQL: the same graph and the same search as
conformance/chaos/cycles.py (whose module doc defines the nodes, the ww and wr edges, the
classes and the search), over every run of a directory of histories at once.

The graph is three views over checker_spark's (``chaos_h_nodes``, ``chaos_h_ww``, ``chaos_h_wr``,
then ``chaos_h_edges``); the breadth-first search is a loop in the driver, one join per level
(``cycles.MAX_EDGES`` at most), each level's frontier kept per (run, start, node, kinds so far)
as the smallest (nodes, kinds) path, as the pure search keeps it; a run's cycles are the rows
that came back to their start.
"""

from __future__ import annotations

from conformance.chaos.cycles import BITS, CLASSES, MAX_EDGES

RUN = "client, seed, plant"


def _on(a: str, b: str, *columns: str) -> str:
    return " AND ".join(f"{a}.{c} <=> {b}.{c}" for c in ("client", "seed", "plant", *columns))


VIEWS: list[tuple[str, str]] = [
    # a committed transaction: its first ok commit_txn's index is its id
    ("chaos_h_nodes", f"""
        SELECT {RUN}, process, txn, min(index) AS node FROM chaos_h_ops
        WHERE f = 'commit_txn' AND type = 'ok' AND txn IS NOT NULL GROUP BY {RUN}, process, txn"""),
    ("chaos_h_writers", f"""
        SELECT w.client, w.seed, w.plant, w.topic, w.partition, w.value, n.node,
               filter(array(w.inv, w.done), x -> x IS NOT NULL) AS ops
        FROM chaos_h_sends w JOIN chaos_h_nodes n ON {_on('n', 'w', 'process', 'txn')}
        WHERE w.topic IS NOT NULL AND w.partition IS NOT NULL"""),
    # ww: per key, each value with a writer and the nearest earlier one, by first offset
    ("chaos_h_ww", f"""
        SELECT client, seed, plant, prev_node AS src, node AS dst, 'ww' AS kind, topic, partition, first_offset,
               concat(prev_ops, ops) AS ops
        FROM (SELECT w.*, o.first_offset,
                     lag(w.node) OVER k AS prev_node, lag(w.ops) OVER k AS prev_ops
              FROM chaos_h_writers w
              JOIN (SELECT {RUN}, topic, partition, value, min(offset) AS first_offset FROM chaos_h_order
                    GROUP BY {RUN}, topic, partition, value) o ON {_on('o', 'w', 'topic', 'partition', 'value')}
              WINDOW k AS (PARTITION BY w.client, w.seed, w.plant, w.topic, w.partition
                           ORDER BY o.first_offset, w.value))
        WHERE prev_node IS NOT NULL AND prev_node <> node"""),
    # wr: a read_committed poll inside a committed transaction read another one's write
    ("chaos_h_wr", f"""
        SELECT r.client, r.seed, r.plant, w.node AS src, n.node AS dst, 'wr' AS kind, r.topic, r.partition,
               r.offset AS first_offset, concat(w.ops, array(r.index)) AS ops
        FROM chaos_h_reads r
        JOIN chaos_h_isolation c ON {_on('c', 'r', 'process')} AND c.isolation = 'read_committed'
        JOIN chaos_h_nodes n ON {_on('n', 'r', 'process', 'txn')}
        JOIN chaos_h_writers w ON {_on('w', 'r', 'topic', 'partition', 'value')}
        WHERE w.node <> n.node"""),
    ("chaos_h_edges", f"""
        SELECT {RUN}, src, dst, kind,
               min_by(struct(topic, partition, ops), struct(topic, partition, first_offset)) AS witness
        FROM (SELECT * FROM chaos_h_ww UNION ALL SELECT * FROM chaos_h_wr)
        GROUP BY {RUN}, src, dst, kind"""),
]


def cycles_frame(spark):
    """The cycles of every run, as checker_spark's anomaly rows: (client, seed, plant, kind,
    topic, partition, ops, what); ``kind`` G0, G1c or G1c-ww, ``ops`` each edge's operations
    and each transaction's commit, ``topic``/``partition`` the first edge's."""
    for name, query in VIEWS:
        frame = spark.sql(query)
        if name in ("chaos_h_nodes", "chaos_h_edges"):   # read at every level: computed once
            frame = frame.localCheckpoint()
        frame.createOrReplaceTempView(name)
    bit = f"CASE e.kind WHEN 'ww' THEN {BITS['ww']} ELSE {BITS['wr']} END"
    # only a node with an edge in and an edge out can be on a cycle
    frontier = spark.sql(f"""
        SELECT {RUN}, node AS s, node, 0 AS flags, array(node) AS path, CAST(array() AS array<string>) AS kinds
        FROM chaos_h_nodes n
        WHERE EXISTS (SELECT 1 FROM chaos_h_edges e WHERE {_on('e', 'n')} AND e.dst = n.node)
          AND EXISTS (SELECT 1 FROM chaos_h_edges e WHERE {_on('e', 'n')} AND e.src = n.node)""").localCheckpoint()
    state = ["client", "seed", "plant", "s", "node", "flags"]
    visited = frontier.select(*state)
    closings = []
    for level in range(MAX_EDGES):
        frontier.createOrReplaceTempView("chaos_h_frontier")
        step = spark.sql(f"""
            SELECT f.client, f.seed, f.plant, f.s, e.dst AS node, f.flags | {bit} AS flags,
                   struct(concat(f.path, array(e.dst)) AS path, concat(f.kinds, array(e.kind)) AS kinds) AS way
            FROM chaos_h_frontier f JOIN chaos_h_edges e ON {_on('e', 'f')} AND e.src = f.node
            WHERE e.dst = f.s OR (e.dst > f.s AND NOT array_contains(f.path, e.dst))""")
        step.createOrReplaceTempView("chaos_h_step")
        # every (start, kinds) that came back at this level; the earliest level wins below
        closings.append(spark.sql(f"""SELECT {RUN}, s, flags, {level} AS level, min(way) AS way FROM chaos_h_step
                                      WHERE node = s GROUP BY {RUN}, s, flags"""))
        frontier = spark.sql(f"""SELECT {RUN}, s, node, flags, min(way) AS way FROM chaos_h_step WHERE node <> s
                                 GROUP BY {RUN}, s, node, flags""").join(visited, state, "left_anti") \
            .selectExpr(*state, "way.path AS path", "way.kinds AS kinds").localCheckpoint()
        visited = visited.unionByName(frontier.select(*state))
    closed = closings[0]
    for more in closings[1:]:
        closed = closed.unionByName(more)
    closed.createOrReplaceTempView("chaos_h_closed")
    spark.sql(f"""SELECT {RUN}, s, flags, min_by(way, level) AS way FROM chaos_h_closed
                  GROUP BY {RUN}, s, flags""").createOrReplaceTempView("chaos_h_cycles")
    classes = " ".join(f"WHEN {bits} THEN '{name}'" for bits, name in CLASSES.items())
    return spark.sql(f"""
        SELECT c.client, c.seed, c.plant, CASE c.flags {classes} END AS kind,
               max(CASE WHEN c.pos = 0 THEN e.witness.topic END) AS topic,
               max(CASE WHEN c.pos = 0 THEN e.witness.partition END) AS partition,
               array_sort(array_distinct(concat(flatten(collect_list(e.witness.ops)),
                                                slice(c.way.path, 1, size(c.way.kinds))))) AS ops,
               'transactions ' || array_join(transform(c.way.path, n -> cast(n AS string)), ' -> ') AS what
        FROM (SELECT {RUN}, s, flags, way, pos, edge_kind FROM chaos_h_cycles
              LATERAL VIEW posexplode(way.kinds) x AS pos, edge_kind) c
        JOIN chaos_h_edges e ON {_on('e', 'c')} AND e.src = c.way.path[c.pos] AND e.dst = c.way.path[c.pos + 1]
                             AND e.kind = c.edge_kind
        GROUP BY c.client, c.seed, c.plant, c.s, c.flags, c.way""")
