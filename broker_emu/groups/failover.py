"""Which broker coordinates a group, and coordinator moves: when the broker owning a group's
``__consumer_offsets`` partition stops or another takes it over, the group is unloaded and loaded
again by its new coordinator (Kafka: ``GroupCoordinatorShard`` unload/load). A classic group comes
back from its last stored record, a rebalance under way is lost (``ClassicGroups.reload``); a
consumer group (KIP-848) keeps everything, since every change of it is a record, and its members'
sessions restart (``ConsumerGroups.sessions_moved``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from broker_emu.groups.host import CoordinatorLookup
from broker_emu.groups.store import AnyGroup, GroupStore
from client.errors import ErrorCode as E

Moved = Callable[[AnyGroup, float], "AnyGroup | None"]
"""Loads a group at its new coordinator: the group now served (None: nothing was worth keeping)."""


def join_error(member_id: str, code: int) -> dict[str, Any]:
    return {"error_code": code, "member_id": member_id}


def sync_error(code: int) -> dict[str, Any]:
    return {"error_code": code}


class Failover:
    """Every request reads a group through ``group``, which reloads it first if its coordinator
    moved since it was last served."""

    def __init__(self, store: GroupStore, coordinator_for: CoordinatorLookup, moved: Moved) -> None:
        self._store, self._coordinator_for, self._moved = store, coordinator_for, moved

    def coordinator_for(self, group_id: str) -> int:
        return self._coordinator_for(group_id)

    def validate(self, group_id: str | None, broker_id: int, *, allow_empty: bool = False) -> int | None:
        """Kafka's validateGroupStatus. OffsetCommit/OffsetFetch/DescribeGroups accept "" for
        backward compatibility; the membership APIs need a real id."""
        if group_id is None or (not group_id and not allow_empty):
            return E.INVALID_GROUP_ID
        owner = self._coordinator_for(group_id)
        if owner < 0:
            return E.COORDINATOR_NOT_AVAILABLE
        return None if owner == broker_id else E.NOT_COORDINATOR

    def group(self, group_id: str, now: float) -> AnyGroup | None:
        """The group, reloaded first if its coordinator moved since we last served it."""
        g = self._store.get(group_id)
        if g is not None and g.coordinator != self._coordinator_for(group_id):
            g = self._moved(g, now)
        return g

    def broker_stopped(self, broker_id: int, now: float | None = None) -> None:
        """Groups this broker coordinated move to their new coordinator at once."""
        now = trio.current_time() if now is None else now
        for g in [g for g in self._store.values() if g.coordinator == broker_id]:
            self.group(g.group_id, now)

    def broker_started(self, broker_id: int, now: float | None = None) -> None:
        now = trio.current_time() if now is None else now
        for g in self._store.values():
            self.group(g.group_id, now)
