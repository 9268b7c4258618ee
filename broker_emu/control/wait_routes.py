"""The control API's waits (``GET /wait/...``): hold the request until the cluster reaches a state
or ``timeout_ms`` passes (at most ``MAX_WAIT_MS``, or the lower
``emu.control.wait.max.ms``), then answer 200 with what was seen, or 408
with what was seen last. The conditions are ``broker_emu.waits``, the ones ``cluster.wait_for``
uses; time is the cluster's clock."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import trio

from broker_emu.control.http import HttpError, HttpRequest, HttpResponse
from broker_emu.faults.rules import INT32_MAX, show
from broker_emu.waits import WaitArgumentError, WaitTimeout, condition, wait_until

if TYPE_CHECKING:
    from broker_emu.control.target import ControlTarget

MAX_WAIT_MS = 60_000
WAIT_ROUTES: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("GET", "/wait/group/{group}", "wait_group", ("state", "members", "timeout_ms")),
    ("GET", "/wait/partition/{topic}/{partition}", "wait_partition",
     ("high_watermark", "log_end_offset", "isr_size", "leader", "timeout_ms")),
    ("GET", "/wait/fault/{id}", "wait_fault", ("hits", "timeout_ms")),
    ("GET", "/wait/transaction/{transactional_id}", "wait_transaction", ("state", "timeout_ms")),
    ("GET", "/wait/connections", "wait_connections", ("count", "broker", "timeout_ms")),
    ("GET", "/wait/trace", "wait_trace", ("kind", "count", "since_ms", "api", "client_id", "timeout_ms")),
]
NEEDS = {"group": "groups", "partition": "topics", "transaction": "txn"}   # what the proxy lacks


def query_int(request: HttpRequest, key: str, minimum: int = 0) -> int | None:
    text = request.query.get(key)
    if text is None:
        return None
    if not re.fullmatch(r"-?[0-9]{1,18}", text) or int(text) < minimum:
        raise HttpError(400, f"'{key}' must be an integer >= {minimum}, got {show(text)}", key)
    return int(text)


def query_ms(request: HttpRequest, key: str, maximum: float) -> float | None:
    text = request.query.get(key)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 <= value <= maximum:
        raise HttpError(400, f"'{key}' must be a number of milliseconds from 0 to {maximum:g}, got {show(text)}", key)
    return value


class WaitRoutes:
    target: ControlTarget

    async def _wait(self, request: HttpRequest, what: str, **params: Any) -> HttpResponse:
        cap = min(MAX_WAIT_MS, getattr(self.target, "config", {}).get("emu.control.wait.max.ms", MAX_WAIT_MS))
        timeout_ms = query_ms(request, "timeout_ms", cap)
        if timeout_ms is None:
            raise HttpError(400, f"'timeout_ms' is required (at most {cap:g})", "timeout_ms")
        if what in NEEDS and getattr(self.target, NEEDS[what], None) is None:
            raise HttpError(404, f"this target has no {NEEDS[what]} to wait on (a proxy has faults, connections and a trace)")
        try:
            cond = condition(self.target, what, **params)
        except WaitArgumentError as exc:
            raise HttpError(400, str(exc), exc.field) from None
        start = trio.current_time()
        try:
            seen = await wait_until(self.target, cond, timeout_ms / 1000)
        except WaitTimeout as exc:
            return HttpResponse(408, {"error": str(exc), "field": "timeout_ms", "waited_ms": round(exc.waited_s * 1000, 3),
                                      "seen": exc.seen})
        return HttpResponse(200, {"waited_ms": round((trio.current_time() - start) * 1000, 3), "seen": seen})

    async def wait_group(self, request: HttpRequest, group: str) -> HttpResponse:
        return await self._wait(request, "group", group=unquote(group), state=request.query.get("state"),
                                members=query_int(request, "members"))

    async def wait_partition(self, request: HttpRequest, topic: str, partition: str) -> HttpResponse:
        index = unquote(partition)
        if not re.fullmatch(r"[0-9]{1,10}", index) or int(index) > INT32_MAX:
            raise HttpError(400, f"'partition' must be an integer >= 0, got {show(index)}", "partition")
        return await self._wait(request, "partition", topic=unquote(topic), partition=int(index),
                                high_watermark=query_int(request, "high_watermark"),
                                log_end_offset=query_int(request, "log_end_offset"),
                                isr_size=query_int(request, "isr_size"), leader=query_int(request, "leader", -1))

    async def wait_fault(self, request: HttpRequest, id: str) -> HttpResponse:
        rule = unquote(id)
        if not re.fullmatch(r"[0-9]{1,10}", rule) or int(rule) > INT32_MAX:
            raise HttpError(400, f"'id' must be a rule id, got {show(rule)}", "id")
        return await self._wait(request, "fault", id=int(rule), hits=query_int(request, "hits"))

    async def wait_transaction(self, request: HttpRequest, transactional_id: str) -> HttpResponse:
        return await self._wait(request, "transaction", transactional_id=unquote(transactional_id),
                                state=request.query.get("state"))

    async def wait_connections(self, request: HttpRequest) -> HttpResponse:
        return await self._wait(request, "connections", count=query_int(request, "count"), broker=query_int(request, "broker"))

    async def wait_trace(self, request: HttpRequest) -> HttpResponse:
        since = query_ms(request, "since_ms", 2**63)
        return await self._wait(request, "trace", kind=request.query.get("kind"), count=query_int(request, "count", 1),
                                since_ms=since, api=request.query.get("api"), client_id=request.query.get("client_id"))
