"""What a classic group member watches in its metadata between rebalances, sans-io.

Java's classic ``ConsumerCoordinator`` (kafka-clients 4.4), with the parts of
``SubscriptionState`` it reads. At each poll the coordinator looks at the metadata
(``maybeUpdateSubscriptionMetadata``): when its version moved, a pattern subscription is matched
again against every topic it shows (``updatePatternSubscription``), and a ``MetadataSnapshot`` is
taken of the partitions of the topics the member watches (``SubscriptionState.metadataTopics``:
its subscription and, for the leader, every member's). Then ``rejoinNeededOrPending`` asks for a
rejoin when

- this member assigned the current generation and the snapshot it assigned with
  (``assignmentSnapshot``) no longer matches: "cached metadata has changed" — a topic gained
  partitions, or a subscribed topic appeared or went away. Only the leader watches this
  (``onJoinComplete`` drops the snapshot of a member that did not assign);
- the subscription differs from the one it joined with (``joinedSubscription``): "subscription
  has changed" — a pattern matched a new topic, or lost one, on any member.

A snapshot counts partitions only: Java's ``PartitionRackInfo`` also compares the replicas'
racks, and only when client.rack is set, which this client does not support.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple


class MetadataSnapshot(NamedTuple):
    """Java's ``ConsumerCoordinator.MetadataSnapshot``: a metadata version, and the partition
    count of each watched topic the metadata knows (a topic it does not know is left out, as
    ``Cluster.partitionsForTopic`` gives it no partitions)."""
    version: int
    partitions: dict[str, int]

    def matches(self, other: MetadataSnapshot) -> bool:
        return self.version == other.version or self.partitions == other.partitions


NO_SNAPSHOT = MetadataSnapshot(-1, {})


class MetadataWatch:
    def __init__(self, topics: list[str] | None, pattern: re.Pattern | None):
        self.subscribe(topics, pattern)

    def subscribe(self, topics: list[str] | None, pattern: re.Pattern | None) -> None:
        """A new subscription; a pattern is matched at the next look at the metadata."""
        self.topics, self.pattern = topics, pattern
        self.subscription: list[str] = sorted(set(topics or []))   # SubscriptionState.subscription
        self.joined: list[str] | None = None      # joinedSubscription: what the last JoinGroup carried
        self.group: set[str] = set()              # groupSubscription: the leader's, every member's topics
        self.snapshot = NO_SNAPSHOT               # metadataSnapshot (taken again at the next look)
        self.assignment_snapshot: MetadataSnapshot | None = None

    def metadata_topics(self) -> set[str]:
        """SubscriptionState.metadataTopics: the subscription, with the group's for the leader."""
        return self.group | set(self.subscription)

    def on_metadata(self, version: int, partitions: Mapping[str, int], internal: Iterable[str] = ()) -> None:
        """ConsumerCoordinator.maybeUpdateSubscriptionMetadata: ``partitions`` is every topic the
        metadata knows with its partition count, as of ``version``. A pattern never matches an
        ``internal`` topic (ConsumerMetadata.retainTopic with exclude.internal.topics=true,
        Java's default and this client's only behaviour)."""
        if version <= self.snapshot.version:
            return
        if self.pattern is not None:   # updatePatternSubscription
            hidden = set(internal)
            self.subscription = sorted(t for t in partitions if t not in hidden and self.pattern.fullmatch(t))
        watched = self.metadata_topics()
        self.snapshot = MetadataSnapshot(version, {t: n for t, n in partitions.items() if t in watched and n > 0})

    # -- the rebalance ---------------------------------------------------------------------------
    def joining(self) -> list[str]:
        """The topics a JoinGroup carries (ConsumerCoordinator.metadata sets joinedSubscription);
        onJoinPrepare has reset the group subscription."""
        self.group = set()
        self.joined = list(self.subscription)
        return self.joined

    def group_subscribe(self, topics: Iterable[str]) -> None:
        """The leader watches every member's topics (updateGroupSubscription)."""
        self.group = set(topics) | set(self.subscription)

    def assigned(self) -> None:
        """The leader assigned with the current snapshot (onLeaderElected)."""
        self.assignment_snapshot = self.snapshot

    def join_completed(self, leader: bool) -> None:
        """onJoinComplete: only the leader watches for partition changes."""
        if not leader:
            self.assignment_snapshot = None

    def rejoin_reason(self) -> str | None:
        """ConsumerCoordinator.rejoinNeededOrPending's reason (the short one Java's JoinGroup
        carries), if one holds."""
        if self.assignment_snapshot is not None and not self.assignment_snapshot.matches(self.snapshot):
            return "cached metadata has changed"
        if self.joined is not None and self.joined != self.subscription:
            return "subscription has changed"
        return None
