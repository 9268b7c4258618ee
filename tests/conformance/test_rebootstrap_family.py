"""The Rebootstrap family on our client (virtual time), and each of its server-side contracts shown
to fail on a client set the other way, so none is vacuous."""

import pytest

from broker_emu.trace import TraceEvent
from conformance.adapters.ours import OurAdapter
from conformance.client_capabilities import needs
from conformance.model import Evidence, Status
from conformance.runner import Plan, run_plan
from conformance.scenarios import BY_ID, CATALOGUE
from conformance.scenarios_rebootstrap import (
    STRATEGY,
    back_to_bootstrap,
    found_through_bootstrap,
    never_rebootstraps,
    rebootstraps_at_trigger,
)


class Strategy(OurAdapter):
    """Our client with metadata.recovery.strategy forced, whatever the scenario asks."""

    def __init__(self, strategy: str):
        super().__init__()
        self.strategy = strategy
        self.name = f"strategy-{strategy}"

    async def run(self, steps, env):
        env.config[STRATEGY] = self.strategy
        return await super().run(steps, env)


def _contracts(scenario: str, adapter: OurAdapter) -> dict[str, Status]:
    [result] = run_plan(Plan([BY_ID[scenario]], [adapter]))
    return {name: status for name, status, _ in result.contracts}


def test_the_family_is_in_the_catalogue_and_our_client_passes_it():
    family = [s for s in CATALOGUE if s.family == "Rebootstrap"]
    assert [s.id for s in family] == ["rebootstrap.required-answer", "rebootstrap.strategy-none-deadline",
                                      "rebootstrap.brokers-replaced", "rebootstrap.starved-trigger",
                                      "rebootstrap.no-brokers-some-topics"]
    results = run_plan(Plan(family, [OurAdapter()]))
    assert {r.scenario: r.status for r in results} == {s.id: Status.PASS for s in family}
    figures = {r.scenario: r.figures for r in results}
    assert figures["rebootstrap.required-answer"]["Metadata from bootstrap.servers at once after REBOOTSTRAP_REQUIRED"] \
        .startswith("next Metadata to broker 0")
    assert figures["rebootstrap.strategy-none-deadline"]["produce returns at its deadline"] == "returned at 30.00 s of 30.00 s"
    found = figures["rebootstrap.brokers-replaced"]["the cluster found again through bootstrap.servers after every known broker was replaced"]
    assert found.startswith("Metadata through the bootstrap address (broker 3) 389 ms after the old brokers stopped")
    trigger = "back to bootstrap.servers at metadata.recovery.rebootstrap.trigger.ms"
    # silent: the starved request is given up at the trigger (and Java's one more ms); no-brokers: the answers
    # come at once and the rebootstrap waits for the attempt after the trigger, one refresh backoff later
    assert figures["rebootstrap.starved-trigger"][trigger] == "Metadata through the bootstrap address 5001 ms after " \
                                                              "Metadata starved (trigger 5000 ms)"
    assert figures["rebootstrap.no-brokers-some-topics"][trigger] == "Metadata through the bootstrap address 5439 ms " \
                                                                     "after Metadata starved (trigger 5000 ms)"


def test_with_strategy_none_the_learnt_connections_stay_and_the_contract_fails():
    # the next Metadata may still reach broker 0, which is also a learnt broker: only the closes tell
    got = _contracts("rebootstrap.required-answer", Strategy("none"))
    assert got["connections to learnt brokers closed on REBOOTSTRAP_REQUIRED"] is Status.FAIL


def _ev(t, kind, broker, conn, api=None, corr=None, **details):
    return TraceEvent(t, kind, broker=broker, conn=conn, api=api, correlation_id=corr, client_id="c", details=details)


ANSWERED = [_ev(0, "conn_open", 0, 1), _ev(1, "recv", 0, 1, "Metadata", 1), _ev(5, "conn_open", 1, 1),
            _ev(6, "recv", 1, 1, "Metadata", 2),
            _ev(6, "fault_applied", 1, 1, "Metadata", 2, action={"type": "error", "error": "REBOOTSTRAP_REQUIRED"})]


