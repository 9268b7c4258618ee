"""``__consumer_offsets`` as a topic clients can see.

Kafka's group coordinator for a group is the leader of the ``__consumer_offsets`` partition the
group id hashes to, and the broker creates that topic the first time a client looks for a group
coordinator (``KafkaApis.handleFindCoordinatorRequest`` → ``AutoTopicCreationManager``). From then
on an all-topics Metadata lists it with ``is_internal`` set, and ``listTopics()`` in several clients
returns it (docs/differences.md, difference 9).

The emulator keeps group state and offsets in ``broker_emu.groups``, not as records, so this topic
stays empty; what it adds is the topic in Metadata, with the partition leaders being the group
coordinators ``Cluster.coordinator_for`` names. Clients may not append to it
(``ReplicaManager.appendToLocalLog``: "Cannot append to internal topic").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Protocol

from broker_emu import cluster_shape

if TYPE_CHECKING:
    from broker_emu.topics import Topic


class OffsetsHost(Protocol):
    """What the offsets topic's placement reads and drives of the cluster (a Protocol: the
    cluster imports this module)."""

    @property
    def brokers(self) -> Mapping[int, Any]: ...

    @property
    def config(self) -> Mapping[str, Any]: ...

    @property
    def topics(self) -> Mapping[str, "Topic"]: ...

    def create_topic(self, name: str, partitions: int | None = None, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None, assignments: list[list[int]] | None = None) -> "Topic": ...

    def offsets_partition_leader(self, p: int) -> int: ...

    def move_leader(self, topic: str, partition: int, broker_id: int) -> None: ...

# Kafka's Topic.isInternal: clients may not write to these, and Metadata flags them
KAFKA_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
OFFSETS_TOPIC = "__consumer_offsets"
# Kafka's GroupCoordinatorConfig defaults for the topic's own configs
OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}


def offsets_placement(cluster: OffsetsHost) -> list[list[int]]:
    """Partition p's replicas are brokers p, p+1, ... in id order (as many as
    offsets.topic.replication.factor allows), so its preferred leader is broker p mod n."""
    ids = sorted(cluster.brokers)
    rf = min(cluster.config["offsets.topic.replication.factor"], len(ids))
    return [[ids[(p + k) % len(ids)] for k in range(rf)] for p in range(cluster.config["offsets.topic.num.partitions"])]


def ensure_offsets_topic(cluster: OffsetsHost) -> "Topic":
    """The topic, created on first use with every partition led by its coordinator."""
    topic = cluster.topics.get(OFFSETS_TOPIC)
    if topic is None:
        topic = cluster.create_topic(OFFSETS_TOPIC, assignments=offsets_placement(cluster), configs=dict(OFFSETS_TOPIC_CONFIGS))
        follow_coordinators(cluster)
    return topic


def follow_coordinators(cluster: OffsetsHost) -> None:
    """Keep each partition's leader on the broker that coordinates its groups. After a stop this
    is the election Kafka makes (the first live replica in assignment order,
    ``PartitionChangeBuilder``); after a restart Kafka moves leadership back by its preferred
    leader election (``auto.leader.rebalance.enable``, checked every
    ``leader.imbalance.check.interval.seconds``), the emulator at once, as its groups do."""
    topic = cluster.topics.get(OFFSETS_TOPIC)
    if topic is None:
        return
    for p in topic.partitions:
        owner = cluster.offsets_partition_leader(p.index)
        if owner >= 0 and owner != p.leader:
            if owner not in p.isr:
                p.isr.append(owner)
                p.isr.sort()
                cluster_shape.changed()
            cluster.move_leader(OFFSETS_TOPIC, p.index, owner)
