"""Consumer group membership (classic protocol): find the coordinator, join, sync, heartbeat,
leave — in one background task of the consumer.

The task joins when the application first polls after ``subscribe`` (as Java's consumer does,
inside ``poll``), then heartbeats every heartbeat.interval.ms. It rejoins when the coordinator
says the group is rebalancing, forgets its member id when the coordinator no longer knows it,
rediscovers the coordinator on NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE or a disconnect, and
leaves the group by itself when the application has not polled for max.poll.interval.ms (the
member is then presumed stuck; the next poll rejoins). JoinGroup is the one request that waits
on the broker by design: its client-side timeout is the rebalance timeout plus 5 s
(client.network), so a held JoinGroup is never mistaken for a dead broker.

Rebalance callbacks run on the task that runs the membership (for the blocking face: the
network thread), ``on_revoke`` before rejoining (eager protocol), ``on_assign`` after SyncGroup.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from client.assignors import ASSIGNORS
from client.errors import ErrorCode, KafkaError, error_for_code
from client.exceptions import CommitFailedException
from client.protocol import ApiKey
from client.protocol.codec import decode_consumer_blob, encode_consumer_blob

if TYPE_CHECKING:
    from client.consumer import AsyncConsumer, TopicPartition

MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID = 79, 27, 22, 25
FENCED_INSTANCE_ID = 82
# NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS: find it again
COORDINATOR_ERRORS = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                ErrorCode.NOT_COORDINATOR})
FENCING_ERRORS = {ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID}
SUBSCRIPTION_VERSION = 1   # topics + owned partitions: what every client since Kafka 2.4 reads

Callback = Callable[[list["TopicPartition"]], Any]


def _tp(topic: str, partition: int) -> TopicPartition:
    from client.consumer import TopicPartition  # consumer.py imports this module
    return TopicPartition(topic, partition)


class GroupMembership:
    def __init__(self, consumer: AsyncConsumer, topics: list[str] | None, pattern: re.Pattern | None,
                 on_assign: Callback | None, on_revoke: Callback | None):
        self.consumer = consumer
        self.config = consumer.config
        self.group = consumer.config["group.id"]
        self.topics, self.pattern = topics, pattern
        self.on_assign, self.on_revoke = on_assign, on_revoke
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.leader = False
        self.assignment: list[TopicPartition] = []
        self.active = trio.Event()          # set while joined with an assignment
        self.needs_join = True
        self.polled = trio.Event()          # the application called poll (after leaving for max.poll.interval)
        self.left_for_poll_interval = False
        self.joins = 0
        self._wake = trio.Event()
        self.closed = False

    # -- the task ------------------------------------------------------------------------------
    async def run(self) -> None:
        backoff = self.config["retry.backoff.ms"] / 1000
        while not self.closed:
            try:
                if self.left_for_poll_interval:
                    await self.polled.wait()
                    self.left_for_poll_interval = False
                if self.needs_join:
                    await self._join()
                    backoff = self.config["retry.backoff.ms"] / 1000
                await self._heartbeat_until_rejoin()
            except KafkaError as exc:
                if exc.code in COORDINATOR_ERRORS or exc.code is None:
                    self.consumer.coordinator = None   # rediscover (also after a disconnect or timeout)
                await trio.sleep(backoff)
                backoff = min(backoff * 2, self.config["retry.backoff.max.ms"] / 1000)

    async def _coordinator(self) -> int:
        if self.consumer.coordinator is not None:
            return self.consumer.coordinator
        return await self.consumer._find_coordinator(self.consumer.request_timeout)

    def subscribed_topics(self, all_topics: list[str] | None = None) -> list[str]:
        if self.pattern is None:
            return sorted(self.topics or [])
        return sorted(t for t in (all_topics or []) if self.pattern.fullmatch(t))

    async def _topic_partitions(self, topics: list[str] | None) -> dict[str, int]:
        """Partition counts (``topics`` None: every topic, for a pattern), through the
        consumer's metadata layer, so the leaders learnt here serve its fetches too."""
        consumer = self.consumer
        deadline = trio.current_time() + consumer.request_timeout
        if topics is None:
            md = await consumer.updater.refresh(deadline=deadline, all_topics=True)
        else:
            consumer.metadata.add_interest(topics)
            md = await consumer.updater.refresh(topics, deadline=deadline)
        return {t.name: len(t.partitions) for t in md.topics if t.error_code == 0}

    # -- join and sync -------------------------------------------------------------------------
    async def _revoke(self) -> None:
        if self.assignment:
            revoked, self.assignment = self.assignment, []
            if self.config["enable.auto.commit"] and self.generation >= 0:
                try:
                    await self.commit(self.consumer.current_offsets(revoked), self.consumer.request_timeout)
                except KafkaError:
                    pass  # the rebalance goes on; the records may be read again (at-least-once)
            self.consumer.unassign_from_group(revoked)
            if self.on_revoke is not None:
                self.on_revoke(revoked)

    async def _join(self) -> None:
        self.active = trio.Event() if self.active.is_set() else self.active
        await self._revoke()
        node = await self._coordinator()
        known = await self._topic_partitions(None if self.pattern is not None else self.subscribed_topics())
        topics = self.subscribed_topics(list(known))
        strategies = [s.strip() for s in self.config["partition.assignment.strategy"].split(",") if s.strip()]
        metadata = encode_consumer_blob("CONSUMER_PROTOCOL_SUBSCRIPTION", SUBSCRIPTION_VERSION,
                                        {"topics": topics, "user_data": None, "owned_partitions": []})
        body = {"group_id": self.group, "session_timeout_ms": self.config["session.timeout.ms"],
                "rebalance_timeout_ms": self.config["max.poll.interval.ms"], "member_id": self.member_id,
                "group_instance_id": self.config["group.instance.id"], "protocol_type": "consumer",
                "protocols": [{"name": s, "metadata": metadata} for s in strategies], "reason": None}
        try:
            answer = await self.consumer.net.request(node, ApiKey.JOIN_GROUP, body)
        except KafkaError:
            self.consumer.coordinator = None
            raise
        if answer.error_code == MEMBER_ID_REQUIRED:   # KIP-394: rejoin at once with the id given
            self.member_id = answer.member_id
            raise error_for_code(MEMBER_ID_REQUIRED)
        if answer.error_code:
            self._on_group_error(answer.error_code)
            raise error_for_code(answer.error_code)
        self.member_id, self.generation = answer.member_id, answer.generation_id
        self.protocol, self.leader = answer.protocol_name, answer.leader == answer.member_id
        assignments = []
        if self.leader:
            assignments = await self._assign(answer.members, answer.protocol_name)
        sync = {"group_id": self.group, "generation_id": self.generation, "member_id": self.member_id,
                "group_instance_id": self.config["group.instance.id"], "protocol_type": "consumer",
                "protocol_name": self.protocol, "assignments": assignments}
        try:
            synced = await self.consumer.net.request(node, ApiKey.SYNC_GROUP, sync)
        except KafkaError:
            self.consumer.coordinator = None
            raise
        if synced.error_code:
            self._on_group_error(synced.error_code)
            raise error_for_code(synced.error_code)
        mine: list[TopicPartition] = []
        if synced.assignment:
            _, blob = decode_consumer_blob("CONSUMER_PROTOCOL_ASSIGNMENT", synced.assignment)
            mine = [_tp(a.topic, p) for a in blob.assigned_partitions for p in a.partitions]
        self.assignment = sorted(mine)
        self.needs_join = False
        self.joins += 1
        await self.consumer.assign_from_group(self.assignment)
        if self.on_assign is not None:
            self.on_assign(list(self.assignment))
        self.active.set()

    async def _assign(self, members: list[Any], protocol: str) -> list[dict[str, Any]]:
        subscriptions = {}
        for m in members:
            _, sub = decode_consumer_blob("CONSUMER_PROTOCOL_SUBSCRIPTION", m.metadata)
            subscriptions[m.member_id] = list(sub.topics)
        wanted = sorted({t for topics in subscriptions.values() for t in topics})
        counts = await self._topic_partitions(wanted) if wanted else {}
        assignor = ASSIGNORS.get(protocol)
        if assignor is None:
            raise KafkaError(f"the group chose assignor {protocol!r}, which this client does not implement")
        plan = assignor(subscriptions, counts)
        return [{"member_id": member, "assignment": encode_consumer_blob("CONSUMER_PROTOCOL_ASSIGNMENT", 0, {
            "assigned_partitions": [{"topic": t, "partitions": ps} for t, ps in sorted(topics.items())], "user_data": None})}
            for member, topics in plan.items()]

    def _on_group_error(self, code: int) -> None:
        if code == UNKNOWN_MEMBER_ID or code == FENCED_INSTANCE_ID:
            self.member_id, self.generation = "", -1
        elif code == ILLEGAL_GENERATION:
            self.generation = -1
        if code in COORDINATOR_ERRORS:
            self.consumer.coordinator = None
        self.needs_join = True

    # -- heartbeats ------------------------------------------------------------------------------
    async def _heartbeat_until_rejoin(self) -> None:
        interval = self.config["heartbeat.interval.ms"] / 1000
        while not self.needs_join and not self.closed:
            with trio.move_on_after(interval):
                await self._wake.wait()
            self._wake = trio.Event()
            if self.closed:
                return
            idle_ms = (trio.current_time() - self.consumer.last_poll) * 1000
            if idle_ms > self.config["max.poll.interval.ms"]:
                await self.leave(f"consumer poll timeout has expired: {idle_ms:.0f} ms since the last poll, over "
                                 f"max.poll.interval.ms={self.config['max.poll.interval.ms']}")
                self.polled = trio.Event()
                self.left_for_poll_interval = True
                return
            node = await self._coordinator()
            body = {"group_id": self.group, "generation_id": self.generation, "member_id": self.member_id,
                    "group_instance_id": self.config["group.instance.id"]}
            try:
                answer = await self.consumer.net.request(node, ApiKey.HEARTBEAT, body)
            except KafkaError:
                self.consumer.coordinator = None
                raise
            if answer.error_code:
                self._on_group_error(answer.error_code)
                if answer.error_code not in FENCING_ERRORS:
                    raise error_for_code(answer.error_code)

    def poll_called(self) -> None:
        self.polled.set()

    def rejoin_soon(self) -> None:
        self.needs_join = True
        self._wake.set()

    async def leave(self, reason: str = "the consumer is closing") -> None:
        """LeaveGroup (best effort, one attempt within request.timeout.ms); the assignment is
        revoked first so the callbacks see it go."""
        await self._revoke()
        self.active = trio.Event()
        self.needs_join = True
        if not self.member_id or self.consumer.coordinator is None:
            self.member_id, self.generation = "", -1
            return
        body = {"group_id": self.group, "member_id": self.member_id,
                "members": [{"member_id": self.member_id, "group_instance_id": self.config["group.instance.id"],
                             "reason": reason}]}
        try:
            await self.consumer.net.request(self.consumer.coordinator, ApiKey.LEAVE_GROUP, body)
        except KafkaError:
            pass
        self.member_id, self.generation = "", -1

    # -- commits -----------------------------------------------------------------------------------
    async def commit(self, offsets: dict, request_timeout: float) -> None:
        """OffsetCommit as this member of this generation; fencing errors are CommitFailedException."""
        node = await self._coordinator()
        body = {"group_id": self.group, "generation_id_or_member_epoch": self.generation, "member_id": self.member_id,
                "group_instance_id": self.config["group.instance.id"], "retention_time_ms": -1, "topics": [
                    {"name": t, "partitions": [{"partition_index": tp.partition, "committed_offset": o,
                                                "committed_leader_epoch": -1, "committed_metadata": ""}
                                               for tp, o in offsets.items() if tp.topic == t]}
                    for t in sorted({tp.topic for tp in offsets})]}
        try:
            answer = await self.consumer.net.request(node, ApiKey.OFFSET_COMMIT, body, timeout=request_timeout)
        except KafkaError:
            self.consumer.coordinator = None
            raise
        for t in answer.topics:
            for p in t.partitions:
                if p.error_code in FENCING_ERRORS:
                    self._on_group_error(p.error_code)
                    self._wake.set()
                    raise CommitFailedException(
                        f"commit of {len(offsets)} offset(s) for group '{self.group}' refused with "
                        f"{error_for_code(p.error_code).name}: this member (generation {body['generation_id_or_member_epoch']}) "
                        f"is no longer in the group's current generation — its partitions may belong to another "
                        f"member now (a rebalance, or max.poll.interval.ms / session.timeout.ms passed); rejoin by "
                        f"polling, then commit again")
                if p.error_code in COORDINATOR_ERRORS:
                    self.consumer.coordinator = None
                if p.error_code:
                    raise error_for_code(p.error_code)
