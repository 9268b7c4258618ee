"""The Python adapters' shared watchdog: a call that never returns is an outcome (NoReturn), and
a client's own timeout is never mistaken for the watchdog's."""

import asyncio
import threading

import pytest

from conformance.adapters.base import RunEnv
from conformance.adapters.py_common import NoReturn, call_in_thread, timed_async, timed_blocking, watchdog_s
from conformance.model import Operation

ENV = RunEnv("127.0.0.1:1", "t", {"request.timeout.ms": 100, "default.api.timeout.ms": 200}, scale=30.0)


def test_the_watchdog_is_six_times_the_longest_bound_plus_slack():
    assert watchdog_s(Operation("committed", timeout_s=None), ENV) == pytest.approx(6 * 0.2 + 2)
    assert watchdog_s(Operation("committed", timeout_s=1.0), ENV) == pytest.approx(6 * 1.0 + 2)


def test_a_blocked_call_is_reported_as_no_return():
    release = threading.Event()
    with pytest.raises(NoReturn):
        call_in_thread(release.wait, 0.05)
    release.set()
    outcome, came_back = timed_blocking(Operation("committed", timeout_s=None), ENV, lambda: 1, str,
                                        lambda e: type(e).__name__, "nothing")
    assert (outcome.ok, outcome.value, came_back) == (True, "1", True)


def test_a_blocking_clients_error_is_its_outcome():
    def fail():
        raise KeyError("x")

    outcome, came_back = timed_blocking(Operation("position", timeout_s=1.0), ENV, fail, str,
                                        lambda e: type(e).__name__, "nothing")
    assert (outcome.ok, outcome.error_type, came_back) == (False, "KeyError", True)


def test_asyncio_deadline_and_the_clients_own_timeout():
    async def hang():
        await asyncio.sleep(10)

    async def own_timeout():
        raise TimeoutError("the client's")

    def name(e):
        return type(e).__name__

    at_deadline = asyncio.run(timed_async(Operation("committed", timeout_s=0.05), ENV, hang, str, name, "x"))
    assert (at_deadline.ok, at_deadline.error_type) == (False, "TimeoutError")
    own = asyncio.run(timed_async(Operation("committed", timeout_s=None), ENV, own_timeout, str, name, "x"))
    assert (own.error_type, own.error_message) == ("TimeoutError", "the client's")
