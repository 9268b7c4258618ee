"""Partition assignors of the classic consumer group protocol, as Kafka's consumers name them.

The group leader runs one over every member's subscription; the results go back through
SyncGroup. Both are deterministic (members and partitions sorted), so every client that
implements them the same way computes the same assignment — a kafka-python or Java member
elected leader assigns exactly as we do.
"""

from __future__ import annotations

from collections.abc import Callable

Assignment = dict[str, dict[str, list[int]]]   # member id -> topic -> partitions


def range_assign(subscriptions: dict[str, list[str]], partitions: dict[str, int]) -> Assignment:
    """Per topic: the members subscribed to it, sorted by id, each get a contiguous range; the
    first ``count % members`` get one partition more (Kafka's RangeAssignor)."""
    out: Assignment = {m: {} for m in subscriptions}
    for topic in sorted(partitions):
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if not members:
            continue
        per, extra = divmod(partitions[topic], len(members))
        start = 0
        for i, member in enumerate(members):
            n = per + (1 if i < extra else 0)
            if n:
                out[member][topic] = list(range(start, start + n))
            start += n
    return out


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
