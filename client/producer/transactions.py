"""The transactional producer's state machine, after Java's ``TransactionManager`` and the
transactional methods of ``KafkaProducer``.

- ``init_transactions``, ``commit_transaction``, ``abort_transaction`` and
  ``send_offsets_to_transaction`` block at most ``max.block.ms`` (or the timeout given). The work
  itself runs on the producer's nursery: a call that timed out leaves it running, and calling the
  same method again waits for the *same* outcome (``TransactionalRequestResult``), so a commit
  retried after a timeout completes the transaction it started, never a new one.
- A partition joins the transaction (AddPartitionsToTxn) before its first batch is sent: the
  sender holds such batches until ``sendable`` says yes.
- Errors: CONCURRENT_TRANSACTIONS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
  COORDINATOR_LOAD_IN_PROGRESS are retried (the coordinator looked up again); PRODUCER_FENCED,
  INVALID_PRODUCER_EPOCH from the coordinator, TRANSACTIONAL_ID_AUTHORIZATION_FAILED and
  INVALID_TRANSACTION_TIMEOUT are fatal (the producer can only be closed); anything else while
  a transaction is open is abortable (the application must abort it).
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from client.errors import ErrorCode as E
from client.errors import KafkaError, error_for_code, error_name
from client.exceptions import TimeoutException
from client.protocol import ApiKey

RETRIABLE = {E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR, E.COORDINATOR_LOAD_IN_PROGRESS}
FATAL = {E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
         E.INVALID_TRANSACTION_TIMEOUT, E.INVALID_PRODUCER_ID_MAPPING}
TXN_KEY, GROUP_KEY = 1, 0


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

    # -- what the sender asks -----------------------------------------------------------------
    def sendable(self, tp: tuple[str, int]) -> bool:
        """May a batch of ``tp`` go out now? If not, its AddPartitionsToTxn is started."""
        if tp in self.added:
            return True
        if self.state in (State.IN_TRANSACTION, State.COMMITTING) and tp not in self.adding:
            self.adding.add(tp)
            self.nursery.start_soon(self._add_partition, tp)
        return False

    def produce_failed(self, error: BaseException) -> None:
        if getattr(error, "code", None) in (E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH):
            self._fail(error, fatal=getattr(error, "code", None) == E.PRODUCER_FENCED)
        elif self.state == State.IN_TRANSACTION:
            self._fail(error, fatal=False)

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
            raise TransactionStateError(f"cannot commit: the transaction must be aborted ({self.last_error})")
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
            raise TransactionStateError(f"{call}: the producer hit a fatal error and can only be closed ({self.last_error})")
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
            raise TimeoutException(f"{name} did not finish within {bound} ({limit * 1000:.0f} ms); "
                                   f"call it again to keep waiting for the same outcome")
        self.pending = None
        if pending.error is not None:
            raise pending.error

    # -- the work ------------------------------------------------------------------------------------
    async def _init(self) -> None:
        body = {"transactional_id": self.tid, "transaction_timeout_ms": self.timeout_ms,
                "producer_id": -1, "producer_epoch": -1}
        answer = await self._to_coordinator(ApiKey.INIT_PRODUCER_ID, body)
        self.sender.set_producer(answer.producer_id, answer.producer_epoch)
        self.state = State.READY

    async def _bump_epoch(self) -> None:
        """After the abort of a transaction that hit an abortable error: InitProducerId with our
        id and epoch, when the coordinator can bump it (v3+), as Java's
        ``TransactionManager.beginCompletingTransaction`` does under transaction version 1
        (``needToTriggerEpochBumpFromClient``); every partition's sequence restarts at 0."""
        self.bump_required = False
        node = await self._find(self.tid, TXN_KEY)
        if self.net.version_for(await self.net.connection(node), ApiKey.INIT_PRODUCER_ID) < 3:
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
                                       error_of=lambda a: a.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)
            self.added.add(tp)
            self.started = True
        except KafkaError as exc:
            self._fail(exc, fatal=exc.code in FATAL)
        finally:
            self.adding.discard(tp)
            self.sender.wake()

    async def _send_offsets(self, offsets: dict[tuple[str, int], int], group_id: str) -> None:
        pid, epoch = self.sender.producer_id, self.sender.producer_epoch
        await self._to_coordinator(ApiKey.ADD_OFFSETS_TO_TXN, {"transactional_id": self.tid, "producer_id": pid,
                                                               "producer_epoch": epoch, "group_id": group_id})
        self.started = True
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                                   "committed_leader_epoch": -1, "committed_metadata": ""})
        body = {"transactional_id": self.tid, "group_id": group_id, "producer_id": pid, "producer_epoch": epoch,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
        await self._to_coordinator(ApiKey.TXN_OFFSET_COMMIT, body, key=group_id, key_type=GROUP_KEY, max_version=3,
                                   error_of=lambda a: next((p.error_code for t in a.topics for p in t.partitions if p.error_code), 0))

    async def _end(self, commit: bool, settle: Callable[[], Awaitable[None]]) -> None:
        await settle()   # commit: every record delivered (a failed one makes the commit fail); abort: queued ones dropped
        if commit and self.state == State.ABORTABLE_ERROR:
            raise TransactionStateError(f"cannot commit: a send in the transaction failed ({self.last_error}); abort it")
        if self.started:   # Java sends no EndTxn for a transaction nothing joined
            await self._to_coordinator(ApiKey.END_TXN, {"transactional_id": self.tid, "producer_id": self.sender.producer_id,
                                                        "producer_epoch": self.sender.producer_epoch, "committed": commit},
                                       max_version=3)
        if not commit and self.bump_required:
            await self._bump_epoch()
        self.added.clear()
        self.started = False
        self.state = State.READY

    # -- talking to a coordinator ----------------------------------------------------------------------
    async def _to_coordinator(self, api: ApiKey, body: dict, *, key: str | None = None, key_type: int = TXN_KEY,
                              max_version: int | None = None, error_of: Callable[[Any], int] | None = None) -> Any:
        """Send until the answer has no retriable error: re-finding the coordinator when it moved."""
        attempts = 0
        while True:
            try:
                node = await self._find(key or self.tid, key_type)
                answer = await self.net.request(node, api, body, max_version=max_version)
                code = error_of(answer) if error_of is not None else answer.error_code
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                code = None
            if code == E.NONE:
                return answer
            if code is not None and code not in RETRIABLE:
                error = error_for_code(code, f"{api.api_name} for transactional.id {self.tid}: {error_name(code)}")
                if code in FATAL:
                    self._fail(error, fatal=True)
                raise error
            if code in (E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE, None):
                self.coordinator = None
            await trio.sleep(self.backoff.backoff(attempts))
            attempts += 1

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

    def _fail(self, error: BaseException, fatal: bool) -> None:
        self.last_error = error
        if fatal:
            self.state = State.FATAL_ERROR
        elif self.state in (State.IN_TRANSACTION, State.COMMITTING):
            # Java's maybeTransitionToErrorState: the bump only when not already completing
            self.bump_required = self.bump_required or self.state == State.IN_TRANSACTION
            self.state = State.ABORTABLE_ERROR