@pytest.mark.parametrize("then, passed, says", [
    ([_ev(7, "conn_open", 0, 2), _ev(8, "recv", 0, 2, "Metadata", 1)], True, "next Metadata to broker 0 2 ms"),
    ([_ev(8, "recv", 2, 1, "Metadata", 1)], False, "asked broker 2, which it had learnt of"),
    ([_ev(5000, "recv", 0, 2, "Metadata", 1)], False, "allowed 1000 ms"),
    ([], False, "never asked for Metadata again"),
])
def test_back_to_bootstrap_judges_where_and_when_the_next_metadata_goes(then, passed, says):
    v = back_to_bootstrap((0,), 1000.0).check(Evidence([], ANSWERED + then, {}, client_id="c"))
    assert v.passed is passed and says in (v.figure + v.message)
    without = back_to_bootstrap((0,), 1000.0).check(Evidence([], ANSWERED[:-1] + then, {}, client_id="c"))
    assert not without.passed and "did not exercise a rebootstrap" in without.message


STARVED = [_ev(0, "conn_open", 0, 1), _ev(1, "recv", 0, 1, "Metadata", 1), _ev(5, "conn_open", 1, 1),
           _ev(6, "recv", 1, 1, "Produce", 2), _ev(7, "recv", 1, 1, "Metadata", 3),
           _ev(7, "fault_applied", 1, 1, "Metadata", 3, action={"type": "no_brokers"})]


def test_never_rebootstraps_fails_on_a_close_while_the_client_still_asks():
    last = [_ev(9000, "recv", 1, 2, "Produce", 9), _ev(9500, "conn_close", 1, 2, closed_by="client")]
    check = never_rebootstraps("Produce").check
    assert check(Evidence([], STARVED + last, {}, client_id="c")).passed
    # a close before Metadata starved is not a rebootstrap (librdkafka drops its bootstrap connection as it starts)
    early = STARVED[:1] + [_ev(3, "conn_close", 0, 1, closed_by="client")] + STARVED[1:] + last
    assert check(Evidence([], early, {}, client_id="c")).passed
    rebooted = STARVED + [_ev(5007, "conn_close", 1, 1, closed_by="client")] + last
    v = check(Evidence([], rebooted, {}, client_id="c"))
    assert not v.passed and "closed conn 1 on broker 1 at 5007 ms, before its last request at 9000 ms" in v.message
    # a rebootstrap that forgot the leader stops the Produce requests, not the Metadata ones
    quiet = STARVED + [_ev(4000, "recv", 1, 2, "Produce", 8), _ev(5007, "conn_close", 1, 1, closed_by="client"),
                       _ev(9000, "recv", 0, 3, "Metadata", 1)]
    assert not check(Evidence([], quiet, {}, client_id="c")).passed
    v = check(Evidence([], STARVED[:-1] + last, {}, client_id="c"))
    assert not v.passed and "did not exercise starvation" in v.message


def test_our_client_made_to_rebootstrap_fails_the_strategy_none_scenario():
    """The mutation: the same scenario with metadata.recovery.strategy=rebootstrap. The client goes
    back to bootstrap.servers at the trigger, and the contract says so."""
    contracts = _contracts("rebootstrap.strategy-none-deadline", Strategy("rebootstrap"))
    assert contracts[f"no rebootstrap with {STRATEGY}=none"] == Status.FAIL
    assert contracts[f"no rebootstrap with {STRATEGY}=none"] != _contracts(
        "rebootstrap.strategy-none-deadline", Strategy("none"))[f"no rebootstrap with {STRATEGY}=none"]


@pytest.mark.parametrize("scenario, capability", [
    ("rebootstrap.required-answer", "REBOOTSTRAP_REQUIRED"), ("rebootstrap.strategy-none-deadline", STRATEGY),
    ("rebootstrap.brokers-replaced", "rebootstrap when brokers are gone"),
    ("rebootstrap.starved-trigger", "metadata.recovery.rebootstrap.trigger.ms"),
    ("rebootstrap.no-brokers-some-topics", "metadata.recovery.rebootstrap.trigger.ms")])
def test_each_scenario_needs_the_capability_it_is_about(scenario, capability):
    """A client with only part of KIP-899 and KIP-1102 (franz-go acts on REBOOTSTRAP_REQUIRED and
    goes back to its seeds, with no trigger and no strategy) runs the scenarios about what it has."""
    assert capability in needs(BY_ID[scenario])


def test_franz_go_runs_the_rebootstrap_scenarios_about_what_it_has():
    from conformance.adapters.go_capabilities import FRANZ_CAPABILITIES
    runs = {s for s in BY_ID if s.startswith("rebootstrap.") and FRANZ_CAPABILITIES.runs(BY_ID[s])}
    assert runs == {"rebootstrap.required-answer", "rebootstrap.brokers-replaced"}


