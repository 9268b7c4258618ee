"""`broker-emu chaos --broker kafka` on Apache Kafka itself (conformance/chaos/on_kafka.py): one
short seed of our client with the transactional workload, on a fresh 3-node cluster behind the
proxy, faults applied, every record accounted for, the history checked — and nothing Kafka
forbids named."""

from __future__ import annotations

import pytest

from conformance.chaos.kafka_faults import KAFKA_KINDS
from tests.realkafka.conftest import require_kafka

# alone: three JVMs and our clients in real time, with a node killed or paused; beside other
# workers on two cores a restarted node took longer than a seed's settling
pytestmark = [pytest.mark.realkafka, pytest.mark.alone]


def test_a_chaos_seed_on_kafka_is_accounted_for_and_checked():
    require_kafka()
    from conformance.chaos.on_kafka import run_seed

    # seed 1's plan: a lost request, three leader moves, a black hole, two delays (in 20 s)
    r = run_seed(1, duration=20.0, txn=True)
    assert r.actions and set(r.actions) <= set(KAFKA_KINDS), r.executed
    assert r.actions.get("leader", 0) >= 1, r.executed   # a reassignment and an election did move a leader
    t = r.accounting.totals()
    assert t["sent"] > 100 and t["acked"] == t["sent"] and not t["unresolved"], (t, r.notes)
    assert r.bad() == 0, (t, r.consumer, r.check.as_dict() if r.check else None, r.notes)
    ops = {op.f for op in r.history.ops}
    assert {"send", "poll", "commit_txn", "init_txn"} <= ops   # the transactional load ran on Kafka too
    assert not r.notes, r.notes
