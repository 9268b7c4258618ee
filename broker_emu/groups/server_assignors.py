"""The broker-side assignors of KIP-848 groups, chosen by the client's ``group.remote.assignor``
(Kafka: ``UniformAssignor`` and ``RangeAssignor`` in group-coordinator's ``assignor`` package).

Both are pure functions of the members' subscriptions, the partition counts and the previous
target assignment; ties are broken by member id so runs repeat.
- ``uniform`` (Kafka's default): balanced and sticky. Every member gets ⌊n/m⌋ or ⌈n/m⌉ of the
  partitions it can take; a member keeps its previous partitions up to that share, and the rest go
  to the least-loaded eligible member. Kafka's builders reach the same balance and stickiness;
  the exact placement of moved partitions can differ.
- ``range``: per topic, the partitions in contiguous ranges over the subscribed members in member
  id order, the first ``n mod m`` members one more (Kafka's range assignor, without its
  stickiness across member changes): the classic consumer's range assignor too, so it has one
  home, ``kafka_common.assignors``.
"""

from __future__ import annotations

from collections.abc import Mapping

from broker_emu.groups.consumer_state import Assignment
from kafka_common.assignors import range_assign as common_range

Subscriptions = Mapping[str, frozenset[str]]   # member id -> subscribed topics (that exist)


def assign(name: str, subscriptions: Subscriptions, partitions: Mapping[str, int],
           previous: Mapping[str, Assignment]) -> dict[str, Assignment]:
    if name == "range":
        return range_assign(subscriptions, partitions)
    return uniform_assign(subscriptions, partitions, previous)


def range_assign(subscriptions: Subscriptions, partitions: Mapping[str, int]) -> dict[str, Assignment]:
    """The range assignor both sides run (``kafka_common.assignors``), as frozen sets."""
    return {m: {t: frozenset(ps) for t, ps in topics.items()} for m, topics in common_range(subscriptions, partitions).items()}


def uniform_assign(subscriptions: Subscriptions, partitions: Mapping[str, int],
                   previous: Mapping[str, Assignment]) -> dict[str, Assignment]:
    members = sorted(subscriptions)
    every = [(t, p) for t in sorted(partitions) for p in range(partitions[t])]
    eligible = {tp: [m for m in members if tp[0] in subscriptions[m]] for tp in every}
    wanted = [tp for tp in every if eligible[tp]]
    base, extras = divmod(len(wanted), len(members)) if members else (0, 0)
    load = dict.fromkeys(members, 0)
    out: dict[str, dict[str, set[int]]] = {m: {} for m in members}

    def give(m: str, tp: tuple[str, int]) -> None:
        out[m].setdefault(tp[0], set()).add(tp[1])
        load[m] += 1

    over, left = [], []
    for tp in wanted:    # stickiness: a previous owner keeps up to ⌊n/m⌋ ...
        owner = next((m for m in eligible[tp] if tp[1] in previous.get(m, {}).get(tp[0], ())), None)
        if owner is None:
            left.append(tp)
        elif load[owner] < base:
            give(owner, tp)
        else:
            over.append((tp, owner))
    for tp, owner in over:   # ... and one more while the n mod m larger shares last
        if load[owner] == base and extras > 0:
            give(owner, tp)
            extras -= 1
        else:
            left.append(tp)
    for tp in left:
        give(min(eligible[tp], key=lambda m: (load[m], m)), tp)
    return _freeze(out)


def _freeze(out: dict[str, dict[str, set[int]]]) -> dict[str, Assignment]:
    return {m: {t: frozenset(ps) for t, ps in topics.items()} for m, topics in out.items()}
