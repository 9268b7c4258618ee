"""Classic members in KIP-848 consumer groups, and groups changing kind (Kafka 4.x
``GroupMetadataManager``: classicGroupJoinToConsumerGroup / SyncToConsumerGroup /
HeartbeatToConsumerGroup / LeaveToConsumerGroup, convertToConsumerGroup, convertToClassicGroup;
``ConsumerGroup.fromClassicGroup``, ``ClassicGroup.fromConsumerGroup``).

Theory of operation
- Unless ``group.consumer.migration.policy`` is ``disabled`` (Kafka's default: ``bidirectional``) a
  consumer group takes JoinGroup members. Such a member is a ``ConsumerMember`` with ``classic`` set:
  its subscription and owned partitions come from its JoinGroup metadata, the broker's assignor
  decides, and each JoinGroup is one reconciliation step, answered at once with the member epoch as
  generation, no leader and no member list (the member runs no assignor). SyncGroup hands it its
  assigned partitions; Heartbeat answers REBALANCE_IN_PROGRESS when it must rejoin (a newer target,
  a revocation asked, or freed partitions to collect).
- Its timers: its own ``session.timeout.ms`` (``cg-session``); ``cg-sync``, its rebalance timeout
  from a JoinGroup answer to its SyncGroup; ``cg-join``, its rebalance timeout from being told to
  rejoin. Each fences it as a consumer member is fenced.
- Upgrade (policy ``upgrade``/``bidirectional``): a ConsumerGroupHeartbeat joining a non-empty
  classic group converts it. Parked JoinGroup/SyncGroup answer REBALANCE_IN_PROGRESS; every member
  keeps its generation as member epoch and its assignment as target.
- Downgrade (``downgrade``/``bidirectional``): when the last consumer-protocol member leaves or is
  fenced and classic members remain, the group becomes a classic group, Stable at the group epoch
  with the target assignment, and rebalances at once.

Deliberate difference: a static classic member replacing the last consumer-protocol member does
not downgrade the group on the spot (Kafka does); it downgrades when that member's session ends.
"""

from __future__ import annotations

import base64
import random
from typing import TYPE_CHECKING, Any, Protocol

from broker_emu.groups.consumer_state import (
    M_UNRELEASED,
    M_UNREVOKED,
    Assignment,
    ClassicMeta,
    ConsumerGroup,
    ConsumerMember,
    Refused,
)
from broker_emu.groups.failover import join_error, sync_error
from broker_emu.groups.host import Settings, Topics
from broker_emu.groups.state import STABLE, Group, Member, complete
from broker_emu.groups.store import GroupEvents, GroupStore
from broker_emu.trace import Kind
from client.errors import ErrorCode as E
from client.protocol.codec import decode_consumer_blob, encode_consumer_blob
from client.protocol.errors import CorruptFrameError

if TYPE_CHECKING:
    from broker_emu.groups.classic import ClassicGroups, JoinRequest
    from broker_emu.groups.state import Reply
    from broker_emu.groups.timers import Timers

SUBSCRIPTION, ASSIGNMENT = "CONSUMER_PROTOCOL_SUBSCRIPTION", "CONSUMER_PROTOCOL_ASSIGNMENT"


class ConsumerGroupSteps(Protocol):
    """What a classic member of a consumer group asks of the consumer groups (``kip848.
    ConsumerGroups``, which builds this class and so cannot be imported by it)."""

    def bump(self, g: ConsumerGroup, reason: str) -> None: ...

    def subscriptions_changed(self, g: ConsumerGroup, now: float, bumped: bool) -> None: ...

    def reconcile_member(self, g: ConsumerGroup, m: ConsumerMember, owned: set[tuple[str, int]] | None,
                         now: float) -> None: ...

    def fence(self, gid: str, member_id: str, reason: str, now: float) -> None: ...

    def subscription_metadata(self, g: ConsumerGroup) -> dict[str, int]: ...


class Unusable(Exception):
    """Embedded consumer-protocol bytes that do not parse."""


