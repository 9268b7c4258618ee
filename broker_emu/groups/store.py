"""The groups a coordinator holds, classic and consumer (KIP-848) alike, by id: the one home of
that map (Kafka: ``GroupMetadataManager.groups``), and the trace events about them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from broker_emu.groups.consumer_state import ConsumerGroup
from broker_emu.groups.host import TraceSink
from broker_emu.groups.state import Group
from broker_emu.trace import Kind

AnyGroup = Group | ConsumerGroup


class GroupStore:
    def __init__(self) -> None:
        self.groups: dict[str, AnyGroup] = {}

    def get(self, group_id: str) -> AnyGroup | None:
        return self.groups.get(group_id)

    def __getitem__(self, group_id: str) -> AnyGroup:
        return self.groups[group_id]

    def __contains__(self, group_id: object) -> bool:
        return group_id in self.groups

    def __iter__(self) -> Iterator[str]:
        return iter(self.groups)

    def __len__(self) -> int:
        return len(self.groups)

    def values(self) -> list[AnyGroup]:
        return list(self.groups.values())

    def put(self, g: AnyGroup) -> AnyGroup:
        self.groups[g.group_id] = g
        return g

    def drop(self, group_id: str) -> None:
        del self.groups[group_id]

    def classic(self, group_id: str) -> Group:
        """A group a classic timer or reply names: it is classic (a conversion cancels them)."""
        g = self.groups[group_id]
        assert isinstance(g, Group)
        return g


class GroupEvents:
    """Trace events about a group, attributed to the broker coordinating it."""

    def __init__(self, trace: TraceSink, store: GroupStore) -> None:
        self._trace, self._store = trace, store

    def __call__(self, kind: Kind, **details: Any) -> None:
        group = self._store.get(details.get("group", ""))
        self._trace.emit(kind, broker=group.coordinator if group is not None else None, details=details)
