"""The control API as an OpenAPI 3.0 document, served at ``GET /openapi.json``.

Kept here as data (a Python literal, so it ships with the package without package-data
configuration). A test checks that every route of ``routes.ROUTES`` appears here and every path
here is a route; the property-based fuzzer in ``tests/control`` generates its requests from it.
The bounds are the ones ``broker_emu.faults.rules`` enforces.
"""

from __future__ import annotations

from typing import Any

from broker_emu.faults.rules import ACTIONS, INT16_MAX, INT32_MAX, INT64_MAX, MAX_MS, MAX_STRING, REPLICATION_MODES
from client.errors import ErrorCode
from client.protocol import ApiKey

MS_ACTIONS = sorted(k for k, params in ACTIONS.items() if params == ("ms",))
PLAIN_ACTIONS = sorted(k for k, params in ACTIONS.items() if not params)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*statuses: int) -> dict[str, Any]:
    reasons = {400: "invalid request: `field` names what is wrong", 401: "missing or wrong bearer token",
               403: "refused: cross-origin, cross-site or non-loopback Host", 404: "no such broker, topic, partition or rule",
               405: "method not allowed", 409: "too many rules at once", 413: "request head or body too large",
               415: "a body that is not Content-Type: application/json", 500: "a bug: this request failed, the server did not"}
    common = (401, 403, 405, 413, 415, 500)
    return {str(s): _json(_ref("Error"), reasons[s]) for s in sorted(set(statuses) | set(common))}


def _op(summary: str, ok: dict[str, Any], *errors: int, body: dict[str, Any] | None = None,
        parameters: list[dict[str, Any]] | None = None, status: str = "200") -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": {status: ok, **_errors(400, *errors)}}
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    if parameters:
        op["parameters"] = parameters
    return op


def _path_param(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema, "description": description}


