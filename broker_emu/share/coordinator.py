"""Share groups in the cluster (KIP-932): the group coordinator's side (membership, assignment,
session timeouts) and the share-partition leaders' side (in-flight records, share sessions).

Kafka splits these between the group coordinator, the share coordinator (which persists each share
partition's state in ``__share_group_state``) and ``SharePartitionManager`` on each leader. The
emulator keeps one in-memory state per cluster: a share partition lives as long as the cluster,
whichever broker leads it (docs/share-groups.md says what is not emulated).

Settings come from the group's config override, else the broker's ``group.share.*``
(``GroupConfigManager``), read at each use so an IncrementalAlterConfigs on the group takes effect.
Timers are the cluster's scheduler on trio's clock: exact in virtual time.
"""

from __future__ import annotations

from typing import Any, Protocol

import trio

from broker_emu.share.groups import (
    LEAVE_EPOCH,
    HeartbeatError,
    ShareGroup,
    ShareMember,
    describe_assignment,
    simple_assignment,
    validate,
    wire_assignment,
)
from broker_emu.share.partition import Hooks, SharePartition
from broker_emu.share.sessions import ShareSessions
from client.errors import ErrorCode as E


class ShareHost(Protocol):
    """What share groups read of the cluster."""
    config: dict[str, Any]
    scheduler: Any
    trace: Any
    group_configs: Any
    groups: Any
    topics: dict[str, Any]
    fetch_purgatory: Any

    def coordinator_for(self, group_id: str) -> int: ...
    def topic_by_id(self, topic_id: Any) -> Any: ...
    def partition(self, topic: str, index: int) -> Any: ...


def fenced_message(received: int, known: int, previous: int) -> str:
    """``throwIfShareGroupMemberEpochIsInvalid``'s words."""
    if received > known:
        return (f"The share group member has a greater member epoch ({received}) than the one known by the group "
                f"coordinator ({known}). The member must abandon all its partitions and rejoin.")
    return (f"The share group member has a smaller member epoch ({received}) than the one known by the group "
            f"coordinator ({known}), and it does not match the previous member epoch ({previous}). The member must "
            f"abandon all its partitions and rejoin.")


