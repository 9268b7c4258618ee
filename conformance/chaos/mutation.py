"""The checker checked: each planted bug (broker_emu/plants.py) over the same seeds, and the
table of how often the history checker (conformance/chaos/checker.py) names it — with nothing
planted it must name nothing. ``broker-emu chaos --plant all`` prints it (docs/chaos.md).

Every row runs our client in virtual time with the transactional workload on (``--txn``: the
aborted-read plant needs transactions to act on), except the first, the default workload. A
plant *fires* in a seed when its event happened (``dup-retry`` needs a producer to retry a batch
the log holds, which only some seeds' faults cause); it is *named* in a seed when the checker
reports its anomaly class there. The old counters' column says in how many seeds the per-
partition accounting (conformance/chaos/accounting.py) flagged the seed too.
"""

from __future__ import annotations

import shlex
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from broker_emu.plants import PLANTS
from conformance.chaos.readback import SeedResult

# the anomaly classes each planted bug must be named by (one of them): a transaction read past the
# last stable offset was either committed later (read too early) or aborted later (read at all)
EXPECTED: dict[str, tuple[str, ...]] = {
    "lose-ack": ("lost-write",), "dup-retry": ("duplicate",), "reuse-offset": ("inconsistent-offsets",),
    "aborted-read": ("aborted-read",), "lso-past-open": ("uncommitted-read", "aborted-read"),
    "fenced-epoch": ("fenced-write",), "lso-at-high": ("G1c",)}


@dataclass
class Row:
    plant: str                      # "" for none
    txn: bool
    seeds: int = 0
    fired: int = 0                  # seeds where the plant acted
    named: int = 0                  # ... where the checker named its class
    with_anomaly: int = 0           # seeds with any anomaly named
    old_counters: int = 0           # seeds the accounting or the consumer check flagged
    other: Counter = field(default_factory=Counter)   # other classes named: in how many seeds
    missed: list[int] = field(default_factory=list)   # seeds where it fired and was not named
    missed_old: int = 0             # ... of which the old counters flagged

    def add(self, r: SeedResult) -> None:
        self.seeds += 1
        named = set(r.check.named())
        self.with_anomaly += bool(named)
        old = bool(r.accounting.bad(r.judged) + r.consumer["consumer_missed"] + r.consumer["consumer_wrong"])
        self.old_counters += old
        expected = set(EXPECTED.get(self.plant, ()))
        if self.plant and r.plant_log:
            self.fired += 1
            if expected & named:
                self.named += 1
            else:
                self.missed.append(r.seed)
                self.missed_old += old
        self.other.update(named - expected)

    def passed(self) -> bool:
        return self.with_anomaly == 0 if not self.plant else (self.fired > 0 and self.named == self.fired)


def measure(seeds: range, params: dict, run_seed: Callable[..., SeedResult],
            out: Callable[[str], None] = print) -> list[Row]:
    rows = [Row("", False), Row("", True)] + [Row(name, True) for name in PLANTS]
    for row in rows:
        start = time.perf_counter()
        for seed in seeds:
            row.add(run_seed(seed, **params, txn=row.txn, plant=row.plant))
        out(f"{row.plant or 'nothing planted'}{' (--txn)' if row.txn else ''}: {row.seeds} seeds, "
            f"fired {row.fired}, named {row.named}, any anomaly {row.with_anomaly} "
            f"({time.perf_counter() - start:.0f} s)")
    return rows


def table(rows: list[Row], command: str) -> str:
    lines = [f"`{command}`", "",
             "| planted bug | workload | seeds | fired in | named (expected class) | seeds with any anomaly | "
             "other classes named (seeds) | old counters flagged |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        workload = "default + txn" if r.txn else "default"
        if not r.plant:
            lines.append(f"| none | {workload} | {r.seeds} | — | — | **{r.with_anomaly}** | "
                         f"{_other(r)} | {r.old_counters} |")
            continue
        lines.append(f"| `{r.plant}` | {workload} | {r.seeds} | {r.fired} | **{r.named}/{r.fired}** "
                     f"({' or '.join(EXPECTED[r.plant])}) | {r.with_anomaly} | {_other(r)} | {r.old_counters} |")
    missed = [f"{r.plant}: seeds {r.missed[:10]} (the old counters flagged {r.missed_old} of them)"
              for r in rows if r.missed]
    if missed:
        lines += ["", "Fired and not named: " + "; ".join(missed)]
    return "\n".join(lines)


def _other(r: Row) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(r.other.items())) or "—"


def run_table(seeds: range, params: dict, argv: list[str], out: Callable[[str], None]) -> int:
    """``--plant all``: the table on stdout (headed by the command, ``argv``), progress on
    ``out``; 0 when nothing is named with nothing planted and every plant is named in every seed
    where it fired."""
    from conformance.chaos.ours import run_seed

    rows = measure(seeds, params, run_seed, out)
    print(table(rows, shlex.join(["broker-emu", *argv])))
    return 0 if all(r.passed() for r in rows) else 1


def list_plants() -> str:
    return "\n".join(f"{name:<13} {PLANTS[name]} (named: {' or '.join(EXPECTED[name])})" for name in PLANTS)
