"""Transaction version 2 (KIP-890 part 2) with real clients, as the finalized transaction.version
decides: the Java client 4.4 reads it from ApiVersions and, at 2, sends no AddPartitionsToTxn nor
AddOffsetsToTxn (Produce v12 and TxnOffsetCommit v5 add the partition and the group), ends each
transaction with EndTxn v5 and goes on at the epoch it answers; at 1 it runs the version 1
protocol with one epoch. librdkafka (confluent-kafka) does not implement KIP-890: it runs the
version 1 protocol against either, and the broker takes it as Kafka 4.4 does (a request's version
decides, not the finalized level). Same outcomes for every run: committed records read, aborted
ones skipped, the group's transactional offset committed."""

from __future__ import annotations

import os

import pytest

from tests.realclients.conftest import require_client
from tests.realclients.test_transactions import check

pytestmark = [pytest.mark.realclient]


def run_cluster(transaction_version: int):
    from broker_emu.runtime import run_cluster_in_thread

    return run_cluster_in_thread(brokers=3, topics=[("t", 3, 3)],
                                 config={"group.initial.rebalance.delay.ms": 0, "transaction.version": transaction_version})


def txn_requests(tc, client_id: str) -> list[tuple[str, int]]:
    """(api, version) of each transactional request the client sent, in order, repeats folded."""
    wanted = {"Produce", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit", "InitProducerId"}
    out: list[tuple[str, int]] = []
    for e in tc.cluster.trace.query(kind="recv", client_id=client_id):
        if e.api in wanted and (not out or out[-1] != (e.api, e.api_version)):
            out.append((e.api, e.api_version))
    return out


def markers(tc) -> list[tuple[int, int]]:
    """(producer id, epoch) of each transaction's markers, one per transaction."""
    seen: list[tuple[int, int]] = []
    for e in tc.cluster.trace.query(kind="txn_marker"):
        key = (e.details["producer_id"], e.details["epoch"])
        if key not in seen:
            seen.append(key)
    return seen


def java_adapter():
    from conformance.adapters.java_client import JavaAdapter

    java = JavaAdapter()
    ok, why = java.available()
    if not ok:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return java


@pytest.mark.parametrize("version", [2, 1])
def test_java_follows_the_finalized_transaction_version(version):
    from conformance.adapters.base import RunEnv
    from conformance.model import Operation

    java = java_adapter()
    with run_cluster(version) as tc:
        try:
            (done,) = java.run_blocking((Operation("txn_commit_abort", {"topic": "t", "prefix": "java", "group": "txn-java"},
                                                   60.0),), RunEnv(tc.bootstrap, "java-txn", {}, 1.0))
        finally:
            java.shutdown()
        assert done.ok, f"{done.error_type}: {done.error_message}"
        check(tc, "java", "txn-java")
        sent = txn_requests(tc, "java-txn")
        apis = {api for api, _ in sent}
        if version == 2:
            assert "AddPartitionsToTxn" not in apis and "AddOffsetsToTxn" not in apis, sent
            assert ("EndTxn", 5) in sent and ("Produce", 12) in sent and ("TxnOffsetCommit", 5) in sent, sent
            # commit then abort: each transaction's markers one epoch above the one before
            (pid0, e0), (pid1, e1) = markers(tc)
            assert pid0 == pid1 and e1 == e0 + 1
        else:
            assert {"AddPartitionsToTxn", "AddOffsetsToTxn"} <= apis, sent
            assert all(v <= 4 for api, v in sent if api == "EndTxn") and all(v <= 11 for api, v in sent if api == "Produce")
            assert len(markers(tc)) == 1, markers(tc)   # both transactions' markers at the one epoch


@pytest.mark.parametrize("version", [2, 1])
def test_librdkafka_keeps_version_1_on_either_cluster(version):
    require_client("confluent-kafka")
    from confluent_kafka import Consumer, Producer, TopicPartition

    from tests.realclients.test_transactions import ABORTED_OFFSET, COMMITTED_OFFSET

    with run_cluster(version) as tc:
        p = Producer({"bootstrap.servers": tc.bootstrap, "transactional.id": "tx-ck", "client.id": "ck-txn", "log_level": 0})
        p.init_transactions(30)
        meta = Consumer({"bootstrap.servers": tc.bootstrap, "group.id": "txn-ck", "log_level": 0})
        for kind, offset in (("c", COMMITTED_OFFSET), ("a", ABORTED_OFFSET)):
            p.begin_transaction()
            for i in range(6):
                p.produce("t", f"ck-{kind}{i}".encode(), partition=i % 3)
            p.send_offsets_to_transaction([TopicPartition("t", 0, offset)], meta.consumer_group_metadata(), 30)
            if kind == "c":
                p.commit_transaction(30)
            else:
                assert p.flush(30) == 0
                p.abort_transaction(30)
        meta.close()
        check(tc, "ck", "txn-ck")
        sent = txn_requests(tc, "ck-txn")
        assert {"AddPartitionsToTxn", "AddOffsetsToTxn"} <= {api for api, _ in sent}, sent
        assert all(v <= 11 for api, v in sent if api == "Produce") and all(v <= 4 for api, v in sent if api == "EndTxn"), sent
        assert len(markers(tc)) == 1   # one epoch for the session, as on Kafka 4.4 at either level
