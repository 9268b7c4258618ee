"""The timeout playground's routes (mixed into ``Routes``): ``GET /playground/scenarios`` lists
teaching scenarios with the settings a student may change, ``POST /playground/run`` runs one in
virtual time with those settings and answers its timeline, and ``GET /console/playground`` is
the page (docs/console.md).

Why a provider, not routes registered from above. The scenarios, their parameter overrides and
the timelines are the conformance suite's (``conformance.scenarios``, ``conformance.params``,
``conformance.explain``), a layer above the emulator, which must not import it
(docs/architecture.md). So the emulator owns the HTTP side — the two routes, their place in the
route table and in the OpenAPI document, the body's shape, the bounds on work — and asks a
*provider* (the ``PlaygroundProvider`` protocol below) for the catalogue, the meaning of a
setting and the run itself. Whoever starts the control API passes one: the ``broker-emu``
command (``conformance.main``, the layer above both) passes ``conformance.playground``'s; the
emulator's own ``python -m broker_emu.cli serve`` and the proxy pass none, and the routes answer
404 saying which command has them. Routes registered from above would have kept the route table
and the OpenAPI document (both static here, and checked against each other) incomplete, and
would have let the upper layer bypass the checks every route makes.

Bounds. A run is CPU work in a trio run of its own (the cluster under a MockClock), so it runs
in a worker thread: the serving loop keeps answering. One run at a time: a second is refused
with 409 at once, never queued behind a slow one. A run gets ``RUN_LIMIT_S`` of wall time; past
that the request is answered 503 and the thread is abandoned (a thread cannot be killed), and
its slot is freed only when the thread ends, so abandoned runs cannot pile up. Every input is
checked — the body's shape here, the scenario and each setting's name and range by the provider
(``check``, cheap) — before the slot is taken, so junk never costs a run.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Protocol

import trio

from broker_emu.control.console_routes import asset
from broker_emu.control.http import HttpError, HttpRequest, HttpResponse

RUN_LIMIT_S = 20.0
MAX_SETTINGS = 8
MAX_NAME = 200
NO_PROVIDER = ("no playground here: its scenarios are the conformance suite's, which the emulator alone does not "
               "load; start the full command (broker-emu serve --control-port 0, i.e. python -m conformance.main serve)")


class PlaygroundInputError(ValueError):
    """A setting, scenario or combination the provider refuses: a 400 naming ``field``."""

    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.field = field


class PlaygroundProvider(Protocol):
    def catalogue(self) -> list[dict[str, Any]]: ...
    def check(self, scenario: str, settings: dict[str, float]) -> Any: ...     # cheap; raises PlaygroundInputError
    def run(self, checked: Any) -> dict[str, Any]: ...                         # CPU work, in a worker thread


def parse_run(body: Any) -> tuple[str, dict[str, float]]:
    """``{"scenario": "...", "settings": {"key": number}}``: the shape, before the provider reads it."""
    if not isinstance(body, dict):
        raise HttpError(400, 'expected a JSON object like {"scenario": "server.purgatory-request-timed-out", '
                             '"settings": {"request.timeout.ms": 30000}}', "body")
    unknown = sorted(set(body) - {"scenario", "settings"})
    if unknown:
        raise HttpError(400, "unknown field (known: scenario, settings)", unknown[0])
    scenario = body.get("scenario")
    if not isinstance(scenario, str) or not 0 < len(scenario) <= MAX_NAME:
        raise HttpError(400, "'scenario' must be a scenario id (GET /playground/scenarios lists them)", "scenario")
    settings = body.get("settings", {})
    if settings is None:
        settings = {}
    if not isinstance(settings, dict):
        raise HttpError(400, "'settings' must be an object of setting -> number", "settings")
    if len(settings) > MAX_SETTINGS:
        raise HttpError(400, f"at most {MAX_SETTINGS} settings", "settings")
    for key, value in settings.items():
        field = f"settings.{key[:MAX_NAME]}"
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not math.isfinite(value)):
            raise HttpError(400, f"{key[:MAX_NAME]!r} must be a number, got {str(value)[:40]!r}", field)
    return scenario, dict(settings)


class PlaygroundRoutes:
    playground: PlaygroundProvider | None = None
    _playground_slot: threading.Lock

    def _provider(self) -> PlaygroundProvider:
        if self.playground is None:
            raise HttpError(404, NO_PROVIDER)
        return self.playground

    async def playground_scenarios(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, {"scenarios": self._provider().catalogue()})

    async def playground_run(self, request: HttpRequest) -> HttpResponse:
        provider = self._provider()
        scenario, settings = parse_run(request.json())
        try:
            checked = provider.check(scenario, settings)
        except PlaygroundInputError as exc:
            raise HttpError(400, str(exc), exc.field) from None
        slot = self._playground_slot
        if not slot.acquire(blocking=False):
            raise HttpError(409, "another playground run is in progress: one at a time, try again when it ends")

        def work() -> dict[str, Any]:
            try:
                return provider.run(checked)
            finally:
                slot.release()   # when the thread ends, even if the request was answered 503 long before

        limit = RUN_LIMIT_S
        with trio.move_on_after(limit):
            try:
                out = await trio.to_thread.run_sync(work, abandon_on_cancel=True)
            except PlaygroundInputError as exc:   # refused where only the run could tell (the broker's own checks)
                raise HttpError(400, str(exc), exc.field) from None
            return HttpResponse(200, out)
        raise HttpError(503, f"the run took longer than {limit:g} s of wall time and was abandoned; "
                             "the next run can start when its thread ends")

    async def playground_page(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, asset("playground.html"), "text/html; charset=utf-8")
