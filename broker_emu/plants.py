"""Planted bugs: deliberate broker faults that break what Kafka promises, so a checker can be
shown to catch them (docs/chaos.md, "The checker checked"). Off unless Python code sets
``Cluster.plant`` (``broker-emu chaos --plant NAME``, or ``cluster.plant = Plant(name, seed)``):
no configuration key, control-API route or client request reaches this attribute
(tests/broker_emu/test_plants.py checks that nothing outside the chaos kit assigns it).

A plant lets a drawn number of eligible events pass, then fires on the next ones, ``times``
at most, and notes each firing (``fired``, ``log``); its random stream is its own (seeded by
name and seed), so nothing else the cluster draws changes when one is set.

- ``lose-ack``: an acks=all batch (not transactional) is acknowledged at the log end offset and
  not appended — its producer's state moves on as if it were, so the producer's next batch lands
  at that same offset (Kafka's broker appends first and answers after replication).
- ``dup-retry``: an idempotent producer's exact retry of a batch the log holds (not
  transactional: an aborted transaction would hide both copies) is appended again instead of
  answered with the original offset (``ProducerStateEntry.findDuplicateBatch`` ignored). A retry
  of a stored batch needs a lost answer, which the chaos faults cause in only some seeds, so
  ``arm`` also loses the answer of one Produce request to the chaos topic, after a drawn number
  (the fault engine's ``close_after``, as a network that drops an answer does): the producer
  resends, and the bug has its event in every seed.
- ``reuse-offset``: a batch (not transactional) is appended at the offset of the log's last
  record, once that record is committed (below the high watermark: a truncation cannot take it
  back), so two records share the offset (the log end offset assigned one too low).
- ``aborted-read``: a read_committed Fetch is answered without the aborted transactions its data
  overlaps (``UnifiedLog.collectAbortedTransactions`` skipped), so the consumer cannot drop them.
- ``lso-past-open``: a read_committed Fetch is read up to the high watermark instead of the last
  stable offset (and says so in ``last_stable_offset``), once the log holds an open transaction
  past the fetch offset — the records of a transaction not yet committed (or later aborted) reach
  a read_committed consumer (Kafka bounds that read by ``LogOffsetMetadata`` of the first
  unstable offset, ``UnifiedLog.lastStableOffset``).
- ``lso-at-high``: as ``lso-past-open``, but for a run of read_committed Fetches (``TIMES``), as
  a broker whose last stable offset is not kept for a while would answer: consume-transform-produce
  transactions read each other's open writes, a cycle of write-read edges (G1c).
- ``fenced-epoch``: a transactional batch from a producer epoch older than the one the
  coordinator last gave that producer id is appended instead of refused with
  INVALID_PRODUCER_EPOCH (``ProducerAppendInfo.checkProducerEpoch`` skipped): a zombie's write
  lands after its successor fenced it.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Mapping, Protocol

if TYPE_CHECKING:
    from broker_emu.partition import Partition

PLANTS = {
    "lose-ack": "acknowledge one acks=all batch at the log end without appending it",
    "dup-retry": "append an idempotent producer's retry of a stored batch again",
    "reuse-offset": "append one batch at the offset of the log's last record",
    "aborted-read": "answer a read_committed fetch without its aborted transactions",
    "lso-past-open": "read a read_committed fetch past the last stable offset, into an open transaction",
    "fenced-epoch": "append a transactional batch from a fenced (older) producer epoch",
    "lso-at-high": "read a run of read_committed fetches past the last stable offset, into open transactions",
}
# eligible events let pass before firing (drawn from this range), and how many firings at most
SKIP = {"lose-ack": (5, 40), "dup-retry": (0, 0), "reuse-offset": (5, 40), "aborted-read": (0, 2),
        "lso-past-open": (0, 2), "fenced-epoch": (0, 0), "lso-at-high": (0, 10)}
TIMES = {"lose-ack": 1, "dup-retry": 1, "reuse-offset": 1, "aborted-read": 1, "lso-past-open": 1, "fenced-epoch": 1,
         "lso-at-high": 150}
PAST_STABLE = ("lso-past-open", "lso-at-high")
LOST_ANSWER_AFTER = (5, 30)   # dup-retry: Produce requests to the topic answered before the one whose answer is lost


class Plant:
    def __init__(self, name: str, seed: int = 0):
        if name not in PLANTS:
            raise ValueError(f"no planted bug {name!r}; there are {', '.join(PLANTS)}")
        self.name = name
        self.rng = random.Random(f"plant:{name}:{seed}")
        self.skip = self.rng.randint(*SKIP[name])
        self.times = TIMES[name]
        self.fired = 0
        self.log: list[str] = []

    def fires(self, name: str, what: str) -> bool:
        """An eligible event for ``name``: whether the bug acts on it (and a note if so)."""
        if name != self.name or self.fired >= self.times:
            return False
        if self.skip > 0:
            self.skip -= 1
            return False
        self.fired += 1
        self.log.append(what)
        return True


def arm(cluster: Any, plant: Plant, topic: str) -> None:
    """What ``plant`` needs the cluster to do for its event to come, set with it (Python only, on
    the cluster's thread). ``dup-retry``: the answer of one Produce request to ``topic`` lost
    (the connection closed after the append), so a producer resends a batch the log holds."""
    if plant.name == "dup-retry":
        after = plant.rng.randint(*LOST_ANSWER_AFTER)
        cluster.faults.add({"match": {"api": "Produce", "topic": topic}, "action": "close_after", "times": 1,
                            "after": after}, cluster.now_ms())


class Planted(Protocol):
    """Where a plant is set (the cluster's ``plant``)."""

    @property
    def plant(self) -> Plant | None: ...


class _Transactions(Protocol):
    @property
    def txns(self) -> Mapping[str, Any]: ...


class PlantedWithTransactions(Planted, Protocol):
    """``lso-past-open`` asks the transaction coordinator which transactions are still open."""

    @property
    def txn(self) -> _Transactions: ...


def planted(cluster: Planted, name: str, what: str) -> bool:
    plant = cluster.plant
    return plant is not None and plant.fires(name, what)


def before_append(cluster: Planted, p: "Partition", header: Any, acks: int, result: Any) -> bool:
    """Produce, just before a validated data batch is appended. ``lose-ack``: fills ``result`` as
    acknowledged and returns True (append nothing). ``reuse-offset``: moves the log end back one
    offset, returns False (append there)."""
    if header.is_transactional or header.is_control:
        return False
    where = f"{p.topic}-{p.index}"
    if acks == -1 and planted(cluster, "lose-ack", f"{where}: batch acknowledged at {p.log_end_offset}, not appended"):
        base = p.log_end_offset
        if header.producer_id >= 0:
            p.log.producers.update(header.producer_id, header.producer_epoch, header.base_sequence, base,
                                   base + header.last_offset_delta, header.max_timestamp)
        result.base_offset = base      # answered at once: required stays -1, nothing to wait for
        return True
    log = p.log
    if log.batches and log.log_end_offset > log.log_start_offset and p.high_watermark == log.log_end_offset and \
            planted(cluster, "reuse-offset", f"{where}: batch appended at {log.log_end_offset - 1}, already taken"):
        log.log_end_offset -= 1
    return False


def duplicate_retry(cluster: Planted, header: Any, where: str, original: int) -> bool:
    """Produce, for an exact retry of a stored batch: ``dup-retry`` appends it again (True)."""
    return not header.is_transactional and planted(cluster, "dup-retry", f"{where}: retry of offset {original} "
                                                                          "appended again")


def read_past_stable(cluster: PlantedWithTransactions, p: "Partition", fetch_offset: int) -> bool:
    """read_committed Fetch, a partition holding a transaction its producer has not yet asked to
    end (the coordinator has it Ongoing), between the fetch offset and the high watermark:
    ``lso-past-open`` reads it to the high watermark (True). Not one whose commit is already
    under way: reading that early is wrong too, but no client could tell it from a read just
    after the marker."""
    stable, high = p.last_stable_offset, p.high_watermark
    if not (stable < high and fetch_offset < high):
        return False
    open_here = {pid for pid, first in p.txns.ongoing.items() if first < high}
    ongoing = any(meta.producer_id in open_here and meta.state.value == "Ongoing" for meta in cluster.txn.txns.values())
    name = cluster.plant.name if cluster.plant is not None else ""
    return ongoing and name in PAST_STABLE and planted(
        cluster, name, f"{p.topic}-{p.index}: read_committed fetch from {fetch_offset} read to the high watermark "
                       f"{high}, past the open transaction at {stable}")


def accept_fenced(cluster: Planted, header: Any, where: str, current: int) -> bool:
    """Produce, a batch whose producer epoch is older than ``current``: ``fenced-epoch`` appends
    a transactional one (True) instead of refusing it."""
    return header.is_transactional and planted(cluster, "fenced-epoch", f"{where}: batch of producer "
                                               f"{header.producer_id} at fenced epoch {header.producer_epoch} "
                                               f"(current {current}) appended")
