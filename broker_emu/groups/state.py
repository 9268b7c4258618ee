"""One classic group's membership state (Kafka: ``ClassicGroup`` / ``GroupMetadata``).

Pure data and invariants: no clock, no timers, no I/O. The coordinator drives it.

Theory of operation. A group moves Empty -> PreparingRebalance -> CompletingRebalance ->
Stable and back to PreparingRebalance whenever membership or metadata changes; Dead is the
end state of a group unloaded from a coordinator. ``VALID_PREVIOUS`` is Kafka's transition
table and ``transition`` enforces it, so an illegal move is a bug that fails loudly.

A member parked in JoinGroup holds a join reply, one parked in SyncGroup a sync reply: plain
callables the coordinator invokes exactly once (Kafka's response futures). The I/O layer turns
them into awaited events, which keeps this module free of trio.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from client.errors import ErrorCode

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"
STATES = (EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD)

VALID_PREVIOUS: dict[str, frozenset[str]] = {
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    EMPTY: frozenset({PREPARING_REBALANCE}),
    DEAD: frozenset(STATES),
}

Reply = Callable[[dict[str, Any]], None]
Protocols = list[tuple[str, bytes]]


@dataclass(eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    awaiting_join: Reply | None = None
    awaiting_sync: Reply | None = None
    # True from joining until its first join phase completes: such a member has no id to
    # heartbeat with, so it gets the new-member join timeout instead of its session.
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str | None) -> bytes:
        return next((m for name, m in self.protocols if name == protocol), b"")

    def matches(self, protocols: Protocols) -> bool:
        """Same protocols, same order, same metadata (Kafka's ``matches``)."""
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        return next(name for name in self.protocol_names() if name in candidates)


@dataclass
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_time: float


@dataclass(eq=False)
class Group:
    group_id: str
    coordinator: int = -1
    state: str = EMPTY
    previous_state: str = DEAD
    state_since: float = 0.0
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)   # instance id -> member id
    pending_join: set[str] = field(default_factory=set)            # KIP-394 ids not yet rejoined
    pending_sync: set[str] = field(default_factory=set)            # members yet to send SyncGroup
    new_member_added: bool = False                                 # extends the initial delay
    offsets: dict[tuple[str, int], CommittedOffset] = field(default_factory=dict)
    persisted: dict[str, Any] | None = None                        # last "GroupMetadata record"
    group_type = "classic"

    # -- state machine ---------------------------------------------------------------------------
    def transition(self, to: str, now: float) -> None:
        if self.state not in VALID_PREVIOUS[to]:
            raise AssertionError(f"group {self.group_id!r}: illegal transition {self.state} -> {to}")
        self.previous_state, self.state, self.state_since = self.state, to, now

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS[PREPARING_REBALANCE]

    # -- membership ------------------------------------------------------------------------------
    def add(self, member: Member, reply: Reply | None) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        member.awaiting_join = reply
        self.pending_join.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_join.discard(member_id)
        self.pending_sync.discard(member_id)

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """A static member rejoined with a fresh member id: keep everything, swap the id. The
        old id's parked requests are fenced (Kafka: ``replaceStaticMember``)."""
        old = self.members.pop(old_id)
        complete(old, "awaiting_join", {"error_code": ErrorCode.FENCED_INSTANCE_ID, "member_id": old_id})
        complete(old, "awaiting_sync", {"error_code": ErrorCode.FENCED_INSTANCE_ID})
        new = Member(new_id, old.group_instance_id, old.client_id, old.client_host, old.rebalance_timeout_ms,
                     old.session_timeout_ms, old.protocol_type, old.protocols, old.assignment)
        self.members[new_id] = new
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        return new

    def member_error(self, member_id: str, instance_id: str | None) -> int | None:
        """A request's member, checked (Kafka: ClassicGroup.validateMember / isStaticMemberFenced)."""
        if instance_id is not None:
            owner = self.static_members.get(instance_id)
            if owner is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if owner != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        return None if member_id in self.members else ErrorCode.UNKNOWN_MEMBER_ID

    def member_for_instance(self, instance_id: str | None) -> str | None:
        return self.static_members.get(instance_id) if instance_id is not None else None

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def has_all_members_joined(self) -> bool:
        return not self.not_yet_rejoined() and not self.pending_join

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick any member that did; False when there is no
        leader or nobody rejoined."""
        leader = self.members.get(self.leader_id) if self.leader_id is not None else None
        if leader is None:
            return False
        if leader.awaiting_join is not None:
            return True
        joined = next((m for m in self.members.values() if m.awaiting_join is not None), None)
        if joined is None:
            return False
        self.leader_id = joined.member_id
        return True

    # -- protocols -------------------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        names = [set(m.protocol_names()) for m in self.members.values()]
        return set.intersection(*names) if names else set()

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if self.state == EMPTY:
            return bool(protocol_type) and bool(names)
        return self.protocol_type == protocol_type and bool(set(names) & self.candidate_protocols())

    def select_protocol(self) -> str:
        """Each member votes for its most preferred common protocol; most votes wins. Kafka
        breaks ties by HashMap order (unspecified); we break them by first vote, so runs repeat."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def init_next_generation(self, now: float) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(COMPLETING_REBALANCE, now)
        else:
            self.protocol_name = None
            self.transition(EMPTY, now)
        self.pending_sync.clear()

    def join_members(self) -> list[dict[str, Any]]:
        """What the leader receives: every member's metadata for the selected protocol."""
        return [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                 "metadata": m.metadata(self.protocol_name)} for m in self.members.values()]

    def join_result(self, member_id: str, *, leader_view: bool, skip_assignment: bool = False) -> dict[str, Any]:
        return {"error_code": ErrorCode.NONE, "generation_id": self.generation_id, "protocol_type": self.protocol_type,
                "protocol_name": self.protocol_name, "leader": self.leader_id or "", "skip_assignment": skip_assignment,
                "member_id": member_id, "members": self.join_members() if leader_view else []}

    # -- persistence (what Kafka writes to __consumer_offsets and reloads on failover) ---------------
    def snapshot(self) -> dict[str, Any]:
        return {"generation_id": self.generation_id, "protocol_type": self.protocol_type,
                "protocol_name": self.protocol_name, "leader_id": self.leader_id,
                "members": [Member(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                   m.session_timeout_ms, m.protocol_type, [(self.protocol_name or "", m.metadata(self.protocol_name))],
                                   m.assignment) for m in self.members.values()]}

    @classmethod
    def load(cls, group_id: str, snap: dict[str, Any], coordinator: int, now: float) -> Group:
        """A group as a new coordinator reads it back: Stable if the record has members, else Empty."""
        g = cls(group_id, coordinator, STABLE if snap["members"] else EMPTY, DEAD, now, snap["generation_id"],
                snap["protocol_type"], snap["protocol_name"], snap["leader_id"])
        for m in snap["members"]:
            copy = Member(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                          m.session_timeout_ms, m.protocol_type, list(m.protocols), m.assignment)
            g.members[m.member_id] = copy
            if copy.group_instance_id is not None:
                g.static_members[copy.group_instance_id] = m.member_id
        g.persisted = snap
        return g


def complete(member: Member, slot: str, result: dict[str, Any]) -> bool:
    """Answer a parked JoinGroup (``awaiting_join``) or SyncGroup (``awaiting_sync``) once."""
    reply = getattr(member, slot)
    if reply is None:
        return False
    setattr(member, slot, None)
    reply(result)
    return True
