"""Kafka's range assignor, the one both sides run: the classic consumer's group leader
(``client.assignors``, ``partition.assignment.strategy=range``) and the KIP-848 group
coordinator when a member asks for ``group.remote.assignor=range``
(``broker_emu.groups.server_assignors``).

Deterministic (members and topics sorted), so every client that implements it the same way
computes the same assignment — a kafka-python or Java member elected leader assigns exactly as
we do.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

Assignment = dict[str, dict[str, list[int]]]   # member id -> topic -> partitions


def range_assign(subscriptions: Mapping[str, Collection[str]], partitions: Mapping[str, int]) -> Assignment:
    """Per topic: the members subscribed to it, sorted by id, each get a contiguous range; the
    first ``count % members`` get one partition more (Kafka's ``RangeAssignor``, without its
    stickiness across member changes). Every member appears in the result, with no topics if
    it got nothing."""
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
