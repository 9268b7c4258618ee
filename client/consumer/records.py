"""What the consumer hands out: partitions and records."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class ConsumerRecord(NamedTuple):
    """One record as the application sees it. A named tuple (as kafka-python's), headers a
    tuple of (key, value) pairs: built in C from a fetch's columns (``visible_records``), and
    nothing in it the garbage collector has to keep following (``RecordColumns``)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


# tuple.__new__ on a row: a record without running any Python per record (NamedTuple's own
# __new__ and _make are Python functions)
record_from_row = partial(tuple.__new__, ConsumerRecord)
