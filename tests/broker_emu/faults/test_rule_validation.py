"""The rule model refuses the same bad values from every front. Python
(``faults.add`` with a dict or a ``Rule``) and scenario files go through the checks the control
API uses; the HTTP side is tests/broker_emu/control/test_killer_requests.py."""

import math

import pytest

from broker_emu.faults.engine import MAX_RULES, FaultEngine
from broker_emu.faults.rules import MAX_MS, Action, FaultConfigError, Match, Rule, parse_replication
from broker_emu.faults.scenario_file import load_scenario

BAD_NUMBERS = [math.nan, math.inf, -math.inf, float("1e309"), 10**400, MAX_MS + 1, -1, True, "5"]
DURATION_RULES = [
    (lambda v: {"action": {"type": "delay_request", "ms": v}}, "action.ms"),
    (lambda v: {"action": {"type": "delay_response", "ms": v}}, "action.ms"),
    (lambda v: {"action": {"type": "throttle", "ms": v}}, "action.ms"),
    (lambda v: {"action": {"type": "slow_accept", "ms": v}}, "action.ms"),
    (lambda v: {"action": "black_hole", "duration_ms": v}, "duration_ms"),
    (lambda v: {"action": "black_hole", "at_ms": v}, "at_ms"),
]


@pytest.mark.parametrize("value", BAD_NUMBERS, ids=repr)
@pytest.mark.parametrize("make, field", DURATION_RULES, ids=["delay_request", "delay_response", "throttle",
                                                               "slow_accept", "duration_ms", "at_ms"])
def test_python_dicts_refuse_bad_durations(make, field, value):
    engine = FaultEngine(brokers=[0, 1, 2])
    with pytest.raises(FaultConfigError) as info:
        engine.add(make(value), 0)
    assert info.value.field == field
    assert engine.rules == {}


@pytest.mark.parametrize("rule, field", [
    ({"action": {"type": []}}, "action.type"),
    ({"action": {"type": {"a": 1}}}, "action.type"),
    ({"action": {"type": "error", "error": "--1"}}, "action.error"),
    ({"action": {"type": "error", "error": "1" * 5000}}, "action.error"),
    ({"action": {"type": "error", "error": 40000}}, "action.error"),
    ({"action": {"type": "error"}}, "action.error"),
    ({"action": {"type": "error", "error": None}}, "action.error"),
    ({"action": {"type": "delay_request"}}, "action.ms"),
    ({"action": {"type": "delay_request", "ms": None}}, "action.ms"),
    ({"action": []}, "action"),
    ({"action": "black_hole", "probability": math.nan}, "probability"),
    ({"action": "black_hole", "times": 0}, "times"),
    ({"action": "black_hole", "times": 2**63}, "times"),
    ({"action": "black_hole", "name": ["x"]}, "name"),
    ({"action": "black_hole", "match": {"topic": 5}}, "match.topic"),
    ({"action": "black_hole", "match": {"api_version": 2**15}}, "match.api_version"),
    ({"action": "black_hole", "match": {"partition": -1}}, "match.partition"),
    ({"action": "black_hole", "match": {"api": [1]}}, "match.api"),
])
def test_python_dicts_refuse_bad_values(rule, field):
    with pytest.raises(FaultConfigError) as info:
        FaultEngine(brokers=[0, 1, 2]).add(rule, 0)
    assert info.value.field == field


def test_error_codes_by_name_or_int16_code():
    engine = FaultEngine()
    assert engine.add({"action": {"type": "error", "error": "-1"}}, 0).action.error == -1
    assert engine.add({"action": {"type": "error", "error": "request_timed_out"}}, 0).action.error == 7
    assert engine.add({"action": {"type": "error", "error": -32768}}, 0).action.error == -32768


@pytest.mark.parametrize("rule, field", [
    (Rule(0, Match(), Action("throttle", math.inf)), "action.ms"),
    (Rule(0, Match(), Action("delay_request", math.nan)), "action.ms"),
    (Rule(0, Match(), Action("nope")), "action.type"),
    (Rule(0, Match(broker=9), Action("black_hole")), "match.broker"),
    (Rule(0, Match(), Action("error", error=1 << 20)), "action.error"),
    (Rule(0, Match(), Action("black_hole"), duration_ms=math.nan), "duration_ms"),
    (Rule(0, Match(), Action("black_hole"), probability=math.nan), "probability"),
])
def test_rule_objects_from_python_are_checked_too(rule, field):
    engine = FaultEngine(brokers=[0, 1, 2])
    with pytest.raises(FaultConfigError) as info:
        engine.add(rule, 0)
    assert info.value.field == field and engine.rules == {}


