"""One KIP-848 consumer group and its reconciliation (Kafka: ``ConsumerGroup``,
``ConsumerGroupMember`` and ``CurrentAssignmentBuilder`` in the group-coordinator module).

Pure data and rules: no clock, no timers, no I/O; ``kip848.py`` drives it.

Theory of operation. The broker owns the assignment. Every change of membership or subscription
bumps the *group epoch*; the assignor then computes a *target assignment* for that epoch. Each
member walks from its current assignment to its target on its own heartbeats: it keeps what both
share, is asked to revoke what it holds but should not (state ``unrevoked_partitions``, its epoch
unchanged until it reports them gone), then moves to the target epoch and receives the new
partitions — but only those no other member still holds (``unreleased_partitions`` until they are
released). A partition therefore never has two owners. Partitions are kept by topic name here;
the wire speaks topic ids and ``kip848.py`` converts at the edge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Assignment = dict[str, frozenset[int]]   # topic name -> partitions

# Member states (MemberState) and group states (ConsumerGroup.ConsumerGroupState), as Kafka names them
M_STABLE, M_UNREVOKED, M_UNRELEASED = "stable", "unrevoked_partitions", "unreleased_partitions"
G_EMPTY, G_ASSIGNING, G_RECONCILING, G_STABLE, G_DEAD = "Empty", "Assigning", "Reconciling", "Stable", "Dead"
LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2


class Refused(Exception):
    """A request a consumer group refuses: the error code and Kafka's message for it."""

    def __init__(self, code: int, message: str | None = None):
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class ClassicMeta:
    """A member that joined with JoinGroup (ConsumerGroupMemberMetadataValue.ClassicMemberMetadata):
    its own session timeout and its protocols, in its order of preference."""
    session_timeout_ms: int
    protocols: list[tuple[str, bytes]]

    def metadata(self, name: str | None) -> bytes:
        return next((m for n, m in self.protocols if n == name), self.protocols[0][1])


@dataclass(eq=False)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: str = M_STABLE
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # KIP-1251 (Kafka 4.3+): the member epoch at which it was given each partition it holds
    assignment_epochs: dict[tuple[str, int], int] = field(default_factory=dict)
    classic: ClassicMeta | None = None      # set for a member speaking the classic protocol

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.member_epoch == epoch and self.state == M_STABLE

    def owned(self) -> set[tuple[str, int]]:
        """Partitions this member holds: assigned, or assigned before and not yet revoked."""
        return {(t, p) for a in (self.assigned, self.pending_revocation) for t, ps in a.items() for p in ps}


@dataclass(eq=False)
class ConsumerGroup:
    group_id: str
    coordinator: int = -1
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)        # instance id -> member id
    target: dict[str, Assignment] = field(default_factory=dict)        # member id -> target assignment
    subscription_metadata: dict[str, int] = field(default_factory=dict)  # subscribed topic -> partitions
    assignor_name: str = ""
    assigned_at: float = float("-inf")    # when the target was last computed (assignment interval)
    offsets: dict[tuple[str, int], Any] = field(default_factory=dict)   # CommittedOffset, as classic groups
    group_type = "consumer"

    @property
    def state(self) -> str:
        if not self.members:
            return G_EMPTY
        if self.group_epoch > self.assignment_epoch:
            return G_ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return G_RECONCILING
        return G_STABLE

    @property
    def protocol_type(self) -> str:
        return "consumer"

    def classic_members(self) -> list[ConsumerMember]:
        return [m for m in self.members.values() if m.classic is not None]

    def supports_classic(self, protocol_type: str, names: set[str]) -> bool:
        """ConsumerGroup.supportsClassicProtocols: type "consumer" and, when the group has classic
        members, a protocol every one of them supports."""
        if protocol_type != "consumer" or not names:
            return False
        common = set(names)
        for m in self.classic_members():
            common &= {n for n, _ in m.classic.protocols} if m.classic else set()
        return bool(common)

    def owner_of(self) -> dict[tuple[str, int], str]:
        """Kafka's partition epochs: which member holds each held partition."""
        return {tp: m.member_id for m in self.members.values() for tp in m.owned()}

    def add_or_replace(self, member: ConsumerMember) -> None:
        if member.instance_id is not None:
            old = self.static_members.get(member.instance_id)
            if old is not None and old != member.member_id:
                self.members.pop(old, None)
                self.target[member.member_id] = self.target.pop(old, {})
            self.static_members[member.instance_id] = member.member_id
        self.members[member.member_id] = member

    def remove(self, member_id: str) -> ConsumerMember | None:
        m = self.members.pop(member_id, None)
        if m is not None and m.instance_id is not None and self.static_members.get(m.instance_id) == member_id:
            del self.static_members[m.instance_id]
        self.target.pop(member_id, None)
        return m


