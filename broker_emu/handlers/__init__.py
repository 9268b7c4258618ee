"""Request handlers, one module per API family. Importing this package registers them all."""

from __future__ import annotations

from typing import Any

from client.protocol import ApiKey


class CloseConnection(Exception):
    """Raised by a handler when the broker must close the connection instead of answering
    (e.g. a failed acks=0 produce, SEMANTICS.md §2.2)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def _partition_index(p: Any) -> int | None:
    if isinstance(p, int):
        return p
    for name in ("partition", "partition_index", "index"):
        if name in p:
            return p[name]
    return None


def topics_of(cluster: Any, api_key: int, body: Any) -> list[tuple[str, int | None]]:
    """(topic, partition) pairs a request names, for fault matching and the trace."""
    out: list[tuple[str, int | None]] = []
    for key in ("topic_data", "topics"):
        for t in body.get(key) or ():
            if isinstance(t, str):
                out.append((t, None))
                continue
            name = t.get("name") or t.get("topic")
            if not name and t.get("topic_id") is not None:
                topic = cluster.topic_by_id(t["topic_id"])
                name = topic.name if topic else None
            if not name:
                continue
            parts = t.get("partition_data") or t.get("partitions") or t.get("partition_indexes") or ()
            if not parts:
                out.append((name, None))
            for p in parts:
                out.append((name, _partition_index(p)))
    return out


def error_codes(body: Any) -> list[int]:
    """Every non-zero error code anywhere in a response (for the trace). Iterative, and lists
    of scalars (replica ids, offsets) are skipped whole: this runs on every response."""
    found: list[int] = []
    stack = [body]
    while stack:
        v = stack.pop()
        items = v.items() if isinstance(v, dict) else (("", x) for x in v)
        for k, x in items:
            if k == "error_code":
                if x:
                    found.append(x)
            elif isinstance(x, dict) or (isinstance(x, list) and x and isinstance(x[0], (dict, list))):
                stack.append(x)
    return found


def error_response(api_key: int, version: int, request: Any, code: int) -> dict[str, Any]:
    """An injected error answer with no side effects, mirroring the request's topics and
    partitions where the API reports errors per partition."""
    api = ApiKey(api_key)
    if api == ApiKey.PRODUCE:
        return {"responses": [{"name": t["name"], "partition_responses": [
            {"index": p["index"], "error_code": code, "base_offset": -1} for p in t["partition_data"]]}
            for t in request["topic_data"]]}
    if api == ApiKey.FETCH:
        return {"error_code": 0, "responses": [{"topic": t.get("topic", ""), "topic_id": t.get("topic_id"), "partitions": [
            {"partition_index": p["partition"], "error_code": code, "high_watermark": -1} for p in t["partitions"]]}
            for t in request["topics"]]}
    if api == ApiKey.LIST_OFFSETS:
        return {"topics": [{"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": code, "offset": -1, "timestamp": -1} for p in t["partitions"]]}
            for t in request["topics"]]}
    if api == ApiKey.METADATA:
        return {"brokers": [], "topics": [{"name": t["name"], "error_code": code} for t in request.get("topics") or ()]}
    if api == ApiKey.OFFSET_COMMIT:
        return {"topics": [{"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": code} for p in t["partitions"]]} for t in request["topics"]]}
    if api == ApiKey.FIND_COORDINATOR:
        keys = request.get("coordinator_keys") or []
        return {"error_code": code, "node_id": -1, "host": "", "port": -1,
                "coordinators": [{"key": k, "node_id": -1, "host": "", "port": -1, "error_code": code} for k in keys]}
    if api == ApiKey.OFFSET_FETCH:
        groups = request.get("groups") or []
        return {"error_code": code, "groups": [{"group_id": g["group_id"], "error_code": code} for g in groups]}
    if api == ApiKey.DESCRIBE_GROUPS:
        return {"groups": [{"group_id": g, "error_code": code} for g in request["groups"]]}
    if api == ApiKey.DELETE_TOPICS:
        return {"responses": [{"name": n, "error_code": code} for n in request.get("topic_names") or []]}
    if api == ApiKey.CREATE_TOPICS:
        return {"topics": [{"name": t["name"], "error_code": code} for t in request["topics"]]}
    return {"error_code": code}


def register_all() -> None:
    from broker_emu.handlers import admin, api_versions, fetch, metadata, offsets, produce  # noqa: F401
    try:
        from broker_emu.groups import handlers as group_handlers  # noqa: F401
    except ImportError:
        pass
