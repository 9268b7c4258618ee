"""The timeout playground's endpoints (GET /playground/scenarios, POST /playground/run) against a
real ``broker-emu serve``: the full command (conformance.main) registers the scenario catalogue;
the emulator's own command has none and says so. A run is our client in virtual time: 30 s of
Kafka time in a fraction of a second of wall time."""

from __future__ import annotations

import pytest

from .serve import Served, http_call

PURGATORY = "server.purgatory-request-timed-out"
DELETE_RECORDS = "admin.delete-records-purgatory"


@pytest.fixture(scope="module")
def served():
    with Served(module="conformance.main") as s:
        yield s


def run(served: Served, scenario: str, settings: dict | None = None, **extra) -> tuple[int, dict]:
    return http_call(served.port, "POST", "/playground/run", {"scenario": scenario, "settings": settings or {}, **extra})


def test_the_catalogue_lists_teaching_scenarios_with_their_settings_and_defaults(served):
    status, doc = http_call(served.port, "GET", "/playground/scenarios")
    assert status == 200
    scenarios = {s["id"]: s for s in doc["scenarios"]}
    assert {PURGATORY, DELETE_RECORDS, "kip19.produce-black-hole"} <= set(scenarios)
    assert any(i.startswith("txn.") for i in scenarios) and any(i.startswith("kip848.") for i in scenarios)
    purgatory = scenarios[PURGATORY]
    assert "REQUEST_TIMED_OUT" in purgatory["teaching"]
    settings = {s["key"]: s for s in purgatory["settings"]}
    assert settings["request.timeout.ms"]["default"] == 30000
    assert settings["fault.ms"]["default"] == 5            # the delay before the append
    assert all(s["minimum"] <= s["default"] <= s["maximum"] for sc in scenarios.values() for s in sc["settings"])
    assert all(2 <= len(sc["settings"]) <= 4 for sc in scenarios.values())


def test_the_purgatory_race_with_defaults_the_client_gives_up_first(served):
    status, out = run(served, PURGATORY)
    assert status == 200, out
    assert out["winner"] == "client"
    assert out["first_to_give_up"].startswith("first to give up: the client (request.timeout.ms = 30000 ms)")
    assert out["svg"].startswith("<svg") and "who gave up first" in out["svg"]
    assert out["settings"]["request.timeout.ms"] == 30000 and out["changed"] == {}
    assert out["simulated_ms"] >= 30000 and out["wall_ms"] < 5000     # virtual time
    assert out["outcomes"][0]["operation"] == "produce" and not out["outcomes"][0]["ok"]


def test_a_longer_request_timeout_still_loses_the_produce_race_for_our_client(served):
    # one setting is both clocks (the Produce's timeout_ms is request.timeout.ms), and the broker's
    # starts after the append: the broker cannot win this one, whatever the value
    status, out = run(served, PURGATORY, {"request.timeout.ms": 40000, "delivery.timeout.ms": 60000, "fault.ms": 2000})
    assert status == 200, out
    assert out["winner"] == "client" and "request.timeout.ms = 40000 ms" in out["first_to_give_up"]
    assert out["changed"] == {"request.timeout.ms": 40000, "delivery.timeout.ms": 60000, "fault.ms": 2000}


def test_with_no_time_before_the_append_the_clocks_tie_and_the_brokers_answer_arrives_first(served):
    # the race's boundary: both clocks end at the same virtual instant; the answer is read first
    status, out = run(served, PURGATORY, {"fault.ms": 0})
    assert status == 200, out
    assert out["winner"] == "broker" and "REQUEST_TIMED_OUT" in out["first_to_give_up"]
    assert out["outcomes"][0]["error_type"] == "RequestTimedOutError"
    status, out = run(served, PURGATORY, {"fault.ms": 1})
    assert out["winner"] == "client"


def test_two_settings_move_the_winner_in_the_delete_records_race(served):
    status, out = run(served, DELETE_RECORDS)
    assert status == 200, out
    assert out["winner"] == "broker" and "REQUEST_TIMED_OUT" in out["first_to_give_up"]
    status, out = run(served, DELETE_RECORDS, {"request.timeout.ms": 10000})
    assert status == 200, out
    assert out["winner"] == "client" and "request.timeout.ms = 10000 ms" in out["first_to_give_up"]


@pytest.mark.parametrize("body, field", [
    ({"scenario": "no.such-scenario"}, "scenario"),
    ({"scenario": PURGATORY, "settings": {"linger.ms": 5}}, "settings.linger.ms"),
    ({"scenario": PURGATORY, "settings": {"request.timeout.ms": -1}}, "settings.request.timeout.ms"),
    ({"scenario": PURGATORY, "settings": {"request.timeout.ms": 10 ** 12}}, "settings.request.timeout.ms"),
    ({"scenario": PURGATORY, "settings": {"request.timeout.ms": 10 ** 400}}, "settings.request.timeout.ms"),
    ({"scenario": PURGATORY, "settings": {"request.timeout.ms": 1e300}}, "settings.request.timeout.ms"),
    ({"scenario": PURGATORY, "settings": {"request.timeout.ms": "30000"}}, "settings.request.timeout.ms"),
    ({"scenario": PURGATORY, "settings": {"request.timeout.ms": True}}, "settings.request.timeout.ms"),
    ({"scenario": PURGATORY, "settings": {"request.timeout.ms": 1.5}}, "settings.request.timeout.ms"),
    ({"scenario": PURGATORY, "settings": [1]}, "settings"),
    ({"scenario": 7}, "scenario"),
    ({}, "scenario"),
    ({"scenario": PURGATORY, "extra": 1}, "extra"),
])
def test_bad_input_is_a_400_naming_the_field(served, body, field):
    status, out = http_call(served.port, "POST", "/playground/run", body)
    assert status == 400, out
    assert out["field"] == field and out["error"]


def test_a_body_that_is_not_an_object_is_a_400(served):
    status, out = http_call(served.port, "POST", "/playground/run", "[1, 2]")
    assert status == 400 and out["field"] == "body"
    assert served.alive()


def test_without_the_catalogue_the_playground_says_where_it_lives():
    with Served() as s:                  # python -m broker_emu.cli serve: the emulator alone
        status, out = http_call(s.port, "GET", "/playground/scenarios")
        assert status == 404 and "conformance" in out["error"]
        status, out = http_call(s.port, "POST", "/playground/run", {"scenario": PURGATORY})
        assert status == 404
        status, page = http_call(s.port, "GET", "/console/playground")
        assert status == 200 and "playground" in page.lower()


def test_the_docs_shell_example_answers_what_the_docs_say(served):
    import json
    import re

    from .serve import ROOT

    with open(f"{ROOT}/docs/console.md") as f:
        doc = f.read()
    body = re.search(r"-d '(\{\"scenario\".*?\})' \| jq -r \.first_to_give_up\n# (.*)\n", doc)
    assert body, "docs/console.md lost its playground example"
    status, out = http_call(served.port, "POST", "/playground/run", json.loads(body.group(1)))
    assert status == 200 and out["first_to_give_up"] == body.group(2)
