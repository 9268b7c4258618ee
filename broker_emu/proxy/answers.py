"""What the proxy reads in and changes about the messages it forwards: broker addresses in
answers, the versions ApiVersions advertises, and a Produce's acks.

Addresses. Metadata (brokers), FindCoordinator (v0-3: the one node; v4+: each coordinator) and
DescribeCluster (brokers, when it describes brokers rather than controllers) carry broker
addresses; each is replaced by the proxy's listener for that node id, so that a client only ever
connects through the proxy.

Versions. An address can only be rewritten in a version the codec can decode. A client picks
the newest version both it and the broker advertise, so the proxy lowers the max version the
upstream advertises in ApiVersions, for the address-carrying APIs only, to the newest its codec
knows (``cap_api_versions``). Every other API keeps the upstream's range, and what the codec does
not know is passed through byte for byte.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterator

from client.protocol import ApiKey, ProtocolError
from client.protocol.codec import supported_versions
from client.protocol.framing import Frame

ADDRESS_APIS = frozenset({int(ApiKey.METADATA), int(ApiKey.FIND_COORDINATOR), int(ApiKey.DESCRIBE_CLUSTER)})
BROKER_ENDPOINTS = 1   # DescribeCluster's endpoint_type for brokers (2: controllers)
PRODUCE_FLEXIBLE_FROM = 9


class AnswerCache:
    """Rewritten answers by the upstream's bytes. Clients ask Metadata, ApiVersions,
    FindCoordinator over and over and the upstream answers the same bytes until something
    changes; decoding and re-encoding each costs more than the round trip
    (benchmarks/proxy.py). Keyed by the whole answer after its correlation id, so nothing
    goes stale: a proxied broker keeps its local port for the proxy's life, and any change
    upstream changes the bytes. One cache per proxy (the local addresses are the proxy's)."""

    LIMIT_BYTES = 16 << 20   # answers and their keys, together (a big cluster's Metadata is big)

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[int, int, bytes], tuple[bytes, list[int]]] = OrderedDict()
        self.bytes = 0

    def get(self, api_key: int, version: int, answer: bytes) -> tuple[bytes, list[int]] | None:
        """The rewritten frame (size prefix included) for this answer, with its correlation id."""
        hit = self._entries.get((api_key, version, answer[4:]))
        if hit is None:
            return None
        frame, errors = hit
        return frame[:4] + answer[:4] + frame[8:], errors

    def put(self, api_key: int, version: int, answer: bytes, frame: bytes, errors: list[int]) -> None:
        key = (api_key, version, answer[4:])
        size = len(answer) + len(frame)
        if key in self._entries or size > self.LIMIT_BYTES // 4:
            return
        self._entries[key] = (frame, errors)
        self.bytes += size
        while self.bytes > self.LIMIT_BYTES:
            (_, _, old_answer), (old_frame, _) = self._entries.popitem(last=False)
            self.bytes -= len(old_answer) + 4 + len(old_frame)


def address_entries(api_key: int, version: int, body: Any) -> Iterator[tuple[Any, str]]:
    """Each (entry, id field) of an answer that holds a node's host and port (``entry`` is the
    decoded mapping to change in place)."""
    if api_key == ApiKey.METADATA:
        for broker in body.get("brokers") or ():
            yield broker, "node_id"
    elif api_key == ApiKey.FIND_COORDINATOR:
        if version < 4:
            if body.get("node_id", -1) >= 0:
                yield body, "node_id"
        else:
            for coordinator in body.get("coordinators") or ():
                if coordinator.get("node_id", -1) >= 0:
                    yield coordinator, "node_id"
    elif api_key == ApiKey.DESCRIBE_CLUSTER:
        if body.get("endpoint_type", BROKER_ENDPOINTS) == BROKER_ENDPOINTS:
            for broker in body.get("brokers") or ():
                yield broker, "broker_id"


def cap_api_versions(body: Any) -> bool:
    """Lower the advertised max version of every API the codec reads to what it reads, so the
    client speaks versions the proxy can decode: addresses are rewritten, and a fault that
    rewrites an answer (an injected error, a throttle) or matches a topic always applies. A
    newer Kafka otherwise gets Produce v12+ (topic ids, not names) that the proxy could only pass
    through, and a throttle fault would silently not reach the client (the Java client 4.4
    against Kafka 4.4 showed it). APIs the codec does not know keep the upstream's range and
    pass through byte for byte. An address-carrying API whose every version is beyond the codec
    is left out (its addresses could not be rewritten). True if anything changed."""
    changed = False
    kept = []
    for entry in body.get("api_keys") or ():
        try:
            lo, hi = supported_versions(entry["api_key"])
        except ProtocolError:
            kept.append(entry)
            continue
        if entry["min_version"] > hi or entry["max_version"] < lo:
            if entry["api_key"] in ADDRESS_APIS:
                changed = True
                continue
        elif entry["max_version"] > hi:
            entry["max_version"] = hi
            changed = True
        kept.append(entry)
    if changed:
        body["api_keys"] = kept
    return changed


def _uvarint(frame: Frame, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(frame) or shift > 28:
            raise ValueError("bad varint")
        byte = frame[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7


def produce_acks(frame: Frame, body_start: int, version: int) -> int | None:
    """A Produce request's acks, read from the bytes (for versions the codec cannot decode:
    whether an answer will come back depends on it). ``body_start`` is where a v1 request header
    ends; flexible versions have a tagged section there first. None if the bytes do not say."""
    pos = body_start
    try:
        if version >= PRODUCE_FLEXIBLE_FROM:
            count, pos = _uvarint(frame, pos)          # the header's tagged fields
            for _ in range(count):
                _, pos = _uvarint(frame, pos)
                size, pos = _uvarint(frame, pos)
                pos += size
        if version >= 3:                                 # transactional_id, a nullable string
            if version >= PRODUCE_FLEXIBLE_FROM:
                n, pos = _uvarint(frame, pos)
                pos += max(n - 1, 0)
            else:
                n = int.from_bytes(frame[pos:pos + 2], "big", signed=True)
                pos += 2 + max(n, 0)
        if pos + 2 > len(frame):
            return None
        return int.from_bytes(frame[pos:pos + 2], "big", signed=True)
    except ValueError:
        return None
