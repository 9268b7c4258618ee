import pytest
import trio

from broker_emu.faults.rules import FaultConfigError
from broker_emu.faults.scenario_file import load_scenario, run_events

GOOD = """
seed: 7
topics:
  - {name: orders, partitions: 3, replication_factor: 3}
config: {replica.lag.time.max.ms: 10000}
faults:
  - match: {broker: 1, api: Produce}
    action: {type: black_hole}
    times: 1
events:
  - {at_ms: 5000, stop_broker: 1}
  - {at_ms: 0, replication: {topic: orders, mode: stall}}
  - {at_ms: 6000, move_leader: {topic: orders, partition: 0, broker: 2}}
"""


def test_good_file_parses_and_sorts_events():
    s = load_scenario(GOOD)
    assert s.seed == 7 and s.topics == [("orders", 3, 3)] and s.config == {"replica.lag.time.max.ms": 10000}
    assert [e.verb for e in s.events] == ["replication", "stop_broker", "move_leader"]


@pytest.mark.parametrize("text, field", [
    ("seed: x", "seed"),
    ("colour: red", "colour"),
    ("faults: [{action: {type: delay_request, ms: -3}}]", "faults[0].action.ms"),
    ("events: [{at_ms: 1, stop_broker: 7}]", "events[0].stop_broker"),
    ("events: [{at_ms: 1, move_leader: {topic: t, partition: 0}}]", "events[0].move_leader.broker"),
    ("events: [{at_ms: 1, replication: {mode: lag}}]", "events[0].replication.lag_ms"),
    ("topics: [{name: t, replication_factor: 5}]", "topics[0].replication_factor"),
    ("faults: [{action: black_hole}\n  bad", "yaml"),
])
def test_bad_files_name_the_path(text, field):
    with pytest.raises(FaultConfigError) as info:
        load_scenario(text)
    assert info.value.field == field


class Recorder:
    def __init__(self):
        self.start = trio.current_time()
        self.calls = []

    def now_ms(self):
        return (trio.current_time() - self.start) * 1000

    async def stop_broker(self, b):
        self.calls.append((self.now_ms(), "stop", b))

    async def start_broker(self, b):
        self.calls.append((self.now_ms(), "start", b))

    def move_leader(self, t, p, b):
        self.calls.append((self.now_ms(), "leader", t, p, b))

    def set_replication(self, t, p, f, mode, lag):
        self.calls.append((self.now_ms(), "replication", t, mode))


async def test_events_play_at_their_times(autojump_clock):
    r = Recorder()
    await run_events(r, load_scenario(GOOD).events)
    assert r.calls == [(0, "replication", "orders", "stall"), (5000, "stop", 1), (6000, "leader", "orders", 0, 2)]


def test_named_faults_in_a_scenario_file_are_the_rules_they_stand_for():
    s = load_scenario("""
faults:
  - latency: {api: Fetch, ms: 200, jitter_ms: 50, count: 3}
  - slow-close: {ms: 100, broker: 2}
  - black-hole:
  - error: {error: NOT_LEADER_OR_FOLLOWER, topic: orders, probability: 0.25}
""")
    assert s.faults == [
        {"action": {"type": "delay_request", "ms": 200, "jitter_ms": 50}, "name": "latency", "match": {"api": "Fetch"}, "times": 3},
        {"action": {"type": "slow_close", "ms": 100}, "name": "slow-close", "match": {"broker": 2}},
        {"action": {"type": "black_hole"}, "name": "black-hole"},
        {"action": {"type": "error", "error": "NOT_LEADER_OR_FOLLOWER"}, "name": "error", "match": {"topic": "orders"},
         "probability": 0.25}]


@pytest.mark.parametrize("text, message", [
    ("faults:\n  - latency: {ms: 1, jiter_ms: 2}", "faults[0].latency.jiter_ms: not an argument of latency (did you mean 'jitter_ms'?)"),
    ("faults:\n  - latency: {jitter_ms: 2}", "faults[0].latency.ms: latency needs ms"),
    ("faults:\n  - latency: [1]", "faults[0].latency: expected a mapping of arguments"),
    ("faults:\n  - timeout: {ms: -1}", "faults[0].action.close_ms: must not be negative"),
    ("faults:\n  - error: {error: NOT_LEADER}", "did you mean 'NOT_LEADER_OR_FOLLOWER'?"),
])
def test_bad_named_faults_in_a_scenario_file_name_the_field(text, message):
    with pytest.raises(FaultConfigError) as caught:
        load_scenario(text)
    assert message in str(caught.value)
