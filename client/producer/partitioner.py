"""Key partitioning compatible with the Java client: murmur2 of the key bytes, positive, modulo
the partition count (so the same key lands on the same partition as with Java)."""

from __future__ import annotations


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (seed 0x9747b28c), as a signed 32-bit int."""
    length = len(data)
    seed, m, r = 0x9747B28C, 0x5BD1E995, 24
    h = (seed ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest = length % 4
    tail = length - rest
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class StickyPartitioner:
    """Where a record without a key (and without an explicit partition) goes: the topic's
    current "sticky" partition, which moves to another partition with a leader, chosen at
    random, once batch.size bytes have gone to it — the uniform sticky partitioner of KIP-794
    in its simplest form (Java also weighs partitions by queue size; we do not). Keyed records
    use murmur2 like Java, so the same key lands on the same partition."""

    def __init__(self, batch_size: int, rng):
        self.batch_size = max(batch_size, 1)
        self.rng = rng
        self._sticky: dict[str, tuple[int, int]] = {}   # topic -> (partition, bytes sent to it)

    def partition(self, topic: str, key: bytes | None, size: int, available: list[int], count: int) -> int:
        if key is not None:
            return partition_for_key(key, count)
        current = self._sticky.get(topic)
        if current is None or current[1] >= self.batch_size or (available and current[0] not in available):
            choices = available or list(range(count))
            others = [p for p in choices if current is None or p != current[0]] or choices
            current = (self.rng.choice(others), 0)
        self._sticky[topic] = (current[0], current[1] + size)
        return current[0]
