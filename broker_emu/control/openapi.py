"""The control API as an OpenAPI 3.0 document, served at ``GET /openapi.json``.

Kept here as data (a Python literal, so it ships with the package without package-data
configuration). A test checks that every route of ``routes.ROUTES`` appears here and every path
here is a route; the property-based fuzzer in ``tests/broker_emu/control`` generates its requests from it.
The bounds are the ones ``broker_emu.faults.rules`` enforces.
"""

from __future__ import annotations

from typing import Any

from broker_emu.control.wait_routes import MAX_WAIT_MS
from broker_emu.faults.late import HOLD_UNTIL
from broker_emu.faults.rules import (
    ACTIONS,
    INT16_MAX,
    INT32_MAX,
    INT64_MAX,
    MAX_BYTES_PER_S,
    MAX_MS,
    MAX_STRING,
    OPTIONAL_PARAMS,
    REPLICATION_MODES,
)
from broker_emu.trace import Kind
from broker_emu.waits import GROUP_STATES, TXN_STATES
from client.errors import ErrorCode
from client.protocol import ApiKey

PLAIN_ACTIONS = sorted(k for k, params in ACTIONS.items() if not params)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*statuses: int) -> dict[str, Any]:
    reasons = {400: "invalid request: `field` names what is wrong", 401: "missing or wrong bearer token",
               403: "refused: cross-origin, cross-site or non-loopback Host", 404: "no such broker, topic, partition or rule",
               405: "method not allowed", 409: "too many rules at once", 413: "request head or body too large",
               415: "a body that is not Content-Type: application/json", 500: "a bug: this request failed, the server did not",
               503: "the playground run took longer than its limit and was abandoned"}
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

PARAMS: dict[str, Any] = {
    "ms": MS, "jitter_ms": MS, "close_ms": MS,
    "until": {"type": "string", "enum": list(HOLD_UNTIL), "description": "what releases a held request"},
    "bytes_per_s": {"type": "integer", "minimum": 1, "maximum": MAX_BYTES_PER_S},
    "error": {"oneOf": [{"type": "string", "enum": list(ErrorCode.__members__), "description": "a Kafka error name (any case)"},
                        {"type": "integer", "minimum": -INT16_MAX - 1, "maximum": INT16_MAX}]},
}


def action_shapes() -> list[dict[str, Any]]:
    """An action: a bare type name (an action with no required parameter), or an object, one
    branch per set of parameters (optional ones may be null: not set)."""
    shapes: dict[tuple[tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for kind, params in ACTIONS.items():
        shapes.setdefault((params, OPTIONAL_PARAMS.get(kind, ())), []).append(kind)
    out: list[dict[str, Any]] = [{"type": "string", "enum": PLAIN_ACTIONS}]
    for (required, optional), kinds in shapes.items():
        properties = {"type": {"type": "string", "enum": sorted(kinds)}, **{p: PARAMS[p] for p in required},
                      **{p: {**PARAMS[p], "nullable": True} for p in optional}}
        out.append({"type": "object", "additionalProperties": False, "required": ["type", *required], "properties": properties})
    return out


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
        "connection": {"nullable": True, "type": "integer", "minimum": 0, "maximum": INT64_MAX},
        "bootstrap": {"nullable": True, "type": "boolean",
                      "description": "true: only connections through the cluster's bootstrap address (a front door); "
                                     "false: only those to a broker's own address"},
        "transactional_id": _nullable(STRING),
        "acknowledgements": {"nullable": True, "type": "boolean",
                             "description": "true: only requests carrying a share group's acknowledgements (every "
                                            "ShareAcknowledge, a ShareFetch with acknowledgement batches); false: only "
                                            "those without"}}},
    "Action": {"oneOf": action_shapes()},
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
    "WaitResult": {"type": "object", "required": ["waited_ms", "seen"], "properties": {
        "waited_ms": {"type": "number", "description": "how long the condition took to hold, on the cluster's clock"},
        "seen": {**OBJECT, "description": "what held: the group, partition, rule, transaction, connections or trace events"}}},
    "WaitTimedOut": {"type": "object", "required": ["error", "waited_ms", "seen"], "properties": {
        "error": {"type": "string", "description": "what was waited for and what was last seen, in one line"},
        "field": {"type": "string"}, "waited_ms": {"type": "number"},
        "seen": {**OBJECT, "description": "the last state seen"}}},
    "Leader": {"type": "object", "additionalProperties": False, "required": ["broker"], "properties": {"broker": BROKER_ID}},
    "PlaygroundRun": {"type": "object", "additionalProperties": False, "required": ["scenario"], "properties": {
        "scenario": {"type": "string", "minLength": 1, "maxLength": 200, "example": "server.purgatory-request-timed-out",
                     "description": "a scenario id from GET /playground/scenarios"},
        "settings": {"type": "object", "nullable": True, "maxProperties": 8,
                     "additionalProperties": {"type": "number"}, "example": {"request.timeout.ms": 30000},
                     "description": "setting -> value, from the scenario's list (the rest keep their defaults)"}}},
    "PlaygroundResult": {"type": "object", "required": ["scenario", "settings", "winner", "first_to_give_up", "svg"],
                         "properties": {
        "scenario": {"type": "string"}, "settings": OBJECT, "changed": OBJECT,
        "winner": {"type": "string", "enum": ["client", "broker", "nobody"]},
        "first_to_give_up": {"type": "string", "description": "who gave up first, and on which clock"},
        "svg": {"type": "string", "description": "the timeline (the lanes of broker-emu explain)"},
        "status": {"type": "string"}, "contracts": {"type": "array", "items": OBJECT},
        "outcomes": {"type": "array", "items": OBJECT},
        "wall_ms": {"type": "number"}, "simulated_ms": {"type": "number"}}},
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
        "get": _op("the console's scripts and style (console.js, playground.js, console.css; public)",
                   {"description": "the file", "content": {"text/javascript": {"schema": {"type": "string"}},
                                                           "text/css": {"schema": {"type": "string"}}}}, 404,
                   parameters=[_path_param("name", {"type": "string"}, "console.js, playground.js or console.css")]),
    },
    "/playground/scenarios": {
        "get": _op("the timeout playground's scenarios: id, title, teaching text, and the settings a run may change "
                   "(default, minimum, maximum); 404 when the server has no playground (the emulator's own command)",
                   _json({"type": "object", "required": ["scenarios"],
                          "properties": {"scenarios": {"type": "array", "items": OBJECT}}}, "the scenarios"), 404),
    },
    "/playground/run": {
        "post": _op("run a playground scenario with changed settings in virtual time (our client, in-process): its "
                    "timeline as SVG and who gave up first; one run at a time (409), bounded in wall time (503)",
                    _json(_ref("PlaygroundResult"), "the run"), 404, 409, 503, body=_ref("PlaygroundRun")),
    },
    "/console/playground": {
        "get": _op("the timeout playground's page (public, like the console's)",
                   {"description": "the page", "content": {"text/html": {"schema": {"type": "string"}}}}),
    },
    "/openapi.json": {
        "get": _op("this document", _json(OBJECT, "OpenAPI 3.0")),
    },
}

