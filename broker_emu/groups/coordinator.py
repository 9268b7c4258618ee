"""The group coordinator: every group API the handlers call, on one object, ``GroupCoordinator``
(what ``broker_emu.runtime`` attaches as ``cluster.groups``). It only wires the collaborators
that do the work and delegates to them, each owning its own state:

- ``failover.Failover``: which broker coordinates a group, and reloading it when that moved;
- ``membership.ClassicMembership``: JoinGroup / SyncGroup / Heartbeat / LeaveGroup, answered by
  ``classic.ClassicGroups`` (a classic group's rebalance) or by the classic members of a consumer group;
- ``kip848.ConsumerGroups``: KIP-848 consumer groups (ConsumerGroupHeartbeat), with their classic
  members and the conversions between kinds of group (``classic_members.ClassicMembers``);
- ``offsets.OffsetStore``, ``txn_offsets.TxnOffsets``: committed and transactional offsets;
- ``views.GroupViews``: ListGroups / DescribeGroups and the snapshots; ``deletion.Deletion``.

The groups themselves are in one ``store.GroupStore``; every collaborator's keyed timers share
one heap, fired here, so that they fire in one deadline order. What the groups read of the
cluster is ``host.GroupHost``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import trio

from broker_emu.groups.classic import ClassicGroups, JoinRequest
from broker_emu.groups.consumer_state import ConsumerGroup
from broker_emu.groups.deletion import Deletion
from broker_emu.groups.failover import Failover
from broker_emu.groups.host import GroupHost, Settings, Topics
from broker_emu.groups.kip848 import ConsumerGroups, GroupHeartbeat
from broker_emu.groups.membership import ClassicMembership
from broker_emu.groups.offsets import FetchedOffsets, OffsetStore, OffsetToCommit
from broker_emu.groups.state import Reply
from broker_emu.groups.store import AnyGroup, GroupEvents, GroupStore
from broker_emu.groups.timers import Timers, fire_due
from broker_emu.groups.txn_offsets import TxnOffsets
from broker_emu.groups.views import GroupViews
from broker_emu.scheduler import DeadlineLoop, TimerHeap

__all__ = ["GroupCoordinator", "JoinRequest"]


class GroupCoordinator:
    def __init__(self, cluster: GroupHost):
        self.store = GroupStore()
        self._loop = DeadlineLoop(self.handle_timeouts, self.next_deadline)
        self._heap = TimerHeap(self._loop.wake)
        settings, events = Settings(cluster), GroupEvents(cluster.trace, self.store)
        # A coordinator move reloads the group on the side that knows its kind: bound late, since
        # both sides read groups through the failover.
        self.failover = Failover(self.store, cluster.coordinator_for, self._moved)
        self.classic = ClassicGroups(self.store, Timers(heap=self._heap), settings, events, cluster.rng)
        self.consumer = ConsumerGroups(self.store, Timers(heap=self._heap), settings, events, Topics(cluster),
                                       cluster.rng, self.failover, self.classic)
        self.membership = ClassicMembership(self.failover, settings, self.classic, self.consumer.classic_members)
        self.offsets = OffsetStore(self.store, self.failover, self.classic.touch_session)
        self.txn_offsets = TxnOffsets(self.store, self.failover)
        self.deletion = Deletion(self.store, self.failover, self.txn_offsets, self._forget_timers,
                                 self.consumer.subscribed)
        self.views = GroupViews(self.store, self.failover, self.classic.deadline, self.consumer.deadline,
                                lambda: (self.classic.armed() + self.consumer.armed(), self._heap.next_deadline()))

    @property
    def groups(self) -> dict[str, AnyGroup]:
        """Every group by id (tests and ``Cluster.wait_for`` read it)."""
        return self.store.groups

    # -- driver ------------------------------------------------------------------------------------
    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Fire timers at their deadlines on trio's clock (exact under MockClock autojump)."""
        await self._loop.run(task_status=task_status)

    def next_deadline(self) -> float:
        return self._heap.next_deadline()

    def handle_timeouts(self, now: float) -> int:
        return fire_due(self._heap, now)

    # -- wiring ------------------------------------------------------------------------------------
    def _moved(self, g: AnyGroup, now: float) -> AnyGroup | None:
        if isinstance(g, ConsumerGroup):
            return self.consumer.sessions_moved(g, now)
        return self.classic.reload(g, self.failover.coordinator_for(g.group_id), now)

    def _forget_timers(self, group_id: str) -> None:
        self.classic.forget_timers(group_id)
        self.consumer.forget_timers(group_id)

    # -- the API the handlers, the cluster and the tests call ---------------------------------------
    def validate(self, group_id: str | None, broker_id: int, *, allow_empty: bool = False) -> int | None:
        return self.failover.validate(group_id, broker_id, allow_empty=allow_empty)

    def group(self, group_id: str, now: float) -> AnyGroup | None:
        return self.failover.group(group_id, now)

    def broker_stopped(self, broker_id: int, now: float | None = None) -> None:
        self.failover.broker_stopped(broker_id, now)

    def broker_started(self, broker_id: int, now: float | None = None) -> None:
        self.failover.broker_started(broker_id, now)

    def commit_offsets(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                       offsets: list[OffsetToCommit], api_version: int, broker_id: int, now: float) -> list[int]:
        return self.offsets.commit_offsets(group_id=group_id, generation_id=generation_id, member_id=member_id,
                                           group_instance_id=group_instance_id, offsets=offsets,
                                           api_version=api_version, broker_id=broker_id, now=now)

    def fetch_offsets(self, *, group_id: str, topics: Iterable[tuple[str, list[int]]] | None, broker_id: int,
                      now: float, member_id: str | None = None, member_epoch: int = -1) -> FetchedOffsets:
        return self.offsets.fetch_offsets(group_id=group_id, topics=topics, broker_id=broker_id, now=now,
                                          member_id=member_id, member_epoch=member_epoch)

    def txn_commit_offsets(self, *, group_id: str, producer_id: int, offsets: list[OffsetToCommit],
                           broker_id: int, now: float) -> list[int]:
        return self.txn_offsets.txn_commit_offsets(group_id=group_id, producer_id=producer_id, offsets=offsets,
                                                   broker_id=broker_id, now=now)

    def end_txn_offsets(self, group_id: str, producer_id: int, commit: bool, now: float | None = None) -> None:
        self.txn_offsets.end_txn_offsets(group_id, producer_id, commit, now)

    def unstable(self, group_id: str, topic: str, partition: int) -> bool:
        return self.txn_offsets.unstable(group_id, topic, partition)

    def delete_groups(self, group_ids: list[str], *, broker_id: int, now: float) -> list[tuple[str, int]]:
        return self.deletion.delete_groups(group_ids, broker_id=broker_id, now=now)

    def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]], *, broker_id: int,
                       now: float) -> tuple[int, list[tuple[str, list[tuple[int, int]]]]]:
        return self.deletion.delete_offsets(group_id, topics, broker_id=broker_id, now=now)

    def list_groups(self, *, broker_id: int, states: list[str], types: list[str], now: float) -> list[AnyGroup]:
        return self.views.list_groups(broker_id=broker_id, states=states, types=types, now=now)

    def describe_group(self, group_id: str, *, broker_id: int, now: float) -> tuple[int, dict[str, Any]]:
        return self.views.describe_group(group_id, broker_id=broker_id, now=now)

    def statistics(self) -> dict[str, Any]:
        return self.views.statistics()

    def describe(self, group_id: str | None = None) -> Any:
        return self.views.describe(group_id)

    def join_group(self, req: JoinRequest, reply: Reply, *, broker_id: int, now: float) -> None:
        self.membership.join_group(req, reply, broker_id=broker_id, now=now)

    def sync_group(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None, assignments: dict[str, bytes],
                   reply: Reply, broker_id: int, now: float) -> None:
        self.membership.sync_group(group_id=group_id, generation_id=generation_id, member_id=member_id,
                                   group_instance_id=group_instance_id, protocol_type=protocol_type,
                                   protocol_name=protocol_name, assignments=assignments, reply=reply,
                                   broker_id=broker_id, now=now)

    def heartbeat(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                  broker_id: int, now: float) -> int:
        return self.membership.heartbeat(group_id=group_id, generation_id=generation_id, member_id=member_id,
                                         group_instance_id=group_instance_id, broker_id=broker_id, now=now)

    def leave_group(self, *, group_id: str, members: list[tuple[str, str | None]], broker_id: int,
                    now: float) -> tuple[int, list[int]]:
        return self.membership.leave_group(group_id=group_id, members=members, broker_id=broker_id, now=now)

    def consumer_group_heartbeat(self, hb: GroupHeartbeat, *, broker_id: int, now: float) -> dict[str, Any]:
        return self.consumer.consumer_group_heartbeat(hb, broker_id=broker_id, now=now)

    def describe_consumer_group(self, group_id: str, *, broker_id: int, now: float) -> dict[str, Any]:
        return self.consumer.describe_consumer_group(group_id, broker_id=broker_id, now=now)
