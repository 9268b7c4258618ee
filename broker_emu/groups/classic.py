"""The classic group coordinator: JoinGroup / SyncGroup / Heartbeat / LeaveGroup and the
rebalance they drive, as Kafka's group coordinator runs them (Kafka 3.x ``GroupCoordinator`` and
``DelayedJoin``; Kafka 4.0's ``GroupMetadataManager`` classic-group paths, which keep those rules).
Which kind of group answers a classic-protocol request is ``membership.py``'s; ListGroups /
DescribeGroups and the snapshots are in ``views.py``, offsets in ``offsets.py``.

Theory of operation
- Every operation is a synchronous function of the group state and ``now`` (atomic under trio).
  Long polls (JoinGroup, SyncGroup) hand in a ``reply`` callable that is invoked exactly once,
  at once or when the phase completes; the wire layer awaits it. Nothing here awaits: the
  coordinator's driver fires the keyed timers.
- Timers, by key: ``("hb", group, member)`` a member's session (or, for a member that has not
  yet completed a join, the 5-minute new-member join timeout; for a KIP-394 pending id, its
  session timeout); ``("join", group)`` the join phase (rebalance timeout, or the initial delay
  steps); ``("sync", group)`` members that must send SyncGroup within the rebalance timeout.
- Join phase: ends when every member and pending id has (re)joined, or at the rebalance timeout
  (largest among members), when dynamic members that did not rejoin are removed. A group coming
  from Empty is held for ``group.initial.rebalance.delay.ms``; if a member arrived meanwhile it is
  held another delay, until the rebalance timeout is used up (Kafka's InitialDelayedJoin).
- A member waiting in JoinGroup or SyncGroup cannot expire (its heartbeat is "satisfied");
  its session restarts when the phase answers it.

Deliberate differences from a real broker (why: the emulator has no __consumer_offsets log)
- "Storing" the group and offsets is instant; ``offsets.commit.timeout.ms`` never applies.
- A member removed while parked in SyncGroup is answered UNKNOWN_MEMBER_ID; Kafka leaves that
  request unanswered until the client's request timeout.
- No ``group.max.size`` (Kafka's default is unlimited), no offset expiry.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from broker_emu.groups.consumer_state import ConsumerGroup
from broker_emu.groups.failover import join_error, sync_error
from broker_emu.groups.host import Settings
from broker_emu.groups.state import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    Group,
    Member,
    Protocols,
    Reply,
    complete,
)
from broker_emu.groups.store import GroupEvents, GroupStore
from broker_emu.groups.timers import Timers
from broker_emu.trace import Kind
from client.errors import ErrorCode as E

# Kafka: GroupCoordinator.NewMemberJoinTimeoutMs / classicGroupNewMemberJoinTimeoutMs.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


@dataclass
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    require_known_member_id: bool = True      # JoinGroup v4+ (KIP-394)
    supports_skip_assignment: bool = False    # JoinGroup v9+ (static leader rejoining a Stable group)


class ClassicGroups:
    """The classic groups' rebalances and sessions, on their own keyed timers."""

    def __init__(self, store: GroupStore, timers: Timers, settings: Settings, events: GroupEvents,
                 rng: random.Random) -> None:
        self._store, self._timers, self._settings, self._events, self._rng = store, timers, settings, events, rng

    # -- what the other collaborators ask of the classic groups -------------------------------------
    def deadline(self, key: Hashable) -> float | None:
        return self._timers.deadline(key)

    def armed(self) -> int:
        return len(self._timers)

    def forget_timers(self, group_id: str) -> None:
        """The group is deleted, unloaded or converted: none of its timers may fire."""
        self._timers.cancel_group(group_id)

    def touch_session(self, g: Group, member_id: str, now: float) -> None:
        """A member showed it is alive otherwise than by a heartbeat (an OffsetCommit)."""
        self._schedule_heartbeat(g, member_id, g.members[member_id].session_timeout_ms, now)

    def from_empty_consumer_group(self, g: ConsumerGroup, now: float) -> Group:
        """An empty consumer group becomes a classic one on a JoinGroup, keeping its offsets."""
        new = Group(g.group_id, coordinator=g.coordinator, state_since=now)
        new.offsets = g.offsets
        self._store.put(new)
        return new

    def adopt(self, g: Group, reason: str, now: float) -> None:
        """A group converted from a consumer group: its members' sessions start and it rebalances."""
        for m in g.members.values():
            self._schedule_heartbeat(g, m.member_id, m.session_timeout_ms, now)
        self._prepare_rebalance(g, reason, now)

    def reload(self, g: Group, owner: int, now: float) -> Group | None:
        """Kafka: the old coordinator unloads the group (parked requests get NOT_COORDINATOR),
        the new one loads the last stored group record — Stable with its members, whose sessions
        restart now, or Empty — and the committed offsets. A rebalance under way is lost."""
        previous = g.state
        g.transition(DEAD, now)
        for m in g.members.values():
            if previous == PREPARING_REBALANCE:
                complete(m, "awaiting_join", join_error(m.member_id, E.NOT_COORDINATOR))
            complete(m, "awaiting_sync", sync_error(E.NOT_COORDINATOR))
        self.forget_timers(g.group_id)
        if g.persisted is None and not g.offsets:
            self._store.drop(g.group_id)
            return None
        new = Group.load(g.group_id, g.persisted, owner, now) if g.persisted else Group(g.group_id, owner, state_since=now)
        new.offsets = g.offsets
        self._store.put(new)
        for m in new.members.values():
            self._schedule_heartbeat(new, m.member_id, m.session_timeout_ms, now)
        return new

    def _new_member_id(self, prefix: str) -> str:
        return f"{prefix}-{uuid.UUID(int=self._rng.getrandbits(128), version=4)}"

    # -- JoinGroup ---------------------------------------------------------------------------------
    def join(self, g: Group | None, req: JoinRequest, reply: Reply, *, broker_id: int, now: float) -> None:
        """A JoinGroup the coordinator accepted, for a classic group (None: one we do not know)."""
        if g is None:
            if req.member_id:  # a member id for a group we do not know: start over
                return reply(join_error(req.member_id, E.UNKNOWN_MEMBER_ID))
            g = Group(req.group_id, coordinator=broker_id, state_since=now)
            self._store.put(g)
        if g.state == DEAD:
            return reply(join_error(req.member_id, E.COORDINATOR_NOT_AVAILABLE))
        if not g.supports_protocols(req.protocol_type, [name for name, _ in req.protocols]):
            return reply(join_error(req.member_id, E.INCONSISTENT_GROUP_PROTOCOL))
        if not req.member_id:
            return self._join_new_member(g, req, reply, now)
        return self._join_known_member(g, req, reply, now)

    def _join_new_member(self, g: Group, req: JoinRequest, reply: Reply, now: float) -> None:
        new_id = self._new_member_id(req.group_instance_id or req.client_id)
        if req.group_instance_id is not None:
            old_id = g.static_members.get(req.group_instance_id)
            if old_id is not None:
                return self._replace_static_member(g, req, old_id, new_id, reply, now)
            return self._add_member_and_rebalance(g, req, new_id, reply, now)
        if req.require_known_member_id:
            # KIP-394: hand out an id; the member counts as pending until it rejoins with it,
            # and is forgotten after its session timeout if it never does.
            g.pending_join.add(new_id)
            self._schedule_heartbeat(g, new_id, req.session_timeout_ms, now)
            return reply(join_error(new_id, E.MEMBER_ID_REQUIRED))
        self._add_member_and_rebalance(g, req, new_id, reply, now)

    def _join_known_member(self, g: Group, req: JoinRequest, reply: Reply, now: float) -> None:
        member_id = req.member_id
        if member_id in g.pending_join:
            if req.group_instance_id is not None:  # Kafka: IllegalStateException
                return reply(join_error(member_id, E.UNKNOWN_SERVER_ERROR))
            return self._add_member_and_rebalance(g, req, member_id, reply, now)
        error = g.member_error(member_id, req.group_instance_id)
        if error is not None:
            return reply(join_error(member_id, error))
        m = g.members[member_id]
        is_leader = g.leader_id == member_id
        unchanged = m.matches(req.protocols)
        if g.state == COMPLETING_REBALANCE and unchanged:
            # It lost our JoinGroup answer: repeat it for the current generation.
            return reply(g.join_result(member_id, leader_view=is_leader))
        if g.state == STABLE and unchanged and not is_leader:
            # A follower with nothing new may just SyncGroup; a leader rejoining forces a
            # rebalance (it may have seen metadata change that members' subscriptions do not show).
            return reply(g.join_result(member_id, leader_view=False))
        self._update_member_and_rebalance(g, m, req, reply, now)

    def _add_member_and_rebalance(self, g: Group, req: JoinRequest, member_id: str, reply: Reply, now: float) -> None:
        m = Member(member_id, req.group_instance_id, req.client_id, req.client_host, req.rebalance_timeout_ms,
                   req.session_timeout_ms, req.protocol_type, list(req.protocols), is_new=True)
        if g.state == PREPARING_REBALANCE and g.generation_id == 0:
            g.new_member_added = True  # extends the initial rebalance delay
        g.add(m, reply)
        # A parked new member cannot heartbeat; bound its wait so abandoned joins do not pile up.
        self._schedule_heartbeat(g, member_id, NEW_MEMBER_JOIN_TIMEOUT_MS, now)
        self._maybe_prepare_rebalance_or_complete_join(g, f"member {member_id} joined", now)

    def _update_member_and_rebalance(self, g: Group, m: Member, req: JoinRequest, reply: Reply, now: float) -> None:
        m.protocols = list(req.protocols)
        m.rebalance_timeout_ms, m.session_timeout_ms = req.rebalance_timeout_ms, req.session_timeout_ms
        m.awaiting_join = reply  # a superseded parked join (other connection) stays unanswered, as in Kafka
        self._maybe_prepare_rebalance_or_complete_join(g, f"member {m.member_id} rejoined", now)

    def _replace_static_member(self, g: Group, req: JoinRequest, old_id: str, new_id: str, reply: Reply,
                               now: float) -> None:
        """A known group.instance.id came back with no member id (a restarted static member)."""
        previous_leader = g.leader_id
        instance_id = req.group_instance_id or ""
        m = g.replace_static_member(instance_id, old_id, new_id)
        self._timers.cancel(("hb", g.group_id, old_id))
        m.protocols = list(req.protocols)
        m.rebalance_timeout_ms, m.session_timeout_ms = req.rebalance_timeout_ms, req.session_timeout_ms
        m.awaiting_join = reply
        self._schedule_heartbeat(g, new_id, m.session_timeout_ms, now)
        if g.state == STABLE and g.select_protocol() == g.protocol_name:
            g.persisted = g.snapshot()  # no rebalance: the group keeps its assignment
            is_leader = g.leader_id == new_id
            if req.supports_skip_assignment:
                result = g.join_result(new_id, leader_view=is_leader, skip_assignment=is_leader)
            else:  # an old leader id keeps a pre-v9 leader from running a pointless assignment
                result = g.join_result(new_id, leader_view=False) | {"leader": previous_leader or ""}
            complete(m, "awaiting_join", result)
        elif g.state in (STABLE, COMPLETING_REBALANCE):
            self._prepare_rebalance(g, f"static member {instance_id} rejoined", now)

    # -- join phase --------------------------------------------------------------------------------
    def _maybe_prepare_rebalance_or_complete_join(self, g: Group, reason: str, now: float) -> None:
        if g.can_rebalance():
            self._prepare_rebalance(g, reason, now)
        elif g.state == PREPARING_REBALANCE and g.previous_state != EMPTY and g.has_all_members_joined():
            self._complete_join(g, now)  # never cut the initial delay short

    def _prepare_rebalance(self, g: Group, reason: str, now: float) -> None:
        if g.state == COMPLETING_REBALANCE:  # parked SyncGroups learn they must rejoin
            self._propagate_assignment(g, E.REBALANCE_IN_PROGRESS, now, reset=True)
        g.pending_sync.clear()
        self._timers.cancel(("sync", g.group_id))
        initial = g.state == EMPTY
        timeout_ms = g.rebalance_timeout_ms()
        g.transition(PREPARING_REBALANCE, now)
        self._events(Kind.GROUP_REBALANCE, group=g.group_id, reason=reason, rebalance_timeout_ms=timeout_ms,
                    generation_id=g.generation_id)
        if initial:
            delay = self._settings("group.initial.rebalance.delay.ms")
            self._schedule_initial_join(g, delay, max(timeout_ms - delay, 0), now)
        elif g.has_all_members_joined():
            self._complete_join(g, now)
        else:
            gid = g.group_id
            self._timers.schedule(("join", gid), now + timeout_ms / 1000, lambda t: self._join_expired(gid, t))

    def _schedule_initial_join(self, g: Group, delay_ms: int, remaining_ms: int, now: float) -> None:
        gid = g.group_id
        self._timers.schedule(("join", gid), now + delay_ms / 1000,
                             lambda t: self._initial_delay_ended(gid, delay_ms, remaining_ms, t))

    def _initial_delay_ended(self, gid: str, delay_ms: int, remaining_ms: int, now: float) -> None:
        g = self._store.classic(gid)
        if g.new_member_added and remaining_ms != 0:
            g.new_member_added = False
            next_delay = min(self._settings("group.initial.rebalance.delay.ms"), remaining_ms)
            self._schedule_initial_join(g, next_delay, max(remaining_ms - delay_ms, 0), now)
        else:
            self._complete_join(g, now)

    def _join_expired(self, gid: str, now: float) -> None:
        self._complete_join(self._store.classic(gid), now)

    def _complete_join(self, g: Group, now: float) -> None:
        self._timers.cancel(("join", g.group_id))
        for m in [m for m in g.not_yet_rejoined() if not m.is_static]:
            self._events(Kind.GROUP_MEMBER_REMOVED, group=g.group_id, member=m.member_id, reason="did not rejoin")
            g.remove(m.member_id)
            self._timers.cancel(("hb", g.group_id, m.member_id))
        if not g.maybe_elect_new_joined_leader() and g.members:
            # Only static members are left and none rejoined: wait another rebalance timeout.
            gid = g.group_id
            self._timers.schedule(("join", gid), now + g.rebalance_timeout_ms() / 1000, lambda t: self._join_expired(gid, t))
            return
        g.init_next_generation(now)
        if g.state == EMPTY:
            g.persisted = g.snapshot()
            return
        for m in g.members.values():
            complete(m, "awaiting_join", g.join_result(m.member_id, leader_view=m.member_id == g.leader_id))
            self._schedule_heartbeat(g, m.member_id, m.session_timeout_ms, now)
            m.is_new = False
            g.pending_sync.add(m.member_id)
        gid, generation = g.group_id, g.generation_id
        self._timers.schedule(("sync", gid), now + g.rebalance_timeout_ms() / 1000,
                             lambda t: self._sync_expired(gid, generation, t))

    # -- SyncGroup ---------------------------------------------------------------------------------
    def sync(self, g: Group, *, generation_id: int, member_id: str, group_instance_id: str | None,
             protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes],
             reply: Reply, now: float) -> None:
        error = self._sync_error(g, generation_id, member_id, group_instance_id, protocol_type, protocol_name)
        if error is not None:
            return reply(sync_error(error))
        if g.state == PREPARING_REBALANCE:
            return reply(sync_error(E.REBALANCE_IN_PROGRESS))
        m = g.members[member_id]
        self._sync_received(g, member_id)
        if g.state == STABLE:  # the member lost our answer, or joined as an unchanged follower
            reply(self._sync_result(g, m))
            return self._schedule_heartbeat(g, member_id, m.session_timeout_ms, now)
        m.awaiting_sync = reply
        if member_id == g.leader_id:
            for each in g.members.values():  # members the leader left out get an empty assignment
                each.assignment = bytes(assignments.get(each.member_id, b""))
            g.persisted = g.snapshot()
            self._propagate_assignment(g, E.NONE, now)
            g.transition(STABLE, now)

    def _sync_error(self, g: Group, generation_id: int, member_id: str, instance_id: str | None,
                    protocol_type: str | None, protocol_name: str | None) -> int | None:
        if g.state == DEAD:
            return E.COORDINATOR_NOT_AVAILABLE
        error = g.member_error(member_id, instance_id)
        if error is not None:
            return error
        if generation_id != g.generation_id:
            return E.ILLEGAL_GENERATION
        if protocol_type is not None and protocol_type != g.protocol_type:
            return E.INCONSISTENT_GROUP_PROTOCOL
        if protocol_name is not None and protocol_name != g.protocol_name:
            return E.INCONSISTENT_GROUP_PROTOCOL
        return None

    @staticmethod
    def _sync_result(g: Group, m: Member) -> dict[str, Any]:
        return {"error_code": E.NONE, "protocol_type": g.protocol_type, "protocol_name": g.protocol_name,
                "assignment": m.assignment}

    def _sync_received(self, g: Group, member_id: str) -> None:
        g.pending_sync.discard(member_id)
        if not g.pending_sync:
            self._timers.cancel(("sync", g.group_id))

    def _propagate_assignment(self, g: Group, error: int, now: float, *, reset: bool = False) -> None:
        for m in g.members.values():
            if reset:
                m.assignment = b""
            result = self._sync_result(g, m) if error == E.NONE else sync_error(error)
            if complete(m, "awaiting_sync", result):
                self._schedule_heartbeat(g, m.member_id, m.session_timeout_ms, now)

    def _sync_expired(self, gid: str, generation_id: int, now: float) -> None:
        g = self._store.classic(gid)
        if generation_id != g.generation_id or g.state not in (COMPLETING_REBALANCE, STABLE) or not g.pending_sync:
            return
        missing = sorted(g.pending_sync)
        for member_id in missing:
            self._events(Kind.GROUP_MEMBER_REMOVED, group=gid, member=member_id, reason="no SyncGroup within rebalance timeout")
            g.remove(member_id)
            self._timers.cancel(("hb", gid, member_id))
        self._prepare_rebalance(g, f"members {missing} did not send SyncGroup", now)

    # -- Heartbeat and sessions ----------------------------------------------------------------------
    def heartbeat(self, g: Group, *, generation_id: int, member_id: str, group_instance_id: str | None,
                  now: float) -> int:
        if g.state == DEAD:
            return E.COORDINATOR_NOT_AVAILABLE
        error = g.member_error(member_id, group_instance_id)
        if error is not None:
            return error
        if generation_id != g.generation_id:
            return E.ILLEGAL_GENERATION
        self._schedule_heartbeat(g, member_id, g.members[member_id].session_timeout_ms, now)
        return E.REBALANCE_IN_PROGRESS if g.state == PREPARING_REBALANCE else E.NONE

    def _schedule_heartbeat(self, g: Group, member_id: str, timeout_ms: int, now: float) -> None:
        gid = g.group_id
        self._timers.schedule(("hb", gid, member_id), now + timeout_ms / 1000,
                             lambda t: self._heartbeat_expired(gid, member_id, t))

    def _heartbeat_expired(self, gid: str, member_id: str, now: float) -> None:
        g = self._store.classic(gid)
        if member_id in g.pending_join:
            g.pending_join.discard(member_id)
            if g.state == PREPARING_REBALANCE and g.has_all_members_joined():
                self._complete_join(g, now)
            return
        m = g.members.get(member_id)
        parked = m is not None and (m.awaiting_join is not None or m.awaiting_sync is not None)
        if m is None or (parked and not m.is_new):
            return  # a member waiting in a join or sync phase satisfies its heartbeat
        timeout_ms = NEW_MEMBER_JOIN_TIMEOUT_MS if m.is_new else m.session_timeout_ms
        self._events(Kind.GROUP_MEMBER_EXPIRED, group=gid, member=member_id, session_timeout_ms=timeout_ms)
        self._remove_member_and_update(g, m, f"member {member_id} session expired", now)

    def _remove_member_and_update(self, g: Group, m: Member, reason: str, now: float) -> None:
        complete(m, "awaiting_join", join_error("", E.UNKNOWN_MEMBER_ID))  # a new member timed out while parked
        complete(m, "awaiting_sync", sync_error(E.UNKNOWN_MEMBER_ID))
        g.remove(m.member_id)
        self._timers.cancel(("hb", g.group_id, m.member_id))
        if g.state in (STABLE, COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(g, reason, now)
        elif g.state == PREPARING_REBALANCE and g.has_all_members_joined():
            self._complete_join(g, now)

    # -- LeaveGroup --------------------------------------------------------------------------------
    def leave(self, g: Group, members: list[tuple[str, str | None]], now: float) -> tuple[int, list[int]]:
        if g.state == DEAD:
            return E.COORDINATOR_NOT_AVAILABLE, []
        return E.NONE, [self._leave_one(g, member_id, instance_id, now) for member_id, instance_id in members]

    def _leave_one(self, g: Group, member_id: str, instance_id: str | None, now: float) -> int:
        if not member_id:
            static_id = g.member_for_instance(instance_id)
            if static_id is None:
                return E.UNKNOWN_MEMBER_ID
            member_id = static_id
        elif member_id in g.pending_join:
            g.pending_join.discard(member_id)
            self._timers.cancel(("hb", g.group_id, member_id))
            if g.state == PREPARING_REBALANCE and g.has_all_members_joined():
                self._complete_join(g, now)
            return E.NONE
        else:
            error = g.member_error(member_id, instance_id)
            if error is not None:
                return error
        self._remove_member_and_update(g, g.members[member_id], f"member {member_id} left", now)
        return E.NONE
