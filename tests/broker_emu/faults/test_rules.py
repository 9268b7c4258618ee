import pytest

from broker_emu.faults.engine import FaultEngine, RequestFacts
from broker_emu.faults.rules import FaultConfigError
from client.protocol import ApiKey


def facts(**kw):
    base = dict(broker=1, api_key=int(ApiKey.PRODUCE), api_version=9, client_id="x", connection=7,
                topics=frozenset({("t", 0)}))
    base.update(kw)
    return RequestFacts(**base)


def test_issue_example_rule_parses_and_round_trips():
    engine = FaultEngine(seed=1, brokers=[0, 1, 2])
    rule = engine.add({"match": {"broker": 1, "api": "Produce", "topic": "t", "client_id": "x"},
                       "action": {"type": "black_hole"}, "times": 3, "after": 2,
                       "probability": 0.5, "duration_ms": 1000}, now_ms=0)
    d = rule.to_dict()
    assert d["match"] == {"broker": 1, "api": "Produce", "topic": "t", "client_id": "x"}
    assert d["action"] == {"type": "black_hole"} and d["times"] == 3 and d["after"] == 2


@pytest.mark.parametrize("raw, field", [
    ({"action": {"type": "delay_request", "ms": -5}}, "action.ms"),
    ({"action": {"type": "black_hole"}, "probability": 1.5}, "probability"),
    ({"action": {"type": "black_hole"}, "match": {"broker": 9}}, "match.broker"),
    ({"action": {"type": "black_hole"}, "match": {"api": "Produse"}}, "match.api"),
    ({"action": {"type": "teleport"}}, "action.type"),
    ({"action": {"type": "error", "error": "NO_SUCH_ERROR"}}, "action.error"),
    ({"action": {"type": "delay_request"}}, "action.ms"),
    ({"action": {"type": "black_hole", "ms": 5}}, "action.ms"),
    ({"action": {"type": "black_hole"}, "times": 0}, "times"),
    ({"action": {"type": "black_hole"}, "colour": "red"}, "colour"),
    ({"match": {"broker": 1}}, "action"),
    ({"action": {"type": "black_hole"}, "match": {"topic": 5}}, "match.topic"),
])
def test_bad_rules_name_the_field_and_change_nothing(raw, field):
    engine = FaultEngine(brokers=[0, 1, 2])
    with pytest.raises(FaultConfigError) as info:
        engine.add(raw, now_ms=0)
    assert info.value.field == field
    assert engine.rules == {}


def test_error_by_name_or_code():
    engine = FaultEngine()
    a = engine.add({"action": {"type": "error", "error": "request_timed_out"}}, 0)
    b = engine.add({"action": {"type": "error", "error": 7}}, 0)
    assert a.action.error == b.action.error == 7


def test_after_and_times_count_matching_requests_only():
    engine = FaultEngine()
    engine.add({"match": {"api": "Produce"}, "action": "black_hole", "after": 2, "times": 2}, 0)
    other = facts(api_key=int(ApiKey.METADATA))
    outcomes = []
    for _ in range(6):
        assert engine.decide(other, 0).empty
        outcomes.append(engine.decide(facts(), 0).terminal is not None)
    assert outcomes == [False, False, True, True, False, False]


def test_schedule_window():
    engine = FaultEngine()
    engine.add({"action": {"type": "delay_response", "ms": 50}, "at_ms": 100, "duration_ms": 200}, now_ms=0)
    assert [engine.decide(facts(), t).delay_response_ms for t in (99, 100, 299.9, 300)] == [0, 50, 50, 0]


def test_probability_is_deterministic_per_seed_and_independent_of_other_rules():
    def run(seed, extra_rule):
        engine = FaultEngine(seed=seed)
        engine.add({"match": {"api": "Produce"}, "action": "black_hole", "probability": 0.3}, 0)
        if extra_rule:
            engine.add({"match": {"api": "Fetch"}, "action": "close_before", "probability": 0.5}, 0)
        return [engine.decide(facts(), 0).terminal is not None for _ in range(200)]

    first = run(7, False)
    assert first == run(7, False) == run(7, True)
    assert first != run(8, False)
    assert 30 <= sum(first) <= 90  # ~60 expected


def test_match_topic_and_partition():
    engine = FaultEngine()
    engine.add({"match": {"topic": "t", "partition": 1}, "action": "close_before"}, 0)
    assert engine.decide(facts(topics=frozenset({("t", 0)})), 0).empty
    assert not engine.decide(facts(topics=frozenset({("t", 0), ("t", 1)})), 0).empty
    assert engine.decide(facts(topics=frozenset({("u", 1)})), 0).empty


def test_delays_add_and_first_terminal_wins():
    engine = FaultEngine()
    engine.add({"action": {"type": "delay_request", "ms": 10}}, 0)
    engine.add({"action": {"type": "delay_request", "ms": 5}}, 0)
    engine.add({"action": {"type": "error", "error": "NOT_LEADER_OR_FOLLOWER"}}, 0)
    engine.add({"action": "black_hole"}, 0)
    d = engine.decide(facts(), 0)
    assert d.delay_request_ms == 15 and d.terminal.type == "error" and d.terminal.error == 6


def test_connection_rules_are_separate_from_request_rules():
    engine = FaultEngine()
    engine.add({"match": {"broker": 2}, "action": "refuse_connections", "times": 1}, 0)
    assert engine.decide(facts(broker=2), 0).empty
    assert engine.on_connect(1, 1, 0) == []
    assert [r.action.type for r in engine.on_connect(2, 2, 0)] == ["refuse_connections"]
    assert engine.on_connect(2, 3, 0) == []


def test_remove_and_clear():
    engine = FaultEngine()
    r = engine.add({"action": "black_hole"}, 0)
    engine.add({"action": "close_before"}, 0)
    assert engine.remove(r.id) and not engine.remove(r.id)
    assert engine.clear() == 1 and engine.decide(facts(), 0).empty
