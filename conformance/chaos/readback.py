"""Reading back what a chaos run left, and the per-seed result both modes report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from client.protocol.records import decode_batch, iter_batches
from conformance.chaos.accounting import BAD, Accounting, Stored


def committed(cluster, topic: str) -> dict[tuple[int, int], Stored]:
    """Every committed record (below the high watermark) of ``topic`` as the leaders' logs hold
    it, with the producer id and epoch of its batch: the broker-side truth the consumer's view
    is checked against. Runs on the cluster's thread."""
    out: dict[tuple[int, int], Stored] = {}
    for p in cluster.topics[topic].partitions:
        raw = p.log.read(p.log.log_start_offset, 1 << 62, upto=p.high_watermark)
        for pos, header in iter_batches(raw):
            for r in decode_batch(raw, pos)[1]:
                out[p.index, r.offset] = Stored(p.index, r.offset, r.value, header.producer_id, header.producer_epoch)
    return out


def join(consumed: dict[tuple[int, int], bytes | None], log: dict[tuple[int, int], Stored]) -> tuple[list[Stored], dict]:
    """The consumer's records, each with its batch's producer id and epoch from the log, and
    how the consumer's view differs from the log (records it missed, or saw that the log does
    not hold at that offset)."""
    stored = []
    for (partition, offset), value in consumed.items():
        s = log.get((partition, offset))
        stored.append(Stored(partition, offset, value, s.producer_id if s else -1, s.producer_epoch if s else -1))
    missed = [k for k in log if k not in consumed]
    wrong = [k for k, v in consumed.items() if k not in log or log[k].value != v]
    return stored, {"consumer_missed": len(missed), "consumer_wrong": len(wrong),
                    "consumer_examples": [f"partition {p} offset {o}" for p, o in (missed + wrong)[:3]]}


@dataclass
class SeedResult:
    seed: int
    client: str
    accounting: Accounting
    consumer: dict
    actions: dict[str, int]
    seconds: float                     # the run's own clock (virtual or real)
    wall_s: float
    executed: list[tuple[float, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    judged: tuple[str, ...] = BAD       # the counts the producers' settings promise to keep at 0
    history: Any = None                 # the clients' history (conformance/chaos/history.py), if recorded
    check: Any = None                   # what the history checker found in it (conformance/chaos/checker.py)
    judged_anomalies: tuple[str, ...] = ()   # the anomalies the producers' settings forbid
    plant: str = ""                     # the bug planted in the cluster (broker_emu/plants.py), if any
    plant_log: list[str] = field(default_factory=list)   # what it did, each time it fired
    error: str = ""                     # the seed could not be run to its end (a client or the cluster raised)

    def anomalies(self) -> int:
        """Judged anomalies the history checker named (0 without a history)."""
        if self.check is None:
            return 0
        counts = self.check.counts()
        return sum(counts[kind] for kind in self.judged_anomalies)

    def bad(self) -> int:
        return (self.accounting.bad(self.judged) + self.consumer["consumer_missed"] + self.consumer["consumer_wrong"]
                + self.anomalies() + bool(self.error))

    def as_dict(self) -> dict:
        out = {"seed": self.seed, "client": self.client, **self.accounting.as_dict(), **self.consumer,
               "actions": self.actions, "seconds": round(self.seconds, 3), "wall_s": round(self.wall_s, 3),
               "notes": self.notes, "judged": list(self.judged)}
        if self.error:
            out["error"] = self.error
        if self.plant:
            out["plant"] = {"name": self.plant, "fired": self.plant_log}
        if self.check is not None:
            out["history_check"] = {**self.check.as_dict(), "judged": list(self.judged_anomalies)}
        return out
