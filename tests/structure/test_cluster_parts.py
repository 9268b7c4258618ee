"""The cluster is a composition root over parts below it: the parts, and the group and
transaction coordinators it builds, never import ``broker_emu.cluster`` (not even for type
checking: they depend on Protocols or on the parts they use)."""

import ast

from tools.import_graph import project_modules

BELOW_THE_CLUSTER = ("broker_emu.brokers", "broker_emu.topics", "broker_emu.leadership", "broker_emu.clock",
                     "broker_emu.coordinator_placement", "broker_emu.producer_ids", "broker_emu.cluster_tasks",
                     "broker_emu.transactions", "broker_emu.groups")


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
    return out


def test_the_parts_and_the_coordinators_never_import_the_cluster():
    wrong = []
    for name, path in project_modules().items():
        if not any(name == p or name.startswith(p + ".") for p in BELOW_THE_CLUSTER):
            continue
        for line, target in _imported(ast.parse(path.read_text())):
            if target == "broker_emu.cluster" or target.startswith("broker_emu.cluster."):
                wrong.append(f"{name}:{line}")
    assert wrong == []


def test_the_check_sees_a_type_checking_import():
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from broker_emu.cluster import Cluster\n")
    assert (3, "broker_emu.cluster") in _imported(tree)