COUNT = {"type": "integer", "minimum": 0, "maximum": 10**18 - 1}


def _required(param: dict[str, Any]) -> dict[str, Any]:
    return {**param, "required": True}


def _wait(summary: str, *parameters: dict[str, Any]) -> dict[str, Any]:
    timeout = _required(_query_param("timeout_ms", {"type": "number", "minimum": 0, "maximum": MAX_WAIT_MS},
                                     f"how long to wait, at most {MAX_WAIT_MS} ms, on the cluster's clock"))
    op = _op(summary, _json(_ref("WaitResult"), "the condition holds: what was seen"), 404,
             parameters=[*parameters, timeout])
    op["responses"]["408"] = _json(_ref("WaitTimedOut"), "timed out: what was last seen")
    return {"get": op}


PATHS |= {
    "/wait/group/{group}": _wait(
        "wait until a group is in a state and/or has a number of members (at least one of the two)",
        _path_param("group", {"type": "string"}, "the group id"),
        _query_param("state", {"type": "string", "enum": list(GROUP_STATES)}, "the group state (any case)"),
        _query_param("members", COUNT, "the number of members (exactly)")),
    "/wait/partition/{topic}/{partition}": _wait(
        "wait until a partition's high watermark or log end offset reaches a value, or its ISR size or leader is one",
        _path_param("topic", {"type": "string", "minLength": 1, "example": "t"}, "a topic"),
        _path_param("partition", {"type": "integer", "minimum": 0, "maximum": INT32_MAX}, "a partition index"),
        _query_param("high_watermark", COUNT, "at least this"),
        _query_param("log_end_offset", COUNT, "at least this"),
        _query_param("isr_size", COUNT, "exactly this"),
        _query_param("leader", {**COUNT, "minimum": -1}, "exactly this broker (-1: no leader)")),
    "/wait/fault/{id}": _wait(
        "wait until a fault rule has fired a number of times",
        _path_param("id", {"type": "integer", "minimum": 0, "maximum": INT32_MAX}, "a rule id"),
        _query_param("hits", COUNT, "at least this many (default 1)")),
    "/wait/transaction/{transactional_id}": _wait(
        "wait until a transactional id's transaction is in a state",
        _path_param("transactional_id", {"type": "string"}, "the transactional id"),
        _required(_query_param("state", {"type": "string", "enum": list(TXN_STATES)}, "the state (any case)"))),
    "/wait/connections": _wait(
        "wait until a number of client connections is open (on one broker, or on all)",
        _required(_query_param("count", COUNT, "exactly this many open")),
        _query_param("broker", {"type": "integer", "minimum": 0, "maximum": INT32_MAX}, "only this broker")),
    "/wait/trace": _wait(
        "wait until trace events of a kind have been seen",
        _required(_query_param("kind", {"type": "string", "enum": [k.value for k in Kind]}, "the event kind")),
        _query_param("count", {**COUNT, "minimum": 1}, "at least this many (default 1)"),
        _query_param("since_ms", {"type": "number", "minimum": 0, "maximum": 2**63}, "only events at or after this cluster time"),
        _query_param("api", {"type": "string", "minLength": 1}, "only this API (name)"),
        _query_param("client_id", {"type": "string", "minLength": 1}, "only this client id")),
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
