"""The checker checked, in virtual time: each planted bug (broker_emu/plants.py) is named by the
history checker in every seed where it acted, and with nothing planted the same seeds name
nothing (docs/chaos.md has the table over 100 seeds: ``broker-emu chaos --plant all``)."""

import pytest

from conformance.chaos.mutation import EXPECTED, Row, table
from conformance.chaos.ours import run_seed

SEEDS = range(4)


@pytest.fixture(scope="module")
def clean():
    return [run_seed(seed, txn=True) for seed in SEEDS]


def test_nothing_planted_nothing_named(clean):
    assert [r.check.named() for r in clean] == [[]] * len(SEEDS)
    assert not any(r.bad() for r in clean)
    ops = [op for r in clean for op in r.history.ops]
    assert {op.f for op in ops} >= {"send", "poll", "commit", "begin", "commit_txn", "abort_txn", "assign"}


@pytest.mark.parametrize("plant", sorted(EXPECTED))
def test_each_planted_bug_is_named_wherever_it_acted(plant):
    results = [run_seed(seed, txn=True, plant=plant) for seed in SEEDS]
    fired = [r for r in results if r.plant_log]
    assert len(fired) >= (1 if plant == "dup-retry" else len(SEEDS))    # a retry must happen first
    for r in fired:
        named = [kind for kind in EXPECTED[plant] if kind in r.check.named()]
        assert named, (r.seed, r.plant_log, r.check.counts())
        assert r.bad()                                                  # the exit status says so too
        (first,) = [a for a in r.check.anomalies[named[0]][:1]]
        assert first.ops and all(op.index < len(r.history.ops) for op in first.ops)   # a witness
    for r in results:
        if not r.plant_log:
            assert r.check.named() == []


def test_the_old_counters_miss_the_aborted_read_the_checker_names():
    r = run_seed(0, txn=True, plant="aborted-read")
    # the aborted record one read_committed consumer was shown enters the version order, so another
    # that rightly skipped it reads as a poll-skip: a knock-on of the same bug
    assert r.plant_log and "aborted-read" in r.check.named() and set(r.check.named()) <= {"aborted-read", "poll-skip"}
    assert r.accounting.bad(r.judged) == 0 and r.consumer["consumer_wrong"] == 0


def test_the_table_reports_fired_named_and_the_clean_rows():
    none, planted = Row("", True), Row("dup-retry", True)
    r = run_seed(0, txn=True, plant="dup-retry")
    none.add(run_seed(0, txn=True))
    planted.add(r)
    text = table([none, planted], "broker-emu chaos --plant all --seeds 1")
    assert "| none | default + txn | 1 | — | — | **0** |" in text
    assert f"| `dup-retry` | default + txn | 1 | {planted.fired} | **{planted.named}/{planted.fired}** (duplicate)" in text
    assert none.passed() and planted.passed() == bool(r.plant_log)
