"""Requests that repeat byte for byte are decoded once, and their answers encoded once.

Clients poll Metadata (and ask ApiVersions, FindCoordinator, DescribeCluster) far more often
than the cluster changes, and decoding the request and encoding the answer cost more than
building the answer (together about 25 µs of a Metadata round trip's 90 µs of our own work).
A repeat is the same request frame but for its correlation id (``repeat_key``).

- Decoding is a pure function of the bytes: a repeat gets the body decoded the first time
  (the handlers of these APIs only read their request; the version check still runs).
- The answer is always built by the handler, from the cluster as it is now; its encoding is
  reused only when it equals (``==``) the answer last built for the same request, so nothing
  can go stale when faults move leaders or stop brokers. Comparing is a twentieth of the cost
  of the pickle this cache used to key on. Only the correlation id differs between two equal
  answers. (The handlers build each answer afresh, never handing out the cluster's own lists,
  so a kept answer cannot change under the cache.)
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from broker_emu.handlers import TopicIds, error_codes, request_details, topics_of
from client.protocol import ApiKey
from client.protocol.codec import RequestHeader, encode_response, response_header_version
from client.protocol.framing import Frame

REPEATED_APIS = frozenset(int(k) for k in (ApiKey.METADATA, ApiKey.API_VERSIONS, ApiKey.FIND_COORDINATOR,
                                           ApiKey.DESCRIBE_CLUSTER))
MAX_REQUEST_BYTES = 4096   # a Metadata request naming some hundred topics; larger ones are not kept
_SIZE_AND_ID = struct.Struct(">ii")
_LIMIT = 512  # distinct requests kept (topics requested x versions x client ids)

_decoded: OrderedDict[bytes, tuple[RequestHeader, Any, tuple[str, ...]]] = OrderedDict()
_facts: OrderedDict[bytes, tuple[list[tuple[str, int | None]], dict[str, Any]]] = OrderedDict()
_encoded: OrderedDict[bytes, tuple[Mapping[str, Any], bytes, list[int]]] = OrderedDict()


def repeat_key(frame: Frame) -> bytes | None:
    """The request without its correlation id, for the APIs whose requests repeat; else None."""
    if len(frame) > MAX_REQUEST_BYTES or len(frame) < 8 or int.from_bytes(frame[:2], "big") not in REPEATED_APIS:
        return None
    return bytes(frame[:4]) + bytes(frame[8:])


def _remember(cache: OrderedDict, key: Any, value: Any) -> None:
    cache[key] = value
    if len(cache) > _LIMIT:
        cache.popitem(last=False)


def decoded_before(key: bytes | None, frame: Frame) -> tuple[RequestHeader, Any, list[str]] | None:
    """(header, body, anomalies) of a request decoded before, with this frame's correlation id."""
    hit = _decoded.get(key) if key is not None else None
    if hit is None:
        return None
    h, body, anomalies = hit
    header = RequestHeader(h.api_key, h.api_version, int.from_bytes(frame[4:8], "big", signed=True), h.client_id,
                           h.size, h.tagged)
    return header, body, list(anomalies)


def remember_decoded(key: bytes | None, header: RequestHeader, body: Any, anomalies: list[str]) -> None:
    if key is not None:
        _remember(_decoded, key, (header, body, tuple(anomalies)))


def request_facts(key: bytes | None, cluster: TopicIds, api_key: int, body: Any) -> tuple[list[tuple[str, int | None]], dict[str, Any]]:
    """``topics_of`` and ``request_details`` of a request (what the trace and the fault rules
    read of it): a repeat's are the first time's when it names its topics by name (an id is
    looked up in the cluster, which changes). The details are a fresh dict each time: the
    trace event keeps it."""
    kept = _facts.get(key) if key is not None else None
    if kept is None:
        topics = topics_of(cluster, api_key, body)
        kept = (topics, request_details(topics, api_key, body))
        if key is not None and all(t.get("name") for t in body.get("topics") or ()):
            _remember(_facts, key, kept)
    return kept[0], dict(kept[1])


def encode_with_errors(api_key: int, version: int, correlation_id: int, body: Mapping[str, Any],
                       request: bytes | None = None) -> tuple[bytes, list[int]]:
    """The response frame (size prefix included) and the non-zero error codes in it.
    ``request``: the request's ``repeat_key``, under which the encoding is kept for the next
    equal answer."""
    if request is None:
        return encode_response(api_key, version, correlation_id, body), error_codes(body)
    kept = _encoded.get(request)
    flexible = response_header_version(api_key, version) == 1
    if kept is None or (kept[0] is not body and kept[0] != body):
        frame = encode_response(api_key, version, 0, body)
        kept = (body, frame[9 if flexible else 8:], error_codes(body))
        _remember(_encoded, request, kept)
    _, payload, errors = kept
    head = _SIZE_AND_ID.pack(len(payload) + (5 if flexible else 4), correlation_id)
    return (head + b"\0" + payload if flexible else head + payload), errors
