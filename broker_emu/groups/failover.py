"""Coordinator moves: when the broker owning a group's ``__consumer_offsets`` partition stops or
another takes it over, the group is unloaded and loaded again by its new coordinator (Kafka:
``GroupCoordinatorShard`` unload/load). A classic group comes back from its last stored record, a
rebalance under way is lost; a consumer group (KIP-848) keeps everything, since every change of it
is a record, and its members' sessions restart."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from broker_emu.groups.consumer_state import ConsumerGroup
from broker_emu.groups.state import DEAD, PREPARING_REBALANCE, Group, complete
from client.errors import ErrorCode as E

if TYPE_CHECKING:
    from broker_emu.groups.timers import Timers


def join_error(member_id: str, code: int) -> dict[str, Any]:
    return {"error_code": code, "member_id": member_id}


def sync_error(code: int) -> dict[str, Any]:
    return {"error_code": code}


class FailoverMixin:
    groups: dict[str, Any]
    timers: Timers
    cluster: Any

    if TYPE_CHECKING:
        def _schedule_heartbeat(self, g: Group, member_id: str, timeout_ms: int, now: float) -> None: ...

        def consumer_group_sessions_moved(self, g: ConsumerGroup, now: float) -> None: ...

    def group(self, group_id: str, now: float) -> Any:
        """The group, reloaded first if its coordinator moved since we last served it."""
        g = self.groups.get(group_id)
        if g is not None and g.coordinator != self.cluster.coordinator_for(group_id):
            if isinstance(g, ConsumerGroup):
                self.consumer_group_sessions_moved(g, now)
            else:
                g = self._move(g, now)
        return g

    def broker_stopped(self, broker_id: int, now: float | None = None) -> None:
        """Groups this broker coordinated move to their new coordinator at once."""
        now = trio.current_time() if now is None else now
        for g in [g for g in self.groups.values() if g.coordinator == broker_id]:
            self.group(g.group_id, now)

    def broker_started(self, broker_id: int, now: float | None = None) -> None:
        now = trio.current_time() if now is None else now
        for g in list(self.groups.values()):
            self.group(g.group_id, now)

    def _move(self, g: Group, now: float) -> Group | None:
        """Kafka: the old coordinator unloads the group (parked requests get NOT_COORDINATOR),
        the new one loads the last stored group record — Stable with its members, whose sessions
        restart now, or Empty — and the committed offsets. A rebalance under way is lost."""
        previous = g.state
        g.transition(DEAD, now)
        for m in g.members.values():
            if previous == PREPARING_REBALANCE:
                complete(m, "awaiting_join", join_error(m.member_id, E.NOT_COORDINATOR))
            complete(m, "awaiting_sync", sync_error(E.NOT_COORDINATOR))
        self.timers.cancel_where(lambda key: isinstance(key, tuple) and key[1] == g.group_id)
        owner = self.cluster.coordinator_for(g.group_id)
        if g.persisted is None and not g.offsets:
            del self.groups[g.group_id]
            return None
        new = Group.load(g.group_id, g.persisted, owner, now) if g.persisted else Group(g.group_id, owner, state_since=now)
        new.offsets = g.offsets
        self.groups[g.group_id] = new
        for m in new.members.values():
            self._schedule_heartbeat(new, m.member_id, m.session_timeout_ms, now)
        return new
