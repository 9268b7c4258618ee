"""`broker-emu lab LESSON`: the course's exercises. Each asks "with these settings, who gives up
first, and when?", takes the student's prediction, runs the lesson's scenario with our client in
virtual time with the student's settings (a 120 s timeout takes a fraction of a second), draws
the timeline and says whether the prediction held, and why.

The settings an exercise offers, their bounds and their defaults are the console playground's for
the same scenario (conformance/playground.py, one home for both); any of them may be changed with
``--set KEY=VALUE``. Who gave up first comes from the run's own timeline (explain.py's
attribution), never from a formula here, so an exercise cannot teach something the run did not do.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

WINNERS = ("client", "broker", "nobody")


@dataclass(frozen=True)
class Exercise:
    scenario: str              # one of the playground's (its settings are the exercise's)
    question: str
    why: str                   # what decides the winner, shown with the answer
    # "first": who gives up first, and when (the timeline's "who gave up first"); "call": who
    # ends the application's call, and when: its own clock (client), the broker's error
    # (broker), or nobody (it returns)
    asks: str = "first"


@dataclass(frozen=True)
class Lesson:
    page: str
    title: str
    exercises: tuple[Exercise, ...] = field(default_factory=tuple)


_RACE = ("The broker's clock is the request's timeout_ms, started after the append; the client's is its own request "
         "timeout, started at the send. Our client (like Java's) sends request.timeout.ms as timeout_ms, so its clock "
         "is never the longer one and starts first: the client wins, by the delay before the append.")
LESSONS: tuple[Lesson, ...] = (
    Lesson("server-vs-client-timeouts", "Server-side and client-side timeouts", (
        Exercise("admin.delete-records-purgatory",
                 "delete_records() waits in the broker's purgatory for a follower that stopped copying. Who gives up "
                 "first, and when?",
                 "Whichever clock is shorter: the broker's is the call's time left less 100 ms, the client's is "
                 "min(request.timeout.ms, time left)."),
        Exercise("kip19.produce-black-hole",
                 "The broker never answers the Produce. Who gives up first, and when?",
                 "A black hole has no server-side clock: only the client's request.timeout.ms can fire (KIP-19)."),
    )),
    Lesson("the-produce-race", "The produce race", (
        Exercise("server.purgatory-request-timed-out",
                 "acks=all, followers stalled: the Produce waits in the purgatory. Who gives up first, and when?",
                 _RACE),
    )),
    Lesson("kip19-disconnect-and-refresh", "KIP-19: the request timeout", (
        Exercise("kip19.slow-broker-no-reconnect",
                 "The broker answers the Produce late but answers. Does anyone give up, and when?",
                 "The client gives up only if the answer is later than request.timeout.ms; a slow broker is not a dead one."),
    )),
    Lesson("a-records-life-kip91", "A record's life under KIP-91", (
        Exercise("kip91.delivery-timeout-in-flight",
                 "Every Produce is black-holed and the producer retries. Whose clock ends send(), and when?",
                 "delivery.timeout.ms ends the record's life wherever it is, even mid-attempt; it must be at least "
                 "linger.ms + request.timeout.ms, or the producer refuses the configuration.", asks="call"),
    )),
    Lesson("kip266-deadlines", "KIP-266: deadlines", (
        Exercise("kip266.retries-shrink-to-time-left",
                 "committed(timeout) against a coordinator that never answers. Whose clock ends the call, and when?",
                 "Each attempt gets min(time left, request.timeout.ms): the call ends at its own deadline, exactly.",
                 asks="call"),
    )),
    Lesson("long-polls-and-joingroup", "Waits that are not failures", (
        Exercise("kip266.poll-empty-at-deadline",
                 "poll(timeout) on an empty partition. Whose clock ends the call, and when?",
                 "A long poll is not a timeout and poll never raises one: it returns what it has at its deadline "
                 "(nobody gives up; the call returns).", asks="call"),
    )),
    Lesson("a-transactions-two-clocks", "A transaction's two clocks", (
        Exercise("txn.coordinator-aborts-at-check-interval",
                 "A transaction is left open for 12 s. Who gives up first, and when?",
                 "The coordinator aborts at its first check after transaction.timeout.ms; if the producer commits "
                 "before that check, nobody gives up."),
    )),
    Lesson("kip848-broker-owned-timers", "Who owns the group's clocks", (
        Exercise("kip848.crashed-member-expires-at-broker-session",
                 "A member crashes after its last heartbeat at 5 s. Who gives up on it, and when?",
                 "Under KIP-848 the session is the broker's: last heartbeat + group.consumer.session.timeout.ms."),
    )),
)
BY_PAGE = {lesson.page: lesson for lesson in LESSONS}


@dataclass
class Answer:
    winner: str          # client | broker | nobody
    at_s: float | None
    said: str            # the timeline's "who gave up first" sentence
    text: str            # the timeline as text


class Refused(ValueError):
    """The client or the broker refused the settings (a configuration check, as Kafka's)."""


def settings(exercise: Exercise) -> tuple[Any, ...]:
    """The exercise's settings: the playground's for its scenario (key, label, bounds)."""
    from conformance.playground import PLAYGROUND

    return PLAYGROUND[exercise.scenario][0]


def defaults(exercise: Exercise) -> dict[str, Any]:
    """The scenario's own value of each setting (Kafka's default where it says nothing)."""
    from conformance.playground import default
    from conformance.scenarios import BY_ID

    return {x.key: default(BY_ID[exercise.scenario], x.key) for x in settings(exercise)}


def run(exercise: Exercise, overrides: dict[str, Any]) -> Answer:
    """Run the exercise's scenario with ``overrides`` in virtual time and read who gave up first
    (or who ended the call) from its timeline."""
    from conformance.explain import explain, render_text
    from conformance.params import apply_params
    from conformance.playground import refusal, winner
    from conformance.scenarios import BY_ID

    scenario = apply_params(BY_ID[exercise.scenario], overrides)
    try:
        _, spans, marks = explain(scenario)
    except BaseException as exc:   # a refused configuration ends the run inside trio's nursery
        refused = refusal(exc)
        if refused is None:
            raise
        raise Refused(refused) from exc
    text = render_text(f"{scenario.id} with {_shown(overrides) or 'its own settings'}", spans, marks)
    if exercise.asks == "call":
        call = [sp for sp in spans if sp.lane == "application"][-1]
        who = "nobody" if call.kind == "ok" else "client" if call.clock else "broker"
        return Answer(who, call.end / 1000, call.label, text)
    first = next((m for m in marks if m.lane == "who gave up first"), None)
    if first is None:
        return Answer("nobody", None, "nobody gave up: every clock was stopped by an answer in time", text)
    return Answer(winner(spans), first.t / 1000, first.label, text)


def _shown(overrides: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in overrides.items())


def verdict(answer: Answer, winner: str, at_s: float | None) -> tuple[bool, str]:
    """Whether the prediction held (the winner, and the instant within 2 % or 50 ms if given)."""
    if winner != answer.winner:
        return False, f"you said {winner}, but {answer.said}"
    if at_s is None or answer.at_s is None:
        return True, f"right: {answer.said}" + (f" (at {answer.at_s:.3f} s)" if answer.at_s is not None else "")
    close = abs(at_s - answer.at_s) <= max(0.05, 0.02 * answer.at_s)
    return close, (f"{'right' if close else 'the right side, the wrong time'}: {answer.said}, at "
                   f"{answer.at_s:.3f} s (you said {at_s:g} s)")


def ask(prompt: str, read: Callable[[str], str] = input) -> str:
    return read(prompt).strip().lower()


def add_lab(sub: Any) -> None:
    lab = sub.add_parser("lab", help="the course's exercises: predict who gives up first, then run it (virtual time)")
    lab.add_argument("lesson", nargs="?", help="a lesson (see `broker-emu lab` for the list)")
    lab.add_argument("exercise", nargs="?", type=int, default=1, help="the exercise's number in the lesson (default 1)")
    lab.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="change one of the exercise's settings")
    lab.add_argument("--predict", choices=WINNERS, help="who gives up first (asked for when omitted on a terminal)")
    lab.add_argument("--at", type=float, metavar="SECONDS", help="and when, in seconds from the start")
    lab.set_defaults(func=lab_command)


