"""Routes of the control API. Each route validates fully before touching the cluster, so a
bad request never changes it: types, finite numbers, ranges and unknown keys are refused with a
4xx naming the field (the rule checks are ``broker_emu.faults.rules``, shared with Python and
scenario files).

The table below is the API: ``ROUTES`` is checked against the OpenAPI document
(``broker_emu.control.openapi``, served at ``GET /openapi.json``) by a test, both ways.
The target is anything with the ``ControlTarget`` shape; the cluster provides it.
"""

from __future__ import annotations

import math
import re
import threading
from typing import Any, Awaitable, Callable
from urllib.parse import unquote

from broker_emu.control.console_routes import ConsoleRoutes
from broker_emu.control.http import HttpError, HttpRequest, HttpResponse, StreamResponse
from broker_emu.control.openapi import OPENAPI
from broker_emu.control.playground import PlaygroundProvider, PlaygroundRoutes
from broker_emu.control.target import ControlTarget
from broker_emu.control.wait_routes import WAIT_ROUTES, WaitRoutes
from broker_emu.faults.engine import MAX_RULES, FaultEngine
from broker_emu.faults.rules import INT32_MAX, FaultConfigError, check_int, parse_replication, show

MAX_RULES_PER_REQUEST = 1000

# (method, path template, handler name, allowed query parameters)
ROUTES: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("POST", "/faults", "add_fault", ()),
    ("GET", "/faults", "list_faults", ()),
    ("DELETE", "/faults", "clear_faults", ()),
    ("DELETE", "/faults/{id}", "delete_fault", ()),
    ("POST", "/brokers/{id}/stop", "stop_broker", ()),
    ("POST", "/brokers/{id}/start", "start_broker", ()),
    ("POST", "/partitions/{topic}/{partition}/leader", "move_leader", ()),
    ("POST", "/replication", "replication", ()),
    ("POST", "/transactions/marker-delay", "marker_delay", ()),
    ("GET", "/trace", "get_trace", ("since_ms", "client_id", "api", "kind")),
    ("GET", "/cluster", "cluster", ()),
    ("GET", "/groups", "list_groups", ()),
    ("GET", "/groups/{group}", "get_group", ()),
    ("GET", "/openapi.json", "openapi", ()),
    # the timeout playground (broker_emu.control.playground): scenarios from the provider, if any
    ("GET", "/playground/scenarios", "playground_scenarios", ()),
    ("POST", "/playground/run", "playground_run", ()),
    # the web console (broker_emu.control.console_routes); / redirects to it
    ("GET", "/", "root", ()),
    ("GET", "/console", "console_page", ()),
    ("GET", "/console/state", "console_snapshot", ()),
    ("GET", "/console/events", "console_events", ("interval_ms",)),
    ("GET", "/console/playground", "playground_page", ()),
    ("GET", "/console/{name}", "console_asset", ()),
    *WAIT_ROUTES,   # GET /wait/... (broker_emu.control.wait_routes)
]
BODY_METHODS = {"add_fault", "move_leader", "replication", "marker_delay", "playground_run"}


def compile_template(template: str) -> re.Pattern[str]:
    """``/faults/{id}`` -> a regex with one named group per parameter (any non-empty segment:
    the route says what a bad value means, with a 400 naming it, rather than a bare 404)."""
    return re.compile(re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template))


def path_int(text: str, field: str, minimum: int = 0) -> int:
    text = unquote(text)
    if not re.fullmatch(r"-?[0-9]{1,10}", text):
        raise HttpError(400, f"'{field}' must be an integer, got {show(text)}", field)
    return check_int(int(text), field, minimum, INT32_MAX)  # FaultConfigError: a 400 naming the field


def json_object(request: HttpRequest, example: str) -> dict[str, Any]:
    body = request.json()
    if not isinstance(body, dict):
        raise HttpError(400, f"expected a JSON object like {example}, got {show(body)}", "body")
    return body


