"""Matrix expansion and per-run figures (no Spark)."""

import json

import pytest

from conformance.campaign.execute import execute
from conformance.campaign.matrix import MatrixError, expand
from conformance.scenarios import CATALOGUE
from tests import ROOT


def test_groups_expand_to_the_product_of_scenarios_grid_clients_seeds_and_repetitions():
    runs = expand({"clients": ["ours"], "seeds": {"count": 3, "start": 5}, "repetitions": 2, "runs": [
        {"scenarios": ["KIP-266"], "grid": {"timeout.ms": [1000, 2000]}},
        {"scenarios": ["kip19.produce-black-hole"], "seeds": [1]},
    ]})
    kip266 = [r for r in runs if r.family == "KIP-266"]
    family = [s for s in CATALOGUE if s.family == "KIP-266"]
    assert len(kip266) == len(family) * 2 * 3 * 2    # scenarios x grid x seeds x repetitions
    assert len(runs) == len(kip266) + 2
    assert [r.run_id for r in runs] == list(range(len(runs)))
    assert {r.seed for r in kip266} == {5, 6, 7} and {r.client for r in runs} == {"broker-emu (async)"}
    assert {json.loads(r.params)["timeout.ms"] for r in kip266} == {1000, 2000}


@pytest.mark.parametrize("doc, words", [
    ({"scenarios": ["nope"]}, "no scenario"),
    ({"scenarios": ["KIP-19"], "grid": {"bogus": [1]}}, "unknown parameter"),
    ({"scenarioz": []}, "unknown top-level"),
    ({"seeds": "x", "scenarios": ["KIP-19"]}, "seeds"),
])
def test_bad_matrices_are_refused_before_any_run(doc, words):
    with pytest.raises(MatrixError, match=words):
        expand(doc)


def test_a_run_that_breaks_becomes_an_error_row_and_a_violation_event():
    run = {"run_id": 0, "scenario": "kip19.produce-black-hole", "family": "KIP-19", "client": "no-such-client",
           "params": "{}", "seed": 0, "rep": 0}
    rows = execute(run)
    assert rows[0]["record"] == "run" and rows[0]["status"] == "error" and "no-such-client" in rows[0]["message"]
    assert [r["kind"] for r in rows[1:]] == ["violation"]


def test_a_run_the_suite_would_not_judge_is_not_applicable_in_a_campaign_either():
    """kip19.connection-setup-timeout needs socket.connection.setup.timeout.ms, which kafka-python
    lacks: the suite marks it N/A there, and so does a campaign (it once judged such cells FAIL)."""
    from conformance.campaign.execute import execute_here

    run = {"run_id": 0, "scenario": "kip19.connection-setup-timeout", "family": "KIP-19", "client": "kafka-python",
           "params": "{}", "seed": 0, "rep": 0}
    head = execute_here(run)[0]
    assert head["status"] == "n/a" and "socket.connection.setup.timeout.ms" in head["message"], head


def test_figures_of_a_purgatory_race_and_a_timed_out_poll():
    race = execute({"run_id": 1, "scenario": "server.purgatory-request-timed-out", "family": "Server side",
                    "client": "broker-emu (async)", "params": json.dumps({"request.timeout.ms": 10000}), "seed": 1, "rep": 0})
    run = race[0]
    # the broker's clock starts 5 ms after the client's (delayed request): the client gives up first
    assert run["status"] == "pass" and run["first_timeout"] == "client" and run["purgatory_timeout_ms"] == 10000
    assert run["disconnect_error_ms"] == pytest.approx(0.0, abs=1e-6)
    assert run["deadline_ms"] == 10000 and run["overshoot_ms"] == pytest.approx(0.0, abs=1.0)   # retries=0
    assert (run["sent"], run["acked"], run["in_log"], run["lost"], run["duplicated"]) == (1, 0, 1, 0, 0)
    assert sum(r["record"] == "event" and r["kind"] == "recv" and r["ev_api"] == "Produce" for r in race) == 1
    poll = execute({"run_id": 2, "scenario": "kip266.poll-empty-at-deadline", "family": "KIP-266",
                    "client": "broker-emu (async)", "params": json.dumps({"timeout.ms": 3000}), "seed": 1, "rep": 0})[0]
    assert poll["deadline_ms"] == 3000 and poll["overshoot_ms"] == pytest.approx(0.0, abs=1.0)


def test_the_disconnect_error_of_a_deadline_bound_call_is_against_its_requests_own_timeout():
    """KIP-266: committed(5 s) sends OffsetFetch with min(time left, request.timeout.ms) = 5 s, and
    the client drops it then; against request.timeout.ms (30 s) that read -25,000 ms."""
    run = execute({"run_id": 3, "scenario": "kip266.committed-coordinator-black-hole", "family": "KIP-266",
                   "client": "broker-emu (async)", "params": "{}", "seed": 1, "rep": 0})[0]
    assert (run["request_timeout_ms"], run["deadline_ms"], run["request_own_timeout_ms"]) == (30000, 5000, 5000)
    assert run["disconnect_error_ms"] == pytest.approx(0.0, abs=1.0)


def test_real_time_campaigns_run_two_per_core_and_virtual_ones_one():
    import os

    from conformance.campaign.cli import default_parallelism

    real = expand({"clients": ["confluent", "kafka-python"], "scenarios": ["kip19.produce-black-hole"], "scale": 10})
    virtual = expand({"clients": ["ours"], "scenarios": ["kip19.produce-black-hole", "kip19.slow-broker-no-reconnect"]})
    assert default_parallelism(real) == min(len(real), 2 * (os.cpu_count() or 1))
    assert default_parallelism(virtual) is None


EXAMPLES = ROOT / "examples"


@pytest.mark.parametrize("path", sorted(str(p) for p in EXAMPLES.glob("campaign-*.yaml")))
def test_every_example_matrix_expands(path):
    from conformance.campaign.matrix import load

    doc, runs = load(path)
    assert runs and all(r.client for r in runs), path
