"""Which broker coordinates a group or a transactional id: Kafka hashes the key onto a partition
of its internal topic (``__consumer_offsets``, ``__transaction_state``) and the coordinator is
that partition's leader (``broker_emu.internal_topics`` makes the offsets topic's leaders agree)."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (UTF-16 code units), as a signed 32-bit int."""
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split() if s else []:
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def key_partition(key: str, partitions: int) -> int:
    """Kafka's Utils.abs(key.hashCode()) % partitions (abs of MIN_VALUE is 0)."""
    return (java_string_hash(key) & 0x7FFFFFFF) % partitions


class CoordinatorPlacement:
    def __init__(self, broker_ids: Callable[[], Iterable[int]], is_alive: Callable[[int], bool], config: Mapping[str, Any]):
        self._broker_ids, self._is_alive, self._config = broker_ids, is_alive, config

    def coordinator_for(self, group_id: str) -> int:
        """Kafka: partition = abs(hashCode(group)) % offsets.topic.num.partitions, coordinator =
        that __consumer_offsets partition's leader (``broker_emu.internal_topics``)."""
        return self.offsets_partition_leader(key_partition(group_id, self._config["offsets.topic.num.partitions"]))

    def offsets_partition_leader(self, p: int) -> int:
        """Partition p's replicas are brokers p, p+1, ... (in id order, offsets.topic.replication.factor
        of them) and its leader the first live one, so stopping a broker moves only the groups it
        coordinated, as a leader election would; -1 when none is alive (offline partition)."""
        ids = sorted(self._broker_ids())
        rf = min(self._config["offsets.topic.replication.factor"], len(ids))
        for k in range(rf):
            broker = ids[(p + k) % len(ids)]
            if self._is_alive(broker):
                return broker
        return -1
