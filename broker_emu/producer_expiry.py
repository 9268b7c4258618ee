"""Producer id expiration: every ``producer.id.expiration.check.interval.ms`` (10 min) each
partition forgets the producers that wrote nothing for ``producer.id.expiration.ms`` (a day) and
have no transaction open there, as Kafka's ``LogManager`` runs ``UnifiedLog.removeExpiredProducers``
(``ProducerStateManager.removeExpiredProducers``) on every log.

Age is the broker's wall clock minus the producer's last batch's max timestamp (under CreateTime
the producer's own clock), as Kafka measures it: a producer that stamps old timestamps expires
sooner. A forgotten producer is unknown to the partition: its next batch starts it afresh at any
sequence, so a retry of its last batch is appended a second time, not recognised as a duplicate.
Followers are not separate logs in the emulator, so one pass over the leaders' logs is all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Protocol

from broker_emu.trace import Kind

if TYPE_CHECKING:
    from broker_emu.partition import Partition
    from broker_emu.scheduler import Scheduler
    from broker_emu.trace import Trace


class ExpiryCluster(Protocol):
    @property
    def config(self) -> Mapping[str, Any]: ...
    @property
    def scheduler(self) -> "Scheduler": ...
    @property
    def trace(self) -> "Trace": ...

    def wall_ms(self) -> int: ...
    def all_partitions(self) -> Iterable["Partition"]: ...


class ProducerExpiry:
    def __init__(self, cluster: ExpiryCluster):
        self.cluster = cluster

    def start(self) -> None:
        self._schedule()

    def _schedule(self) -> None:
        self.cluster.scheduler.call_later(self.cluster.config["producer.id.expiration.check.interval.ms"] / 1000, self._check)

    def _check(self) -> None:
        self.expire_now()
        self._schedule()

    def expire_now(self) -> int:
        """One pass over every partition; how many producer states it dropped."""
        cluster = self.cluster
        now, expiration = cluster.wall_ms(), cluster.config["producer.id.expiration.ms"]
        dropped = 0
        for p in cluster.all_partitions():
            gone = p.log.producers.remove_expired(now, expiration, p.txns.ongoing)
            if gone:
                dropped += len(gone)
                cluster.trace.emit(Kind.PRODUCER_EXPIRED, broker=p.leader, details={
                    "topic": p.topic, "partition": p.index, "producer_ids": gone, "producer_id_expiration_ms": expiration})
        return dropped
