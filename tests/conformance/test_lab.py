"""`broker-emu lab`: each exercise runs its scenario in virtual time with the student's settings
and judges the prediction against what the run's timeline shows."""

import argparse

import pytest

from conformance.lab import BY_PAGE, LESSONS, Refused, lab_command, run, verdict

# what each lesson's page says happens with the exercise's own settings
EXPECTED = {
    ("server-vs-client-timeouts", 1): ("broker", 29.9),
    ("server-vs-client-timeouts", 2): ("client", 30.0),
    ("the-produce-race", 1): ("client", 30.0),
    ("kip19-disconnect-and-refresh", 1): ("nobody", None),
    ("a-records-life-kip91", 1): ("client", 120.0),
    ("kip266-deadlines", 1): ("client", 5.0),
    ("long-polls-and-joingroup", 1): ("nobody", 2.0),
    ("a-transactions-two-clocks", 1): ("broker", 10.0),
    ("kip848-broker-owned-timers", 1): ("broker", 50.0),
}


def test_every_lesson_has_exercises_and_each_gives_the_answer_its_page_teaches():
    seen = {(lesson.page, i) for lesson in LESSONS for i in range(1, len(lesson.exercises) + 1)}
    assert seen == set(EXPECTED)
    for (page, i), (winner, at_s) in EXPECTED.items():
        answer = run(BY_PAGE[page].exercises[i - 1], {})
        assert (answer.winner, answer.at_s) == (winner, at_s), (page, i, answer.said)


@pytest.mark.parametrize("page, overrides, winner, at_s", [
    ("server-vs-client-timeouts", {"request.timeout.ms": 20000}, "client", 20.0),   # the client's clock now shorter
    ("a-transactions-two-clocks", {"transaction.timeout.ms": 15000}, "nobody", None),  # committed before the check
    ("kip19-disconnect-and-refresh", {"fault.ms": 40000}, "client", 30.0),          # later than request.timeout.ms
    ("kip848-broker-owned-timers", {"broker.group.consumer.session.timeout.ms": 60000}, "broker", 65.0),
])
def test_a_setting_across_the_boundary_changes_the_answer(page, overrides, winner, at_s):
    answer = run(BY_PAGE[page].exercises[0], overrides)
    assert (answer.winner, answer.at_s) == (winner, at_s), answer.said


def test_a_refused_configuration_is_said_not_crashed():
    with pytest.raises(Refused, match=r"the client refuses these settings: delivery.timeout.ms \(1000\) must be at least"):
        run(BY_PAGE["a-records-life-kip91"].exercises[0], {"delivery.timeout.ms": 1000})


def test_verdict_checks_the_winner_and_the_instant():
    answer = run(BY_PAGE["the-produce-race"].exercises[0], {})
    assert verdict(answer, "broker", None)[0] is False
    assert verdict(answer, "client", 30.0)[0] is True
    assert verdict(answer, "client", 35.0) == (False, verdict(answer, "client", 35.0)[1])


def _args(*argv):
    from conformance.main import build_parser

    return build_parser().parse_args(["lab", *argv])


def test_the_command_asks_runs_and_judges(capsys):
    assert lab_command(_args("the-produce-race", "--predict", "broker")) == 0
    out = capsys.readouterr().out
    assert "request.timeout.ms = 30000" in out and "NOT QUITE you said broker" in out and "who gave up first:" in out
    answers = iter(["maybe", "client", "30"])
    assert lab_command(_args("the-produce-race", "--set", "request.timeout.ms=20000"), read=lambda _: next(answers),
                       interactive=True) == 0
    out = capsys.readouterr().out
    assert "request.timeout.ms = 20000 (yours)" in out
    assert "the right side, the wrong time" in out and "at 20.000 s (you said 30 s)" in out


def test_usage_errors_are_one_line_and_exit_2(capsys):
    assert lab_command(_args("the-produce-rase")) == 2
    assert "did you mean 'the-produce-race'?" in capsys.readouterr().err
    assert lab_command(_args("the-produce-race", "--set", "acks=0")) == 2
    assert "settings are request.timeout.ms, fault.ms, broker.replica.lag.time.max.ms, delivery.timeout.ms; not 'acks'" in (
        capsys.readouterr().err)
    assert lab_command(_args("the-produce-race", "--set", "fault.ms=-5")) == 2
    assert "fault.ms wants a whole number from 0 to 120000, got -5" in capsys.readouterr().err
    assert lab_command(_args("the-produce-race", "3")) == 2
    assert lab_command(_args("a-records-life-kip91", "--set", "delivery.timeout.ms=1000", "--predict", "client")) == 2
    assert "the client refuses these settings" in capsys.readouterr().out


def test_the_list_names_every_lesson(capsys):
    assert lab_command(argparse.Namespace(lesson=None)) == 0
    out = capsys.readouterr().out
    assert all(lesson.page in out for lesson in LESSONS)
