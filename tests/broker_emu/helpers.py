"""Request builders for emulator tests (the wire client itself is tests.broker_emu.wire)."""

from __future__ import annotations

from client.protocol.records import Record, encode_batch
from tests.broker_emu.wire import WireClient, fetch_body, leader_of, produce_body  # noqa: F401  (re-exported)

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
SASL_HANDSHAKE, API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS = 17, 18, 19, 20
INIT_PRODUCER_ID, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_CONFIGS, DESCRIBE_CLUSTER = 22, 23, 32, 60


def batch(values: list[bytes], timestamps: list[int] | None = None, **kw) -> bytes:
    ts = timestamps or [1000] * len(values)
    return encode_batch([Record(v, timestamp=t) for v, t in zip(values, ts)], **kw)


def produce_many(parts: list[tuple[str, int, bytes]], acks: int = -1, timeout_ms: int = 30000) -> dict:
    """One Produce request carrying a batch per (topic, partition)."""
    topics: dict[str, list] = {}
    for topic, index, records in parts:
        topics.setdefault(topic, []).append({"index": index, "records": records})
    return {"acks": acks, "timeout_ms": timeout_ms,
            "topic_data": [{"name": t, "partition_data": p} for t, p in topics.items()]}


def partition_results(response) -> dict[tuple[str, int], object]:
    return {(t.name, p.index): p for t in response.responses for p in t.partition_responses}


def follower_of(cluster, topic: str, partition: int = 0) -> int:
    p = cluster.partition(topic, partition)
    return next(b for b in p.replicas if b != p.leader)
