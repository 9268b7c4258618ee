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


def test_a_read_cycle_is_witnessed_by_its_sends_polls_and_commits():
    history, _ = build("read_cycle")
    result = check(history)
    (anomaly,) = result.anomalies["G1c"]
    assert anomaly.what == "ta txn 1 -wr t-0-> tb txn 1 -wr t-1-> ta txn 1"
    assert sorted((op.process, op.f, op.type) for op in anomaly.ops) == sorted(
        [(p, "send", t) for p in ("ta", "tb") for t in ("invoke", "ok")]
        + [(p, "poll", "ok") for p in ("ta", "tb")] + [(p, "commit_txn", "ok") for p in ("ta", "tb")])
    assert result.named() == ["uncommitted-read", "G1c"]


def test_a_write_cycle_is_named_but_is_no_anomaly():
    history, _ = build("write_cycle")
    result = check(history)
    (cycle,) = result.informational["G0"]
    assert cycle.what == "ta txn 1 -ww t-0-> tb txn 1 -ww t-1-> ta txn 1"
    assert result.named() == [] and result.bad() == 0
    assert judged_anomalies() == ANOMALIES and "G0" not in ANOMALIES


def test_cycles_are_found_from_their_smallest_transaction_only_once():
    from conformance.chaos import cycles

    g = cycles.Graph()
    for n in (10, 20, 30):
        g.commits[n] = None   # type: ignore[assignment]
    for src, dst, kind in ((10, 20, "wr"), (20, 30, "wr"), (30, 10, "wr"), (20, 10, "ww"), (30, 20, "wr")):
        g.link(src, dst, kind, ("t", 0), [])
    found = sorted((c.kind, c.nodes) for c in cycles.cycles(g))
    # 10->20->10 (wr, ww) is the shortest mixed one through 10; 20->30->20 the wr-only one through 20
    assert found == [("G1c", (10, 20, 30, 10)), ("G1c", (20, 30, 20)), ("G1c-ww", (10, 20, 10))]