class ShareCoordinator:
    def __init__(self, cluster: ShareHost):
        self.cluster = cluster
        self.groups: dict[str, ShareGroup] = {}
        self.sessions = ShareSessions()
        self.partitions: dict[tuple[str, str, int], SharePartition] = {}

    # -- settings ---------------------------------------------------------------------------------
    def setting(self, group_id: str, name: str) -> int:
        return self.cluster.group_configs.value(group_id, name, lambda broker: self.cluster.config[broker])

    def lock_ms(self, group_id: str) -> int:
        return self.setting(group_id, "share.record.lock.duration.ms")

    # -- membership (the group coordinator) -------------------------------------------------------
    def heartbeat(self, *, group_id: str, member_id: str, epoch: int, rack_id: str | None,
                  subscribed: list[str] | None, client_id: str, client_host: str, broker_id: int) -> dict[str, Any]:
        interval = self.setting(group_id, "share.heartbeat.interval.ms") if group_id else 0
        answer = {"error_code": E.NONE, "error_message": None, "member_id": member_id, "member_epoch": 0,
                  "heartbeat_interval_ms": interval, "assignment": None}
        try:
            validate(group_id, member_id, epoch, subscribed)
            if self.cluster.coordinator_for(group_id) != broker_id:
                raise HeartbeatError(E.NOT_COORDINATOR, "This is not the correct coordinator.")
            if group_id in self.cluster.groups.groups:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
            return answer | self._heartbeat(group_id, member_id, epoch, rack_id, subscribed, client_id, client_host)
        except HeartbeatError as exc:
            return answer | {"error_code": exc.code, "error_message": exc.message, "member_id": None,
                             "heartbeat_interval_ms": 0}

    def _heartbeat(self, group_id: str, member_id: str, epoch: int, rack_id: str | None,
                   subscribed: list[str] | None, client_id: str, client_host: str) -> dict[str, Any]:
        group = self.groups.get(group_id)
        if group is None and epoch != 0:   # getOrMaybeCreateShareGroup: only a join creates the group
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        member = group.members.get(member_id) if group else None
        if epoch == LEAVE_EPOCH:
            if group is None or member is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            self.remove_member(group, member_id, "left")
            return {"member_epoch": LEAVE_EPOCH}
        if epoch > 0 and member is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        if member is not None and epoch not in (0, member.epoch, member.previous_epoch):
            raise HeartbeatError(E.FENCED_MEMBER_EPOCH, fenced_message(epoch, member.epoch, member.previous_epoch))
        group = group or self.groups.setdefault(group_id, ShareGroup(group_id))
        if member is None:
            member = group.members[member_id] = ShareMember(member_id, 0, list(subscribed or []), client_id,
                                                            client_host, rack_id)
            self._trace_epoch(group, "member joined")
        elif subscribed is not None and sorted(subscribed) != sorted(member.subscribed):
            member.subscribed = list(subscribed)
            self._trace_epoch(group, "subscription changed")
        if epoch == 0:
            member.sent_epoch = -1
        self._reassign(group)
        self._initialize(group)
        self._touch(group, member)
        if member.epoch != group.epoch:
            member.previous_epoch, member.epoch = member.epoch, group.epoch
        member.assignment = group.target.get(member_id, {})
        out: dict[str, Any] = {"member_epoch": member.epoch}
        if member.sent_epoch != member.epoch:
            out["assignment"] = wire_assignment(member.assignment)
            member.sent_epoch = member.epoch
        return out

    def _trace_epoch(self, group: ShareGroup, reason: str) -> None:
        group.epoch += 1
        self.cluster.trace.emit("group_epoch", details={"group": group.group_id, "group_epoch": group.epoch,
                                                         "reason": reason, "type": "share"})

    def _reassign(self, group: ShareGroup) -> None:
        partitions_of = {name: (t.topic_id, len(t.partitions)) for name, t in self.cluster.topics.items()}
        target = simple_assignment(group.members, partitions_of)
        if target != group.target:
            if group.assignment_epoch == group.epoch:   # the topics changed under a stable membership
                self._trace_epoch(group, "metadata changed")
            group.target, group.assignment_epoch = target, group.epoch
            self.cluster.trace.emit("group_target_assignment", details={
                "group": group.group_id, "assignment_epoch": group.epoch, "assignor": "simple", "type": "share",
                "targets": {m: {str(t): ps for t, ps in a.items()} for m, a in target.items()}})
        group.assignment_epoch = group.epoch

    def _initialize(self, group: ShareGroup) -> None:
        """Every partition of the topics the members subscribe to gets share-group state
        (``maybeCreateInitializeShareGroupStateRequest``), kept after the members go."""
        for name in {t for m in group.members.values() for t in m.subscribed}:
            topic = self.cluster.topics.get(name)
            if topic is not None:
                group.initialized.setdefault(topic.topic_id, set()).update(range(len(topic.partitions)))

    def _touch(self, group: ShareGroup, member: ShareMember) -> None:
        if member.timer is not None:
            member.timer.cancel()
        timeout_ms = self.setting(group.group_id, "share.session.timeout.ms")
        member.timer = self.cluster.scheduler.call_at(trio.current_time() + timeout_ms / 1000.0,
                                                      lambda: self._session_expired(group, member.member_id, timeout_ms))

    def _session_expired(self, group: ShareGroup, member_id: str, timeout_ms: int) -> None:
        if member_id in group.members:
            self.cluster.trace.emit("group_member_fenced", details={"group": group.group_id, "member": member_id,
                                                                     "reason": "session", "timeout_ms": timeout_ms,
                                                                     "type": "share"})
            self.remove_member(group, member_id, "session timeout")

    def remove_member(self, group: ShareGroup, member_id: str, reason: str) -> None:
        """A member that left or was fenced, at the group coordinator: the group is assigned again.
        Nothing on the partition leaders hears of it (in Kafka 4.4 only ``ShareSessionCache``
        notifies ``SharePartitionManager``'s ``ShareGroupListener``): the member's share sessions
        stay until their final epoch (``session_closed``) or their connection closes
        (``connection_closed``), and the records it holds until then, or until their locks run out."""
        member = group.members.pop(member_id)
        if member.timer is not None:
            member.timer.cancel()
        self._trace_epoch(group, f"member {reason}")
        self._reassign(group)

    def session_closed(self, broker_id: int, group_id: str, member: str) -> None:
        """A ShareFetch or ShareAcknowledge at the final epoch, its acknowledgements applied: the
        session ends and what the member still holds on this broker's share partitions goes back
        (KafkaApis calls ``SharePartitionManager.releaseSession`` at epoch -1)."""
        self.sessions.close(broker_id, group_id, member)
        self._release_on(broker_id, group_id, member, "session closed")

    def _release_on(self, broker_id: int, group_id: str, member: str, reason: str) -> None:
        for (g, topic, index), sp in self.partitions.items():
            p = self.cluster.partition(topic, index)
            if g == group_id and p is not None and p.leader == broker_id:
                sp.release_member(member, reason)

    def connection_closed(self, broker_id: int, conn: int) -> None:
        """A member's share session ends with the connection that opened it, and the member's
        acquired records on that broker's share partitions go back at once, not at their locks'
        expiry: Kafka's ShareSessionCache.ClientConnectionDisconnectListener ->
        maybeRemoveAndNotifyListenersOnMemberLeave -> SharePartitionManager's ShareGroupListener
        (measured on Kafka 4.4: a client that gave up on a ShareAcknowledge and closed its
        connection had its record redelivered before the lock ran out)."""
        for group_id, member in self.sessions.connection_closed(broker_id, conn):
            self._release_on(broker_id, group_id, member, "disconnect")

    def describe(self, group_id: str, broker_id: int) -> dict[str, Any]:
        base: dict[str, Any] = {"error_code": E.NONE, "error_message": None, "group_id": group_id, "group_state": "",
                "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": []}
        if self.cluster.coordinator_for(group_id) != broker_id:
            return base | {"error_code": E.NOT_COORDINATOR}
        group = self.groups.get(group_id)
        if group is None:
            return base | {"error_code": E.GROUP_ID_NOT_FOUND, "error_message": f"Group {group_id} not found."}

        def name_of(tid: Any) -> str:
            topic = self.cluster.topic_by_id(tid)
            return topic.name if topic else ""
        members = [{"member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.epoch, "client_id": m.client_id,
                    "client_host": m.client_host, "subscribed_topic_names": list(m.subscribed),
                    "assignment": {"topic_partitions": describe_assignment(m.assignment, name_of)}}
                   for m in group.members.values()]
        return base | {"group_state": group.state, "group_epoch": group.epoch,
                       "assignment_epoch": group.assignment_epoch, "assignor_name": "simple", "members": members}

    # -- share partitions (the leaders' SharePartitionManager) ------------------------------------
    def share_partition(self, group_id: str, topic: str, index: int) -> SharePartition:
        """The group's share partition, made on first use with its start offset from
        ``share.auto.offset.reset`` (latest by default: records produced before are not seen)."""
        key = (group_id, topic, index)
        sp = self.partitions.get(key)
        topic_id = self.cluster.topics[topic].topic_id
        if sp is None or sp.topic_id != topic_id:
            p = self.cluster.partition(topic, index)
            reset = self.cluster.group_configs.text(group_id, "share.auto.offset.reset")
            start = p.log.log_start_offset if reset != "latest" else p.high_watermark
            sp = self.partitions[key] = SharePartition(group_id, topic, index, start, self._hooks(p.key),
                                                       topic_id=topic_id)
        sp.delivery_count_limit = self.setting(group_id, "share.delivery.count.limit")
        return sp

    def _hooks(self, partition_key: Any) -> Hooks:
        cluster = self.cluster

        def emit(kind: str, details: dict[str, Any]) -> None:
            cluster.trace.emit(kind, details=details)

        def available() -> None:   # released or expired records wake the share fetches waiting on them
            cluster.fetch_purgatory.check_and_complete(partition_key)
        return Hooks(now_s=trio.current_time, ms_at=cluster.trace.ms_at, call_at=cluster.scheduler.call_at,
                     emit=emit, available=available)

    def describe_state(self) -> dict[str, Any]:
        """For tests and the console: every share partition's records, every session."""
        return {"partitions": {f"{g}/{t}-{i}": sp.describe() for (g, t, i), sp in self.partitions.items()},
                "sessions": self.sessions.describe()}

