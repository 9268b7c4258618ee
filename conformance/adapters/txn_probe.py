"""The ``txn_error_probe`` step, written once for every Python-driven face (ours, confluent-kafka,
kafka-python, aiokafka); the Java and Node programs follow the same sequence.

A transaction runs while the scenario's fault answers one error every time: init_transactions,
begin_transaction, one record sent and awaited, commit_transaction. The first call that fails is
recorded (which call, its error, how long it took). Then the step waits until ``clear_s`` after
it began (the fault's window has closed by then) and asks the producer what it can still do:

1. the failed call again (init_transactions, or commit_transaction after a send or a commit);
2. if that fails and the producer was initialised, abort_transaction;
3. after a successful retry of init, or after the abort, a whole new transaction.

What the client did in 1-3 is what ``conformance/txn_errors/`` classifies: retriable (the call
again worked), abortable (the abort and the next transaction worked), fatal (neither). Nothing
here decides the class: the step reports, the harness judges."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from conformance.model import Outcome

OP = "txn_error_probe"
OK = "ok"
CALLS = ("init", "begin", "send", "commit")

Call = Callable[[], Any]
ACall = Callable[[], Any]   # a coroutine function, or a plain call (begin_transaction)
Namer = Callable[[BaseException], str]


def _result(first: tuple[str, str, str, float] | None, took: dict[str, float],
            follow: dict[str, str | None]) -> Outcome:
    """The step's outcome: ok when no call failed (timed: the slowest call, which outlasted the
    fault if any did); the value says what followed the failure and how long each call took."""
    if first is None:
        slowest = max(took, key=lambda k: took[k])
        return Outcome(OP, True, took[slowest], value={"call": None, "slowest": slowest, "took": took,
                                                       "retry": None, "abort": None, "next": None})
    call, name, message, after = first
    return Outcome(OP, False, after, name, message, value={"call": call, "took": took, **follow})


def run(calls: dict[str, Call], name: Namer, clock: Callable[[], float], sleep: Callable[[float], Any],
        clear_s: float) -> Outcome:
    """The probe for a blocking client; ``calls`` maps init, begin, send, commit and abort to the
    client's own calls (send: one record, waited for)."""
    t0 = clock()

    def attempt(*keys: str) -> str:
        for key in keys:
            try:
                calls[key]()
            except Exception as exc:  # noqa: BLE001 - the client's error is what the probe records
                return name(exc)
        return OK

    first, took = None, {}
    for key in CALLS:
        start = clock()
        try:
            calls[key]()
        except Exception as exc:  # noqa: BLE001
            first = (key, name(exc), str(exc)[:300], clock() - start)
            break
        finally:
            took[key] = round(clock() - start, 4)
    if first is None:
        return _result(None, took, {})
    sleep(max(0.0, t0 + clear_s - clock()))
    follow: dict[str, str | None] = {"retry": None, "abort": None, "next": None}
    follow["retry"] = attempt("init" if first[0] == "init" else "commit")
    if first[0] != "init" and follow["retry"] != OK:
        follow["abort"] = attempt("abort")
    if (first[0] == "init" and follow["retry"] == OK) or follow["abort"] == OK:
        follow["next"] = attempt("begin", "send", "commit")
    return _result(first, took, follow)


async def run_async(calls: dict[str, ACall], name: Namer, clock: Callable[[], float],
                    sleep: Callable[[float], Awaitable[Any]], clear_s: float) -> Outcome:
    """``run`` for an async client; begin may be a plain call (its result is awaited if it is one)."""
    t0 = clock()

    async def call(key: str) -> None:
        got = calls[key]()
        if hasattr(got, "__await__"):
            await got

    async def attempt(*keys: str) -> str:
        for key in keys:
            try:
                await call(key)
            except Exception as exc:  # noqa: BLE001
                return name(exc)
        return OK

    first, took = None, {}
    for key in CALLS:
        start = clock()
        try:
            await call(key)
        except Exception as exc:  # noqa: BLE001
            first = (key, name(exc), str(exc)[:300], clock() - start)
            break
        finally:
            took[key] = round(clock() - start, 4)
    if first is None:
        return _result(None, took, {})
    await sleep(max(0.0, t0 + clear_s - clock()))
    follow: dict[str, str | None] = {"retry": None, "abort": None, "next": None}
    follow["retry"] = await attempt("init" if first[0] == "init" else "commit")
    if first[0] != "init" and follow["retry"] != OK:
        follow["abort"] = await attempt("abort")
    if (first[0] == "init" and follow["retry"] == OK) or follow["abort"] == OK:
        follow["next"] = await attempt("begin", "send", "commit")
    return _result(first, took, follow)
