"""Group membership under KIP-848 (``group.protocol=consumer``), sans-io: the member's side of
ConsumerGroupHeartbeat (Kafka's ``ConsumerMembershipManager`` and ``ConsumerHeartbeatRequestManager``).

Theory of operation
-------------------
The broker owns the group: it computes the assignment, paces the heartbeats
(``heartbeat_interval_ms`` in every answer) and expires members (its session timeout, and the
rebalance timeout = this member's ``max.poll.interval.ms`` for a revocation). The member only
(1) heartbeats at the broker's interval, (2) reconciles: gives up what the broker no longer
assigns it (commit, ``on_revoke``), takes what is new (positions, ``on_assign``), then says so at
once in a heartbeat carrying what it owns, and (3) leaves when the application stops polling for
``max.poll.interval.ms`` (epoch -1; it rejoins with epoch 0 on its next poll).

No sockets, no clock: the driver (``group848.py``) asks ``handle_timeouts(now)`` for the next
``Action`` (HEARTBEAT with its body, LEAVE), feeds answers back (``on_heartbeat_response``,
which may return a ``Reconcile`` to carry out, then ``reconciled``), and sleeps until
``next_deadline()``.

Errors: FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID mean the broker dropped this member: every
partition is lost (no commit: the epoch is stale), and it rejoins at once with epoch 0 and the same
member id. Coordinator errors rediscover the coordinator; the rest back off and retry.
"""

from __future__ import annotations

import base64
import math
import re
import uuid
from collections.abc import Mapping
from typing import Any, NamedTuple

from client.consumer.membership import CLOSED, HEARTBEAT, LEAVE, LEFT, STABLE, UNJOINED, Action
from client.consumer.records import TopicPartition
from client.errors import ErrorCode, error_for_code

FENCED = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})


