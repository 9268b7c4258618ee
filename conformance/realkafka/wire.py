"""Blocking one-request-per-connection calls to a broker, over loopback, with the shared codec
(``client.protocol``): enough to tell that a node answers, how many brokers it knows, and to
create a topic, without starting a client's machinery."""

from __future__ import annotations

import socket
import struct
from typing import Any

from client.protocol import ApiKey
from client.protocol.codec import decode_response, encode_request

METADATA_VERSION = 12
CREATE_TOPICS_VERSION = 7
CLIENT_ID = "broker-emu-realkafka"


def call(host: str, port: int, api_key: int, version: int, body: dict[str, Any], timeout: float = 5.0) -> Any:
    """Send one request on a new connection and return the decoded response body."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(encode_request(api_key, version, 1, CLIENT_ID, body))
        size = struct.unpack(">i", _read_exactly(sock, 4))[0]
        _, response = decode_response(api_key, version, _read_exactly(sock, size))
    return response


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(chunks)} of {n} bytes")
        chunks += chunk
    return bytes(chunks)


def metadata(host: str, port: int, topics: list[str] | None = None, timeout: float = 5.0) -> Any:
    """A Metadata response: every topic when ``topics`` is None; never creates a topic."""
    body = {"topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False}
    return call(host, port, ApiKey.METADATA, METADATA_VERSION, body, timeout)


def broker_ids(host: str, port: int, timeout: float = 5.0) -> list[int]:
    """The ids of the brokers this node lists (registered and unfenced), sorted."""
    return sorted(b.node_id for b in metadata(host, port, [], timeout).brokers)


def create_topic(host: str, port: int, name: str, partitions: int = 1, replication_factor: int = 1,
                 configs: dict[str, str] | None = None, timeout: float = 30.0) -> None:
    """Create a topic (CreateTopics goes to any broker, which forwards it to the controller).
    An existing topic is not an error; any other error code raises ``RuntimeError``."""
    body = {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": replication_factor,
                        "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
            "timeout_ms": int(timeout * 1000), "validate_only": False}
    response = call(host, port, ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION, body, timeout + 5)
    for topic in response.topics:
        if topic.error_code not in (0, 36):   # 36: TOPIC_ALREADY_EXISTS
            raise RuntimeError(f"CreateTopics {topic.name}: error {topic.error_code} {topic.error_message or ''}")
