"""ElectLeaders v0-2 (KIP-460): the controller's preferred or unclean election, per partition
(ReplicationControlManager.electLeaders / electLeader), once the controller gets to it before
``timeout_ms`` (controller_deadline.py; past it, REQUEST_TIMED_OUT for the request and every
partition named).

- PREFERRED (0; v0 has no type and means it): the first replica of the assignment becomes leader if
  it is alive and in the ISR (PREFERRED_LEADER_NOT_AVAILABLE otherwise); ELECTION_NOT_NEEDED when it
  already leads.
- UNCLEAN (1): only for a partition without a live leader: the first live replica of the
  assignment leads, in or out of the ISR, and the ISR becomes just it (data it lacks is lost, as in
  Kafka); ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is alive.
- No partitions named (null): every partition of every topic, leaving out those answered
  ELECTION_NOT_NEEDED.
- Version profile 2.8 (ZooKeeper): the controller elects first; the broker then waits up to
  ``timeout_ms`` for the new leaders to reach its metadata cache (ReplicaManager.electLeaders,
  DelayedElectLeader), which takes ``emu.controller.delay.ms`` here: past it, each elected
  partition answers REQUEST_TIMED_OUT (no message, the request's own error NONE) and its leader
  has moved all the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker_emu.context import RequestContext
from broker_emu.handlers import kafka_message
from broker_emu.handlers.controller_deadline import controller_in_time, zookeeper_change_in_time
from broker_emu.registry import handles
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

if TYPE_CHECKING:
    from broker_emu.cluster import Cluster

PREFERRED, UNCLEAN = 0, 1


@handles(ApiKey.ELECT_LEADERS, 0, 2)
async def elect_leaders(ctx: RequestContext, req: Message) -> dict[str, Any]:
    cluster = ctx.cluster
    kind = req["election_type"] if ctx.api_version >= 1 else PREFERRED
    if kind not in (PREFERRED, UNCLEAN):   # ElectionType.valueOf: an unknown type fails the request
        return {"throttle_time_ms": 0, "error_code": E.INVALID_REQUEST, "replica_election_results": []}
    zookeeper = cluster.profile.zookeeper
    if not zookeeper and not await controller_in_time(ctx, "ElectLeaders", req["timeout_ms"]):
        return {"throttle_time_ms": 0, "error_code": E.REQUEST_TIMED_OUT, "replica_election_results": [
            {"topic": t["topic"], "partition_result": [_result(p, (E.REQUEST_TIMED_OUT, None)) for p in t["partitions"]]}
            for t in req["topic_partitions"] or ()]}
    results: list[dict[str, Any]] = []
    if req["topic_partitions"] is None:
        for name, topic in cluster.topics.items():
            parts = [_result(p.index, _elect(cluster, name, p.index, kind)) for p in topic.partitions]
            results.append({"topic": name, "partition_result": [r for r in parts if r["error_code"] != E.ELECTION_NOT_NEEDED]})
    else:
        for t in req["topic_partitions"]:
            results.append({"topic": t["topic"], "partition_result": [
                _result(p, _elect(cluster, t["topic"], p, kind)) for p in t["partitions"]]})
    elected: list[dict[str, Any]] = [r for t in results for r in t["partition_result"] if r["error_code"] == E.NONE]
    if zookeeper and elected and not await zookeeper_change_in_time(ctx, "ElectLeaders", req["timeout_ms"]):
        for r in elected:   # DelayedElectLeader.onComplete: still waiting, so timed out
            r.update(error_code=E.REQUEST_TIMED_OUT, error_message=None)
    return {"throttle_time_ms": 0, "error_code": E.NONE, "replica_election_results": results}


def _result(partition: int, outcome: tuple[int, str | None]) -> dict[str, Any]:
    return {"partition_id": partition, "error_code": outcome[0], "error_message": outcome[1]}


def _elect(cluster: Cluster, topic: str, partition: int, kind: int) -> tuple[int, str | None]:
    """(error code, message) as ApiError gives them: NONE has no message, the others Kafka's default."""
    if topic not in cluster.topics:
        return E.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
    p = cluster.partition(topic, partition)
    if p is None:
        return E.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{partition}"
    has_leader = cluster.is_alive(p.leader)
    if (kind == PREFERRED and has_leader and p.leader == p.replicas[0]) or (kind == UNCLEAN and has_leader):
        return E.ELECTION_NOT_NEEDED, kafka_message(E.ELECTION_NOT_NEEDED)
    if kind == PREFERRED:
        preferred = p.replicas[0]
        if preferred not in p.isr or not cluster.is_alive(preferred):
            return E.PREFERRED_LEADER_NOT_AVAILABLE, kafka_message(E.PREFERRED_LEADER_NOT_AVAILABLE)
        cluster.move_leader(topic, partition, preferred)
        return E.NONE, None
    live = [r for r in p.replicas if cluster.is_alive(r)]
    if not live:
        return E.ELIGIBLE_LEADERS_NOT_AVAILABLE, kafka_message(E.ELIGIBLE_LEADERS_NOT_AVAILABLE)
    p.isr = [live[0]]
    cluster.move_leader(topic, partition, live[0])
    return E.NONE, None
