"""The trio side of group membership: one background task drives ``Membership`` (sans-io).

The task loops on the state machine's deadline: ``handle_timeouts(now)`` says what is due (join,
heartbeat, leave for max.poll.interval.ms, rediscover the coordinator), the task does it — the
requests go through the shared ``CoordinatorClient`` — and feeds the answers back; then it sleeps
until ``next_deadline()`` or until ``wake()`` (a new subscription, a poll after leaving, a fenced
commit, close). A failure forgets the coordinator if it may have moved (a disconnect, a timeout, a
coordinator error) and lets the state machine schedule the retry.

The join runs here because it needs the network between its steps: revoke the assignment
(committing its offsets with enable.auto.commit, then ``on_revoke``: eager protocol), find the
coordinator, read the subscribed topics' metadata, JoinGroup (held by the broker up to the
rebalance timeout; its request timeout is that plus 5 s, client.network), the leader's
assignment, SyncGroup, then the new partitions' committed offsets and ``on_assign``. Rebalance
callbacks go through ``run_callback``: by default (``call_back``, the async face) they run on
this task, and a callback returning an awaitable (``async def``) is awaited; the blocking face
hands them to its application thread, which runs them inside ``poll`` (client/consumer/blocking.py).
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio

from client.consumer import requests
from client.consumer.coordinator import COORDINATOR_ERRORS, CoordinatorClient
from client.consumer.fetcher import Fetcher
from client.consumer.membership import CLOSED, HEARTBEAT, JOIN, LEAVE, Action, Membership, plan_assignments
from client.consumer.records import TopicPartition
from client.errors import ErrorCode, KafkaError
from client.metadata import ClusterMetadata, MetadataUpdater
from client.protocol import ApiKey
from kafka_common.wakeup import Wakeup

Callback = Callable[[list[TopicPartition]], Any]
RunCallback = Callable[[Callback | None, list[TopicPartition]], Awaitable[None]]


async def call_back(callback: Callback | None, tps: list[TopicPartition]) -> None:
    """A rebalance callback: a plain function, or (async face) one returning an awaitable, which
    is awaited — so a callback may commit or wait without blocking the event loop."""
    if callback is not None:
        result = callback(tps)
        if inspect.isawaitable(result):
            await result
Committed = Callable[[list[TopicPartition], float], Awaitable[dict[TopicPartition, int | None]]]


class GroupDriver:
    def __init__(self, membership: Membership, config: Mapping[str, Any], coordinator: CoordinatorClient,
                 fetcher: Fetcher, metadata: ClusterMetadata, updater: MetadataUpdater, committed: Committed,
                 on_assign: Callback | None, on_revoke: Callback | None, run_callback: RunCallback = call_back):
        self.membership = membership
        self.run_callback = run_callback    # how a rebalance callback is run (and waited for)
        self.config = config
        self.coordinator, self.fetcher, self.metadata, self.updater = coordinator, fetcher, metadata, updater
        self.committed = committed          # the consumer's committed(): attempt-then-check
        self.on_assign, self.on_revoke = on_assign, on_revoke
        self.request_timeout = config["request.timeout.ms"] / 1000
        self.active = trio.Event()          # set while joined with an assignment
        self.callbacks_running = 0          # a rebalance callback under way (still_polling waits for it)
        self._wake = Wakeup()
        self._match_all_topics()

    # -- facing the consumer ----------------------------------------------------------------
    @property
    def assignment(self) -> list[TopicPartition]:
        return list(self.membership.assignment)

    def is_active(self) -> bool:
        return self.active.is_set()

    async def wait_active(self) -> None:
        await self.active.wait()

    def wake(self) -> None:
        self._wake.set()

    def poll_called(self, now: float) -> None:
        # Java's ConsumerCoordinator.poll: maybeUpdateSubscriptionMetadata, then rejoinNeededOrPending
        self._note_metadata()
        if self.membership.poll_called(now):
            self.wake()

    def still_polling(self, now: float) -> None:
        """The application is still inside ``poll``, waiting for records: as each pass of Java's
        poll loop (ClassicKafkaConsumer: updateAssignmentMetadataIfNeeded -> ConsumerCoordinator.poll,
        whose Heartbeat.poll restarts the max.poll.interval.ms timer; AsyncKafkaConsumer: a
        PollEvent "to let the background thread know that we are still polling"), so a long
        poll is not a stuck application. Not while a rebalance callback runs: Java runs those
        inside a pass, so time spent in a callback is not counted as polling."""
        if self.callbacks_running == 0:
            self.poll_called(now)

    async def call_back(self, callback: Callback | None, tps: list[TopicPartition]) -> None:
        """A rebalance callback, run as ``run_callback`` runs it, counted while it runs."""
        self.callbacks_running += 1
        try:
            await self.run_callback(callback, tps)
        finally:
            self.callbacks_running -= 1

    def watches_metadata(self) -> bool:
        """Watching the metadata is the classic member's job; under KIP-848 (the subclass driving
        Membership848) the broker assigns, and watches, itself."""
        return isinstance(self.membership, Membership)

    def metadata_updated(self) -> None:
        """A refresh landed while the application waits in poll: Java's classic poll loop runs
        ConsumerCoordinator.poll again after each response its network client waited for."""
        self._note_metadata()
        if self.watches_metadata() and self.membership.rejoin_if_needed():
            self.wake()

    def subscribe(self, topics: list[str] | None, pattern: re.Pattern | None, on_assign: Callback | None,
                  on_revoke: Callback | None, now: float) -> None:
        self.membership.subscribe(topics, pattern, now)
        self._match_all_topics()
        self._note_metadata()
        self.on_assign, self.on_revoke = on_assign, on_revoke
        self.wake()

    async def commit(self, offsets: Mapping[TopicPartition, int], timeout: float) -> None:
        """One OffsetCommit as this member of its generation (CommitFailedException if it is in
        none, or the coordinator says it is no longer in it)."""
        generation, member_id = self.membership.commit_identity(len(offsets))
        code = await self.coordinator.commit(offsets, timeout, generation, member_id, self.membership.instance_id)
        error = self.membership.on_commit_response(code, len(offsets), generation)
        if error is not None:
            self.wake()   # a fenced member rejoins
            raise error

    async def close(self, reason: str = "the consumer is closing") -> None:
        """Revoke, then LeaveGroup (best effort, one attempt); the task ends."""
        await self._leave(self.membership.close(), reason)
        self._match_all_topics()
        self.wake()

    # -- the task ------------------------------------------------------------------------------
    async def run(self) -> None:
        m = self.membership
        while m.state != CLOSED:
            self._wake.new_cycle()
            action = m.handle_timeouts(trio.current_time())
            if action is None:
                await self._wake.sleep_until(m.next_deadline())
                continue
            try:
                await self._perform(action)
            except KafkaError as exc:
                if exc.code is None or exc.code in COORDINATOR_ERRORS:
                    self.coordinator.forget()   # rediscover (also after a disconnect or timeout)
                m.failed(trio.current_time())

    async def _perform(self, action: Action) -> None:
        if action.kind == JOIN:
            await self._join(action.revoked)
        elif action.kind == HEARTBEAT:
            answer = await self.coordinator.request(ApiKey.HEARTBEAT, action.body)
            self.coordinator.note_error(answer.error_code)
            self.membership.on_heartbeat_response(answer.error_code, trio.current_time())
        elif action.kind == LEAVE:
            await self._leave(action.revoked, action.reason)
        else:   # REDISCOVER
            self.coordinator.forget()

    # -- join and sync -------------------------------------------------------------------------
    async def _join(self, revoked: list[TopicPartition]) -> None:
        m = self.membership
        self._deactivate()
        await self._revoke(revoked)
        await self.coordinator.resolve(self.request_timeout)
        # fresh metadata before joining: a pattern is matched against it (Java's poll asks for a
        # refresh and ensureFreshMetadata before a pattern member rejoins)
        await self._topic_partitions(None if m.pattern is not None else m.subscribed_topics())
        self._note_metadata()
        answer = await self.coordinator.request(ApiKey.JOIN_GROUP, m.join_request())
        self.coordinator.note_error(answer.error_code)
        assignments = []
        if m.on_join_response(answer):
            assignments = await self._assign(answer.members, answer.protocol_name)
        synced = await self.coordinator.request(ApiKey.SYNC_GROUP, m.sync_request(assignments))
        self.coordinator.note_error(synced.error_code)
        assigned = m.on_sync_response(synced)
        await self._assigned(assigned)
        await self.call_back(self.on_assign, assigned)
        m.join_completed(trio.current_time())
        self.active.set()

    async def _assign(self, members: list[Any], protocol: str) -> list[dict[str, Any]]:
        """The leader's assignment of every member's subscription, with fresh partition counts;
        it keeps the metadata it assigned with (Java's onLeaderElected: updateGroupSubscription,
        then assignmentSnapshot), so a change of those counts makes it rejoin."""
        m = self.membership
        subscriptions = requests.member_subscriptions(members)
        wanted = sorted({t for topics in subscriptions.values() for t in topics})
        m.group_subscribe(wanted)
        if wanted:
            await self._topic_partitions(wanted)
        self._note_metadata()
        counts = {t: n for t, n in self._partition_counts().items() if t in wanted}
        plan = plan_assignments(protocol, subscriptions, counts)
        m.assigned_with_snapshot()
        return plan

    async def _topic_partitions(self, topics: list[str] | None) -> dict[str, int]:
        """Partition counts (``topics`` None: every topic, for a pattern), through the
        consumer's metadata layer, so the leaders learnt here serve its fetches too. The classic
        group reads the counts from that layer's cache afterwards (``_partition_counts``), as
        the periodic refreshes leave them, so what it assigns with and what it watches agree."""
        deadline = trio.current_time() + self.request_timeout
        if topics is None:
            md = await self.updater.refresh(deadline=deadline, all_topics=True)
        else:
            self.metadata.add_interest(topics)
            md = await self.updater.refresh(topics, deadline=deadline)
        return {t.name: len(t.partitions) for t in md.topics if t.error_code == ErrorCode.NONE}

    def _partition_counts(self) -> dict[str, int]:
        return {t: len(parts) for t, parts in self.metadata.topics.items()}

    def _note_metadata(self) -> None:
        """Java's ConsumerCoordinator.maybeUpdateSubscriptionMetadata (acts when the metadata's
        version moved)."""
        version = self.metadata.version
        if self.watches_metadata() and version > self.membership.watch.snapshot.version:   # counted only then
            self.membership.on_metadata(version, self._partition_counts(), self.metadata.internal)

    def _match_all_topics(self) -> None:
        """A classic pattern is matched against every topic, so its refreshes ask for all (Java's
        ConsumerMetadata.newMetadataRequestBuilder: MetadataRequest.Builder.allTopics)."""
        if self.watches_metadata():
            self.metadata.all_topics = self.membership.state != CLOSED and self.membership.pattern is not None

    async def _assigned(self, tps: list[TopicPartition]) -> None:
        """Positions of newly assigned partitions start at the group's committed offsets
        (auto.offset.reset where none is committed, at the next poll)."""
        self.fetcher.assign_from_group(tps)
        if not tps:
            return
        try:
            committed = await self.committed(tps, self.request_timeout)
        except KafkaError:
            committed = {}   # poll resets what is left without a position
        self.fetcher.start_from(committed)
        self.fetcher.assignment_settled()

    # -- giving partitions up --------------------------------------------------------------------
    async def _revoke(self, revoked: list[TopicPartition]) -> None:
        if not revoked:
            return
        if self.config["enable.auto.commit"] and self.membership.generation >= 0:
            with contextlib.suppress(KafkaError):   # the rebalance goes on; the records may be read again
                await self.commit(self.fetcher.current_offsets(revoked), self.request_timeout)
        self.fetcher.unassign(revoked)
        await self.call_back(self.on_revoke, revoked)

    async def _leave(self, revoked: list[TopicPartition], reason: str) -> None:
        """LeaveGroup (best effort, one attempt within request.timeout.ms); the assignment is
        revoked first so the callbacks see it go."""
        await self._revoke(revoked)
        self._deactivate()
        body = self.membership.leave_request(reason)
        if body is not None and self.coordinator.node is not None:
            with contextlib.suppress(KafkaError):
                await self.coordinator.request(ApiKey.LEAVE_GROUP, body)
        self.membership.left()

    def _deactivate(self) -> None:
        if self.active.is_set():
            self.active = trio.Event()
