"""Our transactional producer against the emulator, in virtual time: Java's semantics
(KafkaProducer / TransactionManager) for commit, abort, a commit that timed out and is called
again, an unreachable coordinator, and fencing."""

import pytest
import trio

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from client.errors import KafkaError
from client.exceptions import TimeoutException
from client.producer.async_producer import open_producer
from client.producer.transactions import TransactionStateError
from tests.client.test_producer_virtual_time import connect_to

BOOT = {"bootstrap.servers": "127.0.0.1:0", "transactional.id": "tx", "linger.ms": 5}


def txn_producer(cluster, **config):
    return open_producer({**BOOT, **config}, connect=connect_to(cluster))


def markers(cluster):
    return [(e.details["topic"], e.details["partition"], e.details["commit"]) for e in cluster.trace.query(kind=Kind.TXN_MARKER)]


async def test_commit_and_abort_write_their_markers_and_the_aborted_records_are_listed(autojump_clock):
    async with open_cluster(3, topics=[("t", 3, 3)], listen=False) as cluster:
        async with txn_producer(cluster) as p:
            await p.init_transactions()
            p.begin_transaction()
            futures = [await p.send("t", b"c%d" % i, partition=i % 3) for i in range(6)]
            await p.send_offsets_to_transaction({("t", 0): 42}, "g")
            await p.commit_transaction()
            assert all(f.done and f.error is None for f in futures)
            p.begin_transaction()
            for i in range(3):
                await (await p.send("t", b"a%d" % i, partition=i)).get()
            await p.abort_transaction()
        assert sorted(markers(cluster)) == sorted([("t", i, True) for i in range(3)] + [("t", i, False) for i in range(3)])
        assert cluster.groups.groups["g"].offsets[("t", 0)].offset == 42
        for i in range(3):
            part = cluster.partition("t", i)
            assert [(a.first_offset, a.last_offset) for a in part.txns.aborted] == [(3, 4)]   # 2 committed + marker, then 1 + marker
            assert part.last_stable_offset == part.high_watermark == 5


