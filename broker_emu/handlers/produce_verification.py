"""A transactional Produce asks the transaction coordinator before the append, as Kafka's
``ReplicaManager.appendRecords`` does through ``AddPartitionsToTxnManager``
(``produceRequestVersionToTransactionSupportedOperation``):

- v12+ (transaction version 2, KIP-890 part 2): the leader *adds* the partition to the transaction
  (AddPartitionsToTxn v5, verifyOnly false: ``ADD_PARTITION``); the client sends no
  AddPartitionsToTxn.
- v11 and below (version 1), when ``transaction.partition.verification.enable`` (Kafka's default
  is true; the emulator's false, so version 1 stays as it always was here, and the chaos kit's
  fenced write still reaches the log): the leader only *verifies* that the client's AddPartitionsToTxn added it (verifyOnly
  true: ``handleVerifyPartitionsInTransaction``); not added is TRANSACTION_ABORTABLE, answered as
  INVALID_TXN_STATE to v10 and below (``DEFAULT_ERROR``), as it is to v11 (measured on Kafka 4.4.0:
  a v11 batch of a partition never added gets 120).

Either way:
- Asked only when the partition has no transaction of this producer open at this epoch
  (``UnifiedLog.hasOngoingTransaction``): the first batch of each transaction on each partition.
- The producer id and epoch must be the coordinator's current ones, so a batch of a transaction
  whose end bumped the epoch (version 2), or of a fenced producer, is refused.
- CONCURRENT_TRANSACTIONS (the previous transaction's markers are being written) is retried by
  the broker for v12+ every ``add.partitions.to.txn.retry.backoff.ms`` until
  ``add.partitions.to.txn.retry.backoff.max.ms`` (at most the broker's request.timeout.ms,
  30 s) has passed since the first try, then answered as it is, for the client to retry; below
  v12 it becomes NOT_ENOUGH_REPLICAS at once.
- The coordinator's answer becomes the partition's error as Kafka maps it: PRODUCER_FENCED to
  INVALID_PRODUCER_EPOCH (``AddPartitionsToTxnManager``); an unreachable or moving coordinator
  to NOT_ENOUGH_REPLICAS, retriable without a metadata refresh (``ReplicaManager``).
"""

from __future__ import annotations

from typing import Any

import trio

from broker_emu.context import RequestContext
from client.errors import ErrorCode as E
from client.protocol.records import CorruptRecordBatchError, TruncatedBatchError, parse_batch_header

BROKER_REQUEST_TIMEOUT_MS = 30000   # the broker's request.timeout.ms, the cap on the retries
FIRST_ADDING_VERSION = 12
# ReplicaManager: errors of the verification older clients would not retry as such
_NOT_ENOUGH_REPLICAS = frozenset({E.NETWORK_EXCEPTION, E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE,
                                  E.NOT_COORDINATOR})


async def add_to_transaction(ctx: RequestContext, transactional_id: str | None, topic: str, index: int,
                             records: Any) -> tuple[int, str | None] | None:
    """None when the batch may go to the log (no verification needed, or the coordinator added
    the partition); else the partition's (error, message). A batch this cannot read, or a
    partition not led here, is left to the append, which answers it."""
    adds = ctx.api_version >= FIRST_ADDING_VERSION
    if transactional_id is None or not records or ctx.api_version < 3 or not (
            adds or ctx.cluster.config["transaction.partition.verification.enable"]):
        return None
    cluster = ctx.cluster
    p = cluster.partition(topic, index)
    if p is None or p.leader != ctx.broker_id:
        return None
    try:
        header = parse_batch_header(records, 0)
    except (TruncatedBatchError, CorruptRecordBatchError):
        return None
    if not header.is_transactional or header.producer_id < 0:
        return None
    pid, epoch = header.producer_id, header.producer_epoch
    entry = p.log.producers.entry(pid)
    if p.txns.open_since(pid) is not None and entry is not None and entry.epoch == epoch:
        return None   # this transaction is already open here: no verification (hasOngoingTransaction)
    if adds:
        error = await _ask_coordinator(ctx, transactional_id, pid, epoch, (topic, index))
    else:
        error = _verify_once(ctx, transactional_id, pid, epoch, (topic, index))
    if error == E.NONE:
        return None
    if error == E.PRODUCER_FENCED:
        return E.INVALID_PRODUCER_EPOCH, None
    if error in _NOT_ENOUGH_REPLICAS or (error == E.CONCURRENT_TRANSACTIONS and not adds):
        return E.NOT_ENOUGH_REPLICAS, f"Unable to verify the partition has been added to the transaction. " \
                                      f"Underlying error: {E(error).name}"
    if error == E.TRANSACTION_ABORTABLE and ctx.api_version <= 10:
        error = E.INVALID_TXN_STATE   # DEFAULT_ERROR: clients before KIP-890 part 1 know no TRANSACTION_ABORTABLE
    if error == E.INVALID_TXN_STATE:
        return error, "Partition was not added to the transaction"
    return error, None


def _verify_once(ctx: RequestContext, tid: str, pid: int, epoch: int, partition: tuple[str, int]) -> int:
    """``handleVerifyPartitionsInTransaction``: NONE when the partition is in the transaction."""
    txn = ctx.cluster.txn
    owner = txn.coordinator_for(tid)
    if owner < 0 or not ctx.cluster.is_alive(owner):
        return E.COORDINATOR_NOT_AVAILABLE
    error, meta = txn.check_producer(tid, pid, epoch, version=5)
    if meta is None:
        return error
    return E.NONE if partition in meta.partitions else E.TRANSACTION_ABORTABLE


async def _ask_coordinator(ctx: RequestContext, tid: str, pid: int, epoch: int, partition: tuple[str, int]) -> int:
    cluster = ctx.cluster
    config = cluster.config
    give_up_at = cluster.now_ms() + min(config["add.partitions.to.txn.retry.backoff.max.ms"], BROKER_REQUEST_TIMEOUT_MS)
    while True:
        error = _add_once(ctx, tid, pid, epoch, partition)
        if error != E.CONCURRENT_TRANSACTIONS or cluster.now_ms() >= give_up_at:
            return error
        await trio.sleep(config["add.partitions.to.txn.retry.backoff.ms"] / 1000)


def _add_once(ctx: RequestContext, tid: str, pid: int, epoch: int, partition: tuple[str, int]) -> int:
    txn = ctx.cluster.txn
    owner = txn.coordinator_for(tid)
    if owner < 0 or not ctx.cluster.is_alive(owner):
        return E.COORDINATOR_NOT_AVAILABLE
    error, meta = txn.check_producer(tid, pid, epoch, version=5)
    if meta is not None:
        txn.add_partitions(meta, {partition}, tv2=True)
    return error
