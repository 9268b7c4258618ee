"""A one-broker, one-topic responder for ``CaptureListener``, built on our codec.

It answers just enough for a producer to get its record acknowledged: ApiVersions, Metadata (the
listener itself is the only broker and leads every partition) and Produce (every partition
accepts record batches v2 with error 0, offsets counted from 0; anything else in ``records`` gets
INVALID_RECORD). Other requests are recorded in ``unhandled`` and left unanswered, so a test sees
them instead of a client stumbling over a made-up answer.

Like a real broker it advertises every API our codec knows (``advertise`` narrows that): clients
read more than the versions of what they will send. librdkafka, for one, only writes record
batches v2 when Fetch v4+ is advertised too (its "MsgVer2" feature needs Produce v3 and Fetch v4).

``api_versions_max`` lowers the ApiVersions versions we accept, to watch a client fall back: a
request above it gets what a real broker sends for a version it does not know (KIP-511,
Kafka's ApiVersionsRequest.getErrorResponse): a v0-format body with UNSUPPORTED_VERSION and only
ApiVersions' own range.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable
from typing import Any

from client.protocol import ApiKey, records
from client.protocol.codec import decode_request, encode_response, supported_versions

from .capture import Frame

UNSUPPORTED_VERSION = 35
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_RECORD = 87
NODE_ID = 1
ANSWERED = (ApiKey.PRODUCE, ApiKey.METADATA, ApiKey.API_VERSIONS)


class SingleBroker:
    def __init__(self, port: int, topic: str, *, partitions: int = 1, advertise: Iterable[ApiKey] = tuple(ApiKey),
                 api_versions_max: int | None = None) -> None:
        self.port = port
        self.topic = topic
        self.partitions = partitions
        self.api_versions_max = supported_versions(ApiKey.API_VERSIONS)[1] if api_versions_max is None else api_versions_max
        self.advertised = [key for key in advertise]
        self.unhandled: list[Frame] = []
        self._next_offset: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()  # connections are served on separate threads

    def __call__(self, frame: Frame) -> bytes | None:
        if frame.api_key == ApiKey.API_VERSIONS and frame.api_version > self.api_versions_max:
            return self._unsupported_api_versions(frame)
        if frame.api_key not in ANSWERED:
            with self._lock:
                self.unhandled.append(frame)
            return None
        header, body = decode_request(frame.data)
        handler = {ApiKey.API_VERSIONS: self._api_versions, ApiKey.METADATA: self._metadata,
                   ApiKey.PRODUCE: self._produce}[ApiKey(header.api_key)]
        answer = handler(header.api_version, body)
        if answer is None:
            return None
        return encode_response(header.api_key, header.api_version, header.correlation_id, answer)

    # -- ApiVersions ----------------------------------------------------------------------------

    def _unsupported_api_versions(self, frame: Frame) -> bytes:
        body = {"error_code": UNSUPPORTED_VERSION,
                "api_keys": [{"api_key": ApiKey.API_VERSIONS, "min_version": 0, "max_version": self.api_versions_max}]}
        return encode_response(ApiKey.API_VERSIONS, 0, frame.correlation_id, body)

    def _api_versions(self, version: int, body: Any) -> dict[str, Any]:
        keys = []
        for key in self.advertised:
            lo, hi = supported_versions(key)
            if key == ApiKey.API_VERSIONS:
                hi = self.api_versions_max
            keys.append({"api_key": key, "min_version": lo, "max_version": hi})
        return {"error_code": 0, "api_keys": keys, "throttle_time_ms": 0}

    # -- Metadata -------------------------------------------------------------------------------

    def _metadata(self, version: int, body: Any) -> dict[str, Any]:
        wanted = body.topics
        # v0: an empty list means every topic; v1+: null means every topic and an empty list
        # none (kafka-python and aiokafka bootstrap with an empty list)
        if wanted is None or (version == 0 and not wanted):
            names: list[str | None] = [self.topic]
        else:
            names = [t.name for t in wanted]
        return {
            "throttle_time_ms": 0,
            "brokers": [{"node_id": NODE_ID, "host": "127.0.0.1", "port": self.port, "rack": None}],
            "cluster_id": "broker-emu-capture",
            "controller_id": NODE_ID,
            "topics": [self._topic_metadata(name) for name in names],
        }

    def _topic_metadata(self, name: str | None) -> dict[str, Any]:
        if name != self.topic:
            return {"error_code": UNKNOWN_TOPIC_OR_PARTITION, "name": name, "partitions": []}
        partitions = [{"error_code": 0, "partition_index": i, "leader_id": NODE_ID, "leader_epoch": 0,
                       "replica_nodes": [NODE_ID], "isr_nodes": [NODE_ID], "offline_replicas": []}
                      for i in range(self.partitions)]
        return {"error_code": 0, "name": name, "topic_id": uuid.uuid5(uuid.NAMESPACE_URL, name),
                "is_internal": False, "partitions": partitions}

    # -- Produce --------------------------------------------------------------------------------

    def _produce(self, version: int, body: Any) -> dict[str, Any] | None:
        responses = [{"name": topic.name,
                      "partition_responses": [self._append(topic.name, p.index, p.records) for p in topic.partition_data]}
                     for topic in body.topic_data]
        if body.acks == 0:  # the broker sends nothing back for acks=0
            return None
        return {"responses": responses, "throttle_time_ms": 0}

    def _append(self, topic: str, partition: int, batches: bytes | None) -> dict[str, Any]:
        try:
            count = sum(h.records_count for _, h in records.iter_batches(batches)) if batches else 0
        except records.CorruptRecordBatchError:
            # e.g. a magic 0/1 message set: Produce v3+ takes record batch v2 only (Kafka's ProduceRequest.validateRecords)
            return {"index": partition, "error_code": INVALID_RECORD, "base_offset": -1}
        with self._lock:
            base = self._next_offset.get((topic, partition), 0)
            self._next_offset[(topic, partition)] = base + count
        return {"index": partition, "error_code": 0, "base_offset": base, "log_append_time_ms": -1,
                "log_start_offset": 0}
