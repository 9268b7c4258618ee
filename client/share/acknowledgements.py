"""The records one poll handed out and what the application said about each (Java's ``ShareFetch``
and ``ShareInFlightBatch``), sans-io.

A poll's records stay *in flight* until acknowledged: ACCEPT (processed), RELEASE (give it back
now: another delivery, its count kept), REJECT (never again: archived) or RENEW (KIP-1222: keep
it, its lock starts over; it stays in flight and must be acknowledged again). In implicit mode the
next poll or commit accepts whatever is left; in explicit mode the next poll refuses to run while a
record is unacknowledged. Offsets a fetch acquired that carry no record for the application
(control records, compacted away) are acknowledged as GAP with the first acknowledgements.

Acknowledgements go out as batches of runs (first offset, last offset, types): one type for a run
of equal types, as Java's ``Acknowledgements.getAcknowledgementBatches``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import NamedTuple

from client.consumer.records import TopicPartition
from client.errors import KafkaError


class AcknowledgeType(enum.IntEnum):
    """Java's ``AcknowledgeType`` and its wire ids (0 is GAP, never the application's)."""
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


GAP = 0


class ShareRecord(NamedTuple):
    """A record a share consumer received: a consumer record's fields, with how many times the
    share group has delivered it (1 the first time) and the lock the broker took for it."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    delivery_count: int
    acquisition_lock_timeout_ms: int | None = None


class IllegalStateError(KafkaError):
    """Java's IllegalStateException: the application used the consumer against its rules."""
    name = "ILLEGAL_STATE"


Acks = dict[TopicPartition, dict[int, int]]   # partition -> offset -> wire type


class InFlight:
    """The records the last poll returned, until each is acknowledged and sent."""

    def __init__(self, records: list[ShareRecord] | None = None):
        self.records: list[ShareRecord] = list(records or [])
        self.types: dict[tuple[str, int, int], AcknowledgeType | None] = {
            (r.topic, r.partition, r.offset): None for r in self.records}

    def __bool__(self) -> bool:
        return bool(self.types)

    def acknowledge(self, topic: str, partition: int, offset: int, kind: AcknowledgeType) -> None:
        key = (topic, partition, offset)
        if key not in self.types:
            # ShareFetch.acknowledge: only a record of the last poll, not yet sent
            raise IllegalStateError(f"The record cannot be acknowledged. {topic}-{partition} offset {offset} is not "
                                    f"in flight: only the records the last poll returned can be acknowledged, once "
                                    f"each (in flight: {self.describe()})")
        self.types[key] = AcknowledgeType(kind)

    def acknowledge_all(self, kind: AcknowledgeType) -> None:
        for key, t in self.types.items():
            if t is None:
                self.types[key] = kind

    def unacknowledged(self) -> list[tuple[str, int, int]]:
        return [key for key, t in self.types.items() if t is None]

    def take(self, renewals: bool = True) -> tuple[Acks, Acks]:
        """(final acknowledgements, renewals): both leave; renewed records stay in flight, waiting
        for their final acknowledgement. ``renewals`` False: RENEW marks stay for the next poll."""
        final: Acks = {}
        renew: Acks = {}
        for (topic, partition, offset), kind in list(self.types.items()):
            if kind is None or (kind is AcknowledgeType.RENEW and not renewals):
                continue
            tp = TopicPartition(topic, partition)
            if kind is AcknowledgeType.RENEW:
                renew.setdefault(tp, {})[offset] = int(kind)
                self.types[(topic, partition, offset)] = None
            else:
                final.setdefault(tp, {})[offset] = int(kind)
                del self.types[(topic, partition, offset)]
        self.records = [r for r in self.records if (r.topic, r.partition, r.offset) in self.types]
        return final, renew

    def renewed(self, tps_offsets: Acks) -> list[ShareRecord]:
        """The records of this poll whose renewal went through, to be handed out again."""
        return [r for r in self.records if r.offset in tps_offsets.get(TopicPartition(r.topic, r.partition), {})]

    def describe(self) -> str:
        by_tp: dict[str, list[int]] = {}
        for topic, partition, offset in self.types:
            by_tp.setdefault(f"{topic}-{partition}", []).append(offset)
        return ", ".join(f"{tp} {runs(offsets)}" for tp, offsets in sorted(by_tp.items())) or "nothing"


def runs(offsets: Iterable[int]) -> str:
    out: list[list[int]] = []
    for o in sorted(offsets):
        if out and out[-1][1] == o - 1:
            out[-1][1] = o
        else:
            out.append([o, o])
    return ",".join(f"{a}" if a == b else f"{a}..{b}" for a, b in out)


def merge(into: Acks, more: Acks) -> None:
    for tp, offsets in more.items():
        into.setdefault(tp, {}).update(offsets)


def batches(offsets: dict[int, int]) -> list[dict]:
    """Acknowledgement batches of offset -> type: runs of consecutive offsets, one type for a
    run of equal types, else a type per offset (``Acknowledgements.getAcknowledgementBatches``)."""
    out: list[dict] = []
    for offset in sorted(offsets):
        kind = offsets[offset]
        last = out[-1] if out else None
        if last is not None and last["last_offset"] == offset - 1:
            last["last_offset"] = offset
            last["types"].append(kind)
        else:
            out.append({"first_offset": offset, "last_offset": offset, "types": [kind]})
    for b in out:
        types = b.pop("types")
        b["acknowledge_types"] = types[:1] if len(set(types)) == 1 else types
    return out


def describe(acks: Acks) -> str:
    return "; ".join(f"{tp.topic}-{tp.partition} offsets {runs(offsets)}" for tp, offsets in sorted(acks.items())) \
        or "none"
