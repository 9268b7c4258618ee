"""Partition assignors of the classic consumer group protocol, as Kafka's consumers name them.

The group leader runs one over every member's subscription; the results go back through
SyncGroup. ``range`` is the one KIP-848's group coordinator runs too, so its home is
``kafka_common.assignors``; ``roundrobin`` is the client's alone. Both are deterministic
(members and partitions sorted), so every client that implements them the same way computes the
same assignment — a kafka-python or Java member elected leader assigns exactly as we do.
"""

from __future__ import annotations

from collections.abc import Callable

from kafka_common.assignors import Assignment, range_assign


def roundrobin_assign(subscriptions: dict[str, list[str]], partitions: dict[str, int]) -> Assignment:
    """All partitions in (topic, partition) order dealt to the members in id order, skipping a
    member not subscribed to the partition's topic (Kafka's RoundRobinAssignor)."""
    out: Assignment = {m: {} for m in subscriptions}
    members = sorted(subscriptions)
    if not members:
        return out
    turn = 0
    for topic in sorted(partitions):
        if not any(topic in subscriptions[m] for m in members):
            continue
        for p in range(partitions[topic]):
            while topic not in subscriptions[members[turn % len(members)]]:
                turn += 1
            out[members[turn % len(members)]].setdefault(topic, []).append(p)
            turn += 1
    return out


ASSIGNORS: dict[str, Callable[[dict[str, list[str]], dict[str, int]], Assignment]] = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
}