class ClassicMembers:
    """Classic-protocol members of the consumer groups (``consumer``), and the conversions between
    a classic group (``classic``) and a consumer group. Their timers are the consumer groups'."""

    def __init__(self, consumer: ConsumerGroupSteps, classic: ClassicGroups, store: GroupStore, timers: Timers,
                 settings: Settings, events: GroupEvents, topics: Topics, rng: random.Random) -> None:
        self._consumer, self._classic, self._store, self._timers = consumer, classic, store, timers
        self._settings, self._events, self._topics, self._rng = settings, events, topics, rng

    def migration_allows(self, direction: str) -> bool:
        """ConsumerGroupMigrationPolicy: ``upgrade``, ``downgrade``, or ``classic`` (joining at all)."""
        policy = str(self._settings("group.consumer.migration.policy")).lower()
        return policy != "disabled" if direction == "classic" else policy in (direction, "bidirectional")

    # -- JoinGroup -------------------------------------------------------------------------------
    def classic_join_consumer_group(self, g: ConsumerGroup, req: JoinRequest, reply: Reply, now: float) -> None:
        member_id = req.member_id or self._kafka_uuid()
        if not self.migration_allows("classic"):  # throwIfClassicMemberCannotJoinConsumerGroup
            return reply(join_error(req.member_id, E.INCONSISTENT_GROUP_PROTOCOL))
        if not g.supports_classic(req.protocol_type, {name for name, _ in req.protocols}):
            return reply(join_error(req.member_id, E.INCONSISTENT_GROUP_PROTOCOL))
        if not req.member_id and req.group_instance_id is None and req.require_known_member_id:
            return reply(join_error(member_id, E.MEMBER_ID_REQUIRED))
        try:
            subscription = _decode(SUBSCRIPTION, req.protocols[0][1])
        except Unusable:  # deserializeSubscription: "Malformed embedded consumer protocol ..."
            return reply(join_error(req.member_id, E.INCONSISTENT_GROUP_PROTOCOL))
        m, error = self._joining_member(g, req, member_id)
        if m is None:
            return reply(join_error(req.member_id, error))
        new = m.member_id not in g.members
        before = m.subscribed_topic_names
        m.classic = ClassicMeta(req.session_timeout_ms, [(name, bytes(meta)) for name, meta in req.protocols])
        m.rack_id = subscription.get("rack_id") or m.rack_id
        m.rebalance_timeout_ms = req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else m.rebalance_timeout_ms
        m.subscribed_topic_names = tuple(sorted(set(subscription.get("topics") or ())))
        m.client_id, m.client_host = req.client_id, req.client_host
        if new:
            g.add_or_replace(m)
        bump = new or before != m.subscribed_topic_names
        if bump:
            self._consumer.bump(g, f"member {m.member_id} joined or changed its subscription (classic protocol)")
        self._consumer.subscriptions_changed(g, now, bumped=bump)
        owned = {(tp["topic"], p) for tp in subscription.get("owned_partitions") or () for p in tp["partitions"]}
        self._consumer.reconcile_member(g, m, owned, now)
        gid, mid = g.group_id, m.member_id
        self._timers.cancel(("cg-join", gid, mid))
        self._arm_classic_session(gid, m, now)
        self._timers.schedule(("cg-sync", gid, mid), now + m.rebalance_timeout_ms / 1000,
                             lambda t: self._consumer.fence(gid, mid, "sync", t))
        reply({"error_code": E.NONE, "generation_id": m.member_epoch, "protocol_type": "consumer",
               "protocol_name": m.classic.protocols[0][0], "leader": "", "skip_assignment": False,
               "member_id": mid, "members": []})

    def _joining_member(self, g: ConsumerGroup, req: JoinRequest, member_id: str) -> tuple[ConsumerMember | None, int]:
        """getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember for a classic member: a restarted
        static member (no member id) takes over its predecessor's assignment."""
        if req.group_instance_id is None:
            return g.members.get(member_id) or ConsumerMember(member_id), E.NONE
        existing = g.members.get(g.static_members.get(req.group_instance_id, ""))
        if not req.member_id:
            if existing is None:
                return ConsumerMember(member_id, instance_id=req.group_instance_id), E.NONE
            for timer in ("cg-session", "cg-rebalance", "cg-join", "cg-sync"):
                self._timers.cancel((timer, g.group_id, existing.member_id))
            return ConsumerMember(member_id, req.group_instance_id, existing.rack_id, member_epoch=0,
                                  previous_member_epoch=0, rebalance_timeout_ms=existing.rebalance_timeout_ms,
                                  subscribed_topic_names=existing.subscribed_topic_names,
                                  assigned=existing.assigned, assignment_epochs=dict(existing.assignment_epochs)), E.NONE
        if existing is None:
            return None, E.UNKNOWN_MEMBER_ID
        if existing.member_id != req.member_id:
            return None, E.FENCED_INSTANCE_ID
        return existing, E.NONE

    # -- SyncGroup, Heartbeat, LeaveGroup --------------------------------------------------------
    def classic_sync_consumer_group(self, g: ConsumerGroup, *, generation_id: int, member_id: str,
                                    instance_id: str | None, protocol_type: str | None, protocol_name: str | None,
                                    now: float) -> dict[str, Any]:
        m, error = self._classic_member(g, member_id, instance_id)
        if m is None or m.classic is None:
            return sync_error(error)
        if generation_id != m.member_epoch:
            return sync_error(E.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != "consumer") or \
                (protocol_name is not None and protocol_name != m.classic.protocols[0][0]):
            return sync_error(E.INCONSISTENT_GROUP_PROTOCOL)
        # throwIfRebalanceInProgress: a member already revoking finishes that first
        if g.assignment_epoch > m.member_epoch and m.state != M_UNREVOKED:
            self._ask_to_rejoin(g, m, now)
            return sync_error(E.REBALANCE_IN_PROGRESS)
        self._timers.cancel(("cg-sync", g.group_id, m.member_id))
        self._arm_classic_session(g.group_id, m, now)
        return {"error_code": E.NONE, "protocol_type": protocol_type, "protocol_name": protocol_name,
                "assignment": self._encoded_assignment(m.assigned, m.classic.protocols[0][1])}

    def classic_heartbeat_consumer_group(self, g: ConsumerGroup, *, generation_id: int, member_id: str,
                                         instance_id: str | None, now: float) -> int:
        m, error = self._classic_member(g, member_id, instance_id)
        if m is None:
            return error
        if generation_id != m.member_epoch:
            return E.ILLEGAL_GENERATION
        self._arm_classic_session(g.group_id, m, now)
        if m.member_epoch < g.assignment_epoch or m.state == M_UNREVOKED or \
                (m.state == M_UNRELEASED and not _waiting_on_unreleased(g, m)):
            self._ask_to_rejoin(g, m, now)
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    def consumer_group_remove(self, g: ConsumerGroup, member_id: str, instance_id: str | None, now: float) -> int:
        """LeaveGroup on a consumer group (classicGroupLeaveToConsumerGroup): a member by id, or a
        static member by instance id (the admin client's removal, with no member id)."""
        if instance_id is None:
            if member_id not in g.members:
                return E.UNKNOWN_MEMBER_ID
        else:
            static = g.static_members.get(instance_id)
            if static is None:
                return E.UNKNOWN_MEMBER_ID
            if member_id and member_id != static:
                return E.FENCED_INSTANCE_ID
            member_id = static
        self._consumer.fence(g.group_id, member_id, "left", now)
        return E.NONE

    def _classic_member(self, g: ConsumerGroup, member_id: str, instance_id: str | None
                        ) -> tuple[ConsumerMember | None, int]:
        """validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol."""
        if instance_id is None:
            m = g.members.get(member_id)
        else:
            m = g.members.get(g.static_members.get(instance_id, ""))
            if m is not None and m.member_id != member_id:
                return None, E.FENCED_INSTANCE_ID
        if m is None or m.classic is None:
            return None, E.UNKNOWN_MEMBER_ID
        return m, E.NONE

    def _ask_to_rejoin(self, g: ConsumerGroup, m: ConsumerMember, now: float) -> None:
        """scheduleConsumerGroupJoinTimeoutIfAbsent: it has its rebalance timeout to rejoin."""
        gid, mid = g.group_id, m.member_id
        if ("cg-join", gid, mid) not in self._timers:
            self._timers.schedule(("cg-join", gid, mid), now + m.rebalance_timeout_ms / 1000,
                                 lambda t: self._consumer.fence(gid, mid, "join", t))

    def _arm_classic_session(self, gid: str, m: ConsumerMember, now: float) -> None:
        timeout_ms = m.classic.session_timeout_ms if m.classic else self._settings.of_group(gid, "consumer.session.timeout.ms")
        mid = m.member_id
        self._timers.schedule(("cg-session", gid, mid), now + timeout_ms / 1000, lambda t: self._consumer.fence(gid, mid, "session", t))

    # -- conversions -----------------------------------------------------------------------------
    def upgrade_classic_group(self, g: Group, now: float) -> ConsumerGroup:
        """convertToConsumerGroup, after validateOnlineUpgrade (GROUP_ID_NOT_FOUND with Kafka's words)."""
        gid = g.group_id
        why = ("online upgrade is disabled" if not self.migration_allows("upgrade") else
               "the group does not use the consumer embedded protocol" if g.protocol_type != "consumer" else None)
        if why:
            raise Refused(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer group because {why}.")
        members = []
        try:
            for m in g.members.values():
                subscription = _decode(SUBSCRIPTION, m.metadata(g.protocol_name) or m.protocols[0][1])
                assigned = self._assignment_of(m.assignment)
                members.append((m, subscription, assigned))
        except Unusable:
            raise Refused(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade the classic group {gid} to consumer group because "
                          "the embedded consumer protocol is malformed.") from None
        for m in g.members.values():
            complete(m, "awaiting_join", join_error(m.member_id, E.REBALANCE_IN_PROGRESS))
            complete(m, "awaiting_sync", sync_error(E.REBALANCE_IN_PROGRESS))
        self._classic.forget_timers(gid)
        generation = g.generation_id
        new = ConsumerGroup(gid, coordinator=g.coordinator, group_epoch=generation, assignment_epoch=generation)
        new.offsets = g.offsets
        for m, subscription, assigned in members:
            cm = ConsumerMember(m.member_id, m.group_instance_id, subscription.get("rack_id"), m.client_id, m.client_host,
                                member_epoch=generation, previous_member_epoch=generation,
                                rebalance_timeout_ms=m.rebalance_timeout_ms,
                                subscribed_topic_names=tuple(sorted(set(subscription.get("topics") or ()))),
                                assigned=assigned, assignment_epochs={(t, p): generation for t, ps in assigned.items()
                                                                      for p in ps},
                                classic=ClassicMeta(m.session_timeout_ms, [(n, bytes(b)) for n, b in m.protocols]))
            new.add_or_replace(cm)
            new.target[cm.member_id] = assigned
            self._arm_classic_session(gid, cm, now)
        new.subscription_metadata = self._consumer.subscription_metadata(new)
        self._store.put(new)
        self._events(Kind.GROUP_CONVERTED, group=gid, to="consumer", group_epoch=generation,
                    members=sorted(new.members))
        return new

    def maybe_downgrade(self, g: ConsumerGroup, now: float) -> bool:
        """convertToClassicGroup after validateOnlineDowngradeWithFencedMembers: only classic
        members remain (at least one) and the policy allows it."""
        if not g.members or any(m.classic is None for m in g.members.values()) or not self.migration_allows("downgrade"):
            return False
        gid = g.group_id
        classic = Group(gid, coordinator=g.coordinator, state=STABLE, previous_state=STABLE, state_since=now,
                        generation_id=g.group_epoch, protocol_type="consumer")
        for m in g.members.values():
            meta = m.classic or ClassicMeta(0, [])
            classic.add(Member(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                               meta.session_timeout_ms, "consumer", list(meta.protocols)), None)
        classic.protocol_name = classic.select_protocol()
        for cm in classic.members.values():
            cm.assignment = self._encoded_assignment(g.target.get(cm.member_id, {}), cm.metadata(classic.protocol_name))
        classic.offsets = g.offsets
        classic.persisted = classic.snapshot()
        self._timers.cancel_group(gid)
        self._store.put(classic)
        self._events(Kind.GROUP_CONVERTED, group=gid, to="classic", generation_id=classic.generation_id,
                    members=sorted(classic.members))
        self._classic.adopt(classic, f"Downgrade group {gid} from consumer to classic.", now)
        return True

    # -- the embedded consumer protocol ------------------------------------------------------------
    def _assignment_of(self, blob: bytes) -> Assignment:
        if not blob:
            return {}
        body = _decode(ASSIGNMENT, blob)
        out: dict[str, set[int]] = {}
        for tp in body.get("assigned_partitions") or ():
            if tp["topic"] in self._topics:   # toTopicPartitionMap drops unknown topics
                out.setdefault(tp["topic"], set()).update(tp["partitions"])
        return {t: frozenset(ps) for t, ps in out.items()}

    def _encoded_assignment(self, a: Assignment, subscription_blob: bytes) -> bytes:
        """ConsumerProtocol.serializeAssignment at the member's subscription version (capped at ours)."""
        version = int.from_bytes(subscription_blob[:2], "big", signed=True) if len(subscription_blob) >= 2 else 0
        body = {"assigned_partitions": [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(a.items()) if ps],
                "user_data": None}
        return encode_consumer_blob(ASSIGNMENT, max(0, min(version, 3)), body)

    def _kafka_uuid(self) -> str:
        """Uuid.randomUuid().toString(): 16 random bytes, URL-safe base64 without padding."""
        return base64.urlsafe_b64encode(self._rng.getrandbits(128).to_bytes(16, "big")).decode().rstrip("=")


def _decode(name: str, blob: bytes) -> Any:
    try:
        return decode_consumer_blob(name, blob)[1]
    except CorruptFrameError:
        raise Unusable(name) from None


def _waiting_on_unreleased(g: ConsumerGroup, m: ConsumerMember) -> bool:
    """ConsumerGroup.waitingOnUnreleasedPartition: a partition of its target another member holds."""
    owners = g.owner_of()
    return any(owners.get((t, p), m.member_id) != m.member_id
               for t, ps in g.target.get(m.member_id, {}).items() for p in ps if p not in m.assigned.get(t, ()))