def new_member_id() -> str:
    """As Java's Uuid.randomUuid().toString(): URL-safe base64 of a random UUID, 22 characters,
    never starting with '-' (KIP-1082: the member names itself)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class Reconcile(NamedTuple):
    revoke: list[TopicPartition]     # give up (commit first, then on_revoke)
    assign: list[TopicPartition]     # take (positions, then on_assign)
    lost: bool = False               # fenced: the revoked partitions are lost, not committed


class Membership848:
    def __init__(self, config: Mapping[str, Any], topics: list[str] | None, pattern: re.Pattern | None, now: float):
        self.group: str = config["group.id"]
        self.instance_id: str | None = config["group.instance.id"]
        self.rebalance_timeout_ms: int = config["max.poll.interval.ms"]
        self.assignor: str | None = config.get("group.remote.assignor")
        self.retry_backoff: float = config["retry.backoff.ms"] / 1000
        self.retry_backoff_max: float = config["retry.backoff.max.ms"] / 1000
        self._backoff = self.retry_backoff
        self.topics, self.pattern = topics, pattern
        self.member_id = new_member_id()
        self.epoch = 0
        self.state = UNJOINED
        self.assignment: list[TopicPartition] = []
        self.heartbeat_interval = 0.0          # the broker's, from its first answer
        self.heartbeat_due = now
        self.heartbeat_in_flight = False
        self.last_poll = now
        self.send_subscription = True          # the next heartbeat carries the full subscription
        # a reconciliation under way (the driver runs it beside the heartbeats, as Java's
        # background thread keeps heartbeating while the application runs the callbacks): the
        # newest assignment the broker sent meanwhile, and whether it fenced this member meanwhile
        self.reconciling = False
        self.newer: list[TopicPartition] | None = None
        self.fenced_meanwhile = False

    @property
    def generation(self) -> int:
        """The epoch commits are made with (-1: none; the classic driver's name for it)."""
        return self.epoch if self.state == STABLE and self.epoch > 0 else -1

    # -- from the application ----------------------------------------------------------------
    def subscribe(self, topics: list[str] | None, pattern: re.Pattern | None, now: float) -> None:
        self.topics, self.pattern, self.last_poll = topics, pattern, now
        self.send_subscription, self.heartbeat_due = True, now

    def poll_called(self, now: float) -> bool:
        self.last_poll = now
        if self.state != LEFT:
            return False
        self.state, self.epoch, self.send_subscription, self.heartbeat_due = UNJOINED, 0, True, now
        return True

    def close(self) -> list[TopicPartition]:
        self.state = CLOSED
        taken, self.assignment = self.assignment, []
        return taken

    # -- time ---------------------------------------------------------------------------------
    def next_deadline(self) -> float:
        """The next heartbeat, or the poll timer's expiry if sooner: as Java's background thread
        (HeartbeatRequestManager.maximumTimeToWait), the member leaves the moment
        max.poll.interval.ms has passed, not at the heartbeat after it."""
        if self.state in (LEFT, CLOSED) or self.heartbeat_in_flight or (self.reconciling and self.fenced_meanwhile):
            return math.inf
        if self.state == STABLE and not self.reconciling:
            return min(self.heartbeat_due, self.last_poll + self.rebalance_timeout_ms / 1000)
        return self.heartbeat_due

    def handle_timeouts(self, now: float) -> Action | None:
        if self.state in (LEFT, CLOSED) or self.heartbeat_in_flight or (self.reconciling and self.fenced_meanwhile):
            return None
        idle_ms = (now - self.last_poll) * 1000
        if self.state == STABLE and not self.reconciling and idle_ms >= self.rebalance_timeout_ms:
            self.state = LEFT
            taken, self.assignment = self.assignment, []
            return Action(LEAVE, revoked=taken, reason=(
                f"consumer poll timeout has expired: {idle_ms:.0f} ms since the last poll, over "
                f"max.poll.interval.ms={self.rebalance_timeout_ms}"))
        if now < self.heartbeat_due:
            return None
        self.heartbeat_in_flight = True
        return Action(HEARTBEAT, self.heartbeat_request())

    def heartbeat_request(self, topic_ids: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The next ConsumerGroupHeartbeat; the driver fills ``topic_partitions`` with topic ids."""
        joining, full = self.epoch == 0, self.send_subscription or self.epoch == 0
        return {"group_id": self.group, "member_id": self.member_id, "member_epoch": self.epoch,
                "instance_id": self.instance_id, "rack_id": None,
                "rebalance_timeout_ms": self.rebalance_timeout_ms if full else -1,
                "subscribed_topic_names": (sorted(self.topics or []) if self.pattern is None else None) if full else None,
                "subscribed_topic_regex": self.pattern.pattern if full and self.pattern is not None else None,
                "server_assignor": self.assignor if full else None,
                "topic_partitions": [] if joining else None}

    def failed(self, now: float) -> None:
        """A heartbeat that got no answer (a disconnect, a timeout, a moved coordinator) or an
        error: retry after retry.backoff.ms, doubling to retry.backoff.max.ms — not a whole
        interval later, so a moved coordinator is found and told at once (Java's
        HeartbeatRequestManager: onFailedAttempt). The next heartbeat is a full one (Java resets its
        HeartbeatState): the answer we missed may have carried a new assignment, and the broker
        sends the assignment again only to a full request or when it changes."""
        self.heartbeat_in_flight = False
        self.send_subscription = True
        self.heartbeat_due = now + self._backoff
        self._backoff = min(self._backoff * 2, self.retry_backoff_max)

    # -- answers ---------------------------------------------------------------------------------
    def on_heartbeat_response(self, answer: Any, assigned: list[TopicPartition] | None, now: float) -> Reconcile | None:
        """``assigned``: the answer's assignment by topic name (None: unchanged). What to do next,
        if the assignment changed."""
        self.heartbeat_in_flight = False
        if self.state in (LEFT, CLOSED):
            # it left (or closed) while this heartbeat was in flight: the answer is about a
            # membership already given up (Java's ConsumerMembershipManager ignores it while
            # leaving); taken, it would make the member STABLE again and send it back to join
            return None
        code = answer.error_code
        if code in FENCED:
            if self.reconciling:   # the partitions are lost once the callbacks under way are done
                self.fenced_meanwhile = True
                return None
            return self._fenced(now)
        if code:
            raise error_for_code(code, answer.error_message)
        self.send_subscription, self._backoff = False, self.retry_backoff
        self.heartbeat_interval = answer.heartbeat_interval_ms / 1000
        self.epoch, self.state = answer.member_epoch, STABLE
        self.heartbeat_due = now + self.heartbeat_interval
        if self.reconciling:
            if assigned is not None:
                self.newer = assigned
            return None
        return self._towards(assigned)

    def _towards(self, assigned: list[TopicPartition] | None) -> Reconcile | None:
        if assigned is None or set(assigned) == set(self.assignment):
            return None
        revoke = sorted(set(self.assignment) - set(assigned))
        add = sorted(set(assigned) - set(self.assignment))
        self.reconciling = True
        return Reconcile(revoke, add)

    def _fenced(self, now: float) -> Reconcile | None:
        lost, self.assignment, self.epoch = self.assignment, [], 0
        self.send_subscription, self.heartbeat_due = True, now
        return Reconcile(lost, [], lost=True) if lost else None

    def reconciled(self, owned: list[TopicPartition], now: float) -> Reconcile | None:
        """The driver revoked and assigned: tell the broker at once what this member owns. What
        came meanwhile is next: the partitions lost to a fence, or a newer assignment."""
        self.assignment, self.reconciling, self.heartbeat_due = list(owned), False, now
        newer, self.newer = self.newer, None
        if self.state in (LEFT, CLOSED):
            return None
        if self.fenced_meanwhile:
            self.fenced_meanwhile = False
            return self._fenced(now)
        return self._towards(newer)

    def left(self) -> None:
        self.epoch = 0

    def owned_request(self, body: dict[str, Any], topic_ids: Mapping[str, Any]) -> dict[str, Any]:
        """``body`` with the owned partitions by topic id (a joining member owns none)."""
        if self.epoch == 0:
            return body
        by_topic: dict[str, list[int]] = {}
        for tp in self.assignment:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        return {**body, "topic_partitions": [{"topic_id": topic_ids[t], "partitions": sorted(ps)}
                                             for t, ps in sorted(by_topic.items()) if t in topic_ids]}
