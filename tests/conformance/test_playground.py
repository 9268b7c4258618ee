"""The timeout playground's catalogue (conformance/playground.py): every listed scenario runs
with its defaults in virtual time, every setting reaches the run (the scenario as run carries the
value), defaults are the scenario's own, and settings the broker refuses are an input error."""

from __future__ import annotations

import pytest

from broker_emu.control.playground import PlaygroundInputError
from conformance.params import apply_params
from conformance.playground import PLAYGROUND, ScenarioPlayground, default
from conformance.scenarios import BY_ID

PG = ScenarioPlayground()


@pytest.mark.parametrize("sid", list(PLAYGROUND))
def test_every_scenario_runs_with_its_defaults_and_names_who_gave_up_first(sid):
    out = PG.run(PG.check(sid, {}))
    assert out["svg"].startswith("<svg") and out["changed"] == {}
    assert out["winner"] in ("client", "broker", "nobody")
    assert out["first_to_give_up"].startswith("first to give up: " if out["winner"] != "nobody" else "nobody")
    assert out["wall_ms"] < 5000 and out["simulated_ms"] > 0


@pytest.mark.parametrize("sid", list(PLAYGROUND))
def test_every_setting_reaches_the_scenario_as_run(sid):
    base = BY_ID[sid]
    for s in PLAYGROUND[sid][0]:
        value = s.maximum if default(base, s.key) != s.maximum else s.minimum
        run = apply_params(base, {s.key: value})
        assert default(run, s.key) == value, s.key
        assert s.minimum <= default(base, s.key) <= s.maximum, s.key


def test_the_purgatory_defaults_are_the_scenarios():
    (row,) = [c for c in PG.catalogue() if c["id"] == "server.purgatory-request-timed-out"]
    assert {s["key"]: s["default"] for s in row["settings"]} == {
        "request.timeout.ms": 30000, "fault.ms": 5, "broker.replica.lag.time.max.ms": 1_000_000,
        "delivery.timeout.ms": 45000}


def test_settings_the_broker_refuses_are_an_input_error_not_a_crash():
    # past check()'s bounds on purpose: Kafka's group.consumer.min.session.timeout.ms is 45 s
    sid = "kip848.crashed-member-expires-at-broker-session"
    with pytest.raises(PlaygroundInputError, match="group.consumer.session.timeout.ms") as caught:
        PG.run((BY_ID[sid], {"broker.group.consumer.session.timeout.ms": 10000}))
    assert caught.value.field == "settings"


@pytest.mark.parametrize("settings, field", [({"nope": 1}, "settings.nope"), ({"fault.ms": -1}, "settings.fault.ms"),
                                             ({"fault.ms": 2.5}, "settings.fault.ms")])
def test_check_refuses_unknown_and_out_of_range_settings(settings, field):
    with pytest.raises(PlaygroundInputError) as caught:
        PG.check("server.purgatory-request-timed-out", settings)
    assert caught.value.field == field


def test_settings_the_client_refuses_are_an_input_error_not_a_crash():
    # within check()'s bounds, but below linger.ms + request.timeout.ms: the producer refuses it, as Java's does
    sid = "kip91.delivery-timeout-in-flight"
    with pytest.raises(PlaygroundInputError, match=r"the client refuses these settings: delivery.timeout.ms \(1000\)"):
        PG.run(PG.check(sid, {"delivery.timeout.ms": 1000}))
