"""Cycles between committed transactions, as Jepsen's Kafka checker finds them with Elle
(jepsen-io/jepsen, jepsen/src/jepsen/tests/kafka.clj: ``ww-graph``, ``wr-graph``, ``cycles!``,
``allowed-error-types``); our own reading, in our terms.

A **node** is a committed transaction (``commit_txn`` completed ok): its sends and the polls its
process made inside it (a consume-transform-produce loop records its consumer under the
producer's process, each poll with the open transaction's number). Its id is the index of its
``commit_txn`` completion. Edges, per key (topic-partition) of the version order
(checker.VersionOrder):

- **ww**: T1 -> T2 when T1's write is the nearest earlier value in the key's version order of
  a value T2 wrote (the first offset of each value; values whose writer is no node are passed
  over, so the order between the nodes' writes is kept). Jepsen links consecutive values.
- **wr**: T1 -> T2 when a read_committed poll of T2 read a value T1 wrote.

A cycle's class is the set of its edges' kinds, after Adya's and Elle's names:

- **G0** (write cycle, ww only): two transactions' writes ordered one way on one partition and
  the other way on another. Kafka does not isolate writes: two producers' batches land in
  whatever order they arrive, partition by partition. Jepsen allows it (``allowed-error-types``:
  "G0 is always allowed, since writes are never isolated"): informational.
- **G1c-ww** (a cycle needing a ww edge and a wr edge): T2 wrote to a partition before T1 did
  and read what T1 committed — the same missing write isolation. Jepsen allows G1c when it
  infers ww edges (its ``:ww-deps`` option): informational.
- **G1c** (wr edges only): each transaction of the cycle read a write of the one before it.
  With read_committed this cannot happen: a transaction's polls complete before its commit is
  invoked, a read_committed poll returns only what was committed, so around the cycle every
  commit would precede itself. Jepsen reports G1c as an error when it infers no ww edges; it
  breaks KIP-98's read_committed isolation, so it is judged.

Cycles are found by a breadth-first search from each node ``s`` over (node, kinds so far),
through nodes above ``s`` only, up to ``MAX_EDGES`` edges: for each class, the shortest cycle
through ``s`` whose smallest node is ``s``, ties broken by the smaller (nodes, kinds) sequence.
So each cycle is reported once, from its smallest node, and conformance/chaos/
checker_spark_cycles.py computes the same set in Spark SQL. A non-transactional send or poll is
no node: a poll only reads (no cycle passes through it), and a send is passed over in the ww
order (a cycle through a non-transactional send that a transaction then read is not seen).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from conformance.chaos.history import OK, Op

MAX_EDGES = 8
BITS = {"ww": 1, "wr": 2}
CLASSES = {1: "G0", 2: "G1c", 3: "G1c-ww"}
JUDGED = ("G1c",)
INFORMATIONAL = ("G0", "G1c-ww")
Node = int
Key = tuple[str, int]


@dataclass(frozen=True)
class Edge:
    src: Node
    dst: Node
    kind: str
    key: Key
    ops: tuple[Op, ...]          # the send(s) and poll that make it


@dataclass(frozen=True)
class Cycle:
    kind: str
    nodes: tuple[Node, ...]      # first and last the same
    kinds: tuple[str, ...]


class Graph:
    """Committed transactions and their ww and wr edges (module doc)."""

    def __init__(self) -> None:
        self.names: dict[Node, str] = {}                 # node -> "ctp-a txn 3"
        self.commits: dict[Node, Op] = {}
        self.edges: dict[tuple[Node, Node, str], Edge] = {}

    def link(self, src: Node, dst: Node, kind: str, key: Key, ops: list[Op]) -> None:
        if src != dst and (src, dst, kind) not in self.edges:
            self.edges[src, dst, kind] = Edge(src, dst, kind, key, tuple(ops))

    def out(self) -> dict[Node, list[tuple[Node, str]]]:
        out: dict[Node, list[tuple[Node, str]]] = defaultdict(list)
        for src, dst, kind in self.edges:
            out[src].append((dst, kind))
        return out


def build(ops: list[Op], writes: list, order, isolation: dict[str, str]) -> Graph:
    """The graph of a history (``writes``: checker.Write with committed marked; ``order``: its
    checker.VersionOrder)."""
    g = Graph()
    node_of: dict[tuple[str, int], Node] = {}
    for op in ops:
        if op.f == "commit_txn" and op.type == OK and op.txn is not None and (op.process, op.txn) not in node_of:
            node_of[op.process, op.txn] = op.index
            g.commits[op.index] = op
            g.names[op.index] = f"{op.process} txn {op.txn}"
    writer = {}
    for w in writes:
        who = node_of.get((w.process, w.invoke.txn)) if w.invoke.txn is not None else None
        if who is not None and w.key is not None:
            writer[w.key, w.value] = (who, w)
    for key in sorted(order.at):
        _ww(g, key, order, writer)
    for op in ops:
        reader = node_of.get((op.process, op.txn)) if op.f == "poll" and op.type == OK and op.txn is not None else None
        if reader is None or not op.records or isolation.get(op.process) != "read_committed":
            continue
        for r in op.records:
            found = writer.get(((r.topic, r.partition), r.value))
            if found is not None:
                g.link(found[0], reader, "wr", (r.topic, r.partition), found[1].ops() + [op])
    return g


def _ww(g: Graph, key: Key, order, writer: dict) -> None:
    seen: set = set()
    before = None                       # (node, write) of the nearest earlier value with a node
    for offset in order.offsets[key]:
        for value in sorted(order.at[key][offset], key=lambda v: (v is None, v or b"")):
            if value in seen:
                continue
            seen.add(value)
            found = writer.get((key, value))
            if found is None:
                continue
            if before is not None:
                g.link(before[0], found[0], "ww", key, before[1].ops() + found[1].ops())
            before = found


def cycles(g: Graph) -> list[Cycle]:
    """For each node and class, the shortest cycle whose smallest node it is (module doc)."""
    out_edges = g.out()
    found: list[Cycle] = []
    for s in sorted(g.commits):
        frontier: dict[tuple[Node, int], tuple[tuple[Node, ...], tuple[str, ...]]] = {(s, 0): ((s,), ())}
        visited = {(s, 0)}
        closed: dict[int, tuple[tuple[Node, ...], tuple[str, ...]]] = {}
        for _ in range(MAX_EDGES):
            step: dict[tuple[Node, int], tuple[tuple[Node, ...], tuple[str, ...]]] = {}
            closing: dict[int, tuple[tuple[Node, ...], tuple[str, ...]]] = {}
            for (node, flags), (path, kinds) in frontier.items():
                for dst, kind in out_edges.get(node, ()):
                    bits = flags | BITS[kind]
                    candidate = (path + (dst,), kinds + (kind,))
                    if dst == s:
                        if bits not in closed and (bits not in closing or candidate < closing[bits]):
                            closing[bits] = candidate
                    elif dst > s and dst not in path and (dst, bits) not in visited:
                        if (dst, bits) not in step or candidate < step[dst, bits]:
                            step[dst, bits] = candidate
            closed.update(closing)
            visited.update(step)
            frontier = step
            if not frontier:
                break
        found.extend(Cycle(CLASSES[bits], path, kinds) for bits, (path, kinds) in sorted(closed.items()))
    return found


def describe(g: Graph, cycle: Cycle) -> tuple[str, Key | None, list[Op]]:
    """A cycle's line (``ctp-a txn 3 -ww chaos-ctp-1-> ctp-b txn 2 -wr chaos-ctp-0-> ctp-a txn
    3``), the key of its first edge, and its witness: each edge's operations and each
    transaction's commit."""
    parts, first_key = [g.names[cycle.nodes[0]]], None
    ops: list[Op] = []
    for src, dst, kind in zip(cycle.nodes, cycle.nodes[1:], cycle.kinds):
        edge = g.edges[src, dst, kind]
        first_key = first_key or edge.key
        parts.append(f"-{kind} {edge.key[0]}-{edge.key[1]}-> {g.names[dst]}")
        ops.extend(edge.ops)
        ops.append(g.commits[src])
    return " ".join(parts), first_key, ops
