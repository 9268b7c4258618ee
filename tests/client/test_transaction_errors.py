"""KIP-1050's error classes in our transactional producer, in virtual time against the emulator
answering an error (the ``error`` fault): what each class lets the application do next, as Java
4.4's TransactionManager has it — retriable (the call gives up at its bound and may be called
again), abortable (abort, then a new transaction commits), fatal (every later call refuses)."""

import pytest
import trio

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from client.errors import KafkaError, ProducerFencedError, TransactionAbortableError
from client.exceptions import TimeoutException
from client.producer.async_producer import open_producer
from client.producer.transactions import State, TransactionStateError
from tests.client.test_producer_virtual_time import connect_to

BOOT = {"bootstrap.servers": "127.0.0.1:0", "transactional.id": "tx", "linger.ms": 5}


def answer_error(cluster, api, error, times=None, **match):
    rule = {"match": {"api": api, **match}, "action": {"type": "error", "error": error}}
    if times is not None:
        rule["times"] = times
    return cluster.faults.add(rule, cluster.now_ms())


def received(cluster, api):
    return [e for e in cluster.trace.query(kind=Kind.RECV) if e.api == api]


async def commit_one(p, value=b"ok"):
    p.begin_transaction()
    await (await p.send("t", value, partition=0)).get()
    await p.commit_transaction()


async def assert_fatal_after(p):
    """A producer in its fatal state refuses every later call, saying why and what to do."""
    with pytest.raises(TransactionStateError, match="can only be closed") as raised:
        p.begin_transaction()
    assert raised.value.txn_class == "fatal"
    assert p.txn.state == State.FATAL_ERROR


@pytest.mark.parametrize("version", [1, 2])
async def test_concurrent_transactions_held_is_retriable_until_the_calls_bound(autojump_clock, version):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"transaction.version": version}) as cluster:
        async with open_producer({**BOOT, "max.block.ms": 4000}, connect=connect_to(cluster)) as p:
            await p.init_transactions()
            p.begin_transaction()
            await (await p.send("t", b"x", partition=0)).get()
            rule = answer_error(cluster, "EndTxn", "CONCURRENT_TRANSACTIONS")
            start = trio.current_time()
            with pytest.raises(TimeoutException, match="max.block.ms") as raised:
                await p.commit_transaction()
            assert trio.current_time() - start == pytest.approx(4.0)
            assert raised.value.txn_class == "retriable" and "call it again" in str(raised.value)
            assert len(received(cluster, "EndTxn")) > 3   # retried with backoff all along
            cluster.faults.remove(rule.id)
            await p.commit_transaction()   # the same commit, now answered
            await commit_one(p)


@pytest.mark.parametrize("version", [1, 2])
async def test_transaction_abortable_on_commit_lets_the_application_abort_and_go_on(autojump_clock, version):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"transaction.version": version}) as cluster:
        async with open_producer(BOOT, connect=connect_to(cluster)) as p:
            await p.init_transactions()
            p.begin_transaction()
            await (await p.send("t", b"x", partition=0)).get()
            answer_error(cluster, "EndTxn", "TRANSACTION_ABORTABLE", times=1)
            with pytest.raises(TransactionAbortableError, match="abort_transaction") as raised:
                await p.commit_transaction()
            assert raised.value.txn_class == "abortable" and p.txn.state == State.ABORTABLE_ERROR
            with pytest.raises(TransactionStateError, match="abortable") as again:
                await p.commit_transaction()
            assert again.value.txn_class == "abortable"
            await p.abort_transaction()
            await commit_one(p)
        assert [e.details["commit"] for e in cluster.trace.query(kind=Kind.TXN_MARKER)] == [False, True]


