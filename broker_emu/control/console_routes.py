"""The web console's routes (mixed into ``Routes``): its page and scripts, shipped as files in
this package (no build step at install time), a snapshot of the cluster, and a stream of
server-sent events — every trace event as it happens, and a fresh snapshot every
``interval_ms`` — so the page updates without reloading or polling.

The page and its scripts, and ``/`` (a redirect to the page), are public (a browser cannot send a bearer token when it navigates to
a URL, and the files hold no cluster data); the data and every action keep the control API's
rules: loopback, same origin, the token when one is set (the page takes it from the URL's
fragment, ``/console#token=...``, which the browser never sends, and puts it in its requests).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from importlib import resources
from typing import TYPE_CHECKING, Any

import trio

from broker_emu.control.console_state import console_state
from broker_emu.control.http import HttpError, HttpRequest, HttpResponse, StreamResponse

if TYPE_CHECKING:
    from broker_emu.control.target import ControlTarget

ASSETS = {"console.js": "text/javascript; charset=utf-8", "console.css": "text/css; charset=utf-8",
          "playground.js": "text/javascript; charset=utf-8"}
PUBLIC_PATHS = frozenset({"/", "/console", "/console/playground", *(f"/console/{name}" for name in ASSETS)})
MAX_BUFFERED_EVENTS = 10_000   # per stream: a page that cannot keep up loses events, and is told how many


def asset(name: str) -> str:
    return resources.files("broker_emu.control").joinpath("console", name).read_text(encoding="utf-8")


def sse(event: str, data: Any) -> bytes:
    """One server-sent event (the data on one line: JSON never holds a raw newline)."""
    return f"event: {event}\ndata: {json.dumps(data, default=str, allow_nan=False)}\n\n".encode()


class ConsoleRoutes:
    target: ControlTarget
    public_paths = PUBLIC_PATHS

    async def root(self, request: HttpRequest) -> HttpResponse:
        """``/`` leads to the console: the URL serve prints without a path opens the page."""
        return HttpResponse(302, "", "text/plain; charset=utf-8", (("Location", "/console"),))

    async def console_page(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, asset("index.html"), "text/html; charset=utf-8")

    async def console_asset(self, request: HttpRequest, name: str) -> HttpResponse:
        if name not in ASSETS:
            raise HttpError(404, f"no console file {name!r}", "name")
        return HttpResponse(200, asset(name), ASSETS[name])

    async def console_snapshot(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, console_state(self.target))

    async def console_events(self, request: HttpRequest) -> StreamResponse:
        raw = request.query.get("interval_ms", "500")
        try:
            interval_ms = float(raw)
        except ValueError:
            raise HttpError(400, f"interval_ms must be a number, got {raw[:40]!r}", "interval_ms") from None
        if not 50 <= interval_ms <= 10_000:
            raise HttpError(400, f"interval_ms must be within 50..10000, got {raw[:40]}", "interval_ms")
        return StreamResponse(lambda: self._stream(interval_ms / 1000))

    async def _stream(self, interval_s: float) -> AsyncIterator[bytes]:
        target = self.target
        send, recv = trio.open_memory_channel[Any](MAX_BUFFERED_EVENTS)
        dropped = 0

        def listen(event: Any) -> None:
            nonlocal dropped
            try:
                send.send_nowait(event)
            except trio.WouldBlock:
                dropped += 1

        unsubscribe = target.trace.subscribe(listen)
        try:
            yield sse("state", console_state(target))
            next_state = trio.current_time() + interval_s
            while True:
                events = []
                with trio.move_on_at(next_state):   # no yield inside a cancel scope: collect, then yield
                    events.append(await recv.receive())
                while len(events) < 1000:
                    try:
                        events.append(recv.receive_nowait())
                    except trio.WouldBlock:
                        break
                if events:
                    yield sse("trace", {"events": [json.loads(e.to_json()) for e in events], "dropped": dropped})
                if trio.current_time() >= next_state:
                    yield sse("state", console_state(target))
                    next_state = trio.current_time() + interval_s
        finally:
            unsubscribe()
