"""Partition reassignments (KIP-455; Kafka's ReplicationControlManager.changePartitionReassignment /
cancelPartitionReassignment and PartitionReassignmentReplicas): the target replicas join the
partition as followers that start empty and copy the log at the replication's pace
(``emu.replication.delay.ms`` and per-follower modes); once every added replica is in the ISR the
reassignment completes — the replicas become the target, the removed ones leave the ISR, and a
removed leader hands over to the first target replica in the ISR. Cancelling takes the added
replicas away again. Without added replicas (a reordering, or only removals) it completes at once.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol

from broker_emu.trace import Kind, Trace


class ReassigningCluster(Protocol):
    """What a reassignment reads and drives of the cluster (a Protocol: the cluster imports this
    module)."""

    @property
    def brokers(self) -> Mapping[int, Any]: ...

    @property
    def trace(self) -> Trace: ...

    @property
    def replication(self) -> Any: ...

    def is_alive(self, broker_id: int) -> bool: ...

    def move_leader(self, topic: str, partition: int, broker_id: int) -> None: ...


class ReassignmentError(Exception):
    def __init__(self, code: int, message: str | None):
        super().__init__(message)
        self.code, self.message = code, message


def validate_target(cluster: ReassigningCluster, replicas: list[int]) -> None:
    """ReplicationControlManager.validateManualPartitionAssignment (no replication factor)."""
    from client.errors import ErrorCode as E

    if not replicas:
        raise ReassignmentError(E.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list.")
    previous = None
    for broker in sorted(replicas):
        if broker not in cluster.brokers:
            raise ReassignmentError(E.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes broker "
                                    f"{broker}, but no such broker is registered.")
        if broker == previous:
            raise ReassignmentError(E.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes the broker "
                                    f"{broker} more than once.")
        previous = broker


def start(cluster: ReassigningCluster, p: Any, target: list[int]) -> None:
    """Stage 1: every replica of both, the target first (PartitionReassignmentReplicas)."""
    original = [r for r in p.replicas if r not in p.adding_replicas]
    p.adding_replicas = [r for r in target if r not in original]
    p.removing_replicas = [r for r in original if r not in target]
    p.replicas = list(target) + [r for r in original if r not in target]
    for r in p.adding_replicas:
        p.follower_leo.setdefault(r, 0)
    cluster.trace.emit(Kind.REASSIGNMENT, details={"topic": p.topic, "partition": p.index, "target": list(target),
                                                   "adding": p.adding_replicas, "removing": p.removing_replicas})
    maybe_complete(cluster, p)
    cluster.replication.resync(p)


def cancel(cluster: ReassigningCluster, p: Any) -> None:
    """PartitionReassignmentRevert: the added replicas go; the original replicas stay."""
    adding = set(p.adding_replicas)
    p.replicas = [r for r in p.replicas if r not in adding]
    p.isr = [r for r in p.isr if r not in adding] or p.isr
    p.adding_replicas, p.removing_replicas = [], []
    cluster.trace.emit(Kind.REASSIGNMENT, details={"topic": p.topic, "partition": p.index, "cancelled": True,
                                                   "replicas": list(p.replicas)})


def in_progress(p: Any) -> bool:
    return bool(p.adding_replicas or p.removing_replicas)


def maybe_complete(cluster: ReassigningCluster, p: Any) -> None:
    """Stage 3 once the ISR holds every added replica (or, with none added, one that stays)."""
    if not in_progress(p):
        return
    staying = [r for r in p.isr if r not in p.removing_replicas]
    if not set(p.adding_replicas) <= set(p.isr) or not staying:
        return
    removing = set(p.removing_replicas)
    p.replicas = [r for r in p.replicas if r not in removing]
    p.isr = [r for r in p.isr if r not in removing]
    for r in removing:
        p.follower_leo.pop(r, None)
        p.last_caught_up.pop(r, None)
    p.adding_replicas, p.removing_replicas = [], []
    cluster.trace.emit(Kind.REASSIGNMENT, details={"topic": p.topic, "partition": p.index, "completed": True,
                                                   "replicas": list(p.replicas), "isr": list(p.isr)})
    if p.leader in removing or not cluster.is_alive(p.leader):
        leader = next((r for r in p.replicas if r in p.isr and cluster.is_alive(r)), None)
        if leader is not None:
            cluster.move_leader(p.topic, p.index, leader)
