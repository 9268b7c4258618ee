"""The layering rules of docs/architecture.md, enforced on every import statement (module level,
inside functions and under ``if TYPE_CHECKING:``) of broker_emu, client, conformance and kafka_common:

- the emulator (broker_emu) uses only the wire codec of the client package (client.protocol)
  and Kafka's error codes (client.errors, a leaf);
- what both the emulator and the client need beyond the codec (the range assignor, the
  wake-up wait, the trio thread runner, the wall clock) has one home in kafka_common, a leaf both may import:
  it imports none of broker_emu, client or conformance, so the emulator reaches no client
  machinery through it;
- nothing below conformance imports conformance (the ``broker-emu`` command that composes both
  lives in conformance.main);
- no import cycle, between modules (each also depending on its packages' ``__init__``, which
  runs first) or between packages (tools/import_graph.py says how a module joins its package);
- no ``except ImportError`` around an import of the project's own modules (a broken import
  must fail loudly, not remove a feature);
- and at run time, importing the codec or the emulator loads no client machinery.
"""

import ast
import subprocess
import sys

from tools.import_graph import (
    ROOT,
    Edge,
    by_pair,
    cycles,
    describe_cycle,
    edges,
    graph_of,
    package_pairs,
    project_modules,
    shortest_cycles,
)

EMULATOR_MAY_USE = ("client.protocol", "client.errors")


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_the_emulator_uses_only_the_codec_and_error_codes_of_the_client_package():
    wrong = sorted(f"{e.source}:{e.line} imports {e.target}" for e in edges()
                   if _under(e.source, "broker_emu") and _under(e.target, "client")
                   and not any(_under(e.target, ok) for ok in EMULATOR_MAY_USE))
    assert wrong == []
    # its package's __init__ runs first; that it loads nothing is checked at run time below
    leaf = sorted(f"client.errors:{e.line} imports {e.target}" for e in edges()
                  if e.source == "client.errors" and e.kind != "package" and not _under(e.target, "client.protocol"))
    assert leaf == []


def test_the_common_package_is_a_leaf():
    wrong = sorted(f"{e.source}:{e.line} imports {e.target}" for e in edges()
                   if _under(e.source, "kafka_common") and not _under(e.target, "kafka_common"))
    assert wrong == []


def test_nothing_below_conformance_imports_it():
    wrong = sorted(f"{e.source}:{e.line} imports {e.target}" for e in edges()
                   if not _under(e.source, "conformance") and _under(e.target, "conformance"))
    assert wrong == []


def _cycles_report(pairs: dict[tuple[str, str], list[Edge]]) -> str:
    graph = graph_of(pairs)
    report = []
    for component in cycles(graph):
        report.append(f"{len(component)} import each other: {', '.join(component)}")
        report.extend(describe_cycle(c, pairs) for c in shortest_cycles(component, graph))
    return "\n".join(report)


def test_there_are_no_import_cycles_between_modules():
    report = _cycles_report(by_pair(edges()))
    assert not report, "import cycles (cut one arrow of each):\n" + report


def test_there_are_no_import_cycles_between_packages():
    report = _cycles_report(package_pairs(edges()))
    assert not report, "import cycles between packages (cut one arrow of each):\n" + report


def test_the_clients_typing_face_names_what_its_lazy_face_loads():
    """client/__init__.py loads each public name on first use; type checkers read them from
    client/__init__.pyi instead (typing imports in the package would be a cycle): both must
    name the same things, from the same modules."""
    import client

    stub = ast.parse((ROOT / "client" / "__init__.pyi").read_text())
    typed = {a.name: node.module for node in stub.body if isinstance(node, ast.ImportFrom) for a in node.names}
    assert typed == client._EXPORTS
    assert sorted(client.__all__) == sorted(typed)


def test_no_import_error_fallback_for_the_projects_own_modules():
    modules = project_modules()
    found = []
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Try):
                continue
            catches = [h for h in node.handlers if h.type is not None and "ImportError" in ast.unparse(h.type)]
            own = [n for stmt in node.body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))
                   and any(_under(m, p) for m in _names(n) for p in ("broker_emu", "client", "conformance", "kafka_common"))]
            if catches and own:
                found.append(f"{name}:{node.lineno}")
    assert found == []


def _names(node):
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return [node.module or ""]


def test_importing_the_codec_or_the_emulator_loads_no_client_machinery():
    probe = ("import sys, {m}; print(' '.join(sorted(n for n in sys.modules if n.split('.')[0] == 'client'"
             " and not n.startswith('client.protocol'))))")
    for module in ("client.protocol", "kafka_common.trio_thread", "broker_emu", "broker_emu.runtime"):
        out = subprocess.run([sys.executable, "-c", probe.format(m=module)], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
        assert set(out) <= {"client", "client.errors"}, (module, out)


def test_serve_starts_without_test_or_tls_machinery():
    """`broker-emu serve` on a plain listener imports neither pytest (trio.testing imports it:
    100+ ms of its start), nor trustme and cryptography (about 35 ms): each is imported where it is
    needed (a MockClock in use, a TLS listener)."""
    probe = ("import sys, broker_emu.cli; from broker_emu.runtime import open_cluster; "
             "print(' '.join(n for n in ('pytest', 'trio.testing', 'trustme', 'cryptography') if n in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert out == []
