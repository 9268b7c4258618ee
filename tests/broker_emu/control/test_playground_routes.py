"""The playground routes' own bounds, with a stand-in provider (no scenarios, no Kafka): one run
at a time (a second is refused with 409, never queued behind a slow one), a run that overstays
its limit answered 503 rather than hanging, its slot freed only when its thread ends, and the
provider's input errors answered 400 before any work is done."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import trio

from broker_emu.control import playground as P
from broker_emu.control.http import HttpError, HttpRequest
from broker_emu.control.routes import Routes


class Stand:
    """A provider whose runs block until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.runs = 0
        self.checked = 0

    def catalogue(self) -> list[dict[str, Any]]:
        return [{"id": "s", "settings": []}]

    def check(self, scenario: str, settings: dict[str, float]) -> Any:
        self.checked += 1
        if scenario != "s":
            raise P.PlaygroundInputError(f"no scenario {scenario!r}", "scenario")
        return scenario

    def run(self, checked: Any) -> dict[str, Any]:
        self.runs += 1
        self.release.wait(10)
        return {"scenario": checked}


def post(body: Any) -> HttpRequest:
    return HttpRequest("POST", "/playground/run", {}, {"content-type": "application/json"}, json.dumps(body).encode())


async def answer(routes: Routes, request: HttpRequest) -> tuple[int, Any]:
    try:
        response = await routes(request)
    except HttpError as exc:
        return exc.status, {"error": exc.message, "field": exc.field}
    return response.status, response.body


async def test_a_second_run_while_one_is_in_progress_is_refused_with_409():
    stand = Stand()
    routes = Routes(None, playground=stand)   # type: ignore[arg-type]
    results: list[tuple[int, Any]] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: _collect(results, routes))
        await trio.sleep(0.2)
        status, out = await answer(routes, post({"scenario": "s"}))
        assert status == 409 and "in progress" in out["error"]
        stand.release.set()
    assert results == [(200, {"scenario": "s"})] and stand.runs == 1


async def _collect(results: list, routes: Routes) -> None:
    results.append(await answer(routes, post({"scenario": "s"})))


async def test_a_run_over_its_limit_is_a_503_and_its_slot_stays_taken_until_it_ends(monkeypatch):
    monkeypatch.setattr(P, "RUN_LIMIT_S", 0.2)
    stand = Stand()
    routes = Routes(None, playground=stand)   # type: ignore[arg-type]
    status, out = await answer(routes, post({"scenario": "s"}))
    assert status == 503 and "0.2 s" in out["error"]
    status, _ = await answer(routes, post({"scenario": "s"}))
    assert status == 409                  # the abandoned run still holds the one thread
    stand.release.set()
    with trio.fail_after(5):
        while True:
            status, _ = await answer(routes, post({"scenario": "s"}))
            if status == 200:
                break
            await trio.sleep(0.05)


async def test_input_errors_are_400s_and_nothing_runs():
    stand = Stand()
    routes = Routes(None, playground=stand)   # type: ignore[arg-type]
    assert (await answer(routes, post({"scenario": "zzz"})))[0] == 400
    assert (await answer(routes, post({"scenario": "s", "settings": {"k": float("nan")}})))[0] == 400
    assert (await answer(routes, post({"scenario": "s", "settings": {str(i): 1 for i in range(20)}})))[0] == 400
    assert (await answer(routes, post({"scenario": "s" * 500})))[0] == 400
    assert stand.runs == 0


@pytest.mark.parametrize("path", ["/playground/scenarios", "/playground/run"])
async def test_no_provider_is_a_404_naming_the_command_that_has_one(path):
    routes = Routes(None)   # type: ignore[arg-type]
    method = "GET" if path.endswith("scenarios") else "POST"
    status, out = await answer(routes, HttpRequest(method, path, {}, {}, b""))
    assert status == 404 and "broker-emu" in out["error"]
