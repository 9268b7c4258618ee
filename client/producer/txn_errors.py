"""KIP-1050's error classes for the transactional producer, as Java 4.4's ``TransactionManager``
applies them: what an answer's error does to the transaction, per API, and the exception the
application sees.

Three classes, each error raised by a transactional call carrying one as ``txn_class``:

- ``retriable``: the call gave up (``TimeoutException`` at max.block.ms while the coordinator kept
  answering a retriable error); calling it again waits for the same outcome. Retriable answers
  are retried without a budget of their own, as Java's handlers re-enqueue them: the call's bound
  is the budget.
- ``abortable``: the transaction cannot commit; ``abort_transaction()`` and a new transaction go
  on. A record's retriable error that outlived its budget (delivery.timeout.ms, retries) becomes
  abortable, wrapped in ``TransactionAbortableError`` (``maybeTransitionToErrorState``).
- ``fatal``: the producer can only be closed. For PRODUCER_FENCED (and INVALID_PRODUCER_EPOCH from
  a coordinator, which Java reports as PRODUCER_FENCED) the application recovers by closing it and
  letting a new producer take the transactional.id (Java's ``ApplicationRecoverableException``);
  TRANSACTION_ABORTABLE while aborting is fatal too (``EndTxnHandler``: "Failed to abort transaction").
"""

from __future__ import annotations

import enum

from client.errors import ErrorCode as E
from client.errors import KafkaError, TransactionAbortableError, error_for_code, error_name
from client.protocol import ApiKey

RETRIABLE, ABORTABLE, FATAL = "retriable", "abortable", "fatal"

# what each class asks of the application, appended to the error's message
ADVICE = {
    RETRIABLE: "retriable: call it again to keep waiting for the same outcome",
    ABORTABLE: "abortable: call abort_transaction(), then begin a new transaction",
    FATAL: "fatal: the producer can only be closed",
}
FENCED_ADVICE = ("fatal: the producer can only be closed; its epoch is no longer current (another producer took the "
                 "transactional.id over, or the coordinator aborted the transaction); a new producer may take it")


class Action(enum.Enum):
    DONE = "done"
    REFIND = "refind"          # look the coordinator up again, then retry
    RETRY = "retry"            # retry after the backoff
    ABORTABLE = ABORTABLE
    ABORTABLE_IF_POSSIBLE = "abortable if the epoch can be bumped, else fatal"
    FATAL = FATAL


# per API, the codes its Java handler treats apart from the common ones (handleResponse of
# InitProducerIdHandler, AddPartitionsToTxnHandler, AddOffsetsToTxnHandler, TxnOffsetCommitHandler,
# EndTxnHandler), and what any other code does
_FATAL_STATE: dict[int, Action] = {E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: Action.FATAL, E.INVALID_TXN_STATE: Action.FATAL,
                E.INVALID_PRODUCER_ID_MAPPING: Action.FATAL, E.UNKNOWN_PRODUCER_ID: Action.ABORTABLE_IF_POSSIBLE,
                E.TRANSACTION_ABORTABLE: Action.ABORTABLE}
_COMMIT_FAILED = {E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION, E.GROUP_ID_NOT_FOUND, E.STALE_MEMBER_EPOCH}
_BY_API: dict[ApiKey, tuple[dict[int, Action], Action]] = {
    ApiKey.INIT_PRODUCER_ID: ({E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: Action.ABORTABLE,
                               E.CLUSTER_AUTHORIZATION_FAILED: Action.ABORTABLE,
                               E.TRANSACTION_ABORTABLE: Action.ABORTABLE}, Action.FATAL),
    ApiKey.ADD_PARTITIONS_TO_TXN: ({**_FATAL_STATE, E.TOPIC_AUTHORIZATION_FAILED: Action.ABORTABLE}, Action.ABORTABLE),
    ApiKey.ADD_OFFSETS_TO_TXN: ({**_FATAL_STATE, E.GROUP_AUTHORIZATION_FAILED: Action.ABORTABLE}, Action.FATAL),
    ApiKey.TXN_OFFSET_COMMIT: ({E.GROUP_AUTHORIZATION_FAILED: Action.ABORTABLE, E.FENCED_INSTANCE_ID: Action.ABORTABLE,
                                E.TRANSACTION_ABORTABLE: Action.ABORTABLE,
                                **{c: Action.ABORTABLE for c in _COMMIT_FAILED},
                                E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: Action.FATAL}, Action.FATAL),
    ApiKey.END_TXN: (_FATAL_STATE, Action.FATAL),
}


def action_for(api: ApiKey, code: int, *, aborting: bool = False) -> Action:
    """What an answer's error code does, as the Java handler of ``api`` decides it."""
    if code == E.NONE:
        return Action.DONE
    if code in (E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR) or \
            (api == ApiKey.TXN_OFFSET_COMMIT and code == E.REQUEST_TIMED_OUT):
        return Action.REFIND
    if error_for_code(code).retriable:
        return Action.RETRY
    if code in (E.INVALID_PRODUCER_EPOCH, E.PRODUCER_FENCED):
        return Action.FATAL
    if api == ApiKey.END_TXN and aborting and code == E.TRANSACTION_ABORTABLE:
        return Action.FATAL   # an abort that cannot abort: nothing is left to fall back on
    special, otherwise = _BY_API.get(api, ({}, Action.FATAL))
    return special.get(code, otherwise)


def coordinator_error(api: ApiKey, code: int, tid: str, txn_class: str, *, aborting: bool = False) -> KafkaError:
    """The exception a coordinator's answer becomes, its class and what to do in its message."""
    fenced = code in (E.INVALID_PRODUCER_EPOCH, E.PRODUCER_FENCED)
    shown = E.PRODUCER_FENCED if fenced else code
    what = f"{api.api_name} for transactional.id {tid!r} failed with {error_name(code)}"
    if fenced and code != shown:
        what += " (an older epoch: reported as PRODUCER_FENCED, as Java does)"
    if api == ApiKey.END_TXN and aborting and code == E.TRANSACTION_ABORTABLE:
        what = f"failed to abort the transaction: {what}"
    advice = FENCED_ADVICE if fenced else ADVICE[txn_class]
    error = error_for_code(shown, f"{what}; {advice}")
    classed(error, txn_class)
    return error


def produce_error(error: BaseException) -> tuple[BaseException, str]:
    """A record's failure, as the transaction sees it (``maybeTransitionToErrorState``): its
    class, and for a retriable error (its budget spent) or INVALID_TXN_STATE the
    ``TransactionAbortableError`` that wraps it."""
    code = getattr(error, "code", None)
    if code in (E.CLUSTER_AUTHORIZATION_FAILED, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.PRODUCER_FENCED,
                E.UNSUPPORTED_VERSION, E.INVALID_PRODUCER_ID_MAPPING):
        return classed(error, FATAL), FATAL
    if getattr(error, "retriable", False) or code == E.INVALID_TXN_STATE:
        wrapped = TransactionAbortableError(f"the transaction's request was aborted after exhausting retries: "
                                            f"{type(error).__name__}: {error}; {ADVICE[ABORTABLE]}")
        wrapped.__cause__ = error
        return classed(wrapped, ABORTABLE), ABORTABLE
    return classed(error, ABORTABLE), ABORTABLE


def classed(error: BaseException, txn_class: str) -> BaseException:
    error.txn_class = txn_class   # type: ignore[attr-defined]
    return error