def _via(t, broker, conn):
    return _ev(t, "conn_open", broker, conn, via="bootstrap")


MOVED = [_via(0, 0, 1), _ev(1, "recv", 0, 1, "Metadata", 1), _ev(2, "recv", 1, 2, "Produce", 1),
         _ev(3, "broker_start", 3, None, added=True), _ev(3, "broker_start", 4, None, added=True),
         _ev(9, "bootstrap_moved", 3, None), _ev(10, "broker_stop", 0, None), _ev(11, "broker_stop", 1, None)]


@pytest.mark.parametrize("then, passed, says", [
    ([_via(400, 3, 5), _ev(401, "recv", 3, 5, "Metadata", 1), _ev(403, "recv", 4, 6, "Produce", 1)], True,
     "Metadata through the bootstrap address (broker 3) 390 ms after the old brokers stopped; Produce on broker 4 2 ms later"),
    ([_via(400, 3, 5), _ev(401, "recv", 3, 5, "Metadata", 1)], False, "but no Produce reached a new broker [3, 4]"),
    ([_via(7000, 3, 5), _ev(7001, "recv", 3, 5, "Metadata", 1), _ev(7003, "recv", 4, 6, "Produce", 1)], False,
     "6990 ms after the old brokers stopped: allowed 6000 ms"),
    # asking a known broker's address is not going back to bootstrap.servers
    ([_ev(401, "recv", 3, 5, "Metadata", 1), _ev(403, "recv", 4, 6, "Produce", 1)], False,
     "never asked for Metadata through the bootstrap address after the old brokers stopped at 11 ms"),
])
def test_found_through_bootstrap_judges_the_way_back_to_the_new_cluster(then, passed, says):
    v = found_through_bootstrap("Produce", 5000, late_ms=1000).check(Evidence([], MOVED + then, {}, client_id="c"))
    assert v.passed is passed and says in (v.figure + v.message), v
    unmoved = [e for e in MOVED if e.kind != "bootstrap_moved"] + then
    assert "never moved" in found_through_bootstrap("Produce", 5000, late_ms=1000).check(Evidence([], unmoved, {}, client_id="c")).figure


STARVING = [_via(0, 0, 1), _ev(1, "recv", 0, 1, "Metadata", 1), _ev(5, "recv", 1, 2, "Metadata", 2),
            _ev(5, "fault_applied", 1, 2, "Metadata", 2, action={"type": "black_hole"})]


@pytest.mark.parametrize("back_at, wakes_ms, passed, says", [
    (5006, 0.0, True, "Metadata through the bootstrap address 5001 ms after Metadata starved (trigger 5000 ms)"),
    (2005, 0.0, False, "before the trigger (at least 4750 ms)"),
    (9005, 0.0, False, "allowed at most 6000 ms"),
    (9005, 10_000.0, True, "9000 ms after"),   # a client that looks again only as the starved request times out
])
def test_rebootstraps_at_trigger_judges_when_the_client_comes_back(back_at, wakes_ms, passed, says):
    back = [_via(back_at, 0, 3), _ev(back_at, "recv", 0, 3, "Metadata", 1)]
    contract = rebootstraps_at_trigger(5000, early_ms=250, late_ms=1000, wakes_ms=wakes_ms)
    v = contract.check(Evidence([], STARVING + back, {}, client_id="c"))
    assert v.passed is passed and says in (v.figure + v.message), v
    # the same request on the connection it learnt of is not a rebootstrap
    v = contract.check(Evidence([], STARVING + [_ev(back_at, "recv", 1, 2, "Metadata", 3)], {}, client_id="c"))
    assert not v.passed and "never asked for Metadata through the bootstrap address" in v.message
    assert "never starved" in contract.check(Evidence([], STARVING[:-1] + back, {}, client_id="c")).figure


@pytest.mark.parametrize("scenario, contract", [
    ("rebootstrap.brokers-replaced", "the cluster found again through bootstrap.servers after every known broker was replaced"),
    ("rebootstrap.starved-trigger", "back to bootstrap.servers at metadata.recovery.rebootstrap.trigger.ms"),
    ("rebootstrap.no-brokers-some-topics", "back to bootstrap.servers at metadata.recovery.rebootstrap.trigger.ms"),
])
def test_with_strategy_none_our_client_never_comes_back_and_the_new_contracts_fail(scenario, contract):
    got = _contracts(scenario, Strategy("none"))
    assert got == {"produce outcome": Status.FAIL, contract: Status.FAIL}
