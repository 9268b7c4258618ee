"""Failover chaos with each third-party client that has a chaos kit, in real time (conformance/chaos/realtime.py):
a short seed whose plan bounces brokers, stalls replication and moves a leader, judged by the same
accounting as our client's virtual-time seeds, run as a campaign runs it."""

from __future__ import annotations

import json
import os

import pytest

from conformance.chaos.kits import KITS
from conformance.chaos.plan import make_plan

from .clients import PYTHON_CLIENTS, require_client

pytestmark = pytest.mark.realclient

SEED, DURATION = 0, 6.0   # seed 0's plan over 6 s: bounce, stall, leader move, bounce


def _require(client: str) -> str | None:
    """The installed version of a Python client; for a program of the line protocol (java), None
    once it is built. A missing one fails under CI and skips elsewhere."""
    if client in PYTHON_CLIENTS:
        return require_client(client)
    ok, why = KITS[client].available()
    if not ok:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return None


def test_the_seed_has_chaos_in_it():
    kinds = [s.kind for s in make_plan(SEED, "chaos", DURATION, mean_gap=3.0).steps]
    assert {"bounce", "leader"} <= set(kinds), kinds


@pytest.mark.parametrize("client", sorted(KITS))
def test_no_acknowledged_record_is_lost(client):
    """Through the campaign's path: the seed runs in a child process of its own (a client's
    leaked sockets and threads end with it), its accounting comes back as the run row."""
    version = _require(client)
    from conformance.campaign.execute import execute

    run = {"run_id": 1, "scenario": "chaos", "family": "Chaos", "client": client, "seed": SEED, "rep": 0,
           "params": json.dumps({"duration": DURATION, "interval": 0.02, "producers": 3, "partitions": 3})}
    rows = execute(run)
    head = rows[0]
    assert head["record"] == "run" and head["status"] == "pass", head
    assert head["client_version"] == version or version is None   # java: its program names it
    assert json.loads(head["actions"]), "no chaos action fired"
    assert head["sent"] > 100 and head["acked"] > head["sent"] // 2, head
    assert head["unresolved"] == 0, head["message"]
    assert "history: no anomaly" in head["message"], head["message"]   # its history, checked
    for count in ("lost", "misplaced", "dup_in_epoch", "consumer_missed", "consumer_wrong"):
        assert head[count] == 0, (count, head)
    assert any(r["kind"] == "chaos_action" for r in rows[1:])


@pytest.mark.parametrize("plant", ["", "lose-ack"])
def test_a_real_clients_history_is_checked_and_a_planted_lost_write_is_named(plant):
    """confluent-kafka's history (each send when handed to librdkafka and when its delivery report
    came, each poll with its records) is judged by the same checker as our client's: no anomaly on
    the emulator, and the planted bug that acknowledges a batch without storing it named as a lost
    write, with the operations that witness it."""
    _require("confluent-kafka")
    from conformance.chaos import realtime

    result = realtime.run_seed(KITS["confluent-kafka"], SEED, duration=DURATION, history=True, plant=plant)
    ops = result.history.ops
    sends = [op for op in ops if op.f == "send"]
    assert sends and {op.type for op in sends} >= {"invoke", "ok"}
    assert sum(op.type == "ok" for op in sends) == result.accounting.totals()["acked"]
    assert any(op.f == "poll" and op.records for op in ops)
    counts = result.check.counts()
    if not plant:
        assert result.anomalies() == 0 and result.plant_log == [], counts
        return
    assert result.plant_log, "the plant never fired"
    assert counts["lost-write"] >= 1, counts
    witness = result.check.anomalies["lost-write"][0]
    assert any(op.process.startswith("producer-") and op.type == "ok" for op in witness.ops), witness.as_dict()


@pytest.mark.parametrize("client, plant", [("confluent-kafka", ""), ("confluent-kafka", "aborted-read"), ("java", ""),
                                           ("franz-go", ""), ("franz-go", "aborted-read")])
def test_transactions_of_a_real_client_are_recorded_and_judged(client, plant):
    """``--txn`` with confluent-kafka, the Java client or franz-go (conformance/chaos/realtime_txn.py): the transactional
    producer's begins, commits and aborts, its zombie fenced by a successor, the
    consume-transform-produce workers' polls inside their transactions and the read_committed
    reader's polls are in the history; nothing judged on the emulator, and a planted bug that shows
    an aborted record to read_committed named by the checker."""
    _require(client)
    from conformance.chaos import realtime

    # a program per client (eleven JVMs for java) is slow to start on a loaded machine: the Java
    # client's transactions get longer, so the transaction a successor interrupts (the 2nd-4th) comes
    duration = DURATION if client != "java" else 20.0
    result = realtime.run_seed(KITS[client], SEED, duration=duration, txn=True, plant=plant)
    ops = result.history.ops
    done = {(op.process.rstrip("-0123456789"), op.f) for op in ops if op.type == "ok"}
    assert {("txn-producer", "begin"), ("txn-producer", "commit_txn"), ("txn-producer", "init_txn"),
            ("ctp-a", "commit_txn"), ("ctp-b", "commit_txn"), ("txn-reader", "commit")} <= done, sorted(done)
    assert any(f == "abort_txn" for _, f in done), sorted(done)
    assert sum(op.f == "init_txn" and op.type == "ok" and op.process.startswith("txn-producer") for op in ops) >= 2
    assert any(op.f == "poll" and op.txn is not None and op.records for op in ops if op.process.startswith("ctp-"))
    assert any("fenced as it should be" in note for note in result.notes), result.notes
    read = {(r.topic, r.value) for op in ops if op.process == "txn-reader" and op.f == "poll" and op.records
            for r in op.records}
    assert any(topic == "chaos-txn" for topic, _ in read)
    counts = result.check.counts()
    if not plant:
        assert result.anomalies() == 0 and counts["unseen"] == 0, (counts, result.notes)
        return
    assert result.plant_log, "the plant never fired"
    assert counts["aborted-read"] >= 1, counts
