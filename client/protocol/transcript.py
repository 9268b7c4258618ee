"""Sans-io wire transcript: pair requests with responses and describe them in one line each.

Responses carry only a correlation id, so the transcript remembers each request's API and
version to decode its answer, as any client must.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from client.protocol.api_keys import ApiKey
from client.protocol.codec import decode_request, decode_response
from client.protocol.errors import ProtocolError


@dataclass
class Entry:
    direction: str  # "request" or "response"
    api: str
    version: int
    correlation_id: int
    client_id: str | None
    summary: str
    body: Any = field(repr=False, default=None)


def _api_name(key: int) -> str:
    try:
        return ApiKey(key).api_name
    except ValueError:
        return f"api{key}"


def summarize(api_key: int, body: Any) -> str:
    """A short human description of a message's interesting fields."""
    parts = []
    for name in ("acks", "timeout_ms", "max_wait_ms", "min_bytes", "error_code", "throttle_time_ms",
                 "group_id", "member_id", "generation_id", "session_timeout_ms", "rebalance_timeout_ms"):
        value = body.get(name) if isinstance(body, dict) else None
        if value in (None, "") or (value == -1 and name != "acks") or (name == "throttle_time_ms" and value == 0):
            continue
        parts.append(f"{name}={value}")
    topics = body.get("topics") or body.get("topic_data") or body.get("responses") if isinstance(body, dict) else None
    if topics:
        names = [t.get("name") or t.get("topic") for t in topics if isinstance(t, dict)]
        errors = sorted({code for t in topics for p in (t.get("partitions") or t.get("partition_responses") or [])
                         if isinstance(p, dict) and (code := p.get("error_code"))})
        parts.append(f"topics={[n for n in names if n]}")
        if errors:
            parts.append(f"partition_errors={errors}")
    return " ".join(parts)


class Transcript:
    def __init__(self) -> None:
        self._pending: dict[int, tuple[int, int]] = {}
        self.entries: list[Entry] = []

    def request(self, frame: bytes) -> Entry:
        try:
            header, body = decode_request(frame)
        except ProtocolError as exc:
            entry = Entry("request", "?", -1, -1, None, f"undecodable: {exc}")
        else:
            self._pending[header.correlation_id] = (header.api_key, header.api_version)
            entry = Entry("request", _api_name(header.api_key), header.api_version, header.correlation_id,
                          header.client_id, summarize(header.api_key, body), body)
        self.entries.append(entry)
        return entry

    def response(self, frame: bytes) -> Entry:
        correlation_id = int.from_bytes(frame[:4], "big", signed=True) if len(frame) >= 4 else -1
        key_version = self._pending.pop(correlation_id, None)
        if key_version is None:
            entry = Entry("response", "?", -1, correlation_id, None, "no matching request")
        else:
            key, version = key_version
            try:
                _, body = decode_response(key, version, frame)
                entry = Entry("response", _api_name(key), version, correlation_id, None, summarize(key, body), body)
            except ProtocolError as exc:
                entry = Entry("response", _api_name(key), version, correlation_id, None, f"undecodable: {exc}")
        self.entries.append(entry)
        return entry
