"""The kafkajs adapter's declarations, without Node: it is registered in the matrix, says why when
node or kafkajs is missing, and is N/A exactly where kafkajs lacks the call, the deadline or the
setting (each with its reason); every other scenario of the catalogue runs. Its runs against the
emulator are in tests/realclients/test_kafkajs_adapter.py."""

from __future__ import annotations

import pytest

from conformance.adapters import kafkajs_client
from conformance.adapters.base import RunEnv
from conformance.adapters.kafkajs_client import KafkajsAdapter
from conformance.model import Operation
from conformance.runner import Plan, applicable, default_adapters, run_plan
from conformance.scenarios import BY_ID, CATALOGUE

# scenario id -> a phrase of its N/A reason
NOT_APPLICABLE = {
    "kip266.position-leader-black-hole": "kafkajs has no position()",
    "kip266.poll-zero": "kafkajs has no poll()",
    "kip91.config-validation": "no delivery.timeout.ms and no linger.ms",
    **{s.id: "classic group protocol only" for s in CATALOGUE if s.family.startswith("KIP-848")},
    **{s.id: "lacks share groups: kafkajs has no share consumer" for s in CATALOGUE if s.id.startswith("share.")},
    "rebootstrap.required-answer": "lacks REBOOTSTRAP_REQUIRED",
    "rebootstrap.starved-trigger": "lacks metadata.recovery.rebootstrap.trigger.ms",
    "rebootstrap.no-brokers-some-topics": "lacks metadata.recovery.rebootstrap.trigger.ms",
    "rebootstrap.strategy-none-deadline": "lacks metadata.recovery.strategy",
}


def test_kafkajs_joins_the_default_matrix_under_its_own_name():
    names = [a.name for a in default_adapters()]
    assert names.count("kafkajs") == 1
    (adapter,) = [a for a in default_adapters() if a.name == "kafkajs"]
    assert adapter.sasl and not adapter.virtual_time


def test_without_node_or_kafkajs_it_is_na_for_every_scenario_and_says_why(monkeypatch, tmp_path):
    monkeypatch.setattr(kafkajs_client.shutil, "which", lambda name: None)
    adapter = KafkajsAdapter()
    assert adapter.command() is None
    assert adapter.available() == (False, "node is not installed (the kafkajs adapter needs Node.js 18+)")
    monkeypatch.undo()
    monkeypatch.setattr(kafkajs_client, "node_modules", lambda: tmp_path / "node_modules")
    ok, why = adapter.available()
    assert not ok and why.startswith(f"kafkajs is not installed ({tmp_path / 'node_modules' / 'kafkajs'} missing")
    assert "dev/install-clients" in why and adapter.client_version() is None
    results = run_plan(Plan([BY_ID["kip19.produce-black-hole"], BY_ID["txn.zombie-fenced-after-restart"]], [adapter]))
    assert [(r.status.value, r.message) for r in results] == [("n/a", why)] * 2


@pytest.mark.parametrize("scenario", CATALOGUE, ids=lambda s: s.id)
def test_na_exactly_where_kafkajs_lacks_the_call_the_deadline_or_the_setting(scenario):
    ok, why = applicable(scenario, KafkajsAdapter())
    if scenario.id in NOT_APPLICABLE:
        assert not ok and NOT_APPLICABLE[scenario.id] in why, why
    else:
        assert ok, why


def test_the_settings_kafkajs_lacks_make_only_their_contracts_na():
    """A scenario that runs still has its contract about delivery.timeout.ms, max.block.ms,
    default.api.timeout.ms or socket.connection.setup.timeout.max.ms judged N/A for kafkajs, with
    the reason (Contract.setting)."""
    lacked = {c.setting for s in CATALOGUE for c in s.contracts if c.setting in KafkajsAdapter.lacks}
    assert lacked == {"delivery.timeout.ms", "max.block.ms", "default.api.timeout.ms", "socket.connection.setup.timeout.max.ms"}
    for reason in KafkajsAdapter.lacks.values():
        assert reason.startswith("kafkajs has no ")


def test_a_call_that_takes_no_deadline_runs_with_the_applications():
    """kafkajs's admin and commit calls take no deadline: a step's is the application's (the
    program races the call against a timer), so the step runs; DeleteRecords' timeout is the one it
    sends, which kafkajs cannot set: its fixed 5000 ms is what the purgatory contract judges (the
    scenario's max_scale keeps the scaled call longer than it)."""
    adapter = KafkajsAdapter()
    assert adapter.supports((Operation("committed", {"group": "g", "topic": "t"}),)) == (True, "")
    assert adapter.supports((Operation("committed", {"group": "g", "topic": "t"}, timeout_s=5.0),)) == (True, "")
    assert adapter.supports((Operation("close", {"topic": "t"}, timeout_s=1.0),)) == (True, "")
    assert adapter.supports((Operation("delete_records", {"topic": "t"}, timeout_s=5.0),)) == (True, "")
    scenario = BY_ID["admin.delete-records-purgatory"]
    (call_s,) = [s.timeout_s for s in scenario.steps if s.kind == "delete_records"]
    assert call_s / scenario.scale_in(30.0) >= 5.0   # kafkajs's fixed timeout_ms 5000 fits in the call at scale 30
    assert adapter.supports((Operation("poll", {"topic": "t"}, timeout_s=2.0),)) == (True, "")


def test_steps_get_real_pauses_the_scale_and_a_watchdog():
    env = RunEnv("127.0.0.1:1", "c", {"request.timeout.ms": 1000}, scale=30.0)
    step = kafkajs_client._scaled_step(Operation("admin_list_topics", {"repeat": 2, "pause_s": 12.0}, 10 / 30), env)
    assert step.args["pause_s"] == pytest.approx(0.4) and step.args["repeat"] == 2
    # py_common.watchdog_s: 6 x the longest of the deadline, default.api.timeout.ms (60 s / 30) and request.timeout.ms
    assert step.args["watchdog_s"] == pytest.approx(6 * 2.0 + 2.0)
