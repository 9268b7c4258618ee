"""Cluster metadata: who leads which partition, and when to ask again.

``ClusterMetadata`` is sans-io (every method takes ``now``): the brokers, the topics we care about
with each partition's leader and leader epoch, and the refresh schedule — Java's Metadata rules:
an update is due when someone asked for one (a disconnect, NOT_LEADER_OR_FOLLOWER,
UNKNOWN_TOPIC_OR_PARTITION, a new topic) or when metadata.max.age.ms has passed since the last
successful refresh, but never sooner than the refresh backoff after the previous attempt
(retry.backoff.ms ×2 per consecutive failure, ±20 %, up to retry.backoff.max.ms, KIP-580).
Leader epochs only move forward: an answer from a broker with an older view of a partition than
we already have is ignored for that partition (KIP-320), so a lagging broker cannot send us back
to a former leader.

``MetadataUpdater`` is its trio side: ``refresh()`` asks the best candidate broker and, if that
one fails, each other known broker and then each bootstrap address in turn; ``run()`` keeps the
metadata fresh in the background; ``wait_for_topic()`` is what ``send()`` blocks on (bounded by
max.block.ms). A round also ends a request early when the client is due to rebootstrap
(metadata.recovery.rebootstrap.trigger.ms, KIP-1102; client/rebootstrap.py) and goes on with the
bootstrap addresses; an answer that names no broker, or says REBOOTSTRAP_REQUIRED, counts as a
failure of that broker (``NetworkClient.metadata_answered``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import trio

from client.backoff import ExponentialBackoff
from client.errors import (
    ErrorCode,
    IllegalSaslStateError,
    KafkaError,
    RetriableError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
    error_for_code,
    error_name,
)
from client.exceptions import ConnectionFailedError, ConnectionSetupTimeoutException, MaxBlockTimeoutException
from client.network import NetworkClient
from client.protocol import ApiKey
from kafka_common.wakeup import Wakeup

# topic errors after which waiting longer cannot help
AUTHENTICATION_ERRORS = (SaslAuthenticationFailedError, UnsupportedSaslMechanismError, IllegalSaslStateError)
FATAL_TOPIC_ERRORS = frozenset({ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.TOPIC_AUTHORIZATION_FAILED})
# partition errors after which the leader we used is probably wrong: refresh before retrying
# (Java's Errors marked InvalidMetadataException, as the producer and consumer both treat them)
STALE_METADATA_ERRORS = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH,
})

# partition errors whose answer still names the leader (REPLICA_NOT_AVAILABLE: a follower is down)
_LEADER_NAMED = frozenset({ErrorCode.NONE, ErrorCode.REPLICA_NOT_AVAILABLE})


@dataclass(slots=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)


class ClusterMetadata:
    def __init__(self, max_age_s: float, refresh_backoff: ExponentialBackoff):
        self.max_age_s = max_age_s
        self.refresh_backoff = refresh_backoff
        self.brokers: dict[int, tuple[str, int]] = {}
        self.topics: dict[str, list[PartitionInfo]] = {}
        self.topic_errors: dict[str, int] = {}
        self.topic_names: dict[Any, str] = {}   # topic id (Metadata v10+) -> name, for KIP-848 assignments
        self.interest: set[str] = set()
        # every topic, not the interest: a consumer's pattern subscription is matched against all
        # (Java's ConsumerMetadata.newMetadataRequestBuilder: MetadataRequest.Builder.allTopics)
        self.all_topics = False
        self.internal: set[str] = set()      # topics an answer marked is_internal (__consumer_offsets, ...)
        self.last_success = float("-inf")
        self.allowed_at = float("-inf")      # refresh backoff after the last attempt
        self.failures = 0
        self.need_update = True              # nothing known yet
        self.version = 0                     # bumped by every applied answer

    def forget_cluster(self) -> None:
        """A rebootstrap: forget the brokers and every partition's leader (Java's
        ``Metadata.rebootstrap`` replaces the snapshot with the bootstrap addresses alone), so
        nothing is sent to a broker the client no longer has an address for until an answer from
        bootstrap.servers names the cluster again."""
        self.brokers.clear()
        self.topics.clear()
        self.topic_errors.clear()
        self.need_update = True
        self.version += 1

    # -- asking for updates ----------------------------------------------------------------
    def request_update(self) -> None:
        self.need_update = True

    def add_interest(self, topics: Iterable[str]) -> None:
        new = set(topics) - self.interest
        if new:
            self.interest |= new
            if any(t not in self.topics for t in new):
                self.need_update = True

    def expired(self, now: float) -> bool:
        """metadata.max.age.ms has passed since the last successful refresh (Java's
        ``Metadata.timeToNextUpdate`` reaching 0 without anyone asking)."""
        return now >= self.last_success + self.max_age_s

    def next_update_at(self) -> float:
        """When the next refresh is due (``-inf``: now)."""
        due = float("-inf") if self.need_update else self.last_success + self.max_age_s
        return max(due, self.allowed_at)

    # -- applying answers ------------------------------------------------------------------
    def failed(self, now: float) -> None:
        self.allowed_at = now + self.refresh_backoff.backoff(self.failures)
        self.failures += 1

    def update(self, md: Any, now: float, every_topic: bool = False) -> None:
        """Apply a Metadata answer (partitions whose leader epoch went backwards are kept).
        ``every_topic``: the answer to a request for all topics, so a topic it leaves out is gone
        (Java's Metadata builds its cache from each answer)."""
        self.brokers.update({b.node_id: (b.host, b.port) for b in md.brokers})
        if every_topic:
            named = {t.name for t in md.topics}
            for gone in [t for t in self.topics if t not in named]:
                del self.topics[gone]
        for t in md.topics:
            if t.error_code and not t.partitions:
                self.topic_errors[t.name] = t.error_code
                if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:   # gone, or never existed
                    self.topics.pop(t.name, None)
                continue
            self.topic_errors.pop(t.name, None)
            if getattr(t, "is_internal", False):
                self.internal.add(t.name)
            if getattr(t, "topic_id", None) is not None:
                self.topic_names[t.topic_id] = t.name
            known = {p.partition: p for p in self.topics.get(t.name, [])}
            self.topics[t.name] = [self._merge(t.name, p, known.get(p.partition_index))
                                   for p in sorted(t.partitions, key=lambda p: p.partition_index)]
        self.last_success = now
        self.failures = 0
        self.allowed_at = now + self.refresh_backoff.backoff(0)
        self.need_update = False
        self.version += 1

    @staticmethod
    def _merge(topic: str, p: Any, old: PartitionInfo | None) -> PartitionInfo:
        epoch = p.get("leader_epoch", -1)
        if old is not None and 0 <= epoch < old.leader_epoch:
            return old   # a stale view (KIP-320): keep what we know
        leader = p.leader_id if p.error_code in _LEADER_NAMED else -1
        return PartitionInfo(topic, p.partition_index, leader, epoch, list(p.replica_nodes), list(p.isr_nodes))

    def update_leader(self, topic: str, partition: int, leader: int, epoch: int) -> bool:
        """A newer leader learnt from a Produce/Fetch error (KIP-951); stale hints are ignored."""
        parts = self.topics.get(topic)
        if not parts or not 0 <= partition < len(parts) or leader < 0:
            return False
        old = parts[partition]
        if epoch <= old.leader_epoch:
            return False
        parts[partition] = PartitionInfo(topic, partition, leader, epoch, old.replicas, old.isr)
        self.version += 1
        return True

    # -- reading ---------------------------------------------------------------------------
    def partitions(self, topic: str) -> list[PartitionInfo] | None:
        return self.topics.get(topic)

    def leader(self, topic: str, partition: int) -> PartitionInfo | None:
        parts = self.topics.get(topic)
        return parts[partition] if parts and 0 <= partition < len(parts) else None


class MetadataUpdater:
    def __init__(self, net: NetworkClient, metadata: ClusterMetadata, allow_auto_create: bool = True):
        self.net, self.metadata, self.allow_auto_create = net, metadata, allow_auto_create
        self._wanted = Wakeup()
        self._changed = trio.Event()
        self.last_error: str | None = None
        # Java's Metadata.fatalError: an authentication failure ends the waits at once instead of
        # at max.block.ms, until a later refresh succeeds
        self.fatal: KafkaError | None = None
        self.fetch_in_progress = False
        self.fetch_listeners: list = []   # called when a Metadata request goes out and when it ends
        net.disconnect_listeners.append(lambda node: self.request_update())
        net.rebootstrap_listeners.append(self._forget_brokers)

    def _forget_brokers(self) -> None:
        self.metadata.forget_cluster()
        self.request_update()

    def update_due(self, now: float) -> bool:
        """Java's ``DefaultMetadataUpdater.isUpdateDue``: a refresh is wanted now and no Metadata
        request is out yet. ``NetworkClient.isReady`` then says no to every node, so a retry
        cannot overtake the refresh it asked for."""
        return (bool(self.metadata.interest) or self.metadata.all_topics) and not self.fetch_in_progress and self.metadata.next_update_at() <= now

    def _fetching(self, on: bool) -> None:
        self.fetch_in_progress = on
        for listener in list(self.fetch_listeners):
            listener()

    def request_update(self) -> None:
        self.metadata.request_update()
        self._wanted.set()

    def add_interest(self, topics: Iterable[str]) -> None:
        self.metadata.add_interest(topics)
        if self.metadata.need_update:
            self._wanted.set()

    async def refresh_for_fetch(self, request_timeout: float) -> None:
        """A fetcher's refresh when a partition it should fetch has no known leader: no sooner
        than the refresh backoff allows, bounded by one request timeout. A failure is left to the
        backoff ``refresh`` applied: the fetcher's next look tries again."""
        try:
            await trio.sleep_until(self.metadata.allowed_at)
            await self.refresh(deadline=trio.current_time() + request_timeout)
        except KafkaError:
            pass

    async def refresh(self, topics: Iterable[str] | None = None, deadline: float | None = None, *,
                      all_topics: bool = False) -> Any:
        """One Metadata round: the best candidate first (``NetworkClient.candidates``: a live,
        least-loaded node), then each other broker and bootstrap address until one answers or
        ``deadline`` passes. ``topics`` None means the topics of interest; ``all_topics`` asks
        for every topic (never creating one, as Java's MetadataRequest.Builder.allTopics)."""
        if all_topics or (topics is None and self.metadata.all_topics):
            body: dict[str, Any] = {"topics": None, "allow_auto_topic_creation": False}
        else:
            names = sorted(self.metadata.interest if topics is None else set(topics))
            body = {"topics": [{"name": t} for t in names], "allow_auto_topic_creation": self.allow_auto_create}
        last: KafkaError | None = None
        self.net.metadata_attempt()
        order, tried, rebootstraps = self.net.candidates(metadata=True), set(), len(self.net.rebootstraps)
        unreachable: set[int] = set()   # known brokers this round could not connect to
        while True:
            if len(self.net.rebootstraps) != rebootstraps:   # back to bootstrap.servers mid-round: ask them now
                order, rebootstraps = self.net.candidates(metadata=True), len(self.net.rebootstraps)
            node = next((n for n in order if n not in tried), None)
            if node is None and self.net.rebootstrap_if_none_available(frozenset(unreachable)):
                continue   # every known broker failed in this round: the bootstrap addresses are asked next
            if node is None or (deadline is not None and trio.current_time() >= deadline):
                break
            tried.add(node)
            try:
                md = await self._ask(node, body, deadline)
            except KafkaError as exc:
                last = exc
                if isinstance(exc, (ConnectionFailedError, ConnectionSetupTimeoutException)):
                    unreachable.add(node)
                if isinstance(exc, AUTHENTICATION_ERRORS):
                    self.fatal = exc
                    self.note_changed()
                continue
            unusable = self.net.metadata_answered(node, md)
            if unusable is not None:
                last = unusable
                if len(self.net.rebootstraps) != rebootstraps:
                    break   # REBOOTSTRAP_REQUIRED: the next attempt, after the refresh backoff, asks the bootstrap addresses
                continue
            self._apply(md, every_topic=body["topics"] is None)
            return md
        self.metadata.failed(trio.current_time())
        starving = self.net.describe_starving()
        self.last_error = (str(last) if last else "no broker could be asked") + (f"; {starving}" if starving else "")
        self._fetching(False)   # no longer due (backoff): whoever held back may go on
        # no broker asked at all: the round's time was up before the first (a poll's last
        # millisecond) or none is known yet. Retriable, as Java's metadata wait simply goes on
        # until the caller's timer expires; a poll's position reset then ends in the timeout it
        # swallows, not in an error out of poll()
        raise last or RetriableError("no broker to ask for metadata")

    async def _ask(self, node: int, body: dict[str, Any], deadline: float | None) -> Any:
        """One Metadata request, given up when the client is due to rebootstrap (it closes the
        connection: the request fails as disconnected and the round goes on)."""
        timeout = None
        if deadline is not None:
            timeout = min(deadline - trio.current_time(), self.net.config["request.timeout.ms"] / 1000)
        with trio.move_on_at(self.net.recovery.due_at()):
            await self.net.connection(node)
            # connected: the request is queued on the wire without a checkpoint in between
            self._fetching(True)
            try:
                return await self.net.request(node, ApiKey.METADATA, body, timeout=timeout)
            finally:
                self._fetching(False)
        self.net.rebootstrap()
        raise RetriableError(f"broker {node} gave no Metadata answer before the client rebootstrapped: "
                             f"{self.net.rebootstraps[-1][1]}")

    def _apply(self, md: Any, every_topic: bool = False) -> None:
        self.fatal = None
        self.metadata.update(md, trio.current_time(), every_topic)
        self.net.nodes.update(self.metadata.brokers)
        errors = {t: error_name(c) for t, c in self.metadata.topic_errors.items()}
        self.last_error = f"topic errors {errors}" if errors else None
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for_update(self) -> None:
        """Until the next Metadata answer is applied (or an out-of-band change is noted)."""
        await self._changed.wait()

    def note_changed(self) -> None:
        """Wake waiters after an out-of-band change (a KIP-951 leader hint)."""
        self._changed.set()
        self._changed = trio.Event()

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Keep the topics of interest fresh: refresh when asked (after the refresh backoff) and
        every metadata.max.age.ms."""
        task_status.started()
        while True:
            self._wanted.new_cycle()
            if self.metadata.interest or self.metadata.all_topics:
                due = self.metadata.next_update_at()
                if due <= trio.current_time():
                    try:
                        await self.refresh()
                    except KafkaError:
                        pass  # recorded in last_error; backoff applied
                    continue
                if not self.metadata.need_update:
                    await self._wanted.sleep_until(due)
                    continue
                await trio.sleep_until(due)
                continue
            await self._wanted.sleep_until(math.inf)

    async def wait_for_topic(self, topic: str, deadline: float, max_block_ms: int) -> list[PartitionInfo]:
        """Block until the topic's partitions are known, at most until ``deadline``
        (max.block.ms); an unknown topic keeps being asked for at the refresh backoff."""
        self.add_interest([topic])
        with trio.move_on_at(deadline):
            while True:
                parts = self.metadata.partitions(topic)
                if parts:
                    return parts
                if self.fatal is not None:
                    raise self.fatal
                code = self.metadata.topic_errors.get(topic)
                if code in FATAL_TOPIC_ERRORS:
                    raise error_for_code(code, f"topic '{topic}': {error_name(code)}")
                changed = self._changed
                self.request_update()
                await changed.wait()
        why = self.last_error or "no metadata answer yet"
        raise MaxBlockTimeoutException(max_block_ms, f"metadata of topic '{topic}' (not present in metadata after "
                                                     f"{max_block_ms} ms)", why)
