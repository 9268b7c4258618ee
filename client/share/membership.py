"""The share group member (KIP-932; Java's ``ShareMembershipManager`` and
``ShareHeartbeatRequestManager``): the state (``ShareMembership``, sans-io) and the task that
heartbeats for it (``ShareMemberDriver``).

The broker owns the group: it assigns partitions (a partition may go to several members, which
share its records), paces the heartbeats (``heartbeat_interval_ms`` in each answer) and expires a
member that stops heartbeating (group.share.session.timeout.ms). The member joins with epoch 0 and
its subscription, heartbeats with the epoch it was given, takes each new assignment at once (share
groups have no revocation step), and leaves with epoch -1. FENCED_MEMBER_EPOCH and
UNKNOWN_MEMBER_ID mean the broker dropped it: it rejoins at once with epoch 0 and the same member
id. A coordinator error finds the coordinator again; a failed heartbeat is retried after
retry.backoff.ms, doubling to retry.backoff.max.ms; any other error is fatal and the next poll
raises it. As every member of Java's ``AbstractHeartbeatRequestManager``, it leaves the group
when the application has not polled for max.poll.interval.ms (the broker gives its records to the
others at once) and joins again, as a new epoch 0, on the next poll.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping
from typing import Any

import trio

from client.consumer.coordinator import CoordinatorClient
from client.consumer.membership848 import FENCED, new_member_id
from client.consumer.records import TopicPartition
from client.errors import ErrorCode, KafkaError, UnsupportedVersionError, error_for_code
from client.metadata import ClusterMetadata, MetadataUpdater
from client.protocol import ApiKey
from kafka_common.wakeup import Wakeup

LEAVE_EPOCH = -1


class ShareMembership:
    def __init__(self, config: Mapping[str, Any], topics: list[str], now: float):
        self.group: str = config["group.id"]
        self.rack: str | None = config.get("client.rack")
        self.retry_backoff = config["retry.backoff.ms"] / 1000
        self.retry_backoff_max = config["retry.backoff.max.ms"] / 1000
        self._backoff = self.retry_backoff
        self.member_id = new_member_id()
        self.topics = sorted(topics)
        self.epoch = 0
        self.assignment: list[TopicPartition] = []
        self.send_subscription = True
        self.due = now
        self.closed = False
        self.error: KafkaError | None = None     # fatal: raised by the next poll
        self.max_poll_interval = config["max.poll.interval.ms"] / 1000
        self.last_poll = now
        self.left = False                        # left for max.poll.interval.ms; the next poll rejoins

    def poll_called(self, now: float) -> bool:
        """True when the member had left for max.poll.interval.ms and joins again now."""
        self.last_poll = now
        if not self.left:
            return False
        self.left, self.epoch, self.send_subscription, self.due = False, 0, True, now
        return True

    def poll_expired(self, now: float) -> bool:
        return self.epoch > 0 and not self.left and now - self.last_poll >= self.max_poll_interval

    def next_deadline(self) -> float:
        if self.closed:
            return math.inf
        if self.left:
            return math.inf
        return min(self.due, self.last_poll + self.max_poll_interval) if self.epoch > 0 else self.due

    def subscribe(self, topics: list[str], now: float) -> None:
        self.topics, self.send_subscription, self.due = sorted(topics), True, now

    def request(self) -> dict[str, Any]:
        full = self.send_subscription or self.epoch == 0
        return {"group_id": self.group, "member_id": self.member_id, "member_epoch": self.epoch,
                "rack_id": self.rack if self.epoch == 0 else None,
                "subscribed_topic_names": self.topics if full else None}

    def leave_request(self) -> dict[str, Any]:
        return {**self.request(), "member_epoch": LEAVE_EPOCH, "subscribed_topic_names": None}

    def on_answer(self, answer: Any, assigned: list[TopicPartition] | None, now: float) -> None:
        """``assigned``: the answer's assignment by topic name (None: unchanged)."""
        code = answer.error_code
        if code in FENCED:   # dropped by the broker: rejoin at once, owning nothing
            self.epoch, self.assignment, self.send_subscription, self.due = 0, [], True, now
            return
        if code:
            error = error_for_code(code, f"ShareGroupHeartbeat for group '{self.group}' failed with "
                                         f"{ErrorCode(code).name}: {answer.error_message or 'no message'}")
            if error.retriable:
                self.failed(now)
                return
            self.error, self.closed = error, True
            return
        self.epoch, self.send_subscription, self._backoff = answer.member_epoch, False, self.retry_backoff
        if assigned is not None:
            self.assignment = sorted(assigned)
        self.due = now + answer.heartbeat_interval_ms / 1000

    def failed(self, now: float) -> None:
        """No answer, or a retriable error: again after the backoff, with the full subscription."""
        self.send_subscription = True
        self.due = now + self._backoff
        self._backoff = min(self._backoff * 2, self.retry_backoff_max)


