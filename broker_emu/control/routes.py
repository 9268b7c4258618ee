"""Routes of the control API. Each route validates fully before touching the cluster, so a
bad request never changes it.

The target is anything with the ``ControlTarget`` shape; the cluster provides it.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from broker_emu.control.http import HttpError, HttpRequest, HttpResponse
from broker_emu.faults import FaultConfigError, FaultEngine
from broker_emu.trace import Trace

REPLICATION_MODES = ("stall", "lag", "normal")


class ControlTarget(Protocol):
    faults: FaultEngine
    trace: Trace

    def now_ms(self) -> float: ...
    def broker_ids(self) -> set[int]: ...
    async def stop_broker(self, broker_id: int) -> None: ...
    async def start_broker(self, broker_id: int) -> None: ...
    def move_leader(self, topic: str, partition: int, broker_id: int) -> None: ...
    def set_replication(self, topic: str | None, partition: int | None, follower: int | None, mode: str, lag_ms: float) -> None: ...
    def describe(self) -> dict[str, Any]: ...


def _int_field(body: dict, name: str, *, optional: bool = False) -> int | None:
    value = body.get(name)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise HttpError(400, f"'{name}' must be an integer, got {value!r}", name)
    return value


class Routes:
    def __init__(self, target: ControlTarget):
        self.target = target
        self.table = [
            ("POST", r"/faults", self.add_fault),
            ("GET", r"/faults", self.list_faults),
            ("DELETE", r"/faults", self.clear_faults),
            ("DELETE", r"/faults/(?P<id>\d+)", self.delete_fault),
            ("POST", r"/brokers/(?P<id>-?\d+)/(?P<verb>stop|start)", self.broker_verb),
            ("POST", r"/partitions/(?P<topic>[^/]+)/(?P<partition>\d+)/leader", self.move_leader),
            ("POST", r"/replication", self.replication),
            ("GET", r"/trace", self.get_trace),
            ("GET", r"/cluster", self.cluster),
        ]

    async def __call__(self, request: HttpRequest) -> HttpResponse:
        path_matched = False
        for method, pattern, fn in self.table:
            m = re.fullmatch(pattern, request.path.rstrip("/") or "/")
            if m is None:
                continue
            path_matched = True
            if method == request.method:
                try:
                    return await fn(request, **m.groupdict())
                except FaultConfigError as exc:
                    raise HttpError(400, str(exc), exc.field) from None
        if path_matched:
            raise HttpError(405, f"{request.method} not allowed on {request.path}")
        raise HttpError(404, f"no route {request.path}; see docs/control-api.md")

    def _broker(self, value: Any, field: str = "broker") -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise HttpError(400, f"'{field}' must be a broker id, got {value!r}", field)
        if value not in self.target.broker_ids():
            raise HttpError(404, f"no broker {value} (brokers: {sorted(self.target.broker_ids())})", field)
        return value

    async def add_fault(self, request: HttpRequest) -> HttpResponse:
        body = request.json()
        rules = body if isinstance(body, list) else [body]
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
        if not self.target.faults.remove(int(id)):
            raise HttpError(404, f"no fault {id}")
        return HttpResponse(200, {"removed": int(id)})

    async def broker_verb(self, request: HttpRequest, id: str, verb: str) -> HttpResponse:
        broker = self._broker(int(id))
        if verb == "stop":
            await self.target.stop_broker(broker)
        else:
            await self.target.start_broker(broker)
        return HttpResponse(200, {"broker": broker, "state": "stopped" if verb == "stop" else "running"})

    async def move_leader(self, request: HttpRequest, topic: str, partition: str) -> HttpResponse:
        body = request.json()
        if not isinstance(body, dict):
            raise HttpError(400, "expected a JSON object like {\"broker\": 1}")
        broker = self._broker(body.get("broker"))
        try:
            self.target.move_leader(topic, int(partition), broker)
        except (KeyError, ValueError) as exc:
            raise HttpError(404 if isinstance(exc, KeyError) else 400, str(exc).strip("'")) from None
        return HttpResponse(200, {"topic": topic, "partition": int(partition), "leader": broker})

    async def replication(self, request: HttpRequest) -> HttpResponse:
        body = request.json()
        if not isinstance(body, dict):
            raise HttpError(400, "expected a JSON object")
        mode = body.get("mode")
        if mode not in REPLICATION_MODES:
            raise HttpError(400, f"'mode' must be one of {', '.join(REPLICATION_MODES)}, got {mode!r}", "mode")
        topic = body.get("topic")
        if topic is not None and not isinstance(topic, str):
            raise HttpError(400, f"'topic' must be a string or null, got {topic!r}", "topic")
        partition = _int_field(body, "partition", optional=True)
        follower = body.get("follower")
        if follower is not None:
            follower = self._broker(follower, "follower")
        lag_ms = body.get("lag_ms", 0)
        if isinstance(lag_ms, bool) or not isinstance(lag_ms, (int, float)) or lag_ms < 0:
            raise HttpError(400, f"'lag_ms' must be a non-negative number, got {lag_ms!r}", "lag_ms")
        if mode == "lag" and not lag_ms:
            raise HttpError(400, "mode 'lag' needs 'lag_ms' > 0", "lag_ms")
        try:
            self.target.set_replication(topic, partition, follower, mode, float(lag_ms))
        except (KeyError, ValueError) as exc:
            raise HttpError(404 if isinstance(exc, KeyError) else 400, str(exc).strip("'")) from None
        return HttpResponse(200, {"topic": topic, "partition": partition, "follower": follower, "mode": mode, "lag_ms": lag_ms})

    async def get_trace(self, request: HttpRequest) -> HttpResponse:
        q = request.query
        try:
            since = float(q["since_ms"]) if "since_ms" in q else None
        except ValueError:
            raise HttpError(400, f"since_ms must be a number, got {q['since_ms']!r}", "since_ms") from None
        kinds = q["kind"].split(",") if "kind" in q else None
        events = self.target.trace.query(since_ms=since, client_id=q.get("client_id"), api=q.get("api"), kind=kinds)
        return HttpResponse(200, self.target.trace.to_jsonl(events), content_type="application/x-ndjson")

    async def cluster(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, self.target.describe())
