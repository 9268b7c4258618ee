"""Our transactional producer speaks the cluster's transaction version (KIP-890), in virtual time
against the emulator finalizing ``transaction.version`` 1 or 2, and on the blocking face against
one on its own thread: under version 2 no AddPartitionsToTxn or AddOffsetsToTxn, Produce v12,
TxnOffsetCommit v5, EndTxn v5 whose new epoch the next transaction writes with; under version 1
the requests of before and one epoch for every transaction."""

import pytest

from broker_emu.runtime import open_cluster, run_cluster_in_thread
from broker_emu.trace import Kind
from client.producer.async_producer import open_producer
from client.protocol.records import parse_batch_header
from tests.client.test_producer_virtual_time import connect_to

BOOT = {"bootstrap.servers": "127.0.0.1:0", "transactional.id": "tx", "linger.ms": 5}


def received(cluster, api):
    return [e.api_version for e in cluster.trace.query(kind=Kind.RECV) if e.api == api]


def data_batches(cluster, topic="t", partition=0):
    headers = (parse_batch_header(b.data) for b in cluster.partition(topic, partition).log.batches)
    return [(h.producer_epoch, h.base_sequence) for h in headers if not h.is_control]


async def three_transactions(cluster):
    """commit (records + offsets), abort, commit: what the version decides shows in the trace."""
    async with open_producer(BOOT, connect=connect_to(cluster)) as p:
        await p.init_transactions()
        for commit in (True, False, True):
            p.begin_transaction()
            await (await p.send("t", b"x", partition=0)).get()
            await (await p.send("t", b"y", partition=0)).get()
            if commit:
                await p.send_offsets_to_transaction({("t", 0): 7}, "g")
                await p.commit_transaction()
            else:
                await p.abort_transaction()
        return p.txn.tv2


async def test_version_2_adds_partitions_by_produce_and_takes_each_end_txns_new_epoch(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"transaction.version": 2}) as cluster:
        assert await three_transactions(cluster) is True
        assert received(cluster, "AddPartitionsToTxn") == [] and received(cluster, "AddOffsetsToTxn") == []
        assert set(received(cluster, "Produce")) == {12}
        assert received(cluster, "EndTxn") == [5, 5, 5] and received(cluster, "TxnOffsetCommit") == [5, 5]
        assert len(received(cluster, "InitProducerId")) == 1   # the bumps came with EndTxn, not from the client
        # every transaction its own epoch, each starting its sequences again at 0
        assert data_batches(cluster) == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
        assert cluster.groups.groups["g"].offsets[("t", 0)].offset == 7
        part = cluster.partition("t", 0)
        assert [(a.first_offset, a.last_offset) for a in part.txns.aborted] == [(3, 5)]   # its two records and its marker


async def test_version_1_keeps_one_epoch_and_adds_partitions_and_offsets_itself(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"transaction.version": 1}) as cluster:
        assert await three_transactions(cluster) is False
        assert len(received(cluster, "AddPartitionsToTxn")) == 3 and len(received(cluster, "AddOffsetsToTxn")) == 2
        assert max(received(cluster, "Produce")) <= 11
        assert set(received(cluster, "EndTxn")) == {4} and set(received(cluster, "TxnOffsetCommit")) == {4}
        assert {epoch for epoch, _ in data_batches(cluster)} == {0}
        assert [seq for _, seq in data_batches(cluster)] == [0, 1, 2, 3, 4, 5]


async def test_a_kafka_before_4_0_advertises_no_features_so_version_1_is_spoken(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.kafka.version": "3.9"}) as cluster:
        assert await three_transactions(cluster) is False
        assert len(received(cluster, "AddPartitionsToTxn")) == 3 and received(cluster, "EndTxn")
        assert max(received(cluster, "EndTxn")) <= 4


async def test_under_version_2_an_abortable_error_needs_no_client_side_bump(autojump_clock):
    """Java's needToTriggerEpochBumpFromClient is false under version 2: the abort's EndTxn v5
    bumps the epoch, so a record that expired in the aborted transaction cannot land in the next."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"transaction.version": 2}) as cluster:
        config = {**BOOT, "request.timeout.ms": 1000, "delivery.timeout.ms": 1005}
        async with open_producer(config, connect=connect_to(cluster)) as p:
            await p.init_transactions()
            p.begin_transaction()
            cluster.faults.add({"match": {"api": "Produce"}, "action": "black_hole", "times": 1}, cluster.now_ms())
            future = await p.send("t", b"expired", partition=0)
            with pytest.raises(Exception, match="delivery.timeout.ms"):
                await future.get()
            assert p.txn.last_error.txn_class == "abortable"
            assert "exhausting retries" in str(p.txn.last_error) and "abort_transaction()" in str(p.txn.last_error)
            await p.abort_transaction()
            p.begin_transaction()
            await (await p.send("t", b"after", partition=0)).get()
            await p.commit_transaction()
        assert len(received(cluster, "InitProducerId")) == 1
        assert data_batches(cluster)[-1] == (1, 0)


def test_the_blocking_face_speaks_version_2_too():
    from client.producer.blocking import Producer

    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)], config={"transaction.version": 2}) as tc:
        p = Producer({"bootstrap.servers": tc.bootstrap, "transactional.id": "tx-blocking", "linger.ms": 5})
        try:
            p.init_transactions(timeout=20)
            for _ in range(2):
                p.begin_transaction()
                p.send("t", b"x", partition=0).result(timeout=20)
                p.send_offsets_to_transaction({("t", 0): 1}, "g", timeout=20)
                p.commit_transaction(timeout=20)
        finally:
            p.close(timeout=10)
        cluster = tc.cluster
        assert tc.call(received, cluster, "AddPartitionsToTxn") == []
        assert tc.call(received, cluster, "EndTxn") == [5, 5]
        assert tc.call(data_batches, cluster) == [(0, 0), (1, 0)]
