"""KIP-848's group coordinator: ConsumerGroupHeartbeat over ``consumer_state`` (Kafka 4.x
``GroupMetadataManager.consumerGroupHeartbeat`` / ``consumerGroupLeave`` /
``consumerGroupFenceMember`` and their timers).

Theory of operation
- A heartbeat (1) creates or updates the member — epoch 0 joins, -1 leaves, -2 is a static member
  leaving for a while; (2) bumps the group epoch when a subscription or the subscribed topics'
  partition counts changed; (3) recomputes the target assignment when the group epoch is ahead
  of it; (4) moves the member one reconciliation step towards its target; (5) restarts the
  member's session. All of it is one synchronous step under trio, like a coordinator write.
- Timers (keys on the consumer groups' own ``Timers``): ``("cg-session", group, member)``, the broker's
  ``group.consumer.session.timeout.ms`` from the last heartbeat; ``("cg-rebalance", group,
  member)``, the member's rebalance timeout from the moment it was asked to revoke, cancelled
  when it moves on. Either fences the member: it is removed, the group epoch bumps, and its
  partitions are free for the others.
- The answer carries the broker's ``group.consumer.heartbeat.interval.ms``; the assignment only on
  a full request (joining, or every field set) or when the member's partitions changed.

Classic members in consumer groups and the conversions between the two kinds of group are in
``classic_members.py``.

Deliberate difference from Kafka 4.x (docs/kip848.md)
- ``SubscribedTopicRegex`` is a Python regular expression (Kafka: RE2/J), matched on every
  heartbeat (Kafka resolves regexes asynchronously, within seconds).
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from broker_emu.groups.classic import ClassicGroups
from broker_emu.groups.classic_members import ClassicMembers
from broker_emu.groups.consumer_state import (
    LEAVE_EPOCH,
    M_UNREVOKED,
    STATIC_LEAVE_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    Refused,
    reconcile,
)
from broker_emu.groups.failover import Failover
from broker_emu.groups.host import Settings, Topics
from broker_emu.groups.server_assignors import assign
from broker_emu.groups.store import GroupEvents, GroupStore
from broker_emu.groups.timers import Timers
from broker_emu.internal_topics import KAFKA_INTERNAL_TOPICS
from broker_emu.trace import Kind
from client.errors import ErrorCode as E


@dataclass
class GroupHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: list[tuple[uuid.UUID, list[int]]] | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1


class ConsumerGroups:
    """KIP-848 groups, on their own keyed timers (shared with their classic members'). Their
    classic-protocol members and the conversions between kinds of group are ``classic_members``."""

    def __init__(self, store: GroupStore, timers: Timers, settings: Settings, events: GroupEvents, topics: Topics,
                 rng: random.Random, failover: Failover, classic: ClassicGroups) -> None:
        self._store, self._timers, self._settings, self._events = store, timers, settings, events
        self._topics, self._rng, self._failover = topics, rng, failover
        # Built here, with this object: the two recurse into each other (a fenced member may
        # downgrade the group; a classic member's JoinGroup bumps the epoch and reconciles).
        self.classic_members = ClassicMembers(self, classic, store, timers, settings, events, topics, rng)

    def deadline(self, key: Hashable) -> float | None:
        return self._timers.deadline(key)

    def armed(self) -> int:
        return len(self._timers)

    def forget_timers(self, group_id: str) -> None:
        """The group is deleted: none of its timers may fire."""
        self._timers.cancel_group(group_id)

    def assignors(self) -> list[str]:
        return [a.strip() for a in self._settings("group.consumer.assignors").split(",") if a.strip()]

    def consumer_group_heartbeat(self, hb: GroupHeartbeat, *, broker_id: int, now: float) -> dict[str, Any]:
        try:
            self._check_heartbeat(hb)
            error = self._failover.validate(hb.group_id, broker_id)
            if error is not None:
                raise Refused(error)
            if hb.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(hb, now)
            return self._heartbeat(hb, broker_id, now)
        except Refused as refused:
            return {"error_code": refused.code, "error_message": refused.message, "member_id": None,
                    "member_epoch": -1, "heartbeat_interval_ms": 0, "assignment": None}

    def _check_heartbeat(self, hb: GroupHeartbeat) -> None:
        """GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid (Kafka 4.x)."""
        def invalid(message: str) -> Refused:
            return Refused(E.INVALID_REQUEST, message)
        if (hb.api_version >= 1 or hb.member_epoch > 0 or hb.member_epoch == LEAVE_EPOCH) and not hb.member_id:
            raise invalid("MemberId can't be empty.")
        for value, what in ((hb.group_id, "GroupId"), (hb.instance_id, "InstanceId"), (hb.rack_id, "RackId")):
            if value == "":
                raise invalid(f"{what} can't be empty.")
        if hb.member_epoch == 0:
            if hb.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if hb.owned is None or hb.owned:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if hb.subscribed_topic_names is None and hb.subscribed_topic_regex is None:
                raise invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
        elif hb.member_epoch == STATIC_LEAVE_EPOCH and hb.instance_id is None:
            raise invalid("InstanceId can't be null.")
        elif hb.member_epoch < STATIC_LEAVE_EPOCH:
            raise invalid("MemberEpoch is invalid.")
        if hb.server_assignor is not None and hb.server_assignor not in self.assignors():
            raise Refused(E.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {hb.server_assignor} is not supported. "
                          f"Supported assignors: {', '.join(self.assignors())}.")
        if hb.subscribed_topic_regex:
            try:
                re.compile(hb.subscribed_topic_regex)
            except re.error as exc:
                raise Refused(E.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex `{hb.subscribed_topic_regex}` "
                              f"is not a valid regular expression: {exc}.") from None

    # -- the group and the member ----------------------------------------------------------------
    def _consumer_group(self, group_id: str, create: bool, broker_id: int, now: float) -> ConsumerGroup:
        """GroupMetadataManager.getOrMaybeCreateConsumerGroup: an empty classic group is replaced."""
        g = self._failover.group(group_id, now)
        if isinstance(g, ConsumerGroup):
            return g
        if g is None and not create:
            raise Refused(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if g is not None and g.members:
            if not create:
                raise Refused(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            return self.classic_members.upgrade_classic_group(g, now)
        new = ConsumerGroup(group_id, coordinator=broker_id)
        if g is not None:
            new.offsets = g.offsets
        self._store.put(new)
        return new

    def _member(self, g: ConsumerGroup, hb: GroupHeartbeat, member_id: str,
                owned: set[tuple[str, int]] | None) -> ConsumerMember:
        joining = hb.member_epoch == 0
        if hb.instance_id is None:
            m = g.members.get(member_id)
            if m is None:
                if not joining:
                    raise Refused(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {g.group_id}.")
                return ConsumerMember(member_id)
            _check_epoch(m, hb.member_epoch, owned)
            return m
        existing = g.members.get(g.static_members.get(hb.instance_id, ""))
        if joining:
            if existing is None:
                return ConsumerMember(member_id, instance_id=hb.instance_id)
            if existing.member_epoch != STATIC_LEAVE_EPOCH:
                raise Refused(E.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id {hb.instance_id} "
                              f"cannot join the group because the instance id is owned by {existing.member_id} member.")
            # the restarted static member takes over its predecessor's assignment (replaceMember)
            self._timers.cancel(("cg-session", g.group_id, existing.member_id))
            self._timers.cancel(("cg-rebalance", g.group_id, existing.member_id))
            return ConsumerMember(member_id, hb.instance_id, existing.rack_id, member_epoch=0, previous_member_epoch=0,
                                  rebalance_timeout_ms=existing.rebalance_timeout_ms,
                                  subscribed_topic_names=existing.subscribed_topic_names,
                                  subscribed_topic_regex=existing.subscribed_topic_regex,
                                  server_assignor=existing.server_assignor, assigned=existing.assigned,
                                  assignment_epochs=dict(existing.assignment_epochs))
        if existing is None:
            raise Refused(E.UNKNOWN_MEMBER_ID, f"Instance id {hb.instance_id} is unknown.")
        if existing.member_id != member_id:
            raise Refused(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {hb.instance_id} "
                          f"was fenced by member {existing.member_id}.")
        _check_epoch(existing, hb.member_epoch, owned)
        return existing

    def _owned(self, hb: GroupHeartbeat) -> set[tuple[str, int]] | None:
        """The request's owned partitions by topic name; ids of unknown topics are dropped."""
        if hb.owned is None:
            return None
        out: set[tuple[str, int]] = set()
        for topic_id, partitions in hb.owned:
            name = self._topics.name_of(topic_id)
            if name is not None:
                out.update((name, p) for p in partitions)
        return out

    # -- the heartbeat ---------------------------------------------------------------------------
    def _heartbeat(self, hb: GroupHeartbeat, broker_id: int, now: float) -> dict[str, Any]:
        g = self._consumer_group(hb.group_id, hb.member_epoch == 0, broker_id, now)
        member_id = hb.member_id or str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
        owned = self._owned(hb)   # the request's owned partitions, by topic name (read once)
        m = self._member(g, hb, member_id, owned)
        before = (m.member_epoch, m.assigned)
        if self._update_member(g, m, hb):
            self.bump(g, f"member {member_id} joined or changed its subscription")
            self.subscriptions_changed(g, now, bumped=True)
        else:
            self.subscriptions_changed(g, now, bumped=False)
        self.reconcile_member(g, m, owned, now)
        gid = g.group_id
        self._timers.schedule(("cg-session", gid, member_id), now + self._settings.of_group(gid, "consumer.session.timeout.ms") / 1000,
                             lambda t: self.fence(gid, member_id, "session", t))
        full = hb.member_epoch == 0 or (hb.rebalance_timeout_ms != -1 and hb.subscribed_topic_names is not None
                                        and hb.owned is not None)
        changed = before[1] != m.assigned
        return {"error_code": E.NONE, "error_message": None, "member_id": member_id, "member_epoch": m.member_epoch,
                "heartbeat_interval_ms": self._settings.of_group(gid, "consumer.heartbeat.interval.ms"),
                "assignment": self._wire_assignment(m.assigned) if full or changed else None}

    def _update_member(self, g: ConsumerGroup, m: ConsumerMember, hb: GroupHeartbeat) -> bool:
        """Apply the request's non-null fields; True when the subscription changed (or it is new)."""
        new = m.member_id not in g.members
        old = (m.subscribed_topic_names, m.subscribed_topic_regex)
        if hb.rack_id is not None:
            m.rack_id = hb.rack_id
        if hb.rebalance_timeout_ms != -1:
            m.rebalance_timeout_ms = hb.rebalance_timeout_ms
        if hb.subscribed_topic_names is not None:
            m.subscribed_topic_names = tuple(sorted(set(hb.subscribed_topic_names)))
        if hb.subscribed_topic_regex is not None:
            m.subscribed_topic_regex = hb.subscribed_topic_regex or None
        if hb.server_assignor is not None:
            m.server_assignor = hb.server_assignor
        m.client_id, m.client_host = hb.client_id, hb.client_host
        if new:
            g.add_or_replace(m)
        return new or old != (m.subscribed_topic_names, m.subscribed_topic_regex)

    def subscriptions_changed(self, g: ConsumerGroup, now: float, bumped: bool) -> None:
        """After a member's update: a change of the subscribed topics' metadata bumps the group
        epoch too (once), and a group epoch ahead of the target asks for a new target."""
        metadata = self.subscription_metadata(g)
        if metadata != g.subscription_metadata:
            g.subscription_metadata = metadata
            if not bumped:
                self.bump(g, "the subscribed topics changed")
        if g.group_epoch > g.assignment_epoch:
            self._maybe_compute_target(g, now)

    def subscribed(self, m: ConsumerMember) -> frozenset[str]:
        topics = {t for t in m.subscribed_topic_names if t in self._topics}
        if m.subscribed_topic_regex:
            pattern = re.compile(m.subscribed_topic_regex)
            topics |= {t for t in self._topics.names() if t not in KAFKA_INTERNAL_TOPICS and pattern.fullmatch(t)}
        return frozenset(topics)

    def subscription_metadata(self, g: ConsumerGroup) -> dict[str, int]:
        topics = set().union(*(self.subscribed(m) for m in g.members.values()))
        return {t: self._topics.partition_count(t) for t in sorted(topics)}

    def bump(self, g: ConsumerGroup, reason: str) -> None:
        g.group_epoch += 1
        self._events(Kind.GROUP_EPOCH, group=g.group_id, group_epoch=g.group_epoch, reason=reason)

    def _preferred_assignor(self, g: ConsumerGroup) -> str:
        """The one most members name (ConsumerGroup.computePreferredServerAssignor), else the first
        of group.consumer.assignors."""
        named = [x.server_assignor for x in g.members.values() if x.server_assignor]
        return max(sorted(set(named)), key=named.count) if named else self.assignors()[0]

    def _maybe_compute_target(self, g: ConsumerGroup, now: float) -> None:
        """Kafka 4.3+ (group.consumer.assignment.interval.ms, 1 s): a target assignment at most
        once per interval. Sooner, the group stays Assigning and a timer computes it when the
        interval has passed; members learn it on their next heartbeat (0: at once, as before 4.3)."""
        due = g.assigned_at + self._settings.of_group(g.group_id, "consumer.assignment.interval.ms") / 1000
        if now >= due:
            self._timers.cancel(("cg-assign", g.group_id))
            self._compute_target(g, now)
            return
        gid = g.group_id
        if ("cg-assign", gid) not in self._timers:
            self._timers.schedule(("cg-assign", gid), due, lambda t: self._assignment_due(gid, t))

    def _assignment_due(self, gid: str, now: float) -> None:
        g = self._store.get(gid)
        if isinstance(g, ConsumerGroup) and g.group_epoch > g.assignment_epoch:
            self._compute_target(g, now)

    def _compute_target(self, g: ConsumerGroup, now: float) -> None:
        name = self._preferred_assignor(g)
        subscriptions = {mid: self.subscribed(x) for mid, x in g.members.items()}
        g.target = assign(name, subscriptions, g.subscription_metadata, g.target)
        g.assignment_epoch, g.assignor_name, g.assigned_at = g.group_epoch, name, now
        self._events(Kind.GROUP_TARGET_ASSIGNMENT, group=g.group_id, assignment_epoch=g.assignment_epoch, assignor=name,
                    targets={mid: _readable(a) for mid, a in g.target.items()})

    def reconcile_member(self, g: ConsumerGroup, m: ConsumerMember, owned: set[tuple[str, int]] | None, now: float) -> None:
        before = (m.member_epoch, m.state, m.assigned, m.pending_revocation)
        owners = g.owner_of()
        reconcile(m, g.assignment_epoch, g.target.get(m.member_id, {}), owned, owners)
        if before == (m.member_epoch, m.state, m.assigned, m.pending_revocation):
            return
        self._events(Kind.GROUP_MEMBER_EPOCH, group=g.group_id, member=m.member_id, **{"from": before[0]},
                    to=m.member_epoch, state=m.state, assigned=_readable(m.assigned),
                    revoking=_readable(m.pending_revocation))
        gid, mid, key = g.group_id, m.member_id, ("cg-rebalance", g.group_id, m.member_id)
        if m.state == M_UNREVOKED and m.classic is None:   # a classic member's rejoin has its own timer
            epoch, timeout_ms = m.member_epoch, m.rebalance_timeout_ms
            self._timers.schedule(key, now + timeout_ms / 1000, lambda t: self._rebalance_expired(gid, mid, epoch, t))
        else:
            self._timers.cancel(key)

    def _rebalance_expired(self, gid: str, member_id: str, epoch: int, now: float) -> None:
        g = self._store.get(gid)
        m = g.members.get(member_id) if isinstance(g, ConsumerGroup) else None
        if m is not None and m.member_epoch == epoch:
            self.fence(gid, member_id, "rebalance", now)

    # -- leaving and fencing -------------------------------------------------------------------------
    def _leave(self, hb: GroupHeartbeat, now: float) -> dict[str, Any]:
        g = self._failover.group(hb.group_id, now)
        if not isinstance(g, ConsumerGroup):
            raise Refused(E.GROUP_ID_NOT_FOUND, f"Consumer group {hb.group_id} not found.")
        answer = {"error_code": E.NONE, "error_message": None, "member_id": hb.member_id,
                  "member_epoch": hb.member_epoch, "heartbeat_interval_ms": 0, "assignment": None}
        if hb.instance_id is None:
            if hb.member_id not in g.members:
                raise Refused(E.UNKNOWN_MEMBER_ID, f"Member {hb.member_id} is not a member of group {g.group_id}.")
            self.fence(g.group_id, hb.member_id, "left", now)
            return answer
        m = g.members.get(g.static_members.get(hb.instance_id, ""))
        if m is None:
            raise Refused(E.UNKNOWN_MEMBER_ID, f"Instance id {hb.instance_id} is unknown.")
        if m.member_id != hb.member_id:
            raise Refused(E.FENCED_INSTANCE_ID, f"Static member {hb.member_id} with instance id {hb.instance_id} "
                          f"was fenced by member {m.member_id}.")
        if hb.member_epoch == STATIC_LEAVE_EPOCH:
            # it keeps its partitions until its session ends (consumerGroupStaticMemberGroupLeave)
            m.member_epoch, m.pending_revocation = STATIC_LEAVE_EPOCH, {}
            self._timers.cancel(("cg-rebalance", g.group_id, m.member_id))
            return answer
        self.fence(g.group_id, m.member_id, "left", now)
        return answer

    def fence(self, gid: str, member_id: str, reason: str, now: float) -> None:
        g = self._store.get(gid)
        if not isinstance(g, ConsumerGroup) or member_id not in g.members:
            return
        m = g.members[member_id]
        session_ms = m.classic.session_timeout_ms if m.classic else self._settings.of_group(gid, "consumer.session.timeout.ms")
        timeout_ms = session_ms if reason == "session" else None if reason == "left" else m.rebalance_timeout_ms
        self._events(Kind.GROUP_MEMBER_FENCED, group=gid, member=member_id, reason=reason, timeout_ms=timeout_ms,
                    member_epoch=m.member_epoch, released=_readable(m.assigned),
                    protocol="classic" if m.classic else "consumer")
        g.remove(member_id)
        for timer in ("cg-session", "cg-rebalance", "cg-join", "cg-sync"):
            self._timers.cancel((timer, gid, member_id))
        if self.classic_members.maybe_downgrade(g, now):
            return
        g.subscription_metadata = self.subscription_metadata(g)
        self.bump(g, f"member {member_id} " + {"left": "left", "session": "session expired",
                                                "rebalance": "did not revoke within its rebalance timeout",
                                                "join": "did not rejoin within its rebalance timeout",
                                                "sync": "did not send SyncGroup within its rebalance timeout"}[reason])

    # -- views ------------------------------------------------------------------------------------
    def describe_consumer_group(self, group_id: str, *, broker_id: int, now: float) -> dict[str, Any]:
        """One group of a ConsumerGroupDescribe answer (ConsumerGroup.asDescribedGroup)."""
        error = self._failover.validate(group_id, broker_id)
        g = self._failover.group(group_id, now) if error is None else None
        if error is None and not isinstance(g, ConsumerGroup):
            error = E.GROUP_ID_NOT_FOUND
        if error is not None or not isinstance(g, ConsumerGroup):
            message = (f"Group {group_id} not found." if g is None else f"Group {group_id} is not a consumer group."
                       ) if error == E.GROUP_ID_NOT_FOUND else None
            return {"error_code": error, "error_message": message, "group_id": group_id, "group_state": "",
                    "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": []}
        assignor = self._preferred_assignor(g)
        return {"error_code": E.NONE, "error_message": None, "group_id": group_id, "group_state": g.state,
                "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch, "assignor_name": assignor,
                "members": [{"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                             "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
                             "subscribed_topic_names": list(m.subscribed_topic_names),
                             "subscribed_topic_regex": m.subscribed_topic_regex,
                             "assignment": self._described(m.assigned),
                             "target_assignment": self._described(g.target.get(m.member_id, {})),
                             "member_type": 0 if m.classic else 1} for m in g.members.values()]}

    def _described(self, a: Assignment) -> dict[str, Any]:
        return {"topic_partitions": [{"topic_id": self._topics.topic_id(t), "topic_name": t,
                                      "partitions": sorted(ps)} for t, ps in sorted(a.items()) if t in self._topics]}

    def _wire_assignment(self, a: Assignment) -> dict[str, Any]:
        return {"topic_partitions": [{"topic_id": self._topics.topic_id(t), "partitions": sorted(ps)}
                                     for t, ps in sorted(a.items()) if t in self._topics]}

    def sessions_moved(self, g: ConsumerGroup, now: float) -> ConsumerGroup:
        """A new coordinator loaded the group (its records are all in __consumer_offsets): every
        session restarts, and a member asked to revoke gets its full rebalance timeout again."""
        g.coordinator = self._failover.coordinator_for(g.group_id)
        for m in g.members.values():
            self._arm_member_timers(g.group_id, m, now)
        if g.group_epoch > g.assignment_epoch:
            self._maybe_compute_target(g, now)
        return g

    def _arm_member_timers(self, gid: str, m: ConsumerMember, now: float) -> None:
        mid, epoch = m.member_id, m.member_epoch
        session_ms = m.classic.session_timeout_ms if m.classic else self._settings.of_group(gid, "consumer.session.timeout.ms")
        self._timers.schedule(("cg-session", gid, mid), now + session_ms / 1000, lambda t: self.fence(gid, mid, "session", t))
        if m.state == M_UNREVOKED and m.classic is None:
            self._timers.schedule(("cg-rebalance", gid, mid), now + m.rebalance_timeout_ms / 1000,
                                 lambda t: self._rebalance_expired(gid, mid, epoch, t))


def _check_epoch(m: ConsumerMember, received: int, owned: set[tuple[str, int]] | None) -> None:
    """throwIfConsumerGroupMemberEpochIsInvalid: the previous epoch is accepted when the member
    holds only partitions of its current assignment (the answer bumping its epoch was lost)."""
    if received > m.member_epoch:
        raise Refused(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch ({received}) than "
                      f"the one known by the group coordinator ({m.member_epoch}). The member must abandon all its "
                      "partitions and rejoin.")
    if received < m.member_epoch:
        subset = owned is not None and all(p in m.assigned.get(t, ()) for t, p in owned)
        if received != m.previous_member_epoch or not subset:
            raise Refused(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member epoch ({received}) "
                          f"than the one known by the group coordinator ({m.member_epoch}). The member must abandon "
                          "all its partitions and rejoin.")


def _readable(a: Assignment) -> dict[str, list[int]]:
    return {t: sorted(ps) for t, ps in sorted(a.items())}
