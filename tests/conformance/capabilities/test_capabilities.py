"""The capability table (conformance/client_capabilities.py, docs/clients.md): every adapter declares what its
client has and lacks, each lack with its source; the adapter's N/As are exactly what the
declaration predicts, each naming the missing capability or a declared exception; and
docs/clients.md is what the declarations make (regenerate: python -m conformance.capabilities
--write docs/clients.md)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from types import MappingProxyType

import pytest

from conformance.adapters.base import Adapter
from conformance.capabilities.__main__ import current, main
from conformance.capabilities.check import disagreements
from conformance.capabilities.pins import ROOT, pinned_version
from conformance.client_capabilities import (
    CAPABILITIES,
    NAMES,
    ClientCapabilities,
    Lack,
    Pin,
    name_the_capability,
    needs,
)
from conformance.model import Operation, Status
from conformance.on_kafka import cell_or_na, kafka_support
from conformance.runner import applicable, default_adapters
from conformance.scenarios import BY_ID, CATALOGUE

ADAPTERS = default_adapters()
PAGE = ROOT / "docs" / "clients.md"


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)
def test_na_exactly_where_the_declaration_says_and_naming_what_is_missing(adapter):
    assert disagreements(adapter, CATALOGUE) == []


def test_every_na_of_the_matrix_names_a_missing_capability_or_a_declared_exception():
    for adapter in ADAPTERS:
        declared = adapter.capabilities
        for scenario in CATALOGUE:
            ok, why = applicable(scenario, adapter)
            if not ok:
                missing, exception = declared.missing(scenario), declared.exception(scenario)
                assert any(name in why for name in missing) or (exception is not None and exception[0] in why), (
                    adapter.name, scenario.id, why)


def test_an_na_no_capability_explains_is_caught_and_so_is_a_stale_exception():
    class Refusing(Adapter):
        name = "refusing"
        operations = frozenset({"produce"})
        capabilities = ClientCapabilities("refusing", Pin("", "", "1"), "{path}", has=NAMES, lacks=MappingProxyType({}))

        def supports_scenario(self, scenario):
            return False, "not today"

        async def run(self, steps, env):
            return []

    found = disagreements(Refusing(), [BY_ID["kip19.produce-black-hole"]])
    assert len(found) == 1 and "has every capability it needs" in found[0] and "not today" in found[0]

    class Excused(Refusing):
        capabilities = ClientCapabilities("refusing", Pin("", "", "1"), "{path}", has=NAMES, lacks=MappingProxyType({}),
                                          not_driven=MappingProxyType({"kip19.produce-black-hole": "not written"}))

        def supports_scenario(self, scenario):
            return True, ""

    found = disagreements(Excused(), [BY_ID["kip19.produce-black-hole"]])
    assert len(found) == 1 and "which its declaration says it cannot" in found[0]


def test_every_lack_has_a_reason_and_a_source_and_every_exception_a_key_that_means_something():
    from conformance.txn_errors.cases import SCENARIOS as TXN_ERRORS  # outside the catalogue, same adapters

    kinds = {s.kind for sc in (*CATALOGUE, *TXN_ERRORS) for s in sc.steps}
    ids = {s.id for s in CATALOGUE}
    for adapter in ADAPTERS:
        declared = adapter.capabilities
        for name, lack in declared.lacks.items():
            assert lack.reason.strip() and lack.source.strip(), (adapter.name, name)
            for id_, why in lack.not_in:
                assert lack.judged and id_ in ids and name in needs(BY_ID[id_]) and why.strip(), (adapter.name, name)
        for key, why in declared.not_driven.items():
            assert key in kinds | ids | set(NAMES) and why.strip(), (adapter.name, key)
        assert set(declared.notes) <= set(declared.has), adapter.name


def test_a_lack_something_stands_in_for_is_missing_where_nothing_does():
    """Lack.not_in: a scenario whose every contract is about the capability stays N/A, and the page says why."""
    rule = Lack("no such setting", "src", judged="its retries stand in", not_in=(("kip91.config-validation", "the rule"),))
    assert not rule.stands_in(BY_ID["kip91.config-validation"])
    assert rule.stands_in(BY_ID["kip91.delivery-timeout-in-flight"])
    assert not Lack("no such setting", "src").stands_in(BY_ID["kip91.delivery-timeout-in-flight"])
    sarama = next(a for a in ADAPTERS if a.name == "sarama")
    assert sarama.capabilities.missing(BY_ID["kip91.config-validation"]) == ["delivery.timeout.ms"]
    assert "Not in kip91.config-validation, where nothing stands in" in PAGE.read_text()


def test_a_declaration_classifies_every_capability_once():
    with pytest.raises(ValueError, match="missing"):
        ClientCapabilities("x", Pin("", "", "1"), "{path}", has=NAMES[1:], lacks=MappingProxyType({}))
    with pytest.raises(ValueError, match="twice"):
        ClientCapabilities("x", Pin("", "", "1"), "{path}", has=NAMES,
                           lacks=MappingProxyType({NAMES[0]: Lack("why", "src")}))


def test_scenarios_need_what_their_steps_and_their_point_say():
    assert needs(BY_ID["kip266.poll-zero"]) == ("poll(0)",)
    assert needs(BY_ID["kip266.committed-coordinator-black-hole"]) == ("consumer calls", "committed(timeout)")
    assert needs(BY_ID["kip266.committed-default-api-timeout"]) == ("consumer calls", "default.api.timeout.ms")
    assert needs(BY_ID["txn.coordinator-aborts-at-check-interval"]) == ("transactions",)
    from dataclasses import replace

    too_fast = replace(BY_ID["txn.coordinator-aborts-at-check-interval"], max_scale=None)   # 3 s / 30: 100 ms
    with pytest.raises(ValueError, match="max_scale"):
        needs(too_fast)
    assert needs(BY_ID["security.sasl-handshake-stall"]) == ("SASL", "socket.connection.setup.timeout.ms")
    assert needs(BY_ID["kip19.connection-setup-timeout"]) == ("socket.connection.setup.timeout.ms",
                                                              "socket.connection.setup.timeout.max.ms")
    assert needs(BY_ID["admin.delete-records-purgatory"]) == ("calls on one client", "delete_records(timeout)")
    every = {name for s in CATALOGUE for name in needs(s)}
    assert every == set(NAMES), f"no scenario needs {set(NAMES) - every}"


def test_an_na_reason_is_made_to_name_the_missing_capability_once():
    kcat = next(a for a in ADAPTERS if a.name == "kcat")
    poll = BY_ID["kip266.poll-empty-at-deadline"]
    assert name_the_capability(kcat, poll, "kcat has no poll") == "lacks poll(timeout): kcat has no poll"
    assert name_the_capability(kcat, poll, "no poll(timeout) here") == "no poll(timeout) here"

    class Undeclared(Adapter):
        async def run(self, steps, env):
            return []

    assert name_the_capability(Undeclared(), poll, "refused") == "refused"
    blocking = next(a for a in ADAPTERS if a.name == "broker-emu (blocking)")
    if blocking.capabilities.exception(BY_ID["txn.zombie-fenced-after-restart"]) is not None:   # until it drives them
        assert name_the_capability(blocking, BY_ID["txn.zombie-fenced-after-restart"], "it has no txn_zombie") == (
            "transactions not run by this adapter: it has no txn_zombie")


def test_on_kafka_an_na_is_about_the_run_or_names_what_the_client_lacks():
    for adapter in ADAPTERS:
        for scenario in CATALOGUE:
            cell = cell_or_na(scenario, adapter, 1)
            if cell is None:
                continue
            assert cell.status is Status.NA
            if kafka_support(scenario, 1) or adapter.virtual_time:
                continue   # about the run (ENVIRONMENT)
            declared = adapter.capabilities
            assert any(n in cell.message for n in declared.missing(scenario)) or declared.exception(scenario), (
                adapter.name, scenario.id, cell.message)


def test_the_settings_an_adapter_judges_na_are_lacks_of_its_declaration():
    for adapter in ADAPTERS:
        for setting, reason in adapter.lacks.items():
            assert adapter.capabilities.lacks[setting].reason == reason


def test_docs_clients_md_is_what_the_declarations_make():
    assert PAGE.read_text(encoding="utf-8") == current(), "run: python -m conformance.capabilities --write docs/clients.md"


def test_a_stale_page_is_caught(tmp_path, capsys):
    stale = tmp_path / "clients.md"
    page = current()
    tampered = re.sub(r"\| (\d+) of (\d+) \|", lambda m: f"| {int(m[1]) - 1} of {m[2]} |", page, count=1)
    assert tampered != page
    stale.write_text(tampered, encoding="utf-8")
    assert main(["--check", str(stale)]) == 1
    assert "is stale" in capsys.readouterr().err
    stale.write_text(current(), encoding="utf-8")
    assert main(["--check", str(stale)]) == 0


def test_the_table_has_a_cell_per_client_and_capability_and_counts_what_each_runs():
    text = current()
    rows = {line.split(" | ")[0].strip("| `"): line for line in text.splitlines() if line.startswith("| ")}
    for capability in CAPABILITIES:
        cells = rows[capability.name].strip("| ").split(" | ")[1:]
        assert len(cells) == len(ADAPTERS) and all(c == "yes" or c.startswith("[no](#") for c in cells)
    counts = rows["scenarios it runs"].strip("| ").split(" | ")[1:]
    for adapter, count in zip(ADAPTERS, counts):
        runs = sum(applicable(s, adapter)[0] for s in CATALOGUE)
        assert count == f"{runs} of {len(CATALOGUE)}", adapter.name
    for target in re.findall(r"\]\(#([^)]+)\)", text):
        assert f'<a id="{target}"></a>' in text


def test_versions_come_from_the_pins():
    versions = {a.name: pinned_version(a.capabilities.pin) for a in ADAPTERS}
    assert versions["confluent-kafka"] == "2.16.1" and versions["kafkajs"] == "2.2.4"
    assert versions["franz-go"].startswith("v1.") and versions["java"] == versions["java-consumer-protocol"]
    assert all(re.fullmatch(r"v?\d+\.\d+\.\d+", v) for v in versions.values()), versions


@pytest.mark.skipif(importlib.util.find_spec("confluent_kafka") is None, reason="confluent-kafka is not installed")
def test_confluent_kafka_bundles_the_librdkafka_its_lacks_cite():
    import confluent_kafka

    from conformance.adapters.confluent import LIBRDKAFKA

    assert confluent_kafka.libversion()[0] == LIBRDKAFKA


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_is_the_version_its_declaration_names():
    from conformance.adapters.kcat import KCAT, KCAT_LIBRDKAFKA

    out = subprocess.run(["kcat", "-V"], capture_output=True, text=True, timeout=10, check=False).stdout
    assert f"Version {KCAT} " in out and f"librdkafka {KCAT_LIBRDKAFKA} " in out


def test_a_deadline_makes_a_call_need_its_timeout_capability_and_none_does_not():
    from conformance.client_capabilities import step_needs

    assert step_needs(Operation("committed", {}, timeout_s=0.0)) == {"consumer calls", "committed(timeout)"}
    assert step_needs(Operation("committed", {})) == {"consumer calls"}
    assert step_needs(Operation("poll", {}, timeout_s=2.0)) == {"poll(timeout)"}
    assert step_needs(Operation("produce", {"count": 2})) == {"calls on one client"}
