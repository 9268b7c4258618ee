"""Consumer group membership (classic protocol), sans-io: the member's state, timers and decisions.

Theory of operation
-------------------
No sockets, no clock, no trio. Every method that needs the time takes ``now`` (seconds on the
driver's clock). The driver (``client.consumer.group``) asks ``handle_timeouts(now)`` what is due
— an ``Action``: JOIN, send a HEARTBEAT, LEAVE, or REDISCOVER the coordinator — carries it out,
feeds the answers back (``on_join_response``, ``on_sync_response``, ``join_completed``,
``on_heartbeat_response``, ``on_commit_response``; ``failed`` for any failure) and sleeps until
``next_deadline()`` or until something from outside changed the state (``subscribe``,
``poll_called``, a fenced commit, ``close``). The broker's group coordinator
(``broker_emu.groups.classic``) has the same shape.

States: UNJOINED (nothing assigned, a join is due once the retry backoff allows) → JOINING (the
driver runs FindCoordinator, JoinGroup, the leader's assignment and SyncGroup) → STABLE (the
assignment is held; heartbeats). ``needs_join`` in STABLE means a rebalance is wanted: the next
JOIN revokes the assignment first (eager protocol). STABLE → LEFT when the application has not
polled for max.poll.interval.ms (the member is presumed stuck and leaves; its next poll makes it
UNJOINED). Any state → CLOSED by ``close`` (the consumer is closing or unsubscribed).

Timers
- heartbeat: heartbeat.interval.ms after the previous heartbeat's answer, or after the join
  completed (including the rebalance callback); after a failure, the retry backoff first.
- max.poll.interval.ms: looked at when a heartbeat is due; past it, LEAVE instead.
- session: no successful heartbeat for session.timeout.ms → the coordinator is presumed lost
  (Java's heartbeat thread: ``markCoordinatorUnknown``): REDISCOVER, so the next heartbeat finds
  it again — and if the member was expelled meanwhile, that heartbeat's UNKNOWN_MEMBER_ID makes
  it rejoin.
- retry backoff after a failed request: retry.backoff.ms, ×2 per failure up to
  retry.backoff.max.ms, back to the start when a join completes.

Errors from the coordinator (JoinGroup, SyncGroup, Heartbeat, OffsetCommit) all ask for a rejoin;
UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID also drop the member id, ILLEGAL_GENERATION the
generation. The fencing ones (those and REBALANCE_IN_PROGRESS) rejoin at once from a heartbeat
and make a commit fail with CommitFailedException; others are raised for the driver's backoff.
MEMBER_ID_REQUIRED (KIP-394) hands out the id to rejoin with. JoinGroup is the one request that
waits on the broker by design: the driver gives it the rebalance timeout plus 5 s.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from client.assignors import ASSIGNORS
from client.consumer import requests
from client.consumer.metadata_watch import MetadataWatch
from client.consumer.records import TopicPartition
from client.errors import ErrorCode, KafkaError, error_for_code, error_name
from client.exceptions import CommitFailedException

UNJOINED, JOINING, STABLE, LEFT, CLOSED = "unjoined", "joining", "stable", "left", "closed"
JOIN, HEARTBEAT, LEAVE, REDISCOVER = "join", "heartbeat", "leave", "rediscover"
FENCING_ERRORS = frozenset({ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.REBALANCE_IN_PROGRESS,
                            ErrorCode.FENCED_INSTANCE_ID})


class Action(NamedTuple):
    kind: str                                  # JOIN, HEARTBEAT, LEAVE or REDISCOVER
    body: dict[str, Any] | None = None         # HEARTBEAT: the request to send
    revoked: list[TopicPartition] = []         # JOIN, LEAVE: the assignment given up (commit it, tell on_revoke)
    reason: str = ""                           # LEAVE: for LeaveGroup; REDISCOVER: why


def plan_assignments(protocol: str, subscriptions: dict[str, list[str]], counts: Mapping[str, int]) -> list[dict[str, Any]]:
    """The leader's job: run the assignor the group chose over every member's subscription."""
    assignor = ASSIGNORS.get(protocol)
    if assignor is None:
        raise KafkaError(f"the group chose assignor {protocol!r}, which this client does not implement")
    return requests.member_assignments(assignor(subscriptions, dict(counts)))


class Membership:
    def __init__(self, config: Mapping[str, Any], topics: list[str] | None, pattern: re.Pattern | None, now: float):
        self.group: str = config["group.id"]
        self.instance_id: str | None = config["group.instance.id"]
        self.session_timeout_ms: int = config["session.timeout.ms"]
        self.rebalance_timeout_ms: int = config["max.poll.interval.ms"]   # also the poll interval
        self.heartbeat_interval: float = config["heartbeat.interval.ms"] / 1000
        self.strategies = [s.strip() for s in config["partition.assignment.strategy"].split(",") if s.strip()]
        self.retry_backoff: float = config["retry.backoff.ms"] / 1000
        self.retry_backoff_max: float = config["retry.backoff.max.ms"] / 1000
        self.watch = MetadataWatch(topics, pattern)
        self.rejoin_reason: str | None = None   # why the next JoinGroup is sent (its reason field)
        self.state = UNJOINED
        self.needs_join = True
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.leader = False
        self.assignment: list[TopicPartition] = []
        self.joins = 0
        self.last_poll = now
        self.heartbeat_due = math.inf
        self.session_deadline = math.inf
        self.retry_at = -math.inf
        self.heartbeat_in_flight = False
        self._backoff = self.retry_backoff

    # -- from the application ----------------------------------------------------------------
    def subscribe(self, topics: list[str] | None, pattern: re.Pattern | None, now: float) -> None:
        """A new subscription: rejoin with it."""
        self.watch.subscribe(topics, pattern)
        self.last_poll = now
        self.needs_join = True

    @property
    def pattern(self) -> re.Pattern | None:
        return self.watch.pattern

    def subscribed_topics(self) -> list[str]:
        """The topics subscribed to, or matching the pattern in the metadata last looked at."""
        return list(self.watch.subscription)

    def on_metadata(self, version: int, partitions: Mapping[str, int], internal: Iterable[str] = ()) -> None:
        """The metadata as of ``version``: every topic it knows, with its partition count, and
        which of them are internal."""
        self.watch.on_metadata(version, partitions, internal)

    def poll_called(self, now: float) -> bool:
        """The application polled: the poll interval restarts; a member that left for it rejoins,
        and so does a stable one whose metadata asks for it (``rejoin_if_needed``). True: wake
        the driver."""
        self.last_poll = now
        if self.state == LEFT:
            self.state = UNJOINED
            return True
        return self.rejoin_if_needed()

    def rejoin_if_needed(self) -> bool:
        """Java's ConsumerCoordinator.rejoinNeededOrPending, after the driver fed the metadata to
        ``on_metadata``: a stable member rejoins when what it watches changed (True: wake the
        driver). A change seen while joining is acted on once the join completed."""
        reason = self.watch.rejoin_reason() if self.state == STABLE and not self.needs_join else None
        if reason is None:
            return False
        self.needs_join, self.rejoin_reason = True, reason
        return True

    def close(self) -> list[TopicPartition]:
        """No more joins or heartbeats; returns the assignment to revoke before leaving."""
        self.state = CLOSED
        return self._take_assignment()

    # -- time ---------------------------------------------------------------------------------
    def next_deadline(self) -> float:
        """When ``handle_timeouts`` next has something to do (inf: only after a change from outside)."""
        if self.state in (LEFT, CLOSED, JOINING):
            return math.inf
        if self.needs_join:
            return self.retry_at
        if self.heartbeat_in_flight:
            return self.session_deadline
        return min(self.heartbeat_due, self.session_deadline)

    def handle_timeouts(self, now: float) -> Action | None:
        """What is due at ``now``, if anything; the state moves as if it were done (JOINING,
        LEFT, a heartbeat in flight) until the answer is fed back."""
        if self.state in (LEFT, CLOSED, JOINING) or self.heartbeat_in_flight:
            return None
        if self.needs_join:
            if now < self.retry_at:
                return None
            self.state = JOINING
            return Action(JOIN, revoked=self._take_assignment())
        if now >= self.session_deadline:
            self.session_deadline = now + self.session_timeout_ms / 1000
            return Action(REDISCOVER, reason=f"no heartbeat answered within session.timeout.ms={self.session_timeout_ms}")
        if now < self.heartbeat_due:
            return None
        idle_ms = (now - self.last_poll) * 1000
        if idle_ms > self.rebalance_timeout_ms:
            self.state = LEFT
            return Action(LEAVE, revoked=self._take_assignment(), reason=(
                f"consumer poll timeout has expired: {idle_ms:.0f} ms since the last poll, over "
                f"max.poll.interval.ms={self.rebalance_timeout_ms}"))
        self.heartbeat_in_flight = True
        return Action(HEARTBEAT, requests.heartbeat(self.group, self.generation, self.member_id, self.instance_id))

    def failed(self, now: float) -> None:
        """The action under way failed (no answer, or an error answer already fed back): retry
        after the backoff — the join if one is wanted, else the next heartbeat an interval later."""
        self.heartbeat_in_flight = False
        if self.state == JOINING:
            self.state, self.needs_join = UNJOINED, True
        self.retry_at = now + self._backoff
        self.heartbeat_due = self.retry_at + self.heartbeat_interval
        self._backoff = min(self._backoff * 2, self.retry_backoff_max)

    # -- the join ------------------------------------------------------------------------------
    def join_request(self) -> dict[str, Any]:
        """JoinGroup for the subscription (a pattern's: as matched in the metadata last fed to
        ``on_metadata``), with the reason of the rejoin if there is one."""
        return requests.join_group(self.group, self.member_id, self.instance_id, self.session_timeout_ms,
                                   self.rebalance_timeout_ms, self.strategies, self.watch.joining(), self.rejoin_reason)

    def on_join_response(self, answer: Any) -> bool:
        """Take the member id and generation; True if this member leads (it must assign)."""
        code = answer.error_code
        if code == ErrorCode.MEMBER_ID_REQUIRED:   # KIP-394: join again with the id given
            self.member_id = answer.member_id
            raise error_for_code(code)
        if code:
            self.on_error(code)
            raise error_for_code(code)
        self.member_id, self.generation = answer.member_id, answer.generation_id
        self.protocol, self.leader = answer.protocol_name, answer.leader == answer.member_id
        self.rejoin_reason = None
        return self.leader

    def group_subscribe(self, topics: list[str]) -> None:
        """The leader: every member's topics, watched from now on (refresh them, then ``on_metadata``)."""
        self.watch.group_subscribe(topics)

    def assigned_with_snapshot(self) -> None:
        """The leader assigned with the metadata last fed to ``on_metadata``: a later change of
        the partitions it shows makes it rejoin."""
        self.watch.assigned()

    def sync_request(self, assignments: list[dict[str, Any]]) -> dict[str, Any]:
        return requests.sync_group(self.group, self.generation, self.member_id, self.instance_id, self.protocol,
                                   assignments)

    def on_sync_response(self, answer: Any) -> list[TopicPartition]:
        """This member's new assignment (the driver then looks up its positions and tells
        on_assign, and calls ``join_completed``)."""
        if answer.error_code:
            self.on_error(answer.error_code)
            raise error_for_code(answer.error_code)
        self.assignment = requests.assigned_partitions(answer.assignment)
        self.watch.join_completed(self.leader)
        self.needs_join = False
        self.joins += 1
        return list(self.assignment)

    def join_completed(self, now: float) -> None:
        if self.state == JOINING:
            self.state = STABLE
        self.heartbeat_due = now + self.heartbeat_interval
        self.session_deadline = now + self.session_timeout_ms / 1000
        self._backoff = self.retry_backoff

    # -- heartbeats, commits, errors ------------------------------------------------------------
    def on_heartbeat_response(self, code: int, now: float) -> None:
        self.heartbeat_in_flight = False
        self.heartbeat_due = now + self.heartbeat_interval
        if code == ErrorCode.NONE:
            self.session_deadline = now + self.session_timeout_ms / 1000
            return
        self.on_error(code)
        if code not in FENCING_ERRORS:
            raise error_for_code(code)

    def on_error(self, code: int) -> None:
        """An error code from the coordinator for this member: rejoin (without the member id or
        generation it no longer has)."""
        if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            self.member_id, self.generation = "", -1
        elif code == ErrorCode.ILLEGAL_GENERATION:
            self.generation = -1
        self.needs_join = True

    def commit_identity(self, count: int) -> tuple[int, str]:
        """(generation, member id) for an OffsetCommit of ``count`` offsets; outside a
        generation, CommitFailedException: the partitions may belong to another member."""
        if self.generation < 0:
            raise CommitFailedException(
                f"commit of {count} offset(s) for group '{self.group}': this member is not in an active "
                f"generation of the group (joining, rebalancing, or expelled); its partitions may belong to "
                f"another member; rejoin by polling, then commit again")
        return self.generation, self.member_id

    def on_commit_response(self, code: int, count: int, generation: int) -> KafkaError | None:
        """The error an OffsetCommit made as a member of ``generation`` ends in, if any; a fencing
        error is CommitFailedException and asks for a rejoin."""
        if code in FENCING_ERRORS:
            self.on_error(code)
            return CommitFailedException(
                f"commit of {count} offset(s) for group '{self.group}' refused with {error_name(code)}: this "
                f"member (generation {generation}) is no longer in the group's current generation — its partitions "
                f"may belong to another member now (a rebalance, or max.poll.interval.ms / session.timeout.ms "
                f"passed); rejoin by polling, then commit again")
        return error_for_code(code) if code else None

    # -- leaving --------------------------------------------------------------------------------
    def leave_request(self, reason: str) -> dict[str, Any] | None:
        """LeaveGroup, if there is a member id to leave with (call ``left`` afterwards)."""
        self.needs_join = True
        if not self.member_id:
            return None
        return requests.leave_group(self.group, self.member_id, self.instance_id, reason)

    def left(self) -> None:
        self.member_id, self.generation = "", -1

    def _take_assignment(self) -> list[TopicPartition]:
        revoked, self.assignment = self.assignment, []
        return revoked
