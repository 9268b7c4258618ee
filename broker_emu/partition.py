"""A partition's replication state: replicas, leader and epoch, ISR, simulated follower
progress and the high watermark.

Followers are simulated: they hold no bytes, only a log end offset that advances when they
"fetch" (see ``Replication``). HW = the smallest log end offset over the ISR (leader included)
and never moves back except when a new leader truncates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from broker_emu import cluster_shape
from broker_emu.cluster_shape import WATCHED_FIELDS
from broker_emu.log import PartitionLog
from broker_emu.partition_txns import PartitionTxns


@dataclass
class Partition:
    topic: str
    index: int
    replicas: list[int]
    leader: int
    leader_epoch: int = 0
    isr: list[int] = field(default_factory=list)
    log: PartitionLog = field(default_factory=PartitionLog)
    follower_leo: dict[int, int] = field(default_factory=dict)
    last_caught_up: dict[int, float] = field(default_factory=dict)
    high_watermark: int = 0
    epoch_starts: dict[int, int] = field(default_factory=lambda: {0: 0})
    txns: PartitionTxns = field(default_factory=PartitionTxns)
    follower_log_start: dict[int, int] = field(default_factory=dict)   # what each follower learnt on its last fetch
    # a reassignment under way (PartitionRegistration's addingReplicas / removingReplicas)
    adding_replicas: list[int] = field(default_factory=list)
    removing_replicas: list[int] = field(default_factory=list)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in WATCHED_FIELDS:
            cluster_shape.changed()   # what Metadata shows of the partition
        object.__setattr__(self, name, value)

    @property
    def low_watermark(self) -> int:
        """The smallest log start offset over the ISR (``Partition.lowWatermarkIfLeader``)."""
        starts = [self.log.log_start_offset] + [self.follower_log_start.get(b, 0) for b in self.isr if b != self.leader]
        return min(starts)

    @property
    def last_stable_offset(self) -> int:
        return self.txns.last_stable_offset(self.high_watermark)

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.index)

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def leo_of(self, broker: int) -> int:
        return self.log.log_end_offset if broker == self.leader else self.follower_leo.get(broker, 0)

    def update_high_watermark(self) -> bool:
        """Recompute HW from the ISR; True if it advanced."""
        new = min(self.leo_of(b) for b in self.isr) if self.isr else self.log.log_end_offset
        if new > self.high_watermark:
            self.high_watermark = new
            return True
        return False

    def follower_fetched(self, follower: int, leo: int, now: float, fetched_at: float | None = None) -> bool:
        """A follower reached ``leo``, which was the leader's log end at ``fetched_at`` (when
        its fetch read the data; default ``now``). Returns True if HW or ISR changed.

        Kafka's rule (``Replica.updateFetchState``): a follower counts as caught up as of the
        fetch that read up to the leader's log end at that moment, so a follower copying with
        a small lag under steady load stays in the ISR."""
        leo = min(leo, self.log.log_end_offset)
        before = self.follower_leo.get(follower, 0)
        self.follower_leo[follower] = max(leo, before)
        when = now if self.follower_leo[follower] >= self.log.log_end_offset or fetched_at is None else fetched_at
        self.last_caught_up[follower] = max(self.last_caught_up.get(follower, when), when)
        changed = False
        if follower not in self.isr and self.follower_leo[follower] >= self.high_watermark and \
                self.follower_leo[follower] >= self.log.log_end_offset:
            self.isr.append(follower)
            self.isr.sort()
            cluster_shape.changed()
            changed = True
        return self.update_high_watermark() or changed

    def lagging_isr(self) -> list[int]:
        """ISR followers that lack some of the leader's log."""
        end = self.log.log_end_offset
        return [b for b in self.isr if b != self.leader and self.follower_leo.get(b, 0) < end]

    def shrink_isr(self, now: float, lag_max_s: float) -> list[int]:
        """Drop followers that lack data and have not been caught up for ``lag_max_s``
        (Kafka's ``isReplicaOutOfSync``); returns who left."""
        gone = [b for b in self.lagging_isr() if now - self.last_caught_up.get(b, now) >= lag_max_s - 1e-9]
        for b in gone:
            self.isr.remove(b)
        if gone:
            cluster_shape.changed()
            self.update_high_watermark()
        return gone

    def assign_epoch(self, epoch: int, start: int) -> None:
        """Record that ``epoch`` starts at ``start``. Like the broker's leader epoch cache,
        entries starting at or after ``start`` are replaced (an epoch that wrote nothing leaves
        no trace once a later one starts at the same offset)."""
        for e in [e for e, s in self.epoch_starts.items() if s >= start or e >= epoch]:
            del self.epoch_starts[e]
        self.epoch_starts[epoch] = start

    def epoch_at(self, offset: int) -> int:
        """The leader epoch that wrote ``offset`` (the latest epoch starting at or before it)."""
        known = [(s, e) for e, s in self.epoch_starts.items() if s <= offset]
        return max(known)[1] if known else -1

    def become_leader(self, broker: int, now: float) -> list[bytes]:
        """Leadership moves to ``broker`` (an ISR member if possible); its log is what counts. The
        batches the new leader did not have are dropped (returned, oldest first): the caller writes
        again the transaction markers among them, as the coordinator's marker channel would."""
        new_leo = self.leo_of(broker)
        old_leo = self.log.log_end_offset
        old_leader = self.leader
        self.leader = broker
        self.leader_epoch += 1
        dropped: list[bytes] = []
        if new_leo < old_leo:
            dropped = [b.data for b in self.log.truncate_to(new_leo)]
            self.txns.truncate_to(self.log.log_end_offset)
        self.assign_epoch(self.leader_epoch, self.log.log_end_offset)
        self.follower_leo.pop(broker, None)
        self.follower_leo[old_leader] = min(old_leo, self.log.log_end_offset)
        for b in self.replicas:
            if b != broker:
                self.follower_leo[b] = min(self.follower_leo.get(b, 0), self.log.log_end_offset)
                self.last_caught_up.setdefault(b, now)
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)
        if broker not in self.isr:
            self.isr.append(broker)
            self.isr.sort()
            cluster_shape.changed()
        return dropped
