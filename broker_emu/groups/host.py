"""What the group coordinator reads of the cluster it runs in, as ``typing.Protocol`` types: the
real ``Cluster`` satisfies ``GroupHost`` structurally (mypy checks it where the runtime builds the
coordinator), a test's small fake does too, and nothing here imports the cluster.

Each collaborator takes only the narrower pieces it uses: the coordinator lookup, the topic
catalog, the broker settings, the trace, the random source.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping, Sized
from typing import Any, Protocol

from broker_emu.trace import Kind


class TopicView(Protocol):
    """One topic as the groups see it: its id (KIP-848 answers name topics by id) and its size."""

    @property
    def topic_id(self) -> uuid.UUID: ...

    @property
    def partitions(self) -> Sized: ...


class NamedTopic(TopicView, Protocol):
    @property
    def name(self) -> str: ...


class TraceSink(Protocol):
    def emit(self, kind: Kind, **fields: Any) -> Any: ...


class GroupSettings(Protocol):
    """Per-group overrides of the consumer-group settings (``broker_emu.group_configs``)."""

    def value(self, group_id: str, name: str, broker_setting: Callable[[str], Any]) -> int: ...


class GroupHost(Protocol):
    """Everything the group coordinator reads of the cluster."""

    @property
    def config(self) -> Mapping[str, Any]: ...

    @property
    def topics(self) -> Mapping[str, TopicView]: ...

    @property
    def rng(self) -> random.Random: ...

    @property
    def trace(self) -> TraceSink: ...

    @property
    def group_configs(self) -> GroupSettings: ...

    def coordinator_for(self, group_id: str) -> int: ...

    def topic_by_id(self, topic_id: uuid.UUID) -> NamedTopic | None: ...


CoordinatorLookup = Callable[[str], int]
"""``coordinator_for``: the broker coordinating a group, or -1 when none is alive."""


class Topics:
    """The topic catalog as the KIP-848 groups read it: which topics exist, their partition
    counts and ids."""

    def __init__(self, host: GroupHost) -> None:
        self._host = host

    def names(self) -> Mapping[str, TopicView]:
        return self._host.topics

    def __contains__(self, name: object) -> bool:
        return name in self._host.topics

    def partition_count(self, name: str) -> int:
        return len(self._host.topics[name].partitions)

    def topic_id(self, name: str) -> uuid.UUID:
        return self._host.topics[name].topic_id

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        topic = self._host.topic_by_id(topic_id)
        return topic.name if topic is not None else None


# Kafka's defaults, for a host whose config lacks them (a test's fake cluster).
CONFIG_DEFAULTS = {"group.initial.rebalance.delay.ms": 3000, "group.min.session.timeout.ms": 6000,
                   "group.max.session.timeout.ms": 1800000}


class Settings:
    """The broker's ``group.*`` settings, and a consumer group's own overrides of them."""

    def __init__(self, host: GroupHost) -> None:
        self._host = host

    def __call__(self, name: str) -> Any:
        return self._host.config.get(name, CONFIG_DEFAULTS.get(name))

    def of_group(self, group_id: str, name: str) -> int:
        """The group's config (IncrementalAlterConfigs on ConfigResource GROUP) or the broker's
        ``group.<name>``, as GroupMetadataManager reads groupConfigManager.groupConfig(groupId) first."""
        return self._host.group_configs.value(group_id, name, self)
