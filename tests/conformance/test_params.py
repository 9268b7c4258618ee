"""Parameter overrides (campaigns, --replay): the scenario changes, the catalogue does not, and
contracts that name a config key follow the override."""

import pytest

from conformance.adapters.ours import OurAdapter
from conformance.model import Status
from conformance.params import ParamError, apply_params, parse_param
from conformance.scenarios import BY_ID
from conformance.virtual import run_virtual_time


def test_overrides_reach_client_broker_faults_and_steps():
    base = BY_ID["kip266.committed-coordinator-black-hole"]
    s = apply_params(base, {"request.timeout.ms": 7000, "broker.replica.lag.time.max.ms": 5, "timeout.ms": 2500,
                            "fault.probability": 0.5, "fault.times": 2}, seed=9)
    assert s.client_config["request.timeout.ms"] == 7000
    assert s.broker_config == {"replica.lag.time.max.ms": 5, "emu.seed": 9}
    assert s.steps[0].timeout_s == 2.5
    assert s.faults[0]["probability"] == 0.5 and s.faults[0]["times"] == 2
    assert base.client_config["request.timeout.ms"] == 30_000 and base.steps[0].timeout_s == 5.0 and not base.broker_config


def test_fault_delay_override_and_unknown_key():
    s = apply_params(BY_ID["kip19.slow-broker-no-reconnect"], {"fault.ms": 1234})
    assert s.faults[0]["action"] == {"type": "delay_response", "ms": 1234}
    with pytest.raises(ParamError):
        apply_params(s, {"bogus": 1})
    assert parse_param("linger.ms=5") == ("linger.ms", 5)


def test_contracts_follow_an_overridden_request_timeout():
    # the disconnect is expected at the overridden 10 s, not the catalogue's 30 s
    s = apply_params(BY_ID["kip19.produce-black-hole"], {"request.timeout.ms": 10_000}, seed=1)
    result = run_virtual_time(s, OurAdapter())
    assert result.status is Status.PASS, result.message
    assert "disconnect at 10.00 s of 10.00 s" in result.figures["disconnect at request.timeout.ms after Produce"]


def test_a_slow_broker_past_the_request_timeout_fails_the_no_reconnect_contract():
    s = apply_params(BY_ID["kip19.slow-broker-no-reconnect"], {"request.timeout.ms": 10_000})
    result = run_virtual_time(s, OurAdapter())
    assert result.status is Status.FAIL and "abandoned" in result.message
