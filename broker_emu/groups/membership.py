"""The classic-protocol membership APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup): the checks
every request passes first (Kafka's validateGroupStatus, the session timeout's bounds), then which
kind of group answers it. A classic group's own rebalance is ``classic.py``'s; a KIP-848 consumer
group takes classic members too (``classic_members.py``, Kafka 4.x's
``GroupMetadataManager.classicGroupJoinToConsumerGroup`` and its siblings), and an empty one
becomes a classic group on a JoinGroup."""

from __future__ import annotations

from typing import Any, Protocol

from broker_emu.groups.classic import ClassicGroups, JoinRequest
from broker_emu.groups.consumer_state import ConsumerGroup
from broker_emu.groups.failover import Failover, join_error, sync_error
from broker_emu.groups.host import Settings
from broker_emu.groups.state import Reply
from client.errors import ErrorCode as E


class ClassicMembersOfConsumerGroups(Protocol):
    """Classic-protocol members in a consumer group (``classic_members.ClassicMembers``)."""

    def classic_join_consumer_group(self, g: ConsumerGroup, req: JoinRequest, reply: Reply, now: float) -> None: ...

    def classic_sync_consumer_group(self, g: ConsumerGroup, *, generation_id: int, member_id: str,
                                    instance_id: str | None, protocol_type: str | None, protocol_name: str | None,
                                    now: float) -> dict[str, Any]: ...

    def classic_heartbeat_consumer_group(self, g: ConsumerGroup, *, generation_id: int, member_id: str,
                                         instance_id: str | None, now: float) -> int: ...

    def consumer_group_remove(self, g: ConsumerGroup, member_id: str, instance_id: str | None, now: float) -> int: ...


class ClassicMembership:
    def __init__(self, failover: Failover, settings: Settings, classic: ClassicGroups,
                 in_consumer_groups: ClassicMembersOfConsumerGroups) -> None:
        self._failover, self._settings, self._classic = failover, settings, classic
        self._in_consumer_groups = in_consumer_groups

    def join_group(self, req: JoinRequest, reply: Reply, *, broker_id: int, now: float) -> None:
        error = self._failover.validate(req.group_id, broker_id)
        if error is None and not (self._settings("group.min.session.timeout.ms") <= req.session_timeout_ms
                                  <= self._settings("group.max.session.timeout.ms")):
            error = E.INVALID_SESSION_TIMEOUT
        if error is not None:
            return reply(join_error(req.member_id, error))
        g = self._failover.group(req.group_id, now)
        if isinstance(g, ConsumerGroup):
            if g.members:
                return self._in_consumer_groups.classic_join_consumer_group(g, req, reply, now)
            g = self._classic.from_empty_consumer_group(g, now)
        self._classic.join(g, req, reply, broker_id=broker_id, now=now)

    def sync_group(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes],
                   reply: Reply, broker_id: int, now: float) -> None:
        error = self._failover.validate(group_id, broker_id)
        g = self._failover.group(group_id, now) if error is None else None
        if isinstance(g, ConsumerGroup):
            return reply(self._in_consumer_groups.classic_sync_consumer_group(
                g, generation_id=generation_id, member_id=member_id, instance_id=group_instance_id,
                protocol_type=protocol_type, protocol_name=protocol_name, now=now))
        if g is None or error is not None:
            return reply(sync_error(error if error is not None else E.UNKNOWN_MEMBER_ID))
        self._classic.sync(g, generation_id=generation_id, member_id=member_id, group_instance_id=group_instance_id,
                           protocol_type=protocol_type, protocol_name=protocol_name, assignments=assignments,
                           reply=reply, now=now)

    def heartbeat(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                  broker_id: int, now: float) -> int:
        error = self._failover.validate(group_id, broker_id)
        if error is not None:
            return error
        g = self._failover.group(group_id, now)
        if isinstance(g, ConsumerGroup):
            return self._in_consumer_groups.classic_heartbeat_consumer_group(
                g, generation_id=generation_id, member_id=member_id, instance_id=group_instance_id, now=now)
        if g is None:
            return E.UNKNOWN_MEMBER_ID
        return self._classic.heartbeat(g, generation_id=generation_id, member_id=member_id,
                                       group_instance_id=group_instance_id, now=now)

    def leave_group(self, *, group_id: str, members: list[tuple[str, str | None]], broker_id: int,
                    now: float) -> tuple[int, list[int]]:
        """(top-level error, one error per leaving member). Members are named by member id, or
        by group.instance.id alone (the admin client's removal of static members)."""
        error = self._failover.validate(group_id, broker_id)
        if error is not None:
            return error, []
        g = self._failover.group(group_id, now)
        if g is None:
            return E.NONE, [E.UNKNOWN_MEMBER_ID] * len(members)
        if isinstance(g, ConsumerGroup):
            return E.NONE, [self._in_consumer_groups.consumer_group_remove(g, member_id, instance_id, now)
                            for member_id, instance_id in members]
        return self._classic.leave(g, members, now)