async def test_a_commit_that_timed_out_completes_the_same_transaction_when_called_again(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with txn_producer(cluster, **{"max.block.ms": 2000, "request.timeout.ms": 5000}) as p:
            await p.init_transactions()
            p.begin_transaction()
            await (await p.send("t", b"x", partition=0)).get()
            rule = cluster.faults.add({"match": {"api": "EndTxn"}, "action": "black_hole", "times": 1}, cluster.now_ms())
            start = trio.current_time()
            with pytest.raises(TimeoutException, match="max.block.ms"):
                await p.commit_transaction()
            assert trio.current_time() - start == pytest.approx(2.0)
            await p.commit_transaction(timeout=30)   # the first EndTxn timed out at 5 s; its retry commits
            assert rule.id is not None
        ends = [e for e in cluster.trace.query(kind=Kind.RECV) if e.api == "EndTxn"]
        assert len(ends) == 2 and markers(cluster) == [("t", 0, True)]
        with pytest.raises(KafkaError):
            p.begin_transaction()   # closed


async def test_init_transactions_against_an_unreachable_coordinator_times_out_at_max_block(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.faults.add({"match": {"api": "InitProducerId"}, "action": "black_hole"}, cluster.now_ms())
        async with txn_producer(cluster, **{"max.block.ms": 3000}) as p:
            start = trio.current_time()
            with pytest.raises(TimeoutException):
                await p.init_transactions()
            assert trio.current_time() - start == pytest.approx(3.0)
            with pytest.raises(TransactionStateError, match="begin_transaction"):
                p.begin_transaction()


async def test_a_second_producer_fences_the_first(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with txn_producer(cluster) as old, txn_producer(cluster) as new:
            await old.init_transactions()
            old.begin_transaction()
            await (await old.send("t", b"zombie", partition=0)).get()
            await new.init_transactions()   # aborts the old transaction, bumps the epoch
            with pytest.raises(KafkaError, match="PRODUCER_FENCED"):
                await old.commit_transaction()
            with pytest.raises(TransactionStateError, match="fatal"):
                old.begin_transaction()
            new.begin_transaction()
            await (await new.send("t", b"fresh", partition=0)).get()
            await new.commit_transaction()
        assert markers(cluster) == [("t", 0, False), ("t", 0, True)]


@pytest.mark.parametrize(("version", "answer"), [(1, "PRODUCER_FENCED"), (2, "INVALID_TXN_STATE")])
async def test_the_coordinators_timeout_fences_a_transaction_left_open(autojump_clock, version, answer):
    """Version 1: the timeout's abort bumped the epoch, so the commit is fenced. Version 2: the
    commit's epoch is the one before the abort's bump, which the coordinator takes for a retry of
    an end that completed the other way (TransactionCoordinator.endTransaction): INVALID_TXN_STATE.
    Fatal both ways, as Java's EndTxnHandler has it."""
    config = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 10000, "transaction.version": version}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=config) as cluster:
        async with txn_producer(cluster, **{"transaction.timeout.ms": 3000}) as p:
            await p.init_transactions()
            p.begin_transaction()
            await (await p.send("t", b"slow", partition=0)).get()
            await trio.sleep(12)
            with pytest.raises(KafkaError, match=answer) as raised:
                await p.commit_transaction()
            assert raised.value.txn_class == "fatal" and "can only be closed" in str(raised.value)
        timed_out = [e for e in cluster.trace.query(kind=Kind.TXN_STATE) if "timed out" in e.details["reason"]]
        assert [e.t_ms for e in timed_out] == [10000.0]


async def _read(cluster, isolation: str, n_polls: int = 6) -> tuple[list[bytes], int]:
    from client.consumer.async_consumer import open_consumer
    from client.consumer.records import TopicPartition

    config = {"bootstrap.servers": "127.0.0.1:0", "auto.offset.reset": "earliest", "isolation.level": isolation}
    got: list[bytes] = []
    async with open_consumer(config, connect=connect_to(cluster)) as c:
        c.assign([TopicPartition("t", 0)])
        for _ in range(n_polls):
            got += [r.value for r in await c.poll(0.5)]
        position = await c.position(TopicPartition("t", 0), timeout=5)
    return got, position


async def test_our_consumer_reads_committed_records_only_and_never_a_marker(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with txn_producer(cluster) as p:
            await p.init_transactions()
            for kind, commit in (("c", True), ("a", False), ("d", True)):
                p.begin_transaction()
                for i in range(2):
                    await (await p.send("t", b"%s%d" % (kind.encode(), i), partition=0)).get()
                await (p.commit_transaction() if commit else p.abort_transaction())
        # 3 transactions of 2 records and a marker each: offsets 0-8
        assert await _read(cluster, "read_committed") == ([b"c0", b"c1", b"d0", b"d1"], 9)
        assert await _read(cluster, "read_uncommitted") == ([b"c0", b"c1", b"a0", b"a1", b"d0", b"d1"], 9)


async def test_an_abort_after_a_failed_send_bumps_the_epoch_as_java_does(autojump_clock):
    """Java's TransactionManager under transaction version 1: an abortable error (a record expired
    at delivery.timeout.ms) marks the epoch for a bump, and the abort's EndTxn is followed by
    InitProducerId with the current id and epoch (KIP-360); the next transaction writes with the
    new epoch from sequence 0. A plain abort bumps nothing."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"transaction.version": 1}) as cluster:
        config = {"request.timeout.ms": 1000, "delivery.timeout.ms": 1005, "linger.ms": 5}
        async with txn_producer(cluster, **config) as p:
            await p.init_transactions()
            p.begin_transaction()
            await (await p.send("t", b"plain", partition=0)).get()
            await p.abort_transaction()
            inits = [e for e in cluster.trace.query(kind=Kind.RECV) if e.api == "InitProducerId"]
            assert len(inits) == 1   # no bump after an abort the application chose
            p.begin_transaction()
            cluster.faults.add({"match": {"api": "Produce"}, "action": "black_hole", "times": 1}, cluster.now_ms())
            with pytest.raises(KafkaError):
                await (await p.send("t", b"expired", partition=0)).get()
            await p.abort_transaction()
            bumped = [e for e in cluster.trace.query(kind=Kind.TXN_STATE) if e.details["reason"] == "init"]
            assert [e.details["epoch"] for e in bumped] == [0, 1]
            p.begin_transaction()
            await (await p.send("t", b"after", partition=0)).get()
            await p.commit_transaction()
        from client.protocol.records import parse_batch_header

        headers = [h for h in (parse_batch_header(b.data) for b in cluster.partition("t", 0).log.batches) if not h.is_control]
        assert [(h.producer_epoch, h.base_sequence) for h in headers][-1] == (1, 0)


@pytest.mark.parametrize("version", [1, 2])
async def test_a_commit_outlives_its_coordinator_moving_and_loading(autojump_clock, version):
    """The broker coordinating the transaction stops with it open; the one that takes over loads
    the transaction log for emu.txn.load.ms, answering COORDINATOR_LOAD_IN_PROGRESS meanwhile: the
    client finds the new coordinator, retries until the load is done and commits, inside max.block.ms."""
    config = {"emu.txn.load.ms": 3000, "transaction.version": version}
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config=config) as cluster:
        async with txn_producer(cluster, **{"max.block.ms": 20000}) as p:
            await p.init_transactions()
            p.begin_transaction()
            await (await p.send("t", b"x", partition=0)).get()
            await cluster.stop_broker(cluster.txn.coordinator_for("tx"))
            start = trio.current_time()
            await p.commit_transaction()
            assert 3.0 <= trio.current_time() - start < 4.0
        assert markers(cluster) == [("t", 0, True)]
        refused = [e for e in cluster.trace.query(kind=Kind.SEND) if e.api == "EndTxn"
                   and "COORDINATOR_LOAD_IN_PROGRESS" in str(e.details.get("errors"))]
        assert refused, "EndTxn was never answered COORDINATOR_LOAD_IN_PROGRESS"