class Routes(ConsoleRoutes, PlaygroundRoutes, WaitRoutes):
    """The control API over ``target``; ``playground``, if given, serves the timeout playground's
    scenarios (the ``broker-emu`` command passes the conformance suite's: see
    broker_emu.control.playground for why it is passed in)."""

    def __init__(self, target: ControlTarget, playground: PlaygroundProvider | None = None):
        self.target = target
        self.playground = playground
        self._playground_slot = threading.Lock()
        self.table: list[tuple[str, re.Pattern[str], Callable[..., Awaitable[HttpResponse]], tuple[str, ...], str]] = [
            (method, compile_template(template), getattr(self, name), query, name)
            for method, template, name, query in ROUTES]

    async def __call__(self, request: HttpRequest) -> HttpResponse | StreamResponse:
        path = request.path.rstrip("/") or "/"
        allowed = []
        for method, pattern, fn, query, name in self.table:
            m = pattern.fullmatch(path)
            if m is None:
                continue
            if method != request.method:
                allowed.append(method)
                continue
            self._check_request(request, query, name)
            try:
                return await fn(request, **m.groupdict())
            except FaultConfigError as exc:
                raise HttpError(400, str(exc), exc.field) from None
        if allowed:
            raise HttpError(405, f"{request.method} not allowed on {request.path[:200]} (allowed: {', '.join(allowed)})")
        raise HttpError(404, f"no route {request.path[:200]}; see GET /openapi.json")

    @staticmethod
    def _check_request(request: HttpRequest, query: tuple[str, ...], name: str) -> None:
        for key in request.query:
            if key not in query:
                raise HttpError(400, f"unknown query parameter (known: {', '.join(query) or 'none'})", key)
        if name not in BODY_METHODS and request.body.strip():
            raise HttpError(400, f"{request.method} {request.path[:200]} takes no body", "body")

    def _broker(self, value: Any, field: str = "broker") -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise HttpError(400, f"'{field}' must be a broker id, got {show(value)}", field)
        if value not in self.target.broker_ids():
            raise HttpError(404, f"no broker {show(value)} (brokers: {sorted(self.target.broker_ids())})", field)
        return value

    async def add_fault(self, request: HttpRequest) -> HttpResponse:
        body = request.json()
        rules = body if isinstance(body, list) else [body]
        if len(rules) > MAX_RULES_PER_REQUEST:
            raise HttpError(400, f"at most {MAX_RULES_PER_REQUEST} rules per request", "body")
        if len(self.target.faults.rules) + len(rules) > MAX_RULES:
            raise HttpError(409, f"at most {MAX_RULES} rules at once; remove some first", "body")
        # validate every rule first: all or nothing
        probe = FaultEngine(brokers=self.target.broker_ids())
        for i, raw in enumerate(rules):
            try:
                probe.add(raw, 0)
            except FaultConfigError as exc:
                prefix = f"[{i}]." if isinstance(body, list) else ""
                raise HttpError(400, f"{prefix}{exc}", prefix + exc.field) from None
        added = [self.target.faults.add(raw, self.target.now_ms()) for raw in rules]
        out = [{"id": r.id, "rule": r.to_dict()} for r in added]
        return HttpResponse(201, out if isinstance(body, list) else out[0])

    async def list_faults(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, {"faults": [r.to_dict() for r in self.target.faults.rules.values()]})

    async def clear_faults(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, {"removed": self.target.faults.clear()})

    async def delete_fault(self, request: HttpRequest, id: str) -> HttpResponse:
        rule_id = path_int(id, "id")
        if not self.target.faults.remove(rule_id):
            raise HttpError(404, f"no fault {rule_id}", "id")
        return HttpResponse(200, {"removed": rule_id})

    async def stop_broker(self, request: HttpRequest, id: str) -> HttpResponse:
        broker = self._broker(path_int(id, "id"), "id")
        await self.target.stop_broker(broker)
        return HttpResponse(200, {"broker": broker, "state": "stopped"})

    async def start_broker(self, request: HttpRequest, id: str) -> HttpResponse:
        broker = self._broker(path_int(id, "id"), "id")
        await self.target.start_broker(broker)
        return HttpResponse(200, {"broker": broker, "state": "running"})

    async def move_leader(self, request: HttpRequest, topic: str, partition: str) -> HttpResponse:
        topic, index = unquote(topic), path_int(partition, "partition")
        body = json_object(request, '{"broker": 1}')
        for key in body:
            if key != "broker":
                raise HttpError(400, "unknown key (known: broker)", key)
        broker = self._broker(body.get("broker"))
        try:
            self.target.move_leader(topic, index, broker)
        except (KeyError, ValueError) as exc:
            raise HttpError(404 if isinstance(exc, KeyError) else 400, str(exc).strip("'")) from None
        return HttpResponse(200, {"topic": topic, "partition": index, "leader": broker})

    async def replication(self, request: HttpRequest) -> HttpResponse:
        cmd = parse_replication(json_object(request, '{"topic": "t", "mode": "stall"}'))
        if cmd.follower is not None:
            self._broker(cmd.follower, "follower")
        try:
            self.target.set_replication(cmd.topic, cmd.partition, cmd.follower, cmd.mode, cmd.lag_ms)
        except (KeyError, ValueError) as exc:
            raise HttpError(404 if isinstance(exc, KeyError) else 400, str(exc).strip("'")) from None
        return HttpResponse(200, {"topic": cmd.topic, "partition": cmd.partition, "follower": cmd.follower,
                                  "mode": cmd.mode, "lag_ms": cmd.lag_ms})

    async def marker_delay(self, request: HttpRequest) -> HttpResponse:
        """How long the transaction coordinator waits before writing its markers (null: back to
        emu.txn.marker.delay.ms)."""
        body = json_object(request, '{"ms": 5000}')
        unknown = sorted(set(body) - {"ms"})
        if unknown:
            raise HttpError(400, "unknown field (known: ms)", unknown[0])
        if "ms" not in body:
            raise HttpError(400, "'ms' is required (null: back to emu.txn.marker.delay.ms)", "ms")
        ms = body["ms"]
        if ms is not None and (isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 <= ms <= 86_400_000):
            raise HttpError(400, f"'ms' must be null or a number of milliseconds from 0 to 86400000, got {show(ms)}", "ms")
        try:
            self.target.set_marker_delay(ms)
        except ValueError as exc:
            raise HttpError(400, str(exc)) from None
        return HttpResponse(200, {"marker_delay_ms": ms})

    async def get_trace(self, request: HttpRequest) -> HttpResponse:
        q = request.query
        since = None
        if "since_ms" in q:
            try:
                since = float(q["since_ms"])
            except ValueError:
                since = math.nan
            if not math.isfinite(since):
                raise HttpError(400, f"since_ms must be a finite number, got {show(q['since_ms'])}", "since_ms")
        kinds = q["kind"].split(",") if "kind" in q else None
        events = self.target.trace.query(since_ms=since, client_id=q.get("client_id"), api=q.get("api"), kind=kinds)
        return HttpResponse(200, self.target.trace.to_jsonl(events), content_type="application/x-ndjson")

    async def cluster(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, self.target.describe())

    async def list_groups(self, request: HttpRequest) -> HttpResponse:
        groups = getattr(self.target, "groups", None)
        return HttpResponse(200, groups.describe() if groups is not None else [])

    async def get_group(self, request: HttpRequest, group: str) -> HttpResponse:
        groups = getattr(self.target, "groups", None)
        if groups is None or group not in groups.groups:
            raise HttpError(404, f"no group {group[:200]!r}", "group")
        return HttpResponse(200, groups.describe(group))

    async def openapi(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, OPENAPI)
