"""The transactional producer's state machine, after Java's ``TransactionManager`` and the
transactional methods of ``KafkaProducer``.

- ``init_transactions``, ``commit_transaction``, ``abort_transaction`` and
  ``send_offsets_to_transaction`` block at most ``max.block.ms`` (or the timeout given). The work
  itself runs on the producer's nursery: a call that timed out leaves it running, and calling the
  same method again waits for the *same* outcome (``TransactionalRequestResult``), so a commit
  retried after a timeout completes the transaction it started, never a new one.
- Transaction version (KIP-890): version 2 when the cluster finalizes ``transaction.version`` ≥ 2
  in its ApiVersions answers, read as Java's ``maybeUpdateTransactionV2Enabled`` does: once
  init_transactions has its producer id, and again as each transaction ends (the next one uses
  it; turning to version 2 between transactions bumps the epoch once, ``clientSideEpochBumpRequired``).
  Version 1: a partition joins the transaction with AddPartitionsToTxn before its first batch is
  sent (the sender holds such batches until ``sendable`` says yes), offsets with AddOffsetsToTxn
  then TxnOffsetCommit ≤ v4, EndTxn ≤ v4, one epoch for every transaction. Version 2: the
  Produce (v12) adds its partition, TxnOffsetCommit v5 its group, and EndTxn v5 answers the new
  epoch, taken for the next transaction, so nothing of a finished transaction can land in the next.
- Errors follow KIP-1050's classes as Java 4.4 applies them (``client.producer.txn_errors``):
  retriable answers are retried until the call's bound; abortable ones need abort_transaction;
  fatal ones leave the producer only to be closed. Each raised error says which, in its message
  and its ``txn_class``.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from client.errors import ErrorCode as E
from client.errors import KafkaError, error_for_code, error_name
from client.exceptions import TimeoutException
from client.producer import txn_errors
from client.producer.txn_errors import ABORTABLE, ADVICE, FATAL, RETRIABLE, Action
from client.protocol import ApiKey

TXN_KEY, GROUP_KEY = 1, 0
TRANSACTION_VERSION = "transaction.version"


class State(enum.Enum):
    UNINITIALIZED = "uninitialized"
    READY = "ready"
    IN_TRANSACTION = "in transaction"
    COMMITTING = "committing"
    ABORTING = "aborting"
    ABORTABLE_ERROR = "abortable error"
    FATAL_ERROR = "fatal error"


class TransactionStateError(KafkaError):
    """A call the transaction's state does not allow (Java's IllegalStateException / KafkaException)."""


class TransactionAbortedError(KafkaError):
    """A record of a transaction that was aborted before it was sent (Java's TransactionAbortedException)."""


class Pending:
    """One transactional operation's outcome, awaited by every call that asks for it."""

    def __init__(self, name: str):
        self.name, self.done = name, trio.Event()
        self.error: BaseException | None = None


class TransactionManager:
    def __init__(self, config: dict[str, Any], net: Any, sender: Any, backoff: Any, nursery: trio.Nursery):
        self.tid: str = config["transactional.id"]
        self.timeout_ms: int = config["transaction.timeout.ms"]
        self.max_block_ms: int = config["max.block.ms"]
        self.net, self.sender, self.backoff, self.nursery = net, sender, backoff, nursery
        self.state = State.UNINITIALIZED
        self.coordinator: int | None = None
        self.added: set[tuple[str, int]] = set()
        self.started = False   # something joined the transaction: EndTxn is owed
        self.adding: set[tuple[str, int]] = set()
        self.pending: Pending | None = None
        self.last_error: BaseException | None = None
        # an abortable error while the transaction was open: the abort is followed by an epoch bump
        # (Java's clientSideEpochBumpRequired, KIP-360), so nothing of the aborted transaction still
        # on its way can land in the next one (a Produce delayed past its timeout)
        self.bump_required = False
        # transaction version 2 (KIP-890) for the current transaction, and the features epoch it was read at
        self.tv2 = False
        self.features_epoch = -1
        # Java's coordinatorSupportsBumpingEpoch: InitProducerId v3+ at the coordinator
        self.coordinator_bumps = False

    # -- what the sender asks -----------------------------------------------------------------
    def sendable(self, tp: tuple[str, int]) -> bool:
        """May a batch of ``tp`` go out now? If not, its AddPartitionsToTxn is started."""
        if tp in self.added:
            return True
        if self.tv2 and self.state in (State.IN_TRANSACTION, State.COMMITTING):
            self.added.add(tp)      # version 2: the Produce (v12) adds it at the partition's leader
            self.started = True
            return True
        if self.state in (State.IN_TRANSACTION, State.COMMITTING) and tp not in self.adding:
            self.adding.add(tp)
            self.nursery.start_soon(self._add_partition, tp)
        return False

    def produce_failed(self, error: BaseException) -> None:
        """A record of the transaction failed for good (Java's ``maybeTransitionToErrorState``)."""
        if self.state in (State.UNINITIALIZED, State.READY, State.FATAL_ERROR):
            return
        as_seen, txn_class = txn_errors.produce_error(error)
        # the bump only when not already completing, and only under version 1 (version 2's EndTxn bumps)
        self._fail(as_seen, fatal=txn_class == FATAL, bump=self.state == State.IN_TRANSACTION and self._client_bumps())

    def abort_undrained(self) -> None:
        """Java's Sender (``maybeAbortBatches``): once the transaction hit an abortable or fatal
        error, the batches not sent yet fail with it at once instead of waiting for their delivery
        timeout (a commit would wait for them)."""
        if self.state in (State.ABORTABLE_ERROR, State.FATAL_ERROR) and self.last_error is not None:
            self.sender.acc.fail_queued(self.last_error)

    def maybe_update_version(self, on_init: bool) -> None:
        """Java's ``maybeUpdateTransactionV2Enabled``: read transaction.version when the features
        epoch moved; turning to version 2 between transactions asks for one epoch bump."""
        if self.features_epoch >= self.net.finalized_features_epoch:
            return
        self.features_epoch = self.net.finalized_features_epoch
        was = self.tv2
        self.tv2 = self.net.finalized_features.get(TRANSACTION_VERSION, 0) >= 2
        if not on_init and not was and self.tv2:
            self.bump_required = True

    def _client_bumps(self) -> bool:
        """Java's ``needToTriggerEpochBumpFromClient``."""
        return self.coordinator_bumps and not self.tv2

    # -- the application's calls -----------------------------------------------------------------
    async def init_transactions(self, timeout: float | None) -> None:
        self._require({State.UNINITIALIZED}, "init_transactions", also_pending="init")
        await self._run("init", self._init, timeout)

    def begin_transaction(self) -> None:
        self._require({State.READY}, "begin_transaction")
        self.state = State.IN_TRANSACTION

    async def send_offsets_to_transaction(self, offsets: dict[tuple[str, int], int], group_id: str,
                                          timeout: float | None) -> None:
        self._require({State.IN_TRANSACTION}, "send_offsets_to_transaction", also_pending="offsets")
        await self._run("offsets", lambda: self._send_offsets(offsets, group_id), timeout)

    async def commit_transaction(self, flush: Callable[[], Awaitable[None]], timeout: float | None) -> None:
        if self.state == State.ABORTABLE_ERROR:
            raise txn_errors.classed(TransactionStateError(
                f"cannot commit: the transaction hit an error ({self.last_error}); {ADVICE[ABORTABLE]}"), ABORTABLE)
        self._require({State.IN_TRANSACTION, State.COMMITTING}, "commit_transaction", also_pending="commit")
        self.state = State.COMMITTING
        await self._run("commit", lambda: self._end(True, flush), timeout)

    async def abort_transaction(self, drop: Callable[[], Awaitable[None]], timeout: float | None) -> None:
        self._require({State.IN_TRANSACTION, State.ABORTABLE_ERROR, State.ABORTING}, "abort_transaction", also_pending="abort")
        self.state = State.ABORTING
        await self._run("abort", lambda: self._end(False, drop), timeout)

    def _require(self, allowed: set[State], call: str, also_pending: str | None = None) -> None:
        if self.pending is not None and also_pending is not None and self.pending.name == also_pending:
            return   # a retry after a timeout: it waits for the same outcome
        if self.state == State.FATAL_ERROR:
            raise txn_errors.classed(TransactionStateError(
                f"{call}: the producer hit a fatal error earlier ({self.last_error}); {ADVICE[FATAL]}"), FATAL)
        if self.state not in allowed:
            raise TransactionStateError(f"{call} is not allowed while the producer is {self.state.value}")
        if self.pending is not None:
            raise TransactionStateError(f"{call}: {self.pending.name} is still in progress; call it again to wait for it")

    async def _run(self, name: str, work: Callable[[], Awaitable[None]], timeout: float | None) -> None:
        """Start ``work`` (or join the same pending one) and wait at most the bound."""
        if self.pending is None or self.pending.name != name:
            self.pending = pending = Pending(name)

            async def runner() -> None:
                try:
                    await work()
                except KafkaError as exc:
                    pending.error = exc
                finally:
                    pending.done.set()

            self.nursery.start_soon(runner)
        pending = self.pending
        limit = self.max_block_ms / 1000 if timeout is None else timeout
        with trio.move_on_after(limit):
            await pending.done.wait()
        if not pending.done.is_set():
            bound = "max.block.ms" if timeout is None else "the timeout"
            raise txn_errors.classed(TimeoutException(f"{name} did not finish within {bound} ({limit * 1000:.0f} ms); "
                                                      f"{ADVICE[RETRIABLE]}"), RETRIABLE)
        self.pending = None
        if pending.error is not None:
            raise pending.error

    # -- the work ------------------------------------------------------------------------------------
    async def _init(self) -> None:
        body = {"transactional_id": self.tid, "transaction_timeout_ms": self.timeout_ms,
                "producer_id": -1, "producer_epoch": -1}
        answer = await self._to_coordinator(ApiKey.INIT_PRODUCER_ID, body)
        self.coordinator_bumps = await self._coordinator_version(ApiKey.INIT_PRODUCER_ID) >= 3
        self.sender.set_producer(answer.producer_id, answer.producer_epoch)
        self.maybe_update_version(on_init=True)
        self.state = State.READY

    async def _coordinator_version(self, api: ApiKey) -> int:
        node = await self._find(self.tid, TXN_KEY)
        return self.net.version_for(await self.net.connection(node), api)

    async def _bump_epoch(self) -> None:
        """After the abort of a transaction that hit an abortable error under version 1 (or on
        turning to version 2): InitProducerId with our id and epoch, when the coordinator can bump
        it (v3+), as Java's ``TransactionManager.beginCompletingTransaction`` does
        (``clientSideEpochBumpRequired``); every partition's sequence restarts at 0."""
        self.bump_required = False
        if await self._coordinator_version(ApiKey.INIT_PRODUCER_ID) < 3:
            return   # Java's coordinatorSupportsBumpingEpoch: an older coordinator cannot
        body = {"transactional_id": self.tid, "transaction_timeout_ms": self.timeout_ms,
                "producer_id": self.sender.producer_id, "producer_epoch": self.sender.producer_epoch}
        answer = await self._to_coordinator(ApiKey.INIT_PRODUCER_ID, body)
        self.sender.set_producer(answer.producer_id, answer.producer_epoch)

    async def _add_partition(self, tp: tuple[str, int]) -> None:
        try:
            body = {"v3_and_below_transactional_id": self.tid, "v3_and_below_producer_id": self.sender.producer_id,
                    "v3_and_below_producer_epoch": self.sender.producer_epoch,
                    "v3_and_below_topics": [{"name": tp[0], "partitions": [tp[1]]}]}
            await self._to_coordinator(ApiKey.ADD_PARTITIONS_TO_TXN, body, max_version=3,
                                       error_of=_partition_error)
            self.added.add(tp)
            self.started = True
        except KafkaError:
            pass   # _to_coordinator moved the transaction to its error state
        finally:
            self.adding.discard(tp)
            self.sender.wake()

    async def _send_offsets(self, offsets: dict[tuple[str, int], int], group_id: str) -> None:
        pid, epoch = self.sender.producer_id, self.sender.producer_epoch
        if not self.tv2:   # version 2: TxnOffsetCommit v5 adds the group itself
            await self._to_coordinator(ApiKey.ADD_OFFSETS_TO_TXN, {"transactional_id": self.tid, "producer_id": pid,
                                                                   "producer_epoch": epoch, "group_id": group_id})
        self.started = True
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                                   "committed_leader_epoch": -1, "committed_metadata": ""})
        body = {"transactional_id": self.tid, "group_id": group_id, "producer_id": pid, "producer_epoch": epoch,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
        # Java's TxnOffsetCommitRequest.Builder: v5 under version 2, at most v4 under version 1
        await self._to_coordinator(ApiKey.TXN_OFFSET_COMMIT, body, key=group_id, key_type=GROUP_KEY,
                                   max_version=5 if self.tv2 else 4,
                                   error_of=lambda a: next((p.error_code for t in a.topics for p in t.partitions if p.error_code), 0))

    async def _end(self, commit: bool, settle: Callable[[], Awaitable[None]]) -> None:
        await settle()   # commit: every record delivered (a failed one makes the commit fail); abort: queued ones dropped
        if self.state == State.FATAL_ERROR:
            raise txn_errors.classed(TransactionStateError(
                f"cannot {'commit' if commit else 'abort'}: the producer hit a fatal error ({self.last_error}); "
                f"{ADVICE[FATAL]}"), FATAL)
        if commit and self.state == State.ABORTABLE_ERROR:
            raise txn_errors.classed(TransactionStateError(
                f"cannot commit: a send in the transaction failed ({self.last_error}); {ADVICE[ABORTABLE]}"), ABORTABLE)
        if self.started:   # Java sends no EndTxn for a transaction nothing joined
            tv2 = self.tv2   # the version the transaction ran under (EndTxnRequest.Builder's isTransactionV2Enabled)
            answer = await self._to_coordinator(
                ApiKey.END_TXN, {"transactional_id": self.tid, "producer_id": self.sender.producer_id,
                                 "producer_epoch": self.sender.producer_epoch, "committed": commit},
                max_version=5 if tv2 else 4, aborting=not commit)
            if tv2 and answer.get("producer_id", -1) != -1:
                # EndTxnHandler: version 2's end bumped the epoch (or gave a new id): the next transaction's
                self.sender.set_producer(answer.producer_id, answer.producer_epoch)
        self.maybe_update_version(on_init=False)
        if self.bump_required:
            await self._bump_epoch()
        self.added.clear()
        self.started = False
        self.state = State.READY if self.sender.producer_id >= 0 else State.UNINITIALIZED

    # -- talking to a coordinator ----------------------------------------------------------------------
    async def _to_coordinator(self, api: ApiKey, body: dict, *, key: str | None = None, key_type: int = TXN_KEY,
                              max_version: int | None = None, error_of: Callable[[Any], int] | None = None,
                              aborting: bool = False) -> Any:
        """Send until the answer has no retriable error, re-finding the coordinator when it moved;
        an abortable or fatal answer moves the transaction to that state and is raised."""
        attempts = 0
        while True:
            try:
                node = await self._find(key or self.tid, key_type)
                answer = await self.net.request(node, api, body, max_version=max_version)
                code = error_of(answer) if error_of is not None else answer.error_code
                action = txn_errors.action_for(api, code, aborting=aborting)
            except KafkaError as exc:
                if not exc.retriable:
                    # FindCoordinatorHandler: a group not authorized is abortable; anything else (an
                    # unauthorized transactional.id, UnsupportedVersion) fatal
                    txn_class = ABORTABLE if exc.code == E.GROUP_AUTHORIZATION_FAILED else FATAL
                    self._fail(txn_errors.classed(exc, txn_class), fatal=txn_class == FATAL)
                    raise
                action = Action.REFIND
            if action == Action.DONE:
                return answer
            if action in (Action.REFIND, Action.RETRY):
                if action == Action.REFIND:
                    self.coordinator = None
                await trio.sleep(self.backoff.backoff(attempts))
                attempts += 1
                continue
            raise self._coordinator_failed(api, code, action, aborting)

    def _coordinator_failed(self, api: ApiKey, code: int, action: Action, aborting: bool) -> KafkaError:
        """The transaction's new state for an answer's error (the handlers' ``fatalError``,
        ``abortableError``, ``abortableErrorIfPossible``), and the error to raise."""
        bump = False
        if action == Action.ABORTABLE_IF_POSSIBLE:
            can_handle = self.coordinator_bumps or self.tv2   # canHandleAbortableError
            action = Action.ABORTABLE if can_handle else Action.FATAL
            bump = can_handle and self._client_bumps()
        txn_class = FATAL if action == Action.FATAL else ABORTABLE
        error = txn_errors.coordinator_error(api, code, self.tid, txn_class, aborting=aborting)
        self._fail(error, fatal=txn_class == FATAL, bump=bump)
        return error

    async def _find(self, key: str, key_type: int) -> int:
        if key_type == TXN_KEY and self.coordinator is not None:
            return self.coordinator
        answer = await self.net.request(self.net.candidates()[0], ApiKey.FIND_COORDINATOR, {"key": key, "key_type": key_type},
                                        max_version=3)
        if answer.error_code:
            raise error_for_code(answer.error_code, f"FindCoordinator for {key}: {error_name(answer.error_code)}")
        self.net.nodes[answer.node_id] = (answer.host, answer.port)
        if key_type == TXN_KEY:
            self.coordinator = answer.node_id
        return answer.node_id

    def _fail(self, error: BaseException, fatal: bool, bump: bool = False) -> None:
        """Java's transitionToFatalError / transitionToAbortableError (which leaves an abort in
        progress alone)."""
        self.last_error = error
        if fatal:
            self.state = State.FATAL_ERROR
        elif self.state != State.ABORTING:
            self.bump_required = self.bump_required or bump
            self.state = State.ABORTABLE_ERROR


def _partition_error(answer: Any) -> int:
    """AddPartitionsToTxn's error for the one partition asked (an answer that lists none: the
    top-level error of v4+, else UNKNOWN_SERVER_ERROR, never an IndexError)."""
    for topic in answer.results_by_topic_v3_and_below:
        for p in topic.results_by_partition:
            return p.partition_error_code
    return answer.get("error_code") or E.UNKNOWN_SERVER_ERROR
