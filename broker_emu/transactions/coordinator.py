"""The transaction coordinator: one state machine per transactional id, its timeout check, and
the marker writes that end each transaction.

Followed: Kafka's ``TransactionCoordinator`` (handleInitProducerId, handleAddPartitionsToTransaction,
handleEndTransaction, abortTimedOutTransactions), ``TransactionMetadata`` (states and their
transitions) and ``TransactionStateManager`` (placement: abs(hash(id)) % transaction.state.log.num.partitions,
the coordinator being that ``__transaction_state`` partition's leader).

Both forms of the protocol are served, chosen per request as Kafka 4.4 chooses
(``TransactionVersion.transactionVersionForEndTxn``: EndTxn v5+; a partition added by the leader
of a Produce v12+, or a TxnOffsetCommit v5+): version 1, one epoch per producer session, bumped by
InitProducerId and by a timeout; version 2 (KIP-890 part 2), the epoch bumped by every EndTxn
(``TransactionMetadata.prepareAbortOrCommit``), the markers written with the bumped epoch and
EndTxn answering it, so a late Produce or EndTxn of the transaction before is fenced. When the
bump would exhaust the epochs, a new producer id is allocated with it and taken once the markers
are written (``prepareComplete``): the markers carry the old id at epoch 32767, the client gets the
new id at epoch 0.

Two clocks meet here: the client bounds its calls with ``max.block.ms``; the coordinator aborts a
transaction older than its ``transaction.timeout.ms`` only when its check runs, every
``transaction.abort.timed.out.transaction.cleanup.interval.ms`` (10 s by default), and fences the
producer by bumping its epoch.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from broker_emu.coordinator_placement import key_partition
from broker_emu.trace import Kind
from broker_emu.transactions.cluster_view import TxnCluster
from broker_emu.transactions.markers import write_marker
from client.errors import ErrorCode as E

MAX_EPOCH = 32767 - 1   # Short.MaxValue - 1: past it InitProducerId hands out a new producer id
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
FIRST_ADDED = "first partition or group added"


class TxnState(str, enum.Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"


PREPARING = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
ENDED = (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


@dataclass
class TxnMetadata:
    transactional_id: str
    producer_id: int
    epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    start_ms: float = -1.0          # the coordinator's clock when the transaction began (Ongoing)
    last_update_ms: float = -1.0
    # clientTransactionVersion >= 2: the transaction's partitions came from Produce v12 / its end
    # from EndTxn v5, so a retried EndTxn is told apart from the next one by the epoch bump
    tv2: bool = False
    previous_producer_id: int = NO_PRODUCER_ID   # before a rotation at epoch exhaustion
    # TransactionMetadata.lastProducerEpoch: the epoch before the last bump that a retried
    # InitProducerId may still name (its answer was lost); NO_PRODUCER_EPOCH once another producer
    # fenced this one, so that producer's retry is fenced too
    last_epoch: int = NO_PRODUCER_EPOCH
    next_producer_id: int = NO_PRODUCER_ID       # allocated by a version 2 end at exhaustion, taken at Complete


class TransactionCoordinator:
    def __init__(self, cluster: TxnCluster):
        self.cluster = cluster
        self.txns: dict[str, TxnMetadata] = {}
        self.marker_delay_ms: float | None = None   # None: emu.txn.marker.delay.ms (a control can set it)
        # each __transaction_state partition's coordinator as last seen, and when it is done loading it
        self._loaded_by: dict[int, int] = {}
        self._loading_until_ms: dict[int, float] = {}

    def start(self) -> None:
        """Start the timeout check and the transactional-id expiration (on the cluster's
        scheduler, once it runs)."""
        self._schedule_check()
        self._schedule_expiration()

    # -- placement -------------------------------------------------------------------------------
    def log_partition(self, transactional_id: str) -> int:
        return key_partition(transactional_id, self.cluster.config["transaction.state.log.num.partitions"])

    def coordinator_for(self, transactional_id: str) -> int:
        return self.cluster.offsets_partition_leader(self.log_partition(transactional_id))

    def not_coordinator(self, transactional_id: str, broker_id: int) -> int | None:
        owner = self.coordinator_for(transactional_id)
        if owner < 0:
            return E.COORDINATOR_NOT_AVAILABLE
        if owner != broker_id:
            return E.NOT_COORDINATOR
        p = self.log_partition(transactional_id)
        self._loaded_by.setdefault(p, owner)   # a partition's first coordinator has nothing to load
        if self.now_ms() < self._loading_until_ms.get(p, float("-inf")):
            return E.COORDINATOR_LOAD_IN_PROGRESS
        return None

    def coordinators_moved(self) -> None:
        """After a broker stops or starts: a broker that now leads a ``__transaction_state``
        partition its transactions were not on loads them (Kafka's new coordinator reads the
        partition, ``TransactionStateManager.loadTransactionsForTxnTopicPartition``, and completes
        the commits and aborts it finds prepared). The emulator keeps the coordinator's state in
        memory, so what is loaded is exactly what was written: an open transaction stays open, a
        prepared one gets its markers. What shows is the load: for ``emu.txn.load.ms`` the new
        coordinator answers those transactional ids COORDINATOR_LOAD_IN_PROGRESS, as Kafka does
        until its load is done (``TransactionStateManager.getTransactionState``)."""
        load_ms = self.cluster.config["emu.txn.load.ms"]
        for p in sorted({self.log_partition(tid) for tid in self.txns}):
            owner = self.cluster.offsets_partition_leader(p)
            before = self._loaded_by.get(p)
            self._loaded_by[p] = owner
            if before is not None and owner >= 0 and owner != before:
                self._loading_until_ms[p] = self.now_ms() + load_ms
                self.cluster.trace.emit(Kind.TXN_LOG_LOAD, broker=owner, details={
                    "log_partition": p, "from": before, "until_ms": self._loading_until_ms[p],
                    "transactional_ids": sorted(t for t in self.txns if self.log_partition(t) == p)})

    # -- the state machine ---------------------------------------------------------------------------
    def now_ms(self) -> float:
        """The coordinator's clock (transaction start and update times are on it)."""
        return self.cluster.now_ms()

    def _to(self, meta: TxnMetadata, state: TxnState, reason: str, **extra: Any) -> None:
        before = meta.state
        meta.state, meta.last_update_ms = state, self.now_ms()
        self.cluster.trace.emit(Kind.TXN_STATE, details={"transactional_id": meta.transactional_id, "producer_id": meta.producer_id,
                                                         "epoch": meta.epoch, "from": before.value, "to": state.value,
                                                         "reason": reason, **extra})

    def _bump(self, meta: TxnMetadata, last_epoch: int = NO_PRODUCER_EPOCH) -> None:
        meta.last_epoch = last_epoch
        if meta.epoch >= MAX_EPOCH:   # prepareProducerIdRotation: the old id stays for a retry to name
            meta.previous_producer_id = meta.producer_id
            meta.producer_id, meta.epoch = self.cluster.init_producer_id()
        else:
            meta.epoch += 1
            self.cluster.producer_epochs[meta.producer_id] = meta.epoch

    def _fence_for_abort(self, meta: TxnMetadata, tv2: bool) -> None:
        """The epoch bump that aborts an open transaction behind its producer's back (an
        InitProducerId, the timeout check). Kafka 4.4: ``prepareFenceProducerEpoch``, then under
        version 1 ``endTransactionWithTV1`` takes the fenced epoch and clears the last epoch, so a
        retry naming the old epoch is fenced; under version 2 ``endTransaction`` leaves both to
        ``prepareAbortOrCommit``, which bumps once and keeps the old epoch as the last, so the
        producer's own retry of InitProducerId is accepted (TransactionMetadata.prepareIncrementProducerEpoch)."""
        self._bump(meta, last_epoch=meta.epoch if tv2 else NO_PRODUCER_EPOCH)

    def init_producer_id(self, tid: str, timeout_ms: int, pid: int, epoch: int) -> tuple[int, int, int]:
        """(error, producer id, epoch). ``pid``/``epoch`` are what a v3+ client says it had (-1: none).
        Kafka 4.4's ``TransactionCoordinator.prepareInitProducerIdTransit``."""
        if not 0 < timeout_ms <= self.cluster.config["transaction.max.timeout.ms"]:
            return E.INVALID_TRANSACTION_TIMEOUT, -1, -1
        meta = self.txns.get(tid)
        if meta is None:
            new_pid, new_epoch = self.cluster.init_producer_id()
            meta = self.txns[tid] = TxnMetadata(tid, new_pid, new_epoch, timeout_ms, last_update_ms=self.now_ms())
            self._to(meta, TxnState.EMPTY, "init")
            return E.NONE, meta.producer_id, meta.epoch
        if meta.state in PREPARING:
            return E.CONCURRENT_TRANSACTIONS, -1, -1
        given = pid >= 0
        if given and pid != meta.producer_id and not (pid == meta.previous_producer_id and epoch >= MAX_EPOCH):
            # isValidProducerId: only the producer id is checked here, its epoch below
            return E.PRODUCER_FENCED, -1, -1
        if meta.state == TxnState.ONGOING:
            # an unfinished transaction of a previous session: abort it with a new epoch (fencing
            # that session); the caller retries once the markers are written. The version is the
            # cluster's (txnManager.transactionVersionLevel), the request being no EndTxn.
            self._fence_for_abort(meta, tv2=self.cluster.config["transaction.version"] >= 2)
            self._end(meta, commit=False, reason="aborted by InitProducerId")
            return E.CONCURRENT_TRANSACTIONS, -1, -1
        if meta.epoch >= MAX_EPOCH and (not given or epoch == meta.epoch):
            self._bump(meta, last_epoch=meta.epoch if given else NO_PRODUCER_EPOCH)   # a new producer id
        elif not given:
            self._bump(meta)
        elif epoch == meta.epoch:
            self._bump(meta, last_epoch=meta.epoch)   # going on after an error: current and last move
        elif epoch != meta.last_epoch:
            return E.PRODUCER_FENCED, -1, -1
        # else a retry of a bump whose answer was lost: the current epoch again, no bump
        meta.timeout_ms = timeout_ms
        self._to(meta, TxnState.EMPTY, "init")
        return E.NONE, meta.producer_id, meta.epoch

    def check_producer(self, tid: str, pid: int, epoch: int, version: int, fenced_from: int = 2) -> tuple[int, TxnMetadata | None]:
        meta = self.txns.get(tid)
        if meta is None or meta.producer_id != pid:
            return E.INVALID_PRODUCER_ID_MAPPING, None
        if epoch != meta.epoch:
            return (E.PRODUCER_FENCED if version >= fenced_from else E.INVALID_PRODUCER_EPOCH), None
        if meta.state in PREPARING:
            return E.CONCURRENT_TRANSACTIONS, None
        return E.NONE, meta

    def add_partitions(self, meta: TxnMetadata, partitions: set[tuple[str, int]], tv2: bool = False) -> None:
        """``prepareAddPartitions``: the client's AddPartitionsToTxn (v3 and below: version 1) or a
        partition leader's on a Produce v12+ (version 2)."""
        meta.partitions |= partitions
        meta.tv2 = tv2
        self._begin(meta, "first partition added by a Produce (transaction version 2)" if tv2 else FIRST_ADDED)

    def add_group(self, meta: TxnMetadata, group_id: str, tv2: bool = False) -> None:
        meta.groups.add(group_id)
        meta.tv2 = tv2
        self._begin(meta, "group added by TxnOffsetCommit (transaction version 2)" if tv2 else FIRST_ADDED)

    def _begin(self, meta: TxnMetadata, reason: str) -> None:
        if meta.state != TxnState.ONGOING:
            meta.start_ms = self.now_ms()
            self._to(meta, TxnState.ONGOING, reason)

    def end_txn(self, tid: str, pid: int, epoch: int, commit: bool, version: int) -> tuple[int, int, int]:
        """(error, producer id, epoch): what EndTxn answers (v5 carries the id and epoch; on an
        error -1, -1). Version 2 from v5 on (``TransactionVersion.transactionVersionForEndTxn``)."""
        meta = self.txns.get(tid)
        if meta is None:
            return E.INVALID_PRODUCER_ID_MAPPING, -1, -1
        error = self._end_txn_error(meta, pid, epoch, commit, tv2=version >= 5)
        if error is not None:
            if error == E.PRODUCER_FENCED and version < 2:
                error = E.INVALID_PRODUCER_EPOCH
            return (error, meta.producer_id, meta.epoch) if error == E.NONE else (error, -1, -1)
        if version >= 5:
            # exhausted: the bump takes the last epoch (32767) and a new id waits for Complete
            meta.next_producer_id = self.cluster.init_producer_id()[0] if meta.epoch >= MAX_EPOCH else NO_PRODUCER_ID
            if not (meta.epoch == MAX_EPOCH + 1 and not commit):   # prepareAbortOrCommit never passes Short.MaxValue
                meta.last_epoch = meta.epoch
                meta.epoch += 1
            meta.tv2 = True
            self.cluster.producer_epochs[meta.producer_id] = meta.epoch
        else:
            meta.tv2 = False
        self._end(meta, commit, reason="EndTxn")
        if meta.next_producer_id != NO_PRODUCER_ID:
            return E.NONE, meta.next_producer_id, 0
        return E.NONE, meta.producer_id, meta.epoch

    def _end_txn_error(self, meta: TxnMetadata, pid: int, epoch: int, commit: bool, tv2: bool) -> int | None:
        """``TransactionCoordinator.endTransaction``'s checks (version 2) or ``endTransactionWithTV1``'s:
        None to go on and end the transaction, else the answer (NONE for a retry of an end already
        written). Version 2 tells a retry from the next transaction's end by the epoch: the end
        bumped it, so a retry carries the epoch before (``endTxnEpochBumped``)."""
        retry_on_bump = tv2 and meta.epoch == epoch + 1
        retry_on_overflow = tv2 and meta.previous_producer_id == pid and epoch == MAX_EPOCH and meta.epoch == 0
        retry = retry_on_bump or retry_on_overflow
        if not tv2:
            valid = epoch == meta.epoch
        elif meta.state in PREPARING:
            valid = retry_on_bump
        elif meta.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            valid = retry or epoch == meta.epoch
        else:
            valid = epoch == meta.epoch
        if meta.producer_id != pid and not retry_on_overflow:
            return E.INVALID_PRODUCER_ID_MAPPING
        if not valid:
            return E.PRODUCER_FENCED
        wanted = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        preparing = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        if meta.state == preparing:
            return E.CONCURRENT_TRANSACTIONS     # a retry while the markers are being written
        if meta.state == TxnState.ONGOING:
            return None
        if not tv2:
            return E.NONE if meta.state == wanted else E.INVALID_TXN_STATE   # a retry of an EndTxn that completed
        if meta.state == wanted and retry:
            return E.NONE
        if not commit and not retry and meta.state in ENDED:
            return None   # version 2: an abort with nothing open still ends a transaction, bumping the epoch
        return E.INVALID_TXN_STATE

    # -- ending: markers on every partition, then Complete -----------------------------------------
    def _end(self, meta: TxnMetadata, commit: bool, reason: str, **extra: Any) -> None:
        self._to(meta, TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT, reason, **extra)
        delay = self.marker_delay_ms if self.marker_delay_ms is not None else self.cluster.config["emu.txn.marker.delay.ms"]
        partitions, groups, pid, epoch = sorted(meta.partitions), sorted(meta.groups), meta.producer_id, meta.epoch
        self.cluster.scheduler.call_later(delay / 1000, lambda: self._write_markers(meta, commit, partitions, groups, pid, epoch))

    def _write_markers(self, meta: TxnMetadata, commit: bool, partitions: list, groups: list, pid: int, epoch: int) -> None:
        waiting = []
        for topic, index in partitions:
            p = self.cluster.partition(topic, index)
            if p is None:
                continue   # deleted meanwhile: nothing to mark
            if p.leader < 0 or not self.cluster.is_alive(p.leader):
                waiting.append((topic, index))   # Kafka's marker channel retries until a leader is back
                continue
            offset = write_marker(self.cluster, p, pid, epoch, commit)
            self.cluster.trace.emit(Kind.TXN_MARKER, broker=p.leader, details={
                "topic": topic, "partition": index, "offset": offset, "commit": commit, "producer_id": pid, "epoch": epoch})
        if waiting:
            self.cluster.scheduler.call_later(0.1, lambda: self._write_markers(meta, commit, waiting, groups, pid, epoch))
            return
        for group_id in groups:
            self.cluster.groups.end_txn_offsets(group_id, pid, commit)
        meta.partitions, meta.groups = set(), set()
        if meta.tv2 and meta.next_producer_id != NO_PRODUCER_ID:   # prepareComplete: the rotation
            meta.previous_producer_id, meta.producer_id, meta.epoch = meta.producer_id, meta.next_producer_id, 0
            meta.next_producer_id = NO_PRODUCER_ID
        self._to(meta, TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT, "markers written")

    # -- the timeout check ----------------------------------------------------------------------------
    def _schedule_check(self) -> None:
        interval = self.cluster.config["transaction.abort.timed.out.transaction.cleanup.interval.ms"]
        self.cluster.scheduler.call_later(interval / 1000, self._check_timeouts)

    def _check_timeouts(self) -> None:
        """``abortTimedOutTransactions``: an Ongoing transaction older than its timeout is aborted
        with a bumped epoch, so its producer is fenced."""
        now = self.now_ms()
        for meta in list(self.txns.values()):
            if meta.state == TxnState.ONGOING and now - meta.start_ms > meta.timeout_ms:
                self._fence_for_abort(meta, tv2=meta.tv2)   # the transaction's own version decides here
                interval = self.cluster.config["transaction.abort.timed.out.transaction.cleanup.interval.ms"]
                self._end(meta, commit=False, reason=f"timed out: open {now - meta.start_ms:.0f} ms, "
                                                     f"transaction.timeout.ms {meta.timeout_ms}", check_interval_ms=interval,
                          timeout_ms=meta.timeout_ms)
        self._schedule_check()

    # -- transactional-id expiration ---------------------------------------------------------------
    def _schedule_expiration(self) -> None:
        interval = self.cluster.config["transaction.remove.expired.transaction.cleanup.interval.ms"]
        self.cluster.scheduler.call_later(interval / 1000, self._expire_ids)

    def _expire_ids(self) -> None:
        self.expire_ids_now()
        self._schedule_expiration()

    def expire_ids_now(self) -> list[str]:
        """``TransactionStateManager.removeExpiredTransactionalIds``: an id with no transaction
        open (Empty, CompleteCommit, CompleteAbort: ``isExpirationAllowed``) whose last update is
        ``transactional.id.expiration.ms`` or more old is forgotten (Dead, then removed). Its
        producer's next InitProducerId gets a new producer id; anything else it sends with the old
        one, INVALID_PRODUCER_ID_MAPPING."""
        expiration = self.cluster.config["transactional.id.expiration.ms"]
        now = self.now_ms()
        gone = [tid for tid, meta in self.txns.items() if meta.state in ENDED and meta.last_update_ms <= now - expiration]
        for tid in gone:
            meta = self.txns.pop(tid)
            self.cluster.trace.emit(Kind.TXN_STATE, details={
                "transactional_id": tid, "producer_id": meta.producer_id, "epoch": meta.epoch, "from": meta.state.value,
                "to": "Dead", "reason": f"expired: unused {now - meta.last_update_ms:.0f} ms, transactional.id.expiration.ms "
                                        f"{expiration}"})
        return gone

    def describe(self, tid: str) -> TxnMetadata | None:
        return self.txns.get(tid)
