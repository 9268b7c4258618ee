"""judge(): a contract about a setting the client lacks is N/A, the rest still decide."""

from conformance import contracts as C
from conformance.adapters.go_clients import SaramaAdapter
from conformance.judging import judge
from conformance.model import Evidence, Outcome, Scenario, Status
from conformance.scenarios_security import SECURITY_SCENARIOS

LACKS = {"delivery.timeout.ms": "no delivery.timeout.ms here"}


def scenario(*contracts):
    return Scenario(id="s", family="f", title="t", teaching="", references=(), steps=(), contracts=contracts)


def evidence(elapsed_s, error="TimeoutException"):
    return Evidence([Outcome("produce", False, elapsed_s, error)], [], {"delivery.timeout.ms": 4000.0})


def test_returns_within_names_the_setting_it_holds_the_client_to():
    assert C.returns_within("produce", "delivery.timeout.ms").setting == "delivery.timeout.ms"
    assert C.returns_within("committed", "timeout").setting is None    # the call's own deadline
    assert C.returns_within("produce", "fault.ms").setting is None     # the broker's delay
    assert C.returns_within("produce", 1000).setting is None


def test_a_contract_about_a_lacking_setting_is_na_and_the_others_decide():
    s = scenario(C.outcome_is("produce", error="TimeoutException"), C.returns_within("produce", "delivery.timeout.ms"))
    late = evidence(6.0)   # 2 s past the 4 s delivery timeout
    assert judge(s, "x", late).status is Status.FAIL
    result = judge(s, "x", late, LACKS)
    assert result.status is Status.PASS
    assert result.contracts[1] == ("produce returns at its deadline", Status.NA, "no delivery.timeout.ms here")
    wrong_error = evidence(6.0, error="KafkaError")
    assert judge(s, "x", wrong_error, LACKS).status is Status.FAIL   # what remains still fails


def test_every_contract_na_makes_the_result_na():
    result = judge(scenario(C.returns_within("produce", "delivery.timeout.ms")), "x", evidence(6.0), LACKS)
    assert result.status is Status.NA and result.message == "no delivery.timeout.ms here"


def test_sarama_is_not_held_to_a_delivery_timeout_in_the_stalled_handshake():
    """The cell flipped with how many 1 s handshakes fitted before sarama's retries ran out (4-6 s
    against a 4 s delivery.timeout.ms sarama does not have); the setup timeout still judges it."""
    stall = next(s for s in SECURITY_SCENARIOS if s.id == "security.sasl-handshake-stall")
    ev = evidence(6.03)
    ev.config.update({"socket.connection.setup.timeout.ms": 1000.0, "socket.connection.setup.timeout.max.ms": 2000.0})
    result = judge(stall, "sarama", ev, SaramaAdapter.lacks)
    statuses = dict((name, status) for name, status, _ in result.contracts)
    assert statuses["produce returns at its deadline"] is Status.NA
    assert statuses["a stalled SASL handshake is abandoned at the connection setup timeout"] is Status.FAIL  # judged: no trace here
