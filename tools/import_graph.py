"""The project's import graph, read from the source, for the layering test
(tests/structure/test_layers.py) and the layer picture (tools/draw_layers.py).

Every import statement counts: at module level, inside functions, and under ``if TYPE_CHECKING:``
(a cycle a type checker must untangle is still a cycle a reader must). Importing a module also
runs its parent packages' ``__init__`` first, so each module depends on its package: the graph
has that edge too (``kind="package"``), except from a module the package's ``__init__`` imports
itself and that imports no other module of the package — a leaf of the package's face, loaded by
it. A face that loads a module needing a sibling makes the whole package one import group, and
the graph has the cycle (``A -> package -> A``, or ``B -> package -> A -> B``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("broker_emu", "client", "conformance", "kafka_common")


@dataclass(frozen=True)
class Edge:
    source: str      # importing module
    target: str      # imported module (a project module)
    line: int        # 0 for a package edge
    kind: str        # "module" (runs at import), "function" (inside a def or class), "typing", "package"


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def project_modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            out[module_name(path)] = path
    return out


def is_package(module: str) -> bool:
    return project_modules()[module].name == "__init__.py"


def package_of(module: str) -> str:
    """The package a module belongs to: itself for a package's ``__init__``."""
    return module if is_package(module) else module.rpartition(".")[0]


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module an imported dotted name lives in (longest known prefix)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


@cache
def edges() -> tuple[Edge, ...]:
    modules = project_modules()
    out: list[Edge] = []
    for name, path in modules.items():
        out.extend(_statement_edges(name, path, modules))
    loaded_by_face = {(e.target, e.source) for e in out}
    needs_sibling = {e.source for e in out if e.target.startswith(e.source.rpartition(".")[0] + ".")}
    for name in modules:
        parent = name.rpartition(".")[0]
        if parent and ((name, parent) not in loaded_by_face or name in needs_sibling):
            out.append(Edge(name, parent, 0, "package"))
    return tuple(out)


def _statement_edges(name: str, path: Path, modules: dict[str, Path]) -> Iterator[Edge]:
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node, kind in _imports(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # ``from pkg import sub`` imports the submodule when there is one
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for t in targets:
            resolved = _resolve(t, modules)
            if resolved is not None and resolved != name:
                yield Edge(name, resolved, node.lineno, kind)


def _imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    def walk(nodes: Iterable[ast.AST], kind: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
        for child in nodes:
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, kind
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                yield from walk(child.body, "typing")     # its ``else:`` runs
                yield from walk(child.orelse, kind)
            elif kind == "module" and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield from walk(ast.iter_child_nodes(child), "function")
            else:
                yield from walk(ast.iter_child_nodes(child), kind)

    yield from walk(ast.iter_child_nodes(tree), "module")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def by_pair(all_edges: Iterable[Edge], node: Callable[[str], str] = str) -> dict[tuple[str, str], list[Edge]]:
    """The statements behind each arrow between two nodes; ``node`` names a module's node
    (``unit_of`` collapses a module into its package)."""
    out: dict[tuple[str, str], list[Edge]] = {}
    for e in all_edges:
        source, target = node(e.source), node(e.target)
        found = out.setdefault((source, target), []) if source != target else []
        if source != target and all((f.source, f.line) != (e.source, e.line) for f in found):
            found.append(e)
    return out


def package_pairs(all_edges: Iterable[Edge]) -> dict[tuple[str, str], list[Edge]]:
    """The import statements between packages, each module collapsed into its package when that
    package has no subpackages. A package with subpackages (broker_emu, client.protocol) is a
    folder of parts, its own modules each a part at its own level, so they stay themselves. The
    implicit package edges are left out: every package would otherwise depend on its parent."""
    return by_pair((e for e in all_edges if e.kind != "package"), unit_of)


def unit_of(module: str) -> str:
    """The package-level node of a module: its package, if that has no subpackages."""
    package = package_of(module)
    return package if package not in _parents() else module


@cache
def _parents() -> frozenset[str]:
    return frozenset(m.rpartition(".")[0] for m in project_modules() if is_package(m) and "." in m)


def graph_of(pairs: dict[tuple[str, str], list[Edge]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for source, target in pairs:
        graph.setdefault(source, set()).add(target)
        graph.setdefault(target, set())
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def shortest_cycles(component: list[str], graph: dict[str, set[str]], limit: int = 12) -> list[list[str]]:
    """Up to ``limit`` distinct shortest cycles inside one strongly connected component, one
    through each of its nodes in turn: enough for a reader to see which edges to cut."""
    inside = set(component)
    found: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()
    for start in sorted(component):
        path = _shortest_path_back(start, graph, inside)
        if path is None:
            continue
        turn = path.index(min(path))
        key = tuple(path[turn:] + path[:turn])
        if key not in seen:
            seen.add(key)
            found.append(list(key))
        if len(found) == limit:
            break
    return sorted(found, key=len)


def _shortest_path_back(start: str, graph: dict[str, set[str]], inside: set[str]) -> list[str] | None:
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return list(reversed(path))
                if w in inside and w not in came_from:
                    came_from[w] = v
                    following.append(w)
        frontier = following
    return None


def describe_cycle(cycle: list[str], pairs: dict[tuple[str, str], list[Edge]]) -> str:
    """``a -> b -> a`` and the statements behind each arrow (file:line and kind)."""
    lines = ["  " + " -> ".join([*cycle, cycle[0]])]
    for source, target in zip(cycle, [*cycle[1:], cycle[0]]):
        found = pairs[(source, target)]
        where = ", ".join(where_from(e) for e in found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        lines.append(f"      {source} -> {target}: {where}")
    return "\n".join(lines)


def where_from(e: Edge) -> str:
    if e.kind == "package":
        return f"importing {e.source} runs {_path(e.target)} first"
    return f"{_path(e.source)}:{e.line} ({e.kind})"


def _path(module: str) -> str:
    return str(project_modules()[module].relative_to(ROOT))