def reconcile(m: ConsumerMember, target_epoch: int, target: Assignment, owned: set[tuple[str, int]] | None,
              owner_of: dict[tuple[str, int], str]) -> None:
    """One step of CurrentAssignmentBuilder.build on ``m`` (in place). ``owned`` is what the
    member reported holding (None: not reported, so revocations cannot be confirmed)."""
    if m.state == M_STABLE and m.member_epoch == target_epoch:
        return
    if m.state == M_UNREVOKED:
        if _still_owns(owned, m.pending_revocation):
            return
        _next_assignment(m, m.member_epoch + 1, target_epoch, target, owned, owner_of)
        return
    _next_assignment(m, m.member_epoch, target_epoch, target, owned, owner_of)


def _still_owns(owned: set[tuple[str, int]] | None, revoking: Assignment) -> bool:
    if owned is None:
        return True
    return any((t, p) in owned for t, ps in revoking.items() for p in ps)


def _next_assignment(m: ConsumerMember, epoch: int, target_epoch: int, target: Assignment,
                     owned: set[tuple[str, int]] | None, owner_of: dict[tuple[str, int], str]) -> None:
    keep: dict[str, set[int]] = {}
    revoke: dict[str, set[int]] = {}
    add: dict[str, set[int]] = {}
    unreleased = False
    for topic in set(target) | set(m.assigned):
        want, have = target.get(topic, frozenset()), m.assigned.get(topic, frozenset())
        kept = have & want
        free = {p for p in want - kept if owner_of.get((topic, p), m.member_id) == m.member_id}
        unreleased = unreleased or len(free) < len(want - kept)
        for bucket, parts in ((keep, kept), (revoke, have - kept), (add, free)):
            if parts:
                bucket[topic] = set(parts)
    if revoke and _still_owns(owned, _frozen(revoke)):
        _set(m, M_UNREVOKED, epoch, keep, revoke)
        return
    for topic, parts in add.items():
        keep.setdefault(topic, set()).update(parts)
    _set(m, M_UNRELEASED if unreleased else M_STABLE, target_epoch, keep, {})


def _frozen(a: dict[str, set[int]]) -> Assignment:
    return {t: frozenset(ps) for t, ps in a.items()}


def _set(m: ConsumerMember, state: str, epoch: int, assigned: dict[str, set[int]], revoking: dict[str, set[int]]) -> None:
    if epoch != m.member_epoch:   # ConsumerGroupMember.Builder.updateMemberEpoch
        m.previous_member_epoch, m.member_epoch = m.member_epoch, epoch
    m.state, m.assigned, m.pending_revocation = state, _frozen(assigned), _frozen(revoking)
    # a partition kept (or pending revocation) keeps its epoch; a new one gets the member's new epoch
    held = {(t, p) for a in (assigned, revoking) for t, ps in a.items() for p in ps}
    m.assignment_epochs = {tp: m.assignment_epochs.get(tp, m.member_epoch) for tp in held}


def stale_partitions(m: ConsumerMember, epoch: int, partitions: list[tuple[str, int]]) -> set[tuple[str, int]]:
    """KIP-1251 (Kafka 4.3+, CommitPartitionValidator): a commit with the member's epoch is good
    for every partition; with an older one, only for partitions the member held since that epoch
    or before; with a newer one, for none."""
    if epoch == m.member_epoch:
        return set()
    if epoch > m.member_epoch:
        return set(partitions)
    return {tp for tp in partitions if m.assignment_epochs.get(tp, epoch + 1) > epoch}
