"""Answers that repeat byte for byte are encoded once.

Clients poll Metadata (and ask ApiVersions, FindCoordinator, DescribeCluster) far more often
than the cluster changes, and encoding a response costs more than building it. The cache is
keyed by the response's full content (its pickle), never by a notion of "cluster version":
whatever a handler answers is exactly what goes out, so nothing can go stale when faults move
leaders or stop brokers. Only the correlation id differs between two equal answers.
"""

from __future__ import annotations

import pickle
import struct
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from broker_emu.handlers import error_codes
from client.protocol import ApiKey, encode_response, response_header_version

CACHED_APIS = frozenset({ApiKey.METADATA, ApiKey.API_VERSIONS, ApiKey.FIND_COORDINATOR, ApiKey.DESCRIBE_CLUSTER})
_SIZE_AND_ID = struct.Struct(">ii")
_LIMIT = 512  # distinct answers kept (topics requested x versions x cluster states)

_cache: OrderedDict[tuple[int, int, bytes | str], tuple[bytes, list[int]]] = OrderedDict()


def _content(body: Mapping[str, Any]) -> bytes | str:
    """The answer's whole content as a key: its pickle (equal bytes unpickle to equal answers, so a
    hit is always the same answer; about half the cost of ``repr`` on a Metadata answer with error
    code enums and topic UUIDs), or its ``repr`` for anything pickle refuses."""
    try:
        return pickle.dumps(body, 5)
    except (pickle.PicklingError, TypeError, AttributeError):
        return repr(body)


def encode_with_errors(api_key: int, version: int, correlation_id: int, body: Mapping[str, Any]) -> tuple[bytes, list[int]]:
    """The response frame (size prefix included) and the non-zero error codes in it."""
    if api_key not in CACHED_APIS:
        return encode_response(api_key, version, correlation_id, body), error_codes(body)
    key = (api_key, version, _content(body))
    hit = _cache.get(key)
    flexible = response_header_version(api_key, version) == 1
    if hit is None:
        frame = encode_response(api_key, version, 0, body)
        hit = (frame[9 if flexible else 8:], error_codes(body))
        _cache[key] = hit
        if len(_cache) > _LIMIT:
            _cache.popitem(last=False)
    payload, errors = hit
    head = _SIZE_AND_ID.pack(len(payload) + (5 if flexible else 4), correlation_id)
    return (head + b"\0" + payload if flexible else head + payload), errors