async def test_transaction_abortable_while_aborting_is_fatal(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_producer(BOOT, connect=connect_to(cluster)) as p:
            await p.init_transactions()
            p.begin_transaction()
            await (await p.send("t", b"x", partition=0)).get()
            answer_error(cluster, "EndTxn", "TRANSACTION_ABORTABLE", times=1)
            with pytest.raises(TransactionAbortableError, match="failed to abort the transaction") as raised:
                await p.abort_transaction()
            assert raised.value.txn_class == "fatal"
            await assert_fatal_after(p)


@pytest.mark.parametrize("error", ["INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"])
async def test_an_old_epoch_at_the_coordinator_is_fatal_and_reported_as_fenced(autojump_clock, error):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_producer(BOOT, connect=connect_to(cluster)) as p:
            await p.init_transactions()
            p.begin_transaction()
            await (await p.send("t", b"x", partition=0)).get()
            answer_error(cluster, "EndTxn", error, times=1)
            with pytest.raises(ProducerFencedError, match="its epoch is no longer current") as raised:
                await p.commit_transaction()
            assert raised.value.txn_class == "fatal" and error in str(raised.value)
            await assert_fatal_after(p)


@pytest.mark.parametrize(("api", "error"), [("EndTxn", "INVALID_TXN_STATE"), ("EndTxn", "INVALID_PRODUCER_ID_MAPPING"),
                                            ("AddPartitionsToTxn", "INVALID_TXN_STATE"),
                                            ("AddPartitionsToTxn", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")])
async def test_the_coordinators_fatal_answers(autojump_clock, api, error):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"transaction.version": 1}) as cluster:
        async with open_producer({**BOOT, "delivery.timeout.ms": 3000, "request.timeout.ms": 2000},
                                 connect=connect_to(cluster)) as p:
            await p.init_transactions()
            p.begin_transaction()
            answer_error(cluster, api, error, times=1)
            future = await p.send("t", b"x", partition=0)
            with pytest.raises(KafkaError, match=error) as raised:
                if api == "EndTxn":
                    await future.get()
                await p.commit_transaction()
            assert raised.value.txn_class == "fatal" and "can only be closed" in str(raised.value)
            await assert_fatal_after(p)


async def test_unknown_producer_id_is_abortable_and_the_abort_bumps_the_epoch_under_version_1(autojump_clock):
    """AddPartitionsToTxnHandler's abortableErrorIfPossible: the coordinator can bump (InitProducerId
    v3+), so abortable, and the abort is followed by the client's bump."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"transaction.version": 1}) as cluster:
        async with open_producer({**BOOT, "delivery.timeout.ms": 3000, "request.timeout.ms": 2000},
                                 connect=connect_to(cluster)) as p:
            await p.init_transactions()
            p.begin_transaction()
            answer_error(cluster, "AddPartitionsToTxn", "UNKNOWN_PRODUCER_ID", times=1)
            await p.send("t", b"x", partition=0)
            await trio.sleep(1)
            assert p.txn.state == State.ABORTABLE_ERROR and p.txn.last_error.txn_class == "abortable"
            await p.abort_transaction()
            assert len(received(cluster, "InitProducerId")) == 2
            await commit_one(p)


@pytest.mark.parametrize("version", [1, 2])
async def test_a_record_whose_retriable_error_outlives_its_budget_makes_the_transaction_abortable(autojump_clock, version):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"transaction.version": version}) as cluster:
        config = {**BOOT, "delivery.timeout.ms": 3000, "request.timeout.ms": 1000}
        async with open_producer(config, connect=connect_to(cluster)) as p:
            await p.init_transactions()
            p.begin_transaction()
            rule = answer_error(cluster, "Produce", "NOT_ENOUGH_REPLICAS")
            future = await p.send("t", b"x", partition=0)
            with pytest.raises(KafkaError):
                await future.get()
            error = p.txn.last_error
            assert isinstance(error, TransactionAbortableError) and error.txn_class == "abortable"
            assert "exhausting retries" in str(error) and isinstance(error.__cause__, KafkaError)
            with pytest.raises(TransactionStateError, match="abort_transaction"):
                await p.commit_transaction()
            cluster.faults.remove(rule.id)
            await p.abort_transaction()
            await commit_one(p)


async def test_transaction_abortable_on_txn_offset_commit_under_version_2(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_producer(BOOT, connect=connect_to(cluster)) as p:
            await p.init_transactions()
            p.begin_transaction()
            await (await p.send("t", b"x", partition=0)).get()
            answer_error(cluster, "TxnOffsetCommit", "TRANSACTION_ABORTABLE", times=1)
            with pytest.raises(TransactionAbortableError) as raised:
                await p.send_offsets_to_transaction({("t", 0): 1}, "g")
            assert raised.value.txn_class == "abortable"
            await p.abort_transaction()
            await commit_one(p)
        assert received(cluster, "AddOffsetsToTxn") == []


@pytest.mark.parametrize("version", [1, 2])
async def test_an_authorization_error_on_init_is_abortable_and_the_abort_recovers(autojump_clock, version):
    """InitProducerIdHandler: TRANSACTIONAL_ID_AUTHORIZATION_FAILED is abortable there (the ACL may
    be granted meanwhile). Under version 1 the abort leaves the producer uninitialized and init
    runs again. Under version 2 the abort is where the transaction version is first read (a
    failed init never read it), and turning to version 2 asks for an epoch bump, an
    InitProducerId, which initializes the producer (Java's maybeUpdateTransactionV2Enabled in
    beginCompletingTransaction, then clientSideEpochBumpRequired)."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"transaction.version": version}) as cluster:
        async with open_producer(BOOT, connect=connect_to(cluster)) as p:
            answer_error(cluster, "InitProducerId", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", times=1)
            with pytest.raises(KafkaError, match="TRANSACTIONAL_ID_AUTHORIZATION_FAILED") as raised:
                await p.init_transactions()
            assert raised.value.txn_class == "abortable" and p.txn.state == State.ABORTABLE_ERROR
            await p.abort_transaction()
            if version == 1:
                assert p.txn.state == State.UNINITIALIZED
                await p.init_transactions()
            assert p.txn.state == State.READY and len(received(cluster, "InitProducerId")) == 2
            await commit_one(p)


@pytest.mark.parametrize(("error", "txn_class"), [("GROUP_AUTHORIZATION_FAILED", "abortable"),
                                                  ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "fatal")])
async def test_find_coordinator_refused_for_the_offsets_group(autojump_clock, error, txn_class):
    """FindCoordinatorHandler: the group's coordinator lookup refused for the group is abortable,
    anything else not retriable fatal."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_producer(BOOT, connect=connect_to(cluster)) as p:
            await p.init_transactions()
            p.begin_transaction()
            await (await p.send("t", b"x", partition=0)).get()
            answer_error(cluster, "FindCoordinator", error, times=1)
            with pytest.raises(KafkaError, match=error) as raised:
                await p.send_offsets_to_transaction({("t", 0): 1}, "g")
            assert raised.value.txn_class == txn_class
            if txn_class == "abortable":
                await p.abort_transaction()
                await commit_one(p)
            else:
                await assert_fatal_after(p)
