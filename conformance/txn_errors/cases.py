"""The transaction error-class table (KIP-1050): what each client surfaces when a transaction API
keeps answering one error.

For each case (an error on the API where Kafka's broker answers it) a scenario is generated from
one template: a fault answers that error to every request of the API for ``FAULT_MS``, longer than
any budget the client is given (``BUDGET``); the ``txn_error_probe`` step
(``conformance/adapters/txn_probe.py``) runs one transaction through it, records the first call
that failed, then, once the fault is over, tries the call again, an abort and a new transaction.
``classify`` reads the class from that outcome alone:

- **retriable**: the call failed, and the same call made again afterwards succeeded;
- **abortable**: the call again failed, the abort worked and the next transaction committed;
- **fatal**: the abort (or the next transaction, or init again) failed: the producer is unusable;
- **absorbed**: no call failed: the client retried until the fault stopped (no budget ran out).

The scenarios live here, not in the main catalogue: ten cases times every transactional client
are long real-time runs that would double the Transactions family's cost in CI, and they have no
pass/fail contract of their own beyond "the probe ran and the fault was answered" (the table is
the result, not a verdict). ``python -m conformance.txn_errors`` (``table.py``) runs them and writes the table
into docs/transactions.md (between the markers), its rows from the runs' own outcomes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broker_emu.trace import Kind
from client.errors import ErrorCode
from conformance.adapters.txn_probe import OK, OP
from conformance.model import Contract, Evidence, Operation, Outcome, Result, Scenario, Status, Verdict

FAMILY = "TransactionErrors"
FAULT_MS = 40_000       # the error answered this long from the cluster's start: beyond every budget below
CLEAR_S = 45.0          # the probe's follow-up starts this long after it began: the fault is over by then
BUDGET = {"max.block.ms": 10_000, "request.timeout.ms": 5_000, "delivery.timeout.ms": 10_000,
          "transaction.timeout.ms": 60_000}
V1 = {"transaction.version": 1}   # every client speaks the version 1 protocol (librdkafka has no other)
RETRIABLE, ABORTABLE, FATAL, ABSORBED = "retriable", "abortable", "fatal", "absorbed"


@dataclass(frozen=True)
class Case:
    error: str
    api: str
    where: str   # where Kafka 4.4's broker answers it (class names)


CASES: tuple[Case, ...] = (
    Case("COORDINATOR_LOAD_IN_PROGRESS", "InitProducerId",
         "TransactionStateManager.getTransactionState while the coordinator loads its partition of __transaction_state"),
    Case("NOT_COORDINATOR", "EndTxn", "TransactionStateManager: the transactional id's partition is not led here"),
    Case("CONCURRENT_TRANSACTIONS", "AddPartitionsToTxn",
         "TransactionCoordinator.handleAddPartitionsToTransaction: a state transition (the markers) is pending"),
    Case("CONCURRENT_TRANSACTIONS", "EndTxn", "TransactionCoordinator.endTransaction: PrepareCommit/PrepareAbort pending"),
    Case("TRANSACTION_ABORTABLE", "Produce",
         "ReplicaManager / AddPartitionsToTxnManager: the partition's verification failed (Produce v11+)"),
    Case("INVALID_PRODUCER_EPOCH", "Produce", "ProducerAppendInfo.checkProducerEpoch: a batch of an older epoch"),
    Case("PRODUCER_FENCED", "EndTxn", "TransactionCoordinator.endTransaction: the producer's epoch is not the current one"),
    Case("INVALID_TXN_STATE", "EndTxn",
         "TransactionCoordinator.endTransaction: commit or abort in a state that allows neither"),
    Case("UNKNOWN_PRODUCER_ID", "Produce",
         "ProducerAppendInfo before Kafka 4 (the partition forgot the producer); Kafka 4.4 answers "
         "OUT_OF_ORDER_SEQUENCE_NUMBER instead, clients still handle it"),
    Case("INVALID_PRODUCER_ID_MAPPING", "AddPartitionsToTxn",
         "TransactionCoordinator.handleAddPartitionsToTransaction: the producer id is not the transactional id's"),
    Case("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "InitProducerId",
         "KafkaApis.handleInitProducerIdRequest: no WRITE on the transactional id"),
)


def scenario_id(case: Case) -> str:
    return f"txn-error.{case.api}.{case.error}".lower()


def error_answered(case: Case) -> Contract:
    """The fault did what the cell says: the broker answered ``case.api`` with the error at least
    once (a client that never sent the API, such as the Java client on transaction version 2 for
    AddPartitionsToTxn, would make the cell meaningless)."""
    code = int(ErrorCode[case.error])

    def check(ev: Evidence) -> Verdict:
        n = sum(1 for e in ev.events(Kind.SEND, case.api) if code in (e.details.get("errors") or []))
        return Verdict(n > 0, f"{case.api} answered {case.error} {n} time(s)",
                       "" if n else f"the client never got {case.error} on {case.api}")

    return Contract(f"{case.api} answered {case.error}", check, side="server")


def probe_reported() -> Contract:
    """The probe ran to the end and reported what followed (the table's input)."""

    def check(ev: Evidence) -> Verdict:
        o = next((x for x in ev.outcomes if x.operation == OP), None)
        if o is None or not isinstance(o.value, dict):
            return Verdict(False, "no report", "no outcome" if o is None else o.error_message or "the probe reported nothing")
        cell = classify(o)
        return Verdict(True, f"{cell.klass}: {cell.call} {cell.error or ''}".strip())

    return Contract("the probe reported", check)


def scenario(case: Case) -> Scenario:
    return Scenario(
        id=scenario_id(case),
        family=FAMILY,
        title=f"{case.api} answers {case.error} every time: what the transactional producer surfaces",
        teaching=(f"The broker answers {case.error} on {case.api} ({case.where}). The fault holds it past the "
                  "client's budget; the class the client surfaces is what it lets the application do next: "
                  "the call again, an abort, or nothing (KIP-1050)."),
        references=("KIP-1050", "KafkaProducer", "TransactionManager"),
        steps=(Operation(OP, {"topic": "t", "partition": 0, "clear_s": CLEAR_S}, timeout_s=120.0),),
        faults=({"match": {"api": case.api}, "action": {"type": "error", "error": case.error},
                 "duration_ms": FAULT_MS},),
        broker_config=V1,
        client_config=dict(BUDGET),
        max_scale=10.0,   # the clients' own backoffs are not scaled: the budgets need room above them
        contracts=(probe_reported(), error_answered(case)),
    )


SCENARIOS: tuple[Scenario, ...] = tuple(scenario(c) for c in CASES)


@dataclass(frozen=True)
class Cell:
    klass: str          # retriable | abortable | fatal | absorbed, or "n/a" / "error" for a run that gave no class
    call: str           # the call that surfaced the error (init, send, commit), or the slowest call when absorbed
    after_s: float      # how long that call took (the run's own clock: scaled real time or virtual time)
    error: str | None   # the exception or error type the client raised
    detail: str = ""    # what followed: the call again, the abort, the next transaction


def classify(o: Outcome) -> Cell:
    """The class from what the client did: the probe's first failure and its follow-up."""
    v: dict[str, Any] = o.value if isinstance(o.value, dict) else {}
    if o.ok:
        slowest = str(v.get("slowest") or "?")
        return Cell(ABSORBED, slowest, o.elapsed_s, None, "no call failed")
    call = str(v.get("call") or "?")
    retry, abort, nxt = v.get("retry"), v.get("abort"), v.get("next")
    detail = f"again: {retry}" + (f"; abort: {abort}" if abort else "") + (f"; next: {nxt}" if nxt else "")
    if not v:
        return Cell("error", "?", o.elapsed_s, o.error_type, o.error_message or "the probe did not finish")
    if retry == OK and (call != "init" or nxt == OK):
        klass = RETRIABLE
    elif abort == OK and nxt == OK:
        klass = ABORTABLE
    else:
        klass = FATAL
    return Cell(klass, call, o.elapsed_s, o.error_type, detail)


def cell_of(result: Result) -> Cell:
    """A run's cell: its probe's class, or why it has none (N/A, a broken run)."""
    o = next((x for x in (result.evidence.outcomes if result.evidence else []) if x.operation == OP), None)
    if result.status is Status.NA:
        return Cell("n/a", "", 0.0, None, result.message)
    if o is None:
        return Cell("error", "", 0.0, None, result.message)
    return classify(o)
