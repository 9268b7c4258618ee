"""The trio side of KIP-848 membership: one background task drives ``Membership848`` (sans-io),
with the classic driver's plumbing (``GroupDriver``: its task loop, the coordinator, positions on
assignment, commit-then-``on_revoke`` on revocation, the wake-up).

Each heartbeat: find the coordinator, make sure the subscribed topics' ids are known (Metadata
v10+ carries them; the assignment speaks ids), send ConsumerGroupHeartbeat with what the member
owns, and carry out the reconciliation the answer asks for — revoke first, then assign, then an
immediate heartbeat saying so. A fenced member loses its partitions (``on_revoke`` is told, no
commit: its epoch is stale) and rejoins at once. Leaving is a heartbeat with epoch -1 (-2 for a
static member, which keeps its partitions for the broker's session timeout).

A reconciliation runs in a task of its own beside the heartbeats (``run``'s nursery), so slow
callbacks (an ``async def`` one on the async face) do not silence the member; the coordinator has
its own connection (``CoordinatorClient``), so a heartbeat never waits behind a long poll.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import trio

from client.consumer.group import GroupDriver
from client.consumer.membership import HEARTBEAT, LEAVE, STABLE, Action
from client.consumer.membership848 import FENCED, Membership848, Reconcile
from client.consumer.records import TopicPartition
from client.errors import ErrorCode, KafkaError, error_for_code
from client.exceptions import CommitFailedException
from client.protocol import ApiKey


class Group848Driver(GroupDriver):
    membership: Membership848   # type: ignore[assignment]
    _nursery: trio.Nursery | None = None

    async def commit(self, offsets: Mapping[TopicPartition, int], timeout: float) -> None:
        """OffsetCommit v9+ with this member's epoch (STALE_MEMBER_EPOCH if it moved on)."""
        m = self.membership
        if m.state != STABLE or m.epoch <= 0:
            raise CommitFailedException("the consumer is not a member of the group (KIP-848): it cannot commit now")
        code = await self.coordinator.commit(offsets, timeout, m.epoch, m.member_id, m.instance_id)
        if code in FENCED or code == ErrorCode.STALE_MEMBER_EPOCH:
            self.wake()
            raise CommitFailedException(f"the commit was refused ({error_for_code(code).name}): the member's epoch "
                                        f"{m.epoch} is no longer current")
        if code:
            raise error_for_code(code)

    async def _perform(self, action: Action) -> None:
        if action.kind == HEARTBEAT:
            await self._heartbeat(action.body or {})
        elif action.kind == LEAVE:
            await self._leave(action.revoked, action.reason)

    async def _heartbeat(self, body: dict[str, Any]) -> None:
        m = self.membership
        await self.coordinator.resolve(self.request_timeout)
        ids = {name: tid for tid, name in self.metadata.topic_names.items()}
        if m.pattern is None and any(t not in ids for t in m.topics or ()):
            await self._topic_partitions(sorted(m.topics or ()))   # their ids, for the owned partitions
            ids = {name: tid for tid, name in self.metadata.topic_names.items()}
        answer = await self.coordinator.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, m.owned_request(body, ids))
        self.coordinator.note_error(answer.error_code)
        assigned = None if answer.assignment is None else await self._by_name(answer.assignment.topic_partitions)
        step = m.on_heartbeat_response(answer, assigned, trio.current_time())
        if step is not None and step.lost:
            await self._lose(step)
        elif step is not None:
            assert self._nursery is not None
            self._nursery.start_soon(self._reconcile, step)
        if m.state == STABLE and not m.reconciling:
            self.active.set()

    async def _by_name(self, topic_partitions: Any) -> list[TopicPartition]:
        names = self.metadata.topic_names
        if any(tp.topic_id not in names for tp in topic_partitions):
            await self._topic_partitions(None)   # a topic this member has not seen yet
        return [TopicPartition(names[tp.topic_id], p) for tp in topic_partitions if tp.topic_id in names
                for p in tp.partitions]

    async def run(self) -> None:
        """The classic driver's loop, with a nursery for reconciliations: they run beside the
        heartbeats, so a slow callback does not silence the member (Java's background thread
        heartbeats while the application thread runs the rebalance listener)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                await super().run()
            finally:
                self._nursery = None
                nursery.cancel_scope.cancel()

    async def _lose(self, step: Reconcile) -> None:
        """Fenced: the partitions are gone, no commit with a stale epoch; rejoin at once."""
        self._deactivate()
        self.fetcher.unassign(step.revoke)
        await self.call_back(self.on_revoke, step.revoke)
        self.wake()

    async def _reconcile(self, step: Reconcile | None) -> None:
        m = self.membership
        while step is not None:
            if step.lost:
                await self._lose(step)
                return
            await self._revoke(step.revoke)
            await self._assigned(step.assign)
            if step.assign:
                await self.call_back(self.on_assign, step.assign)
            owned = sorted((set(m.assignment) - set(step.revoke)) | set(step.assign))
            step = m.reconciled(owned, trio.current_time())
            self.wake()   # the heartbeat saying so goes now
        if m.state == STABLE and not m.reconciling:
            self.active.set()

    async def _leave(self, revoked: list[TopicPartition], reason: str) -> None:
        m = self.membership
        await self._revoke(revoked)
        self._deactivate()
        if m.epoch > 0 and self.coordinator.node is not None:
            body = {**m.heartbeat_request(), "member_epoch": -2 if m.instance_id is not None else -1,
                    "rebalance_timeout_ms": -1, "subscribed_topic_names": None, "subscribed_topic_regex": None,
                    "server_assignor": None, "topic_partitions": None}
            with contextlib.suppress(KafkaError):
                await self.coordinator.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, body)
        m.left()