class ShareMemberDriver:
    """Heartbeats for ``membership`` on the coordinator's own connection; ``on_assignment`` gets
    every new assignment."""

    def __init__(self, membership: ShareMembership, coordinator: CoordinatorClient, metadata: ClusterMetadata,
                 updater: MetadataUpdater, request_timeout: float,
                 on_assignment: Callable[[list[TopicPartition]], None]):
        self.membership, self.coordinator, self.metadata, self.updater = membership, coordinator, metadata, updater
        self.request_timeout = request_timeout
        self.on_assignment = on_assignment
        self.joined = trio.Event()   # set by the first answer that made this a member
        self.left_reason: str | None = None
        self._wake = Wakeup()

    def wake(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        m = self.membership
        while not m.closed:
            self._wake.new_cycle()
            now = trio.current_time()
            if m.poll_expired(now):
                await self._leave_for_poll_timeout(now)
            elif not m.left and now >= m.due:
                await self._heartbeat()
            await self._wake.sleep_until(m.next_deadline())

    async def _leave_for_poll_timeout(self, now: float) -> None:
        """Java's words: "Consumer poll timeout has expired. ..." — and the member leaves now."""
        m = self.membership
        self.left_reason = (f"consumer poll timeout has expired: {(now - m.last_poll) * 1000:.0f} ms since the last "
                            f"poll, over max.poll.interval.ms={m.max_poll_interval * 1000:.0f}; the member left the "
                            "share group and joins again at the next poll")
        with contextlib.suppress(KafkaError):
            await self.coordinator.request(ApiKey.SHARE_GROUP_HEARTBEAT, m.leave_request(), self.request_timeout)
        m.left, m.assignment = True, []
        self.joined = trio.Event()
        self.on_assignment([])

    def poll_called(self, now: float) -> bool:
        """True when the member had left for max.poll.interval.ms and joins again now."""
        if not self.membership.poll_called(now):
            return False
        self.wake()
        return True

    async def _heartbeat(self) -> None:
        m = self.membership
        before = list(m.assignment)
        try:
            answer = await self.coordinator.request(ApiKey.SHARE_GROUP_HEARTBEAT, m.request(), self.request_timeout)
            self.coordinator.note_error(answer.error_code)
            assigned = None if answer.error_code or answer.assignment is None else \
                await self._by_name(answer.assignment.topic_partitions)
        except UnsupportedVersionError as exc:   # Java's SHARE_PROTOCOL_VERSION_NOT_SUPPORTED_MSG
            m.error, m.closed = UnsupportedVersionError(
                "The cluster does not support the share group protocol using ShareGroupHeartbeat API version 1 or "
                f"later. This version of the API was introduced in Apache Kafka v4.1. ({exc})"), True
            return
        except KafkaError:
            m.failed(trio.current_time())
            return
        if m.closed and m.error is None:   # closed while this heartbeat was in flight
            return
        m.on_answer(answer, assigned, trio.current_time())
        if m.epoch > 0:
            self.joined.set()
        if m.assignment != before:
            self.on_assignment(list(m.assignment))

    async def _by_name(self, topic_partitions: Any) -> list[TopicPartition]:
        names = self.metadata.topic_names
        if any(tp.topic_id not in names for tp in topic_partitions):
            self.metadata.add_interest(self.membership.topics)
            await self.updater.refresh(self.membership.topics, deadline=trio.current_time() + self.request_timeout)
        return [TopicPartition(names[tp.topic_id], p) for tp in topic_partitions if tp.topic_id in names
                for p in tp.partitions]

    async def leave(self, timeout: float) -> bool:
        """ShareGroupHeartbeat with epoch -1 within ``timeout``; False if it could not be told."""
        m = self.membership
        was_member, m.closed = m.epoch > 0, True
        self.wake()
        if not was_member or self.coordinator.node is None:
            return False
        with contextlib.suppress(KafkaError):
            answer = await self.coordinator.request(ApiKey.SHARE_GROUP_HEARTBEAT, m.leave_request(), timeout)
            return answer.error_code == ErrorCode.NONE
        return False
