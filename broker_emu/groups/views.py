"""What a group coordinator shows of its groups: ListGroups, DescribeGroups (Kafka's
``GroupCoordinator.handleListGroups`` / ``handleDescribeGroup`` and ``GroupSummary``), and the
``statistics()`` / ``describe()`` snapshots for tests and the console.

Read-only views over the groups, kept apart from the rebalances that change them
(``classic.py``, ``kip848.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from typing import Any

from broker_emu.groups.consumer_state import ConsumerGroup
from broker_emu.groups.failover import Failover
from broker_emu.groups.state import DEAD, STABLE, Group
from broker_emu.groups.store import AnyGroup, GroupStore
from client.errors import ErrorCode as E

Deadline = Callable[[Hashable], "float | None"]
"""When a keyed timer fires (``Timers.deadline``), or None when it is not armed."""


class GroupViews:
    """ListGroups / DescribeGroups / snapshots. ``classic_deadline`` and ``consumer_deadline``
    read the timers of the classic and the consumer groups; ``timer_stats`` is (armed timers,
    next deadline) over both."""

    def __init__(self, store: GroupStore, failover: Failover, classic_deadline: Deadline, consumer_deadline: Deadline,
                 timer_stats: Callable[[], tuple[int, float]]) -> None:
        self._store, self._failover = store, failover
        self._classic_deadline, self._consumer_deadline, self._timer_stats = classic_deadline, consumer_deadline, timer_stats

    def list_groups(self, *, broker_id: int, states: list[str], types: list[str], now: float) -> list[AnyGroup]:
        """Groups this broker coordinates; filters are case-insensitive (Kafka 3.7+). A group's
        type is ``group_type`` ("classic" or "consumer")."""
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        out: list[AnyGroup] = []
        for gid in list(self._store):
            if self._failover.coordinator_for(gid) != broker_id:
                continue
            g = self._failover.group(gid, now)
            if g is None or (wanted_types and g.group_type not in wanted_types):
                continue
            if not wanted_states or g.state.lower() in wanted_states:
                out.append(g)
        return out

    def describe_group(self, group_id: str, *, broker_id: int, now: float) -> tuple[int, dict[str, Any]]:
        """Kafka's GroupSummary: member metadata and assignments only while Stable."""
        error = self._failover.validate(group_id, broker_id, allow_empty=True)
        if error is not None:
            return error, {"group_state": "", "protocol_type": "", "protocol_data": "", "members": []}
        g = self._failover.group(group_id, now)
        if g is None or isinstance(g, ConsumerGroup):  # Kafka: not a classic group, described as Dead
            return E.NONE, {"group_state": DEAD, "protocol_type": "", "protocol_data": "", "members": []}
        stable = g.state == STABLE
        members = [{"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                    "client_host": m.client_host, "member_metadata": m.metadata(g.protocol_name) if stable else b"",
                    "member_assignment": m.assignment if stable else b""} for m in g.members.values()]
        return E.NONE, {"group_state": g.state, "protocol_type": g.protocol_type or "",
                        "protocol_data": (g.protocol_name or "") if stable else "", "members": members}

    def statistics(self) -> dict[str, Any]:
        """A small snapshot: how many groups in which state, members, armed timers."""
        groups = self._store.values()
        timers, next_deadline = self._timer_stats()
        return {"groups": len(groups), "states": dict(Counter(g.state for g in groups)),
                "members": sum(len(g.members) for g in groups),
                "pending_members": sum(len(g.pending_join) for g in groups if isinstance(g, Group)),
                "timers": timers, "next_deadline": next_deadline}

    def describe(self, group_id: str | None = None) -> Any:
        """Everything about one group (or all of them), deadlines on trio's clock, for debugging."""
        if group_id is None:
            return [self.describe(gid) for gid in sorted(self._store)]
        g = self._store[group_id]
        if isinstance(g, ConsumerGroup):
            return self.describe_consumer(g)
        gid = g.group_id
        return {"group_type": "classic", "group_id": gid, "coordinator": g.coordinator, "state": g.state, "state_since": g.state_since,
                "generation_id": g.generation_id, "protocol_type": g.protocol_type, "protocol_name": g.protocol_name,
                "leader": g.leader_id, "pending_join": sorted(g.pending_join), "pending_sync": sorted(g.pending_sync),
                "join_deadline": self._classic_deadline(("join", gid)), "sync_deadline": self._classic_deadline(("sync", gid)),
                "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                             "client_id": m.client_id, "client_host": m.client_host,
                             "session_timeout_ms": m.session_timeout_ms, "rebalance_timeout_ms": m.rebalance_timeout_ms,
                             "session_deadline": self._classic_deadline(("hb", gid, m.member_id)),
                             "waiting_in": "join" if m.awaiting_join else "sync" if m.awaiting_sync else None,
                             "is_new": m.is_new} for m in g.members.values()],
                "offsets": {f"{t}-{p}": o.offset for (t, p), o in sorted(g.offsets.items())}}

    def describe_consumer(self, g: ConsumerGroup) -> dict[str, Any]:
        """A KIP-848 group: epochs, each member's state, assignment, revocations, target and timers."""
        gid = g.group_id

        def readable(a: Any) -> dict[str, list[int]]:
            return {t: sorted(ps) for t, ps in sorted(a.items())}

        return {"group_id": gid, "group_type": "consumer", "coordinator": g.coordinator, "state": g.state,
                "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch, "assignor": g.assignor_name,
                "members": [{"member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
                             "client_host": m.client_host, "member_epoch": m.member_epoch, "state": m.state,
                             "subscribed_topic_names": list(m.subscribed_topic_names),
                             "subscribed_topic_regex": m.subscribed_topic_regex,
                             "rebalance_timeout_ms": m.rebalance_timeout_ms, "assigned": readable(m.assigned),
                             "revoking": readable(m.pending_revocation), "target": readable(g.target.get(m.member_id, {})),
                             "protocol": "classic" if m.classic else "consumer",
                             "session_timeout_ms": m.classic.session_timeout_ms if m.classic else None,
                             "session_deadline": self._consumer_deadline(("cg-session", gid, m.member_id)),
                             "rebalance_deadline": self._consumer_deadline(("cg-rebalance", gid, m.member_id)),
                             "join_deadline": self._consumer_deadline(("cg-join", gid, m.member_id)),
                             "sync_deadline": self._consumer_deadline(("cg-sync", gid, m.member_id))}
                            for m in g.members.values()],
                "offsets": {f"{t}-{p}": o.offset for (t, p), o in sorted(g.offsets.items())}}
