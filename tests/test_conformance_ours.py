"""The conformance suite on our client (virtual time), and each contract shown to fail on a
deliberately broken variant, so no contract is vacuous."""

import pytest

from conformance.adapters.ours import OurAdapter
from conformance.model import Status
from conformance.runner import Plan, run_plan
from conformance.scenarios import BY_ID, CATALOGUE


def test_our_client_keeps_every_applicable_contract():
    results = run_plan(Plan(list(CATALOGUE), [OurAdapter()]))
    assert [r.scenario for r in results if r.status in (Status.FAIL, Status.ERROR)] == []
    passed = {r.scenario: r for r in results if r.status is Status.PASS}
    assert set(passed) >= {"kip19.produce-black-hole", "kip91.delivery-timeout-in-flight", "server.purgatory-request-timed-out"}
    assert passed["kip19.produce-black-hole"].figures["disconnect at request.timeout.ms after Produce"] == "disconnect at 30.00 s of 30.00 s"
    assert sum(r.simulated_s for r in results) > 200  # minutes of simulated time, in well under a second


class LateTimeout(OurAdapter):
    """Broken on purpose: its real request timeout is 1.5x what the scenario configured."""

    name = "broken-late-timeout"

    async def run(self, steps, env):
        env.config["request.timeout.ms"] = int(env.config.get("request.timeout.ms", 30000) * 1.5)
        env.config["delivery.timeout.ms"] = int(env.config.get("delivery.timeout.ms", 120000) * 1.5)
        return await super().run(steps, env)


class NoRetry(OurAdapter):
    name = "broken-no-retry"

    async def run(self, steps, env):
        env.config.update({"retries": 0, "enable.idempotence": False})
        return await super().run(steps, env)


@pytest.mark.parametrize("scenario, adapter, contract", [
    ("kip19.produce-black-hole", LateTimeout, "disconnect at request.timeout.ms after Produce"),
    ("kip91.delivery-timeout-in-flight", LateTimeout, "produce returns at its deadline"),
    ("kip19.produce-black-hole", NoRetry, "Metadata before Produce retry, on a new connection"),
    ("kip19.produce-black-hole", NoRetry, "produce outcome"),
    ("kip19.leader-move-during-black-hole", NoRetry, "Produce retried on the new leader"),
])
def test_contracts_fail_on_broken_clients(scenario, adapter, contract):
    result = run_plan(Plan([BY_ID[scenario]], [adapter()]))[0]
    statuses = {name: status for name, status, _ in result.contracts}
    assert statuses[contract] is Status.FAIL, result.contracts
    assert result.status is Status.FAIL


def test_the_throttle_contract_fails_on_a_client_that_ignores_throttle_time(monkeypatch):
    """The broker mutes a throttled connection itself (KIP-219), so the contract must judge when
    the next request *arrived*, not when the muted broker read it — else it could not fail."""
    from client.transport import BrokerConnection

    monkeypatch.setattr(BrokerConnection, "throttled_until", property(lambda self: 0.0, lambda self, value: None),
                        raising=False)
    result = run_plan(Plan([BY_ID["server.throttle-honoured"]], [OurAdapter()]))[0]
    statuses = {name: status for name, status, _ in result.contracts}
    assert statuses["Produce throttle honoured"] is Status.FAIL, result.contracts
