"""The history checker (conformance/chaos/checker.py) on hand-made histories
(tests/conformance/chaos/chaos_scripts.py): each of Jepsen's Kafka anomalies it names, with its witness,
and the histories that must not trip it."""

import pytest

from conformance.chaos.checker import ANOMALIES, check, judged_anomalies
from tests.conformance.chaos.chaos_scripts import SCENARIOS, Script, build


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_scenario_names_exactly_its_anomalies(name):
    history, expected = build(name)
    assert {kind: n for kind, n in check(history).counts().items() if n} == expected


def test_a_lost_write_is_witnessed_by_its_send_and_the_poll_that_read_past_it():
    s = Script()
    s.assign()
    s.send("a", 0)
    lost = s.send("b", 1)
    s.send("c", 2)
    s.poll((0, "a"))
    furthest = s.poll((2, "c"))
    (anomaly,) = check(s.h).anomalies["lost-write"]
    assert [op.index for op in anomaly.ops] == [lost.invoke, lost.index, furthest.index]
    assert "b'b' acknowledged at offset 1" in anomaly.what
    assert anomaly.as_dict()["witness"][1].endswith("p ok send t-0 @1 b'b'")


def test_an_aborted_read_is_witnessed_by_the_send_the_abort_and_the_poll():
    history, _ = build("aborted_read")
    (anomaly,) = check(history).anomalies["aborted-read"]
    assert [(op.f, op.type) for op in anomaly.ops] == [("send", "invoke"), ("send", "ok"), ("abort_txn", "ok"),
                                                       ("poll", "ok")]


def test_two_values_at_one_offset_name_both_claims():
    history, _ = build("two_values_at_one_offset")
    (anomaly,) = check(history).anomalies["inconsistent-offsets"]
    assert "offset 0 holds [b'a', b'b']" in anomaly.what
    assert {op.process for op in anomaly.ops} == {"p1", "p2", "c"}


@pytest.mark.parametrize("acks, idempotence, expected", [
    ("all", True, ANOMALIES),
    ("1", False, ("poll-skip", "nonmonotonic-poll", "aborted-read", "uncommitted-read", "fenced-write", "G1c")),
    ("all", False, tuple(k for k in ANOMALIES if k != "duplicate")),
])
def test_what_the_producers_settings_promise_is_judged(acks, idempotence, expected):
    assert judged_anomalies(acks, idempotence) == expected
