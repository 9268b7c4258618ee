"""Planted bugs (broker_emu/plants.py) are off by default and out of every client's reach: no
configuration key names them, and only the chaos kit's Python code sets ``Cluster.plant``."""

import ast
import pathlib

import pytest

from broker_emu.config import ConfigError, broker_config
from broker_emu.plants import PLANTS, Plant
from broker_emu.runtime import open_cluster

ROOT = pathlib.Path(__file__).resolve().parents[2]
SETTERS = {"conformance/chaos/ours.py", "conformance/chaos/realtime.py"}      # the Python API that plants a bug: broker-emu chaos --plant


async def test_a_cluster_has_no_plant_unless_python_code_sets_one():
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        assert cluster.plant is None


@pytest.mark.parametrize("key", ["plant", "emu.plant", "emu.plants", "broker.plant"])
def test_no_configuration_key_reaches_a_plant(key):
    with pytest.raises(ConfigError):
        broker_config({key: "lose-ack"})
    assert not [k for k in broker_config() if "plant" in k]


def plant_assignments(tree: ast.AST) -> list[str]:
    """The values assigned to any ``<something>.plant`` in a module, as source text."""
    out = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            for t in (target.elts if isinstance(target, ast.Tuple) else [target]):
                if isinstance(t, ast.Attribute) and t.attr == "plant":
                    out.append(ast.unparse(node.value) if node.value is not None else "")
    return out


def test_only_the_chaos_kit_assigns_a_plant_and_no_request_path_names_one():
    setters, mentions = {}, set()
    for package in ("broker_emu", "client", "conformance", "kafka_common"):
        for path in (ROOT / package).rglob("*.py"):
            text = path.read_text()
            name = path.relative_to(ROOT).as_posix()
            assigned = plant_assignments(ast.parse(text))
            if assigned:
                setters[name] = assigned
            if "plant" in text:
                mentions.add(name)
    assert setters.pop("broker_emu/cluster.py") == ["None"]      # the default
    assert set(setters) == SETTERS
    emulator = {m for m in mentions if m.startswith("broker_emu/")}
    # the attribute, the module, and the two handlers that consult it; nothing in the control API,
    # the config, the CLI or the fault engine
    assert emulator == {"broker_emu/cluster.py", "broker_emu/plants.py", "broker_emu/handlers/produce.py",
                        "broker_emu/handlers/fetch.py"}
    assert not {m for m in mentions if m.startswith("client/")}


def test_a_plant_lets_its_drawn_events_pass_then_fires_its_times_only():
    plant = Plant("reuse-offset", seed=7)
    skip = plant.skip
    assert 5 <= skip <= 40 and Plant("reuse-offset", seed=7).skip == skip     # its own seeded stream
    assert not plant.fires("lose-ack", "another bug's event")
    assert [plant.fires("reuse-offset", f"event {i}") for i in range(skip + 3)] == [False] * skip + [True, False, False]
    assert plant.fired == 1 and plant.log == [f"event {skip}"]
    with pytest.raises(ValueError, match="no planted bug"):
        Plant("eat-the-log")
    assert set(PLANTS) == {"lose-ack", "dup-retry", "reuse-offset", "aborted-read", "lso-past-open", "fenced-epoch",
                           "lso-at-high"}
