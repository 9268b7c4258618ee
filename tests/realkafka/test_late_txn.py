"""The torn transaction on Apache Kafka 4.4 formatted with transaction.version=1: the proxy's
``hold`` fault delays a commit's EndTxn past our client's request.timeout.ms; the client retries
and commits, begins the next transaction with the same epoch, and the delayed EndTxn(commit) then
reaches Kafka, which commits the next transaction with what it has written so far. With
transaction.version=2 our client speaks version 2 and Kafka fences the late EndTxn. Skipped when
java or the jars are missing (bash dev/install-kafka); a JVM on a shared machine, so generous bounds."""

from __future__ import annotations

import time

import pytest

import client
from client.errors import KafkaError
from tests.broker_emu.proxy.conftest import add_fault, events

pytestmark = [pytest.mark.realclient, pytest.mark.slow]
TOPIC = "late"


def _wait_for(proxy, kind: str, bound_s: float = 30.0) -> list:
    deadline = time.monotonic() + bound_s
    while not (got := events(proxy, kind)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return got


def _read_committed(bootstrap: str) -> list[bytes]:
    consumer = client.Consumer({"bootstrap.servers": bootstrap, "group.id": None, "isolation.level": "read_committed",
                                "auto.offset.reset": "earliest", "client.id": "late-reader"})
    try:
        consumer.assign([(TOPIC, 0)])
        seen: list[bytes] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            seen += [r.value for r in consumer.poll(0.5)]
        return seen
    finally:
        consumer.close()


def test_a_late_end_txn_commits_the_next_transaction_on_kafka_with_transaction_version_1(kafka_factory):
    from broker_emu.proxy.proxy import run_proxy_in_thread

    kafka = kafka_factory(features={"transaction.version": 1})
    kafka.create_topic(TOPIC, 1, 1)
    with run_proxy_in_thread(kafka.bootstrap) as proxy:
        add_fault(proxy, {"match": {"api": "EndTxn"}, "times": 1,
                          "action": {"type": "hold", "until": "next_txn_produce", "ms": 60_000}})
        producer = client.Producer({"bootstrap.servers": proxy.bootstrap, "transactional.id": "late-tx",
                                    "client.id": "late-producer", "request.timeout.ms": 2000, "max.block.ms": 30_000})
        try:
            producer.init_transactions()
            producer.begin_transaction()
            producer.send(TOPIC, b"n", partition=0).result()
            producer.commit_transaction()             # its EndTxn held; the retry after 2 s commits
            producer.begin_transaction()
            producer.send(TOPIC, b"n+1 first", partition=0).result()
            answers = _wait_for(proxy, "late_answer")   # the held EndTxn(commit) of n reaches Kafka now
            time.sleep(2)                              # and its markers are written
            outcomes = {}
            for step, call in (("send", lambda: producer.send(TOPIC, b"n+1 second", partition=0).result()),
                               ("commit", producer.commit_transaction)):
                try:
                    call()
                    outcomes[step] = "ok"
                except KafkaError as exc:
                    outcomes[step] = type(exc).__name__
        finally:
            producer.close()
        release = events(proxy, "late_release")
    assert release and release[0].details["connection_open"] is False, release
    # Kafka accepted the previous transaction's EndTxn(commit) inside the next transaction (no error)
    assert answers and answers[0].details == {"held": 1, "dropped": True}, answers
    seen = _read_committed(kafka.bootstrap)
    # the tear: the next transaction's first record is committed by the previous one's late EndTxn,
    # whatever the client then hears of its own send and commit
    assert seen == [b"n", b"n+1 first"], (seen, outcomes)
    # ... and the client hears that its transaction failed: the next record is refused (KIP-890 part 1:
    # the partition is in no transaction of the producer any more), so its commit cannot happen
    assert outcomes == {"send": "TransactionAbortableError", "commit": "TransactionStateError"}, outcomes


def _java_two_transactions(kafka_factory, version: int) -> tuple[list, list, list]:
    """kafka-clients 4.4.0 runs two transactions through the proxy while the first commit's EndTxn
    is held until the next transaction's first Produce (txn.late-end-txn): its outcomes, the late
    answers and the AddPartitionsToTxn requests the proxy saw."""
    from broker_emu.proxy.proxy import run_proxy_in_thread
    from conformance.adapters.base import RunEnv
    from conformance.adapters.java_client import JavaAdapter
    from conformance.model import Operation

    adapter = JavaAdapter()
    ready, why = adapter.available()
    if not ready:
        pytest.skip(why)
    kafka = kafka_factory(features={"transaction.version": version})
    kafka.create_topic(TOPIC, 1, 1)
    with run_proxy_in_thread(kafka.bootstrap) as proxy:
        add_fault(proxy, {"match": {"api": "EndTxn"}, "times": 1,
                          "action": {"type": "hold", "until": "next_txn_produce", "ms": 60_000}})
        env = RunEnv(proxy.bootstrap, f"late-java-v{version}", {"request.timeout.ms": 2000, "max.block.ms": 30_000})
        try:
            outcomes = adapter.run_blocking((Operation("transaction", {"topic": TOPIC, "partition": 0, "count": 2}),), env)
        finally:
            adapter.shutdown()
        answers = _wait_for(proxy, "late_answer", 10.0 if outcomes[0].ok else 2.0)
        adds = [e for e in events(proxy, "recv") if e.api == "AddPartitionsToTxn"]
    return outcomes, answers, adds


def test_the_java_client_on_kafka_with_transaction_version_1_is_not_fenced(kafka_factory):
    """Under version 1 kafka-clients retries the timed-out EndTxn, commits, and begins the next
    transaction with the same epoch: nothing fences the late EndTxn(commit). Kafka accepts it inside
    the next transaction (the tear), or, when it comes while the client already commits that one
    (the adapter's transactions follow each other at once), answers CONCURRENT_TRANSACTIONS; never
    an epoch error, as under version 2."""
    outcomes, answers, _ = _java_two_transactions(kafka_factory, 1)
    assert outcomes[0].ok, outcomes
    assert answers and set(answers[0].details.get("errors") or []) <= {51}, answers


def test_the_java_client_on_kafka_with_transaction_version_2_is_fenced(kafka_factory):
    """Under version 2 (the 4.4 default) the previous transaction's EndTxn, released inside the
    next one, never lands: the epoch moved on with the commit (PRODUCER_FENCED, or
    INVALID_PRODUCER_EPOCH), or, when it comes while the client already commits that transaction,
    CONCURRENT_TRANSACTIONS (seen in CI beside four workers) — whatever kafka-clients did with its own
    timed-out EndTxn (retried it with the epoch before the bump, answered as a retry; or failed the
    commit as abortable, when no next transaction begins and nothing is released)."""
    outcomes, answers, adds = _java_two_transactions(kafka_factory, 2)
    assert not adds, adds                                   # version 2: no AddPartitionsToTxn
    if outcomes[0].ok:
        errors = set(answers[0].details.get("errors") or []) if answers else set()
        assert errors and errors <= {90, 47, 51}, answers
    else:
        assert outcomes[0].error_type == "TransactionAbortableException" and not answers, (outcomes, answers)


def test_our_client_on_kafka_with_transaction_version_2_fences_the_late_end_txn(kafka_factory):
    """Kafka 4.4 finalizing version 2 (its default): our client reads the feature and speaks it
    (EndTxn v5, no AddPartitionsToTxn). Its first commit's EndTxn is held past request.timeout.ms;
    the retry, carrying the same epoch, is answered as a retry of the end that bumped it; the next
    transaction writes with the new epoch, and the held EndTxn, released inside it, is refused (an
    epoch error, or CONCURRENT_TRANSACTIONS should it meet the client's own commit). Nothing tears:
    read_committed reads the two transactions' records, each committed by its own EndTxn."""
    from broker_emu.proxy.proxy import run_proxy_in_thread

    kafka = kafka_factory(features={"transaction.version": 2})
    kafka.create_topic(TOPIC, 1, 1)
    with run_proxy_in_thread(kafka.bootstrap) as proxy:
        add_fault(proxy, {"match": {"api": "EndTxn"}, "times": 1,
                          "action": {"type": "hold", "until": "next_txn_produce", "ms": 60_000}})
        producer = client.Producer({"bootstrap.servers": proxy.bootstrap, "transactional.id": "late-tx-v2",
                                    "client.id": "late-producer", "request.timeout.ms": 2000, "max.block.ms": 30_000})
        try:
            producer.init_transactions()
            producer.begin_transaction()
            producer.send(TOPIC, b"n", partition=0).result()
            producer.commit_transaction()             # its EndTxn held; the retry after 2 s commits
            producer.begin_transaction()
            producer.send(TOPIC, b"n+1 first", partition=0).result()
            answers = _wait_for(proxy, "late_answer")   # the held EndTxn(commit) of n reaches Kafka now
            producer.send(TOPIC, b"n+1 second", partition=0).result()
            producer.commit_transaction()
        finally:
            producer.close()
        received = events(proxy, "recv")
    assert not [e for e in received if e.api == "AddPartitionsToTxn"]
    assert {e.api_version for e in received if e.api == "EndTxn"} == {5}
    assert answers and set(answers[0].details.get("errors") or []) & {90, 47, 51}, answers
    assert _read_committed(kafka.bootstrap) == [b"n", b"n+1 first", b"n+1 second"]
