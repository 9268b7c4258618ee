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


def _read_committed(bootstrap: str, partition: int = 0) -> list[bytes]:
    consumer = client.Consumer({"bootstrap.servers": bootstrap, "group.id": None, "isolation.level": "read_committed",
                                "auto.offset.reset": "earliest", "client.id": "late-reader"})
    try:
        consumer.assign([(TOPIC, partition)])
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


@pytest.mark.parametrize("version", [1, 2])
def test_kafkajs_on_kafka_commits_the_aborted_record_instead_of_its_own(kafka_factory, version):
    """txn.late-produce on Kafka 4.4 (three nodes) with kafkajs 2.2.4, through the proxy:
    the first transaction's Produce is held; kafkajs keeps the connection after each request timeout,
    its retries queue behind the held one, and the record fails after 5 retries. The application
    aborts and begins the next transaction; its AddPartitionsToTxn releases the held Produce into it.
    kafkajs gave the failed attempt's sequence back (producer/sendMessages.js), so the next record
    carries the same epoch and sequence: Kafka takes it for a duplicate of the late one
    (ProducerStateManager's duplicate check) and appends nothing. The commit succeeds, and
    read_committed reads the aborted transaction's record, not the committed one's. The partition's
    leader is not the transaction coordinator, as in the scenario: kafkajs has one connection per
    broker, and behind the held Produce its abort's FindCoordinator would wait too. The same under
    transaction version 2: kafkajs speaks version 1 (Produce v7, EndTxn v1), and Kafka decides the
    version by the request (TransactionVersion.transactionVersionForEndTxn)."""
    from broker_emu.proxy.proxy import run_proxy_in_thread
    from conformance.adapters.base import RunEnv
    from conformance.adapters.kafkajs_client import KafkajsAdapter
    from conformance.model import Operation

    adapter = KafkajsAdapter()
    ready, why = adapter.available()
    if not ready:
        pytest.skip(why)
    kafka = kafka_factory(brokers=3, features={"transaction.version": version})
    kafka.create_topic(TOPIC, 3, 1)
    kafka.create_topic("warm", 1, 1)
    with run_proxy_in_thread(kafka.bootstrap) as proxy:
        # unscaled: kafkajs's own backoffs (300 ms doubling, retry/defaults.js); a 3 s request timeout
        env = RunEnv(proxy.bootstrap, f"late-kafkajs-v{version}", {"request.timeout.ms": 3000}, 1.0)
        try:
            # a first transaction on another topic, until the coordinator is up (a fresh Kafka creates
            # __transaction_state on the first FindCoordinator, a JVM on a loaded machine)
            warm = [adapter.run_blocking((Operation("transaction", {"topic": "warm", "partition": 0}),), env)[0]]
            while not warm[-1].ok and len(warm) < 5:
                warm.append(adapter.run_blocking((Operation("transaction", {"topic": "warm", "partition": 0}),), env)[0])
            assert warm[-1].ok, warm
            coordinator = next(e.broker for e in events(proxy, "recv") if e.api == "EndTxn")
            partition = next(p for p in range(3) if kafka.partition_replicas(TOPIC, p)[0].node_id != coordinator)
            add_fault(proxy, {"match": {"api": "Produce"}, "times": 1,
                              "action": {"type": "hold", "until": "next_txn_start", "ms": 60_000}})
            [outcome] = adapter.run_blocking((Operation("txn_abort_then_commit", {"topic": TOPIC, "partition": partition}),),
                                             env)
        finally:
            adapter.shutdown()
        release = events(proxy, "late_release")
    assert outcome.ok and outcome.value == "TimeoutException", outcome   # the first record failed, the commit did not
    assert release and release[0].details["connection_open"] is True, release   # kafkajs never closed it
    assert _read_committed(kafka.bootstrap, partition) == [b"txn-1"]