def _list() -> int:
    for n, lesson in enumerate(LESSONS, 1):
        print(f"{n}. {lesson.page:<30} {lesson.title}")
        for i, ex in enumerate(lesson.exercises, 1):
            print(f"     broker-emu lab {lesson.page} {i}    {ex.question}")
    return 0


def _usage(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _pick(args: argparse.Namespace) -> tuple[Exercise, dict[str, Any]] | str:
    """The exercise and the student's overrides, or what is wrong with the command line."""
    import difflib

    from conformance.params import ParamError, parse_param

    lesson = BY_PAGE.get(args.lesson)
    if lesson is None:
        close = difflib.get_close_matches(args.lesson, BY_PAGE, n=1)
        return f"no lesson {args.lesson!r}" + (f"; did you mean {close[0]!r}?" if close else "; see `broker-emu lab`")
    if not 1 <= args.exercise <= len(lesson.exercises):
        return f"lesson {lesson.page} has exercises 1 to {len(lesson.exercises)}"
    ex = lesson.exercises[args.exercise - 1]
    overrides: dict[str, Any] = {}
    for text in args.set:
        try:
            key, value = parse_param(text)
        except ParamError as exc:
            return str(exc)
        allowed = {x.key: x for x in settings(ex)}
        if key not in allowed:
            return f"this exercise's settings are {', '.join(allowed)}; not {key!r}"
        x = allowed[key]
        if not isinstance(value, int) or isinstance(value, bool) or not x.minimum <= value <= x.maximum:
            return f"{key} wants a whole number from {x.minimum} to {x.maximum}, got {value!r}"
        overrides[key] = value
    return ex, overrides


def lab_command(args: argparse.Namespace, read: Callable[[str], str] = input, interactive: bool | None = None) -> int:
    if not args.lesson:
        return _list()
    picked = _pick(args)
    if isinstance(picked, str):
        return _usage(picked)
    ex, overrides = picked
    now = {**defaults(ex), **overrides}
    print(f"{ex.question}\n\nsettings:")
    for x in settings(ex):
        mark = " (yours)" if x.key in overrides else ""
        print(f"  {x.key} = {now[x.key]}{mark}    {x.label}")
    winner, at_s = args.predict, args.at
    if winner is None and (sys.stdin.isatty() if interactive is None else interactive):
        while winner not in WINNERS:
            winner = ask(f"\nwho gives up first? ({' / '.join(WINNERS)}) ", read)
        if winner != "nobody":
            when = ask("when, in seconds from the start? (Enter to skip) ", read)
            try:
                at_s = float(when) if when else None
            except ValueError:
                at_s = None
    try:
        answer = run(ex, overrides)
    except Refused as exc:
        print(f"\n{exc}\nchange the settings (--set KEY=VALUE) and try again.")
        return 2
    print("\n" + answer.text + "\n")
    if winner is None:
        print(f"answer: {answer.said}\n(give --predict client|broker|nobody [--at SECONDS] to have a prediction checked)")
    else:
        ok, said = verdict(answer, winner, at_s)
        print(("RIGHT " if ok else "NOT QUITE ") + said)
    print(f"\nwhy: {ex.why}\ntry: change a setting with --set KEY=VALUE and predict again.")
    return 0
