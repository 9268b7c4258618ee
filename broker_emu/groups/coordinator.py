"""The classic consumer-group protocol, as Kafka's group coordinator runs it (SEMANTICS.md §2.5).

States: Empty -> PreparingRebalance -> CompletingRebalance -> Stable (-> Dead when deleted).
JoinGroup is a long poll: the join phase ends when every known member has rejoined or the
rebalance timeout (largest among members) expires; members that did not rejoin are removed.
An empty group's first join is held for group.initial.rebalance.delay.ms, extended per new
member, capped by the rebalance timeout. KIP-394: v4+ joins with an empty member id get
MEMBER_ID_REQUIRED and a generated id. Sessions expire after session_timeout_ms without a
heartbeat (not while the member waits in a join or sync). All timers run on the cluster's
scheduler, so virtual time gives exact expiry.

Differences from a real broker: static membership (group_instance_id) replaces a member with
the same instance id but is otherwise treated like a dynamic member; offsets are kept in memory,
not in __consumer_offsets; offsets never expire.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import trio

NONE, UNKNOWN_TOPIC, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 0, 3, 15, 16
ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL, INVALID_GROUP_ID = 22, 23, 24
UNKNOWN_MEMBER_ID, INVALID_SESSION_TIMEOUT, REBALANCE_IN_PROGRESS = 25, 26, 27
OFFSET_METADATA_TOO_LARGE, MEMBER_ID_REQUIRED, FENCED_INSTANCE_ID = 12, 79, 82


class GroupError(Exception):
    def __init__(self, code: int, message: str = ""):
        self.code, self.message = code, message
        super().__init__(f"error {code}: {message}")


@dataclass
class Member:
    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    group_instance_id: str | None = None
    assignment: bytes = b""
    joined: bool = False               # has (re)joined in the current join phase
    join_done: trio.Event | None = None
    join_response: dict | None = None
    sync_done: trio.Event | None = None
    session_timer: Any = None

    def metadata_for(self, protocol: str) -> bytes:
        return next((m for n, m in self.protocols if n == protocol), b"")


@dataclass
class Offset:
    offset: int
    leader_epoch: int
    metadata: str | None
    commit_time: float


@dataclass
class Group:
    group_id: str
    state: str = "Empty"
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending: dict[str, Any] = field(default_factory=dict)      # KIP-394 member ids awaiting rejoin
    offsets: dict[tuple[str, int], Offset] = field(default_factory=dict)
    join_timer: Any = None
    join_deadline: float = 0.0
    initial_delay_until: float | None = None

    def rebalance_timeout_s(self) -> float:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0) / 1000.0


class GroupCoordinator:
    def __init__(self, cluster):
        self.cluster = cluster
        self.groups: dict[str, Group] = {}
        self.scheduler = cluster.scheduler

    # -- helpers -------------------------------------------------------------------------------
    def check_coordinator(self, ctx, group_id: str) -> None:
        if not group_id and group_id is not None:
            raise GroupError(INVALID_GROUP_ID, "empty group id")
        if self.cluster.coordinator_for(group_id) != ctx.broker_id:
            raise GroupError(NOT_COORDINATOR, f"broker {ctx.broker_id} is not the coordinator of {group_id!r}")

    def group(self, group_id: str, create: bool = False) -> Group | None:
        g = self.groups.get(group_id)
        if g is None and create:
            g = self.groups[group_id] = Group(group_id)
        return g

    def now(self) -> float:
        return trio.current_time()

    def broker_stopped(self, broker_id: int) -> None:
        """Groups move with their coordinator; in-memory state survives (a real broker reloads it
        from __consumer_offsets)."""

    def statistics(self) -> dict[str, Any]:
        return {gid: {"state": g.state, "generation": g.generation, "members": sorted(g.members),
                      "leader": g.leader_id, "protocol": g.protocol_name} for gid, g in self.groups.items()}

    # -- sessions ------------------------------------------------------------------------------
    def _arm_session(self, g: Group, m: Member) -> None:
        if m.session_timer is not None:
            m.session_timer.cancel()
        m.session_timer = self.scheduler.call_later(m.session_timeout_ms / 1000.0, lambda: self._session_expired(g, m))

    def _disarm_session(self, m: Member) -> None:
        if m.session_timer is not None:
            m.session_timer.cancel()
            m.session_timer = None

    def _session_expired(self, g: Group, m: Member) -> None:
        if g.members.get(m.member_id) is not m:
            return
        self.cluster.trace.emit("group_member_expired", details={"group": g.group_id, "member": m.member_id,
                                                                "session_timeout_ms": m.session_timeout_ms})
        self._remove_member(g, m, "session timeout")

    def _remove_member(self, g: Group, m: Member, why: str) -> None:
        self._disarm_session(m)
        g.members.pop(m.member_id, None)
        if m.join_done is not None and not m.join_done.is_set():
            m.join_response = {"error_code": UNKNOWN_MEMBER_ID}
            m.join_done.set()
        if m.sync_done is not None and not m.sync_done.is_set():
            m.sync_done.set()
        if g.leader_id == m.member_id:
            g.leader_id = None
        if g.state in ("Stable", "CompletingRebalance"):
            self._prepare_rebalance(g, why)
        elif g.state == "PreparingRebalance":
            self._maybe_complete_join(g)
        if not g.members and g.state != "PreparingRebalance":
            g.state = "Empty"

    # -- join ----------------------------------------------------------------------------------
    def _prepare_rebalance(self, g: Group, why: str) -> None:
        if g.state == "PreparingRebalance":
            return
        was_empty = g.state == "Empty"
        g.state = "PreparingRebalance"
        for m in g.members.values():
            m.joined = False
            if m.sync_done is not None and not m.sync_done.is_set():
                m.sync_done.set()  # waiting followers learn of the rebalance
        now = self.now()
        if g.join_timer is not None:
            g.join_timer.cancel()
        delay = self.cluster.config["group.initial.rebalance.delay.ms"] / 1000.0
        timeout = g.rebalance_timeout_s()
        if was_empty and delay > 0:
            g.initial_delay_until = now + min(delay, timeout)
            g.join_deadline = now + timeout
            g.join_timer = self.scheduler.call_at(g.initial_delay_until, lambda: self._join_timer_fired(g))
        else:
            g.initial_delay_until = None
            g.join_deadline = now + timeout
            g.join_timer = self.scheduler.call_at(g.join_deadline, lambda: self._join_timer_fired(g))
        self.cluster.trace.emit("group_rebalance", details={"group": g.group_id, "reason": why,
                                                           "rebalance_timeout_ms": int(timeout * 1000)})

    def _join_timer_fired(self, g: Group) -> None:
        if g.state != "PreparingRebalance":
            return
        now = self.now()
        if g.initial_delay_until is not None and now < g.join_deadline and not self._all_joined(g):
            g.initial_delay_until = None
            g.join_timer = self.scheduler.call_at(g.join_deadline, lambda: self._join_timer_fired(g))
            return
        g.initial_delay_until = None
        self._complete_join(g)

    def _all_joined(self, g: Group) -> bool:
        return bool(g.members) and all(m.joined for m in g.members.values()) and not g.pending

    def _maybe_complete_join(self, g: Group) -> None:
        if g.state == "PreparingRebalance" and g.initial_delay_until is None and self._all_joined(g):
            self._complete_join(g)

    def _complete_join(self, g: Group) -> None:
        if g.join_timer is not None:
            g.join_timer.cancel()
        for m in [m for m in g.members.values() if not m.joined]:
            self._disarm_session(m)
            g.members.pop(m.member_id)  # did not rejoin within the rebalance timeout
        g.pending.clear()
        if not g.members:
            g.state = "Empty"
            g.generation += 1
            g.protocol_name = None
            return
        g.generation += 1
        g.protocol_name = self._select_protocol(g)
        if g.leader_id not in g.members:
            g.leader_id = next(iter(g.members))
        g.state = "CompletingRebalance"
        for m in g.members.values():
            m.sync_done = trio.Event()
            members = [{"member_id": x.member_id, "group_instance_id": x.group_instance_id,
                        "metadata": x.metadata_for(g.protocol_name)} for x in g.members.values()] \
                if m.member_id == g.leader_id else []
            m.join_response = {"error_code": NONE, "generation_id": g.generation, "protocol_type": g.protocol_type,
                               "protocol_name": g.protocol_name, "leader": g.leader_id, "member_id": m.member_id,
                               "members": members, "skip_assignment": False}
            if m.join_done is not None:
                m.join_done.set()
            self._arm_session(g, m)

    @staticmethod
    def _select_protocol(g: Group) -> str:
        common = None
        for m in g.members.values():
            names = [n for n, _ in m.protocols]
            common = names if common is None else [n for n in common if n in names]
        votes: dict[str, int] = {}
        for m in g.members.values():
            choice = next(n for n, _ in m.protocols if n in common)
            votes[choice] = votes.get(choice, 0) + 1
        return max(common, key=lambda n: (votes.get(n, 0), -common.index(n)))

    async def join(self, ctx, req) -> dict:
        g_id = req.group_id
        self.check_coordinator(ctx, g_id)
        cfg = self.cluster.config
        if not cfg["group.min.session.timeout.ms"] <= req.session_timeout_ms <= cfg["group.max.session.timeout.ms"]:
            raise GroupError(INVALID_SESSION_TIMEOUT, f"session timeout {req.session_timeout_ms} outside the broker's bounds")
        g = self.group(g_id, create=True)
        protocols = [(p.name, p.metadata) for p in req.protocols]
        if g.members and (req.protocol_type != g.protocol_type or
                          not set(n for n, _ in protocols) & set.intersection(*[{n for n, _ in m.protocols} for m in g.members.values()])):
            raise GroupError(INCONSISTENT_GROUP_PROTOCOL, "protocol type or assignors do not match the group")
        rebalance_ms = req.rebalance_timeout_ms if ctx.api_version >= 1 else req.session_timeout_ms
        member_id = req.member_id
        if not member_id:
            member_id = f"{ctx.client_id or 'member'}-{uuid.UUID(int=self.cluster.rng.getrandbits(128))}"
            if ctx.api_version >= 4 and not req.group_instance_id:
                g.pending[member_id] = self.scheduler.call_later(req.session_timeout_ms / 1000.0,
                                                                 lambda: self._pending_expired(g, member_id))
                return {"error_code": MEMBER_ID_REQUIRED, "member_id": member_id, "generation_id": -1, "leader": "",
                        "protocol_name": None, "members": []}
        elif member_id in g.pending:
            g.pending.pop(member_id).cancel()
        elif member_id not in g.members:
            raise GroupError(UNKNOWN_MEMBER_ID, f"unknown member {member_id!r}")
        if req.group_instance_id:
            for other in list(g.members.values()):
                if other.group_instance_id == req.group_instance_id and other.member_id != member_id:
                    self._disarm_session(other)
                    g.members.pop(other.member_id)
        m = g.members.get(member_id)
        unchanged = m is not None and m.protocols == protocols
        if m is None:
            m = Member(member_id, ctx.client_id or "", ctx.client_host, req.session_timeout_ms, rebalance_ms,
                       req.protocol_type, protocols, req.group_instance_id)
            g.members[member_id] = m
        else:
            m.protocols, m.session_timeout_ms, m.rebalance_timeout_ms = protocols, req.session_timeout_ms, rebalance_ms
        g.protocol_type = req.protocol_type
        if g.state == "Stable" and unchanged and member_id != g.leader_id:
            return self._current_join_response(g, m)
        if g.state != "PreparingRebalance":
            self._prepare_rebalance(g, f"member {member_id} joined")
        elif g.initial_delay_until is not None:
            delay = self.cluster.config["group.initial.rebalance.delay.ms"] / 1000.0
            new_until = min(self.now() + delay, g.join_deadline)
            if new_until > g.initial_delay_until:
                g.initial_delay_until = new_until
                g.join_timer.cancel()
                g.join_timer = self.scheduler.call_at(new_until, lambda: self._join_timer_fired(g))
        m.joined = True
        m.join_done = trio.Event()
        self._disarm_session(m)
        self._maybe_complete_join(g)
        await m.join_done.wait()
        return m.join_response or {"error_code": UNKNOWN_MEMBER_ID}

    def _current_join_response(self, g: Group, m: Member) -> dict:
        return {"error_code": NONE, "generation_id": g.generation, "protocol_type": g.protocol_type,
                "protocol_name": g.protocol_name, "leader": g.leader_id, "member_id": m.member_id, "members": []}

    def _pending_expired(self, g: Group, member_id: str) -> None:
        g.pending.pop(member_id, None)
        self._maybe_complete_join(g)

    # -- sync, heartbeat, leave ----------------------------------------------------------------
    def _member(self, g: Group | None, member_id: str, generation: int) -> Member:
        if g is None or member_id not in g.members:
            raise GroupError(UNKNOWN_MEMBER_ID, f"unknown member {member_id!r}")
        if generation != g.generation:
            raise GroupError(ILLEGAL_GENERATION, f"generation {generation} is not the group's {g.generation}")
        return g.members[member_id]

    async def sync(self, ctx, req) -> dict:
        self.check_coordinator(ctx, req.group_id)
        g = self.group(req.group_id)
        m = self._member(g, req.member_id, req.generation_id)
        if g.state == "PreparingRebalance":
            raise GroupError(REBALANCE_IN_PROGRESS)
        if g.state == "CompletingRebalance":
            if req.member_id == g.leader_id:
                given = {a.member_id: a.assignment for a in req.assignments}
                for member in g.members.values():
                    member.assignment = given.get(member.member_id, b"")
                g.state = "Stable"
                for member in g.members.values():
                    if member.sync_done is not None:
                        member.sync_done.set()
            else:
                gen = g.generation
                if m.sync_done is None:
                    m.sync_done = trio.Event()
                await m.sync_done.wait()
                if g.state != "Stable" or g.generation != gen or req.member_id not in g.members:
                    raise GroupError(REBALANCE_IN_PROGRESS)
        self._arm_session(g, m)
        return {"error_code": NONE, "protocol_type": g.protocol_type, "protocol_name": g.protocol_name,
                "assignment": m.assignment}

    def heartbeat(self, ctx, req) -> dict:
        self.check_coordinator(ctx, req.group_id)
        g = self.group(req.group_id)
        m = self._member(g, req.member_id, req.generation_id)
        self._arm_session(g, m)
        if g.state == "PreparingRebalance":
            raise GroupError(REBALANCE_IN_PROGRESS)
        return {"error_code": NONE}

    def leave(self, ctx, req) -> dict:
        self.check_coordinator(ctx, req.group_id)
        g = self.group(req.group_id)
        leaving = [(req.member_id, None)] if ctx.api_version <= 2 else [(x.member_id, x.group_instance_id) for x in req.members]
        results = []
        for member_id, instance in leaving:
            target = None
            if g is not None:
                target = g.members.get(member_id) or next(
                    (x for x in g.members.values() if instance and x.group_instance_id == instance), None)
            if target is None:
                results.append({"member_id": member_id, "group_instance_id": instance, "error_code": UNKNOWN_MEMBER_ID})
                continue
            self._remove_member(g, target, f"member {target.member_id} left")
            results.append({"member_id": target.member_id, "group_instance_id": instance, "error_code": NONE})
        if ctx.api_version <= 2 and results and results[0]["error_code"]:
            raise GroupError(results[0]["error_code"])
        return {"error_code": NONE, "members": results}

    # -- offsets ---------------------------------------------------------------------------------
    def commit(self, ctx, req) -> dict:
        self.check_coordinator(ctx, req.group_id)
        g = self.group(req.group_id, create=True)
        error = NONE
        simple = req.generation_id_or_member_epoch < 0 and not req.member_id
        if simple and g.members:
            error = UNKNOWN_MEMBER_ID if req.member_id else ILLEGAL_GENERATION
        elif not simple:
            try:
                self._member(g, req.member_id, req.generation_id_or_member_epoch)
                if g.state == "PreparingRebalance":
                    error = REBALANCE_IN_PROGRESS
            except GroupError as exc:
                error = exc.code
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                code = error
                if not code and self.cluster.partition(t.name, p.partition_index) is None:
                    code = UNKNOWN_TOPIC
                if not code and p.committed_metadata is not None and len(p.committed_metadata) > 4096:
                    code = OFFSET_METADATA_TOO_LARGE
                if not code:
                    g.offsets[(t.name, p.partition_index)] = Offset(p.committed_offset, p.committed_leader_epoch,
                                                                   p.committed_metadata, self.now())
                parts.append({"partition_index": p.partition_index, "error_code": code})
            topics.append({"name": t.name, "partitions": parts})
        if g.members:
            m = g.members.get(req.member_id)
            if m is not None and not error:
                self._arm_session(g, m)
        return {"throttle_time_ms": 0, "topics": topics}

    def fetch_offsets(self, group_id: str, topics) -> list[dict]:
        g = self.group(group_id)
        offsets = g.offsets if g else {}
        if topics is None:
            names: dict[str, list[int]] = {}
            for (t, p) in sorted(offsets):
                names.setdefault(t, []).append(p)
            wanted = list(names.items())
        else:
            wanted = [(t.name, list(t.partition_indexes)) for t in topics]
        out = []
        for name, parts in wanted:
            rows = []
            for p in parts:
                o = offsets.get((name, p))
                rows.append({"partition_index": p, "committed_offset": o.offset if o else -1,
                             "committed_leader_epoch": o.leader_epoch if o else -1,
                             "metadata": (o.metadata if o else "") or "", "error_code": NONE})
            out.append({"name": name, "partitions": rows})
        return out