def test_a_good_rule_object_is_kept_as_is():
    engine = FaultEngine(brokers=[0, 1, 2])
    rule = Rule(0, Match(broker=1, api=0), Action("throttle", 50.0), times=2)
    assert engine.add(rule, 0) is rule and rule.id == 1


def test_rule_count_is_bounded():
    engine = FaultEngine()
    for _ in range(MAX_RULES):
        engine.add({"action": "black_hole"}, 0)
    with pytest.raises(FaultConfigError, match="remove some first"):
        engine.add({"action": "black_hole"}, 0)


@pytest.mark.parametrize("raw, field", [
    ({"mode": "lag", "lag_ms": math.nan}, "lag_ms"),
    ({"mode": "lag", "lag_ms": math.inf}, "lag_ms"),
    ({"mode": "lag", "lag_ms": 0}, "lag_ms"),
    ({"mode": ["stall"]}, "mode"),
    ({"mode": "stall", "partition": 0}, "partition"),
    ({"mode": "stall", "topic": 3}, "topic"),
    ({"mode": "stall", "follower": 7}, "follower"),
    ({"mode": "stall", "colour": 7}, "colour"),
])
def test_replication_commands(raw, field):
    with pytest.raises(FaultConfigError) as info:
        parse_replication(raw, brokers={0, 1, 2})
    assert info.value.field == field


@pytest.mark.parametrize("text, field", [
    ("events: [{at_ms: .nan, stop_broker: 1}]", "events[0].at_ms"),
    ("events: [{at_ms: .inf, stop_broker: 1}]", "events[0].at_ms"),
    ("events: [{stop_broker: []}]", "events[0].stop_broker"),      # was a TypeError: unhashable list
    ("events: [{replication: {mode: lag, lag_ms: .nan}}]", "events[0].replication.lag_ms"),
    ("events: [{replication: {mode: lag, lag_ms: .inf}}]", "events[0].replication.lag_ms"),
    ("events: [{replication: {mode: stall, follower: []}}]", "events[0].replication.follower"),
    ("events: [{move_leader: {topic: t, partition: x, broker: 1}}]", "events[0].move_leader.partition"),
    ("events: [{move_leader: {topic: t, partition: 0, broker: [1]}}]", "events[0].move_leader.broker"),
    ("faults: [{action: {type: throttle, ms: .inf}}]", "faults[0].action.ms"),
    ("faults: [{action: {type: []}}]", "faults[0].action.type"),
    ("faults: [{action: {type: error}}]", "faults[0].action.error"),
    ("faults: 5", "faults"),                                          # was a TypeError: int not iterable
    ("events: {a: 1}", "events"),
    ("topics: [{name: t, partitions: true}]", "topics[0].partitions"),
    ("topics: [{name: t, partitions: 100000000}]", "topics[0].partitions"),
    ("brokers: 1000000", "brokers"),
    ("faults: " + "[" * 100_000 + "]" * 100_000, "yaml"),               # RecursionError in the composer
])
def test_scenario_files_refuse_the_same_values(text, field):
    with pytest.raises(FaultConfigError) as info:
        load_scenario(text)
    assert info.value.field == field


async def test_set_replication_from_python_refuses_nan_infinity_and_unknown_modes(autojump_clock):
    import math

    import pytest

    from broker_emu.faults.rules import FaultConfigError
    from broker_emu.runtime import open_cluster

    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        for bad in (math.nan, math.inf, -1.0, 1e309):
            with pytest.raises(FaultConfigError, match="lag_ms"):
                cluster.set_replication("t", 0, None, "lag", bad)
        with pytest.raises(FaultConfigError, match="mode"):
            cluster.set_replication("t", 0, None, "sideways", 0)
        cluster.set_replication("t", 0, None, "lag", 250)   # a good one still works