def _query_param(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """An optional field where null means "not set", as the parser reads it."""
    return {"nullable": True, "allOf": [schema]} if "$ref" in schema else {**schema, "nullable": True}


MS = {"type": "number", "minimum": 0, "maximum": MAX_MS,
      "description": "milliseconds: finite, at most int32 (NaN and Infinity are refused)"}
BROKER_ID = {"type": "integer", "minimum": 0, "maximum": INT32_MAX}
STRING = {"type": "string", "maxLength": MAX_STRING}
OBJECT = {"type": "object"}

SCHEMAS: dict[str, Any] = {
    "Error": {"type": "object", "required": ["error"], "properties": {
        "error": {"type": "string", "description": "what is wrong"},
        "field": {"type": "string", "description": "where: a JSON path (`action.ms`, `[1].action.type`), a header or `body`"}}},
    "Match": {"type": "object", "additionalProperties": False, "properties": {
        "broker": _nullable(BROKER_ID),
        "api": {"nullable": True, "oneOf": [{"type": "string", "enum": [k.api_name for k in ApiKey]},
                          {"type": "integer", "enum": [int(k) for k in ApiKey]}],
                "description": "an API name like `Produce` (also `produce`, `PRODUCE`) or its key"},
        "api_version": {"nullable": True, "type": "integer", "minimum": 0, "maximum": INT16_MAX},
        "topic": _nullable(STRING),
        "partition": {"nullable": True, "type": "integer", "minimum": 0, "maximum": INT32_MAX},
        "client_id": _nullable(STRING),
        "connection": {"nullable": True, "type": "integer", "minimum": 0, "maximum": INT64_MAX}}},
    "Action": {"oneOf": [
        {"type": "string", "enum": PLAIN_ACTIONS},
        {"type": "object", "additionalProperties": False, "required": ["type"],
         "properties": {"type": {"type": "string", "enum": PLAIN_ACTIONS}}},
        {"type": "object", "additionalProperties": False, "required": ["type", "ms"],
         "properties": {"type": {"type": "string", "enum": MS_ACTIONS}, "ms": MS}},
        {"type": "object", "additionalProperties": False, "required": ["type", "error"],
         "properties": {"type": {"type": "string", "enum": ["error"]},
                        "error": {"oneOf": [{"type": "string", "enum": list(ErrorCode.__members__),
                                             "description": "a Kafka error name (any case)"},
                                            {"type": "integer", "minimum": -INT16_MAX - 1, "maximum": INT16_MAX}]}}}]},
    "Rule": {"type": "object", "additionalProperties": False, "required": ["action"], "properties": {
        "match": _nullable(_ref("Match")),
        "action": _ref("Action"),
        "times": {"nullable": True, "type": "integer", "minimum": 1, "maximum": INT64_MAX, "description": "apply at most n times"},
        "after": {"type": "integer", "minimum": 0, "maximum": INT64_MAX, "description": "skip the first n matching requests"},
        "probability": {"type": "number", "minimum": 0, "maximum": 1},
        "duration_ms": _nullable(MS),
        "at_ms": _nullable(MS),
        "name": _nullable(STRING),
        "id": {"type": "integer", "nullable": True, "minimum": 0,
               "description": "ignored (the server numbers rules; a listed rule can be posted back)"}}},
    "AddedRule": {"type": "object", "required": ["id", "rule"], "properties": {
        "id": {"type": "integer"}, "rule": OBJECT}},
    "Replication": {"type": "object", "additionalProperties": False, "required": ["mode"], "properties": {
        "topic": {"type": "string", "nullable": True, "maxLength": MAX_STRING, "example": "t"},
        "partition": {"type": "integer", "nullable": True, "minimum": 0, "maximum": INT32_MAX,
                      "description": "needs a topic"},
        "follower": {"type": "integer", "nullable": True, "minimum": 0, "maximum": INT32_MAX},
        "mode": {"type": "string", "enum": list(REPLICATION_MODES)},
        "lag_ms": {**MS, "nullable": True, "description": "for mode `lag`: > 0"}}},
    "MarkerDelay": {"type": "object", "additionalProperties": False, "required": ["ms"],
                    "properties": {"ms": {**MS, "nullable": True, "maximum": 86_400_000}}},
    "Leader": {"type": "object", "additionalProperties": False, "required": ["broker"], "properties": {"broker": BROKER_ID}},
}

ID = _path_param("id", {"type": "integer", "minimum": 0, "maximum": INT32_MAX}, "a broker id")
PATHS: dict[str, Any] = {
    "/faults": {
        "post": _op("add a rule, or a list of rules (all or nothing)",
                    _json({"oneOf": [_ref("AddedRule"), {"type": "array", "items": _ref("AddedRule")}]}, "added"), 404, 409,
                    body={"oneOf": [_ref("Rule"), {"type": "array", "maxItems": 1000, "items": _ref("Rule")}]},
                    status="201"),
        "get": _op("list rules with their matched / applied counters",
                   _json({"type": "object", "required": ["faults"], "properties": {"faults": {"type": "array", "items": OBJECT}}},
                         "the rules")),
        "delete": _op("remove every rule", _json({"type": "object", "required": ["removed"],
                                                   "properties": {"removed": {"type": "integer"}}}, "how many")),
    },
    "/faults/{id}": {
        "delete": _op("remove one rule", _json({"type": "object", "required": ["removed"],
                                                 "properties": {"removed": {"type": "integer"}}}, "removed"), 404,
                      parameters=[_path_param("id", {"type": "integer", "minimum": 0, "maximum": INT32_MAX}, "a rule id")]),
    },
    "/brokers/{id}/stop": {
        "post": _op("stop a broker: listener closed, connections dropped, leadership moved",
                    _json({"type": "object", "properties": {"broker": {"type": "integer"}, "state": {"type": "string"}}},
                          "stopped"), 404, parameters=[ID]),
    },
    "/brokers/{id}/start": {
        "post": _op("start a stopped broker",
                    _json({"type": "object", "properties": {"broker": {"type": "integer"}, "state": {"type": "string"}}},
                          "running"), 404, parameters=[ID]),
    },
    "/partitions/{topic}/{partition}/leader": {
        "post": _op("move a partition's leader to another live replica", _json(OBJECT, "moved"), 404,
                    body=_ref("Leader"),
                    parameters=[_path_param("topic", {"type": "string", "minLength": 1, "example": "t"}, "a topic"),
                                _path_param("partition", {"type": "integer", "minimum": 0, "maximum": INT32_MAX},
                                            "a partition index")]),
    },
    "/replication": {
        "post": _op("stall, lag or restore replication for a topic, partition or follower",
                    _json(OBJECT, "the mode now in force"), 404, body=_ref("Replication")),
    },
    "/transactions/marker-delay": {
        "post": _op("delay the transaction coordinator's commit/abort markers (null: the configured emu.txn.marker.delay.ms)",
                    _json(OBJECT, "the delay now in force"), body=_ref("MarkerDelay")),
    },
    "/trace": {
        "get": {**_op("trace events as JSONL", {"description": "one JSON event per line",
                                                 "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}),
                "parameters": [
                    _query_param("since_ms", {"type": "number"}, "events at or after this cluster time"),
                    _query_param("client_id", {"type": "string"}, "only this client id"),
                    _query_param("api", {"type": "string"}, "only this API (name)"),
                    _query_param("kind", {"type": "string"}, "comma-separated event kinds, e.g. recv,send")]},
    },
    "/cluster": {
        "get": _op("brokers, topics, leaders, ISR, high watermarks, faults, purgatory sizes", _json(OBJECT, "the cluster")),
    },
    "/groups": {
        "get": _op("every group: classic (generation, members, timers) and KIP-848 consumer groups (group and "
                   "assignment epochs, each member's epoch, state, assignment, revocations, target, session and "
                   "rebalance deadlines)", _json({"type": "array", "items": OBJECT}, "the groups")),
    },
    "/groups/{group}": {
        "get": _op("one group, as in /groups", _json(OBJECT, "the group"), 404,
                   parameters=[_path_param("group", {"type": "string"}, "the group id")]),
    },
    "/": {
        "get": _op("a redirect to the web console, /console (public)",
                   {"description": "to the console", "headers": {"Location": {
                       "description": "/console", "schema": {"type": "string", "enum": ["/console"]}}}},
                   status="302"),
    },
    "/console": {
        "get": _op("the web console's page (public: no cluster data; the page sends the token on its own requests)",
                   {"description": "the page", "content": {"text/html": {"schema": {"type": "string"}}}}),
    },
    "/console/state": {
        "get": _op("the console's snapshot: the cluster, groups, connections with their requests in flight, "
                   "operations parked in the purgatories with the time each has left, fault rules with hits",
                   _json(OBJECT, "the snapshot")),
    },
    "/console/events": {
        "get": _op("server-sent events: `trace` (every trace event as it happens) and `state` (the snapshot, "
                   "every interval_ms); the stream lasts until the client closes it",
                   {"description": "the event stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                   parameters=[_query_param("interval_ms", {"type": "number", "minimum": 50, "maximum": 10000},
                                            "ms between snapshots (default 500)")]),
    },
    "/console/{name}": {
        "get": _op("the console's script and style (console.js, console.css; public)",
                   {"description": "the file", "content": {"text/javascript": {"schema": {"type": "string"}},
                                                           "text/css": {"schema": {"type": "string"}}}}, 404,
                   parameters=[_path_param("name", {"type": "string"}, "console.js or console.css")]),
    },
    "/openapi.json": {
        "get": _op("this document", _json(OBJECT, "OpenAPI 3.0")),
    },
}

OPENAPI: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "broker-emu control API", "version": "1",
             "description": "Live fault injection for the emulated Kafka cluster (docs/control.md). JSON bodies must be "
                            "sent as Content-Type: application/json; browser cross-origin requests are refused."},
    "paths": PATHS,
    "components": {
        "schemas": SCHEMAS,
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                       "description": "required when the server was started with --token"}},
    },
    "security": [{}, {"bearer": []}],
}
