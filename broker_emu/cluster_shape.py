"""A process-wide counter that moves whenever a cluster's shape changes: what a Metadata answer
shows of it — brokers alive and their endpoints, topics and their partitions, each partition's
leader, leader epoch, replicas and ISR.

Clients poll Metadata far more often than the shape changes, so the Metadata handler keeps its
last answer to each repeated request (``broker_emu.repeated_requests``) with the generation it
was built at, and answers again with it while the generation stands: no answer is rebuilt and
re-encoded per poll (about a quarter of a Metadata round trip's own cost in ``broker-emu serve``).
Every change moves the counter, never only the cluster's own: several clusters in one process
share it, so one's change makes the others rebuild their next answer, never keep a stale one.

Where the shape changes: ``Partition.__setattr__`` for its four fields, ``changed()`` where a
list is changed in place or a broker, topic or listener comes and goes. A missed place would
answer with an old shape, so the test suite runs with ``VERIFY`` on: every kept answer is
compared with a freshly built one, and a difference fails the test that saw it.
"""

from __future__ import annotations

import os

_generation = 0
# check every kept answer against a fresh one (the test suite sets it, tests/conftest.py)
VERIFY = os.environ.get("BROKER_EMU_VERIFY_SHAPE") == "1"
WATCHED_FIELDS = frozenset({"leader", "leader_epoch", "isr", "replicas"})


def changed() -> None:
    global _generation
    _generation += 1


def generation() -> int:
    return _generation
