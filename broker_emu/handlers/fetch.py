"""Fetch v4-17 (Kafka's ReplicaManager.fetchMessages, DelayedFetch).

Fetch answers at once when max_wait_ms <= 0, when min_bytes are available, or when any
partition has an error; otherwise a DelayedFetch waits in the purgatory and wakes early when the
high watermark moves enough bytes into view, or when a partition changes leader. Consumers only
see records below the high watermark. Fetch sessions (KIP-227) are declined: session_id is
always 0, so clients keep sending full fetches. Topics are named by id from v13 on.

Byte limits follow KIP-74 as the broker applies them: partitions are read in request order,
each up to min(partition_max_bytes, what is left of max_bytes); until some partition has returned
data, the first batch is returned whole even if it is larger than both limits, so a consumer
can always make progress; after that, a batch that does not fit is left for the next fetch.

A partition answered with an error carries what Kafka puts beside it (``handlers.error_partition``): an
empty record set, never a null one, and -1 for the offsets it could not read (see
docs/responses.md). From v16 a NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH partition also names
the current leader, and the response lists that leader's endpoint (KIP-951), as
``KafkaApis.handleFetchRequest`` does; earlier versions leave the tagged field out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker_emu.context import RequestContext
from broker_emu.handlers import error_partition
from broker_emu.handlers.offsets import epoch_error
from broker_emu.plants import planted, read_past_stable
from broker_emu.purgatory import DelayedOperation
from broker_emu.registry import handles
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from client.protocol.wire import Message

if TYPE_CHECKING:
    from broker_emu.cluster import Cluster


def _resolve(cluster: Cluster, version: int, t) -> tuple[str | None, Any]:
    if version >= 13:
        topic = cluster.topic_by_id(t.topic_id)
        return (topic.name if topic else None), t.topic_id
    return t.topic, None




class FetchPlan:
    """The partitions of one fetch request, resolved once."""

    def __init__(self, ctx, req):
        self.ctx, self.req = ctx, req
        self.read_committed = req.isolation_level == 1
        self.entries = []  # (topic name or None, topic id, partition request)
        for t in req.topics:
            name, tid = _resolve(ctx.cluster, ctx.api_version, t)
            for pr in t.partitions:
                self.entries.append((name, tid, pr))
        self.leaders = {(n, pr.partition): self._leader(n, pr.partition) for n, _, pr in self.entries}

    def _leader(self, name, index):
        p = self.ctx.cluster.partition(name, index) if name else None
        return (p.leader, p.leader_epoch) if p else None

    def partition_error(self, name, tid, pr) -> tuple[int, Any]:
        cluster = self.ctx.cluster
        if name is None:
            return (E.UNKNOWN_TOPIC_ID if self.ctx.api_version >= 13 else E.UNKNOWN_TOPIC_OR_PARTITION), None
        p = cluster.partition(name, pr.partition)
        if p is None:
            return E.UNKNOWN_TOPIC_OR_PARTITION, None
        if p.leader != self.ctx.broker_id:
            return E.NOT_LEADER_OR_FOLLOWER, p
        err = epoch_error(p, pr.current_leader_epoch)
        if err:
            return err, p
        if pr.fetch_offset < p.log.log_start_offset or pr.fetch_offset > p.log_end_offset:
            return E.OFFSET_OUT_OF_RANGE, p
        return E.NONE, p

    def available_bytes(self) -> tuple[int, bool]:
        """(bytes visible to this fetch, whether any partition has an error)."""
        total, errored = 0, False
        for name, tid, pr in self.entries:
            err, p = self.partition_error(name, tid, pr)
            if err:
                errored = True
                continue
            total += min(p.log.bytes_between(pr.fetch_offset, self.visible_end(p)), pr.partition_max_bytes)
        return total, errored

    def visible_end(self, p) -> int:
        """read_uncommitted reads to the high watermark, read_committed to the last stable offset."""
        return p.last_stable_offset if self.read_committed else p.high_watermark

    def aborted(self, p, start: int, end: int) -> list[dict[str, int]] | None:
        """read_committed: the aborted transactions the data overlaps, for the consumer to skip
        (``UnifiedLog.collectAbortedTransactions``); read_uncommitted: null."""
        if not self.read_committed:
            return None
        aborted = p.txns.aborted_between(start, end)
        if aborted and planted(self.ctx.cluster, "aborted-read", f"{p.topic}-{p.index}: fetch from {start} answered "
                                                                  f"without {len(aborted)} aborted transaction(s)"):
            return []   # a planted bug (broker_emu/plants.py): set from Python only, never by a request
        return [{"producer_id": a.producer_id, "first_offset": a.first_offset} for a in aborted]

    def changed(self) -> bool:
        return any(self._leader(n, pr.partition) != self.leaders[(n, pr.partition)] for n, _, pr in self.entries)

    def read(self) -> dict:
        budget = self.req.max_bytes
        min_one = True  # Kafka: minOneMessage until the first partition returns data
        by_topic: dict[Any, dict] = {}
        leaders: set[int] = set()
        for name, tid, pr in self.entries:
            err, p = self.partition_error(name, tid, pr)
            if err:
                part = error_partition(pr.partition, err, before_read=p is None)
                if err in (E.NOT_LEADER_OR_FOLLOWER, E.FENCED_LEADER_EPOCH) and p is not None and self.ctx.api_version >= 16:
                    part["current_leader"] = {"leader_id": p.leader, "leader_epoch": p.leader_epoch}
                    leaders.add(p.leader)
            else:
                limit = max(min(pr.partition_max_bytes, budget), 0)
                end = self.visible_end(p)
                stable = p.last_stable_offset
                if self.read_committed and self.ctx.cluster.plant is not None and read_past_stable(
                        self.ctx.cluster, p, pr.fetch_offset):
                    end = stable = p.high_watermark   # a planted bug (broker_emu/plants.py), never set by a request
                data = p.log.read(pr.fetch_offset, limit, end, min_one)
                budget -= len(data)
                min_one = min_one and not data
                part = {"partition_index": pr.partition, "error_code": E.NONE, "high_watermark": p.high_watermark,
                        "last_stable_offset": stable, "log_start_offset": p.log.log_start_offset,
                        "aborted_transactions": self.aborted(p, pr.fetch_offset, end), "preferred_read_replica": -1,
                        "records": data}
            key = tid if self.ctx.api_version >= 13 else name
            by_topic.setdefault(key, {"topic": name or "", "topic_id": tid, "partitions": []})["partitions"].append(part)
        response = {"throttle_time_ms": 0, "error_code": E.NONE, "session_id": 0, "responses": list(by_topic.values())}
        if leaders:
            response["node_endpoints"] = [{"node_id": b.id, "host": b.host, "port": self.ctx.port_of(b), "rack": b.rack}
                                          for b in self.ctx.cluster.live_brokers() if b.id in leaders]
        return response


class DelayedFetch(DelayedOperation):
    __slots__ = ("ctx", "plan", "min_bytes", "max_wait_ms")

    def __init__(self, ctx, plan: FetchPlan, min_bytes: int, max_wait_ms: int):
        super().__init__(max_wait_ms / 1000.0)
        self.ctx, self.plan, self.min_bytes, self.max_wait_ms = ctx, plan, min_bytes, max_wait_ms

    def try_complete(self) -> bool:
        if self.plan.changed():
            return True
        available, errored = self.plan.available_bytes()
        return errored or available >= self.min_bytes

    def on_complete(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"purgatory": "fetch", "max_wait_ms": self.max_wait_ms, "min_bytes": self.min_bytes}


@handles(ApiKey.FETCH, 4, 17)
async def fetch(ctx: RequestContext, req: Message) -> dict[str, Any]:
    if ctx.api_version >= 7 and req.session_id != 0:
        return {"throttle_time_ms": 0, "error_code": E.FETCH_SESSION_ID_NOT_FOUND, "session_id": 0, "responses": []}
    plan = FetchPlan(ctx, req)
    available, errored = plan.available_bytes()
    if req.max_wait_ms > 0 and plan.entries and not errored and available < req.min_bytes:
        op = DelayedFetch(ctx, plan, req.min_bytes, req.max_wait_ms)
        keys = {(n, pr.partition) for n, _, pr in plan.entries}
        if not ctx.cluster.fetch_purgatory.try_complete_else_watch(op, keys, checked=True):
            await op.wait()
    return plan.read()
