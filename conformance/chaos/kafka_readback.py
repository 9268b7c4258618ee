"""What a chaos seed left in a real Kafka's logs: every record below each partition's high
watermark with the producer id and epoch of its batch, read straight from the partition's
leader with plain Fetch requests (conformance/realkafka/wire.py) — no client's consumer, so the
broker-side truth the accounting and the consumer check compare against is not read by the
client under test. The emulator's counterpart reads its logs in memory
(conformance/chaos/readback.py ``committed``)."""

from __future__ import annotations

import time

from client.protocol import ApiKey
from client.protocol.records import decode_batch, iter_batches
from conformance.chaos.accounting import Stored
from conformance.realkafka import wire
from conformance.realkafka.config import HOST

FETCH_VERSION = 11          # topics by name (v13 and later name them by id)
FETCH_MAX_BYTES = 8 << 20
NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH = 6, 74, 76


def leaders(ports: dict[int, int], topic: str) -> dict[int, int]:
    """partition -> leader node id, as the first node that answers Metadata sees them."""
    last: Exception | None = None
    for port in ports.values():
        try:
            meta = wire.metadata(HOST, port, [topic], timeout=5.0)
        except (OSError, ValueError, RuntimeError) as exc:
            last = exc
            continue
        return {p.partition_index: p.leader_id for t in meta.topics if t.name == topic for p in t.partitions}
    raise ConnectionError(f"no node answered Metadata for {topic}: {last}")


def read_partition(port: int, topic: str, partition: int) -> tuple[dict[int, Stored], int]:
    """(offset -> record, the high watermark) of one partition from its leader at ``port``."""
    out: dict[int, Stored] = {}
    offset, high = 0, -1
    while True:
        body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": FETCH_MAX_BYTES, "isolation_level": 0,
                "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
                "topics": [{"topic": topic, "partitions": [{"partition": partition, "fetch_offset": offset,
                                                            "log_start_offset": -1, "current_leader_epoch": -1,
                                                            "partition_max_bytes": FETCH_MAX_BYTES}]}]}
        answer = wire.call(HOST, port, ApiKey.FETCH, FETCH_VERSION, body, timeout=10.0)
        part = answer.responses[0].partitions[0]
        if part.error_code:
            raise LeaderMoved(f"Fetch {topic}-{partition} at {offset}: error {part.error_code}", part.error_code)
        high = part.high_watermark
        raw = part.records or b""
        moved = offset
        for pos, header in iter_batches(raw):
            _, records = decode_batch(raw, pos)
            for r in records:
                if r.offset >= offset:
                    moved = max(moved, r.offset + 1)
                    if not header.is_control and r.offset < high:
                        out[r.offset] = Stored(partition, r.offset, r.value, header.producer_id, header.producer_epoch)
            moved = max(moved, header.last_offset + 1)
        if moved >= high or moved == offset:
            return {o: s for o, s in out.items() if o < high}, high
        offset = moved


class LeaderMoved(RuntimeError):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def committed_on_kafka(ports: dict[int, int], topic: str, partitions: int,
                       timeout: float = 60.0) -> tuple[dict[tuple[int, int], Stored], dict[int, int]]:
    """Every record below the high watermark of each partition of ``topic`` (``ports``: node id ->
    its broker port), and the high watermarks; a leader that moved while we read is asked
    again, until ``timeout``."""
    deadline = time.monotonic() + timeout
    out: dict[tuple[int, int], Stored] = {}
    ends: dict[int, int] = {}
    for partition in range(partitions):
        while True:
            try:
                leader = leaders(ports, topic).get(partition, -1)
                if leader not in ports:
                    raise LeaderMoved(f"{topic}-{partition} has no leader", NOT_LEADER_OR_FOLLOWER)
                records, ends[partition] = read_partition(ports[leader], topic, partition)
                break
            except (LeaderMoved, OSError) as exc:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"reading {topic}-{partition} back: {exc}") from exc
                time.sleep(0.5)
        out.update({(partition, o): s for o, s in records.items()})
    return out, ends
