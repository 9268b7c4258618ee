"""Kafka's range assignor, the one home of the classic consumer's ``range`` (``client.assignors``)
and KIP-848's server-side ``range`` (``broker_emu.groups.server_assignors``)."""

from broker_emu.groups import server_assignors
from client.assignors import ASSIGNORS
from kafka_common.assignors import range_assign


def test_range_assigns_like_kafka():
    subs = {"m1": ["a", "b"], "m2": ["a"], "m3": ["a", "b"]}
    counts = {"a": 5, "b": 2}
    assert range_assign(subs, counts) == {"m1": {"a": [0, 1], "b": [0]}, "m2": {"a": [2, 3]}, "m3": {"a": [4], "b": [1]}}
    assert range_assign({"m": ["x"]}, {}) == {"m": {}}


def test_both_sides_run_the_one_range_assignor():
    subs = {"m1": frozenset({"a", "b"}), "m2": frozenset({"a"}), "m3": frozenset({"a", "b"})}
    counts = {"a": 5, "b": 2}
    assert ASSIGNORS["range"] is range_assign
    assert server_assignors.assign("range", subs, counts, {}) == {
        "m1": {"a": frozenset({0, 1}), "b": frozenset({0})}, "m2": {"a": frozenset({2, 3})},
        "m3": {"a": frozenset({4}), "b": frozenset({1})}}
