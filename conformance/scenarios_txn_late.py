"""The ``txn.late-…`` scenarios: a request of one transaction that the network delays past the
client's timeout lands in the next one (the torn transaction of Kafka's transaction protocol).

Under transaction version 1 a producer keeps one epoch for all its transactions, so nothing tells
a late EndTxn or Produce of transaction N from one of N+1: a late EndTxn(commit) of N ends N+1 with
what it has written so far, a late Produce of an aborted N is appended inside N+1. Transaction
version 2 (KIP-890 part 2) bumps the epoch with every transaction, and the late request is refused
as coming from an old epoch. The fault is ``hold`` (``broker_emu/faults/late.py``): the broker has
read the request, leaves it unhandled until the producer's next transaction is under way, and
then handles it, its client having given up and closed the connection.

Whose fault is a tear? Under version 1 the client did nothing wrong: it timed out, retried or
aborted as Kafka's protocol tells it to, and the broker followed the same protocol. So the
scenarios hold the client only to what it controls (its calls report the outcome they should, and
a transaction it committed holds the record it sent in it),
check that the fault did what the scenario says (the request really landed inside the next
transaction, after its client had gone), and record the tear as an observation of the protocol:
a contract that passes under version 1 whether or not the transaction tore, with a figure that
says which and why (a client that bumps its epoch itself after a timeout, KIP-360, escapes the
late Produce). Under version 2 the same contract fails on a tear. ``late_scenarios(version)``
builds the family for one transaction version, the broker finalizing that version (a client
speaks the version the cluster finalizes, KIP-890, if it implements it); the catalogue has both.
Under version 2 a client that speaks it sends no AddPartitionsToTxn (the Produce adds its
partition), so the late Produce is held until the next transaction starts either way
(``next_txn_start``). A client that speaks only version 1 to a cluster finalizing 2 is judged by
the same contract: Kafka decides the version by the request (EndTxn below v5, Produce below v12 are
version 1), so such a client's late request can still tear the next transaction.
"""

from __future__ import annotations

from typing import Any

from broker_emu.trace import Kind, TraceEvent
from client.errors import ErrorCode
from conformance import contracts as C
from conformance.model import Contract, Evidence, Operation, Scenario, Verdict

# a held request nothing released by then goes in anyway (then not inside the next transaction): long enough for
# a client to end the first transaction and begin the next (10 s once a real-time run divides it by 30)
FALLBACK_MS = 300_000
TXN_VERSION_KEY = "transaction.version"
FIRST, SECOND = "txn-1", "txn-2"   # the values txn_abort_then_commit writes in its two transactions
NOT_ON_KAFKA = ("its contracts read the transaction coordinator's own trace (txn_state) to tell which transaction a late "
                "request landed in, which a proxy in front of Kafka cannot see")


def _late(ev: Evidence, api: str) -> tuple[TraceEvent | None, TraceEvent | None, TraceEvent | None]:
    """The first held request of ``api``: its hold, its release and its answer (if any): the
    ``late_answer`` dropped after its client had gone, or the ``send`` on its connection still open."""
    hold = next((e for e in ev.events(Kind.LATE_HOLD) if e.api == api), None)
    if hold is None:
        return None, None, None
    held = hold.details.get("held")
    release = next((e for e in ev.events(Kind.LATE_RELEASE) if e.details.get("held") == held), None)
    answer = next((e for e in ev.events(Kind.LATE_ANSWER) if e.details.get("held") == held), None)
    if answer is None and release is not None and release.details.get("connection_open"):
        answer = next((e for e in ev.events(Kind.SEND, api) if (e.conn, e.correlation_id) == (hold.conn, hold.correlation_id)
                       and e.t_ms >= release.t_ms), None)
    return hold, release, answer


def _next_begins(ev: Evidence, hold: TraceEvent, release: TraceEvent) -> list[TraceEvent]:
    """The transactions of the held request's producer that began between its hold and its release
    (by their order in the trace: in virtual time they may share an instant)."""
    tid = hold.details.get("transactional_id")
    between = ev.trace[ev.trace.index(hold) + 1:ev.trace.index(release)]
    return [e for e in between if e.kind == Kind.TXN_STATE and e.details.get("transactional_id") == tid
            and e.details.get("to") == "Ongoing"]


def landed_inside_next(api: str) -> Contract:
    """The fault did what the scenario says: the held ``api`` request was released while a later
    transaction of its producer was open. Usually its client has closed the connection by then
    (Java's and most clients' request timeout); one that keeps it open (librdkafka fails a record
    at message.timeout.ms and leaves its request in flight) gets the answer on it, and the request
    is just as late: the client had given up on what it asked."""

    def check(ev: Evidence) -> Verdict:
        hold, release, _ = _late(ev, api)
        if hold is None:
            return Verdict(False, "never held", f"no {api} of a transactional producer was held")
        if release is None:
            return Verdict(False, "never released", f"the held {api} was still held when the run ended")
        waited = release.t_ms - hold.t_ms
        figure = f"{api} held {waited:.0f} ms"
        if release.details.get("dropped"):
            return Verdict(False, figure, f"the held {api} was dropped: {release.details.get('reason')}")
        begun = _next_begins(ev, hold, release)
        if not begun:
            return Verdict(False, figure, f"released ({release.details.get('reason')}) before the producer's next "
                                          "transaction began")
        how = ("its connection still open (the client never closed it)" if release.details.get("connection_open")
               else "after its client had closed the connection")
        return Verdict(True, f"{figure}, released {release.t_ms - begun[-1].t_ms:.0f} ms into the next transaction, {how}")

    return Contract(f"the late {api} lands inside the next transaction", check, side="server")


def _refused(answer: TraceEvent | None) -> list[str]:
    """The error names of the late request's answer (none: it was accepted)."""
    codes = (answer.details.get("errors") or []) if answer is not None else []
    return [ErrorCode(c).name if c in ErrorCode._value2member_map_ else str(c) for c in codes]


def _verdict(torn: str | None, refused: str, version: int) -> Verdict:
    """A tear is the protocol's under version 1 (an observation: passes), a failure under 2."""
    if torn is None:
        return Verdict(True, f"not torn: {refused}")
    if version >= 2:
        return Verdict(False, f"torn: {torn}", f"transaction version {version} should fence the late request: {torn}")
    return Verdict(True, f"torn (transaction version 1: the protocol's, not the client's): {torn}")


def end_txn_tear(version: int) -> Contract:
    """Whether the late EndTxn ended the next transaction: the coordinator moved the open
    transaction to PrepareCommit/PrepareAbort while handling it."""

    def check(ev: Evidence) -> Verdict:
        hold, release, answer = _late(ev, "EndTxn")
        if hold is None or release is None or answer is None:
            return Verdict(False, "no late EndTxn", "the held EndTxn was never handled")
        begun = _next_begins(ev, hold, release)
        if not begun:
            return Verdict(False, "not inside the next transaction", "the late EndTxn was handled before the producer's "
                                                                     "next transaction began: nothing to observe")
        tid = hold.details.get("transactional_id")
        handled = ev.trace[ev.trace.index(release):ev.trace.index(answer)]
        ended = next((e for e in handled if e.kind == Kind.TXN_STATE and e.details.get("transactional_id") == tid
                      and e.details.get("from") == "Ongoing"), None)
        if ended is None:
            return _verdict(None, f"the late EndTxn was answered {', '.join(_refused(answer)) or 'without error'} and ended "
                                  "no transaction", version)
        since = begun[-1].t_ms
        written = [e for e in ev.events(Kind.SEND, "Produce") if since <= e.t_ms <= release.t_ms and not e.details.get("errors")]
        to = "committed" if ended.details.get("to") == "PrepareCommit" else "aborted"
        return _verdict(f"the previous transaction's late EndTxn {to} the next one, with the {len(written)} "
                        "Produce(s) it had answered so far", "", version)

    return Contract("the late EndTxn tears the next transaction (an observation)", check, side="server")


def produce_tear(version: int) -> Contract:
    """Whether the late Produce of the aborted first transaction was committed with the second:
    what a read_committed consumer reads of the partition after the run."""

    def check(ev: Evidence) -> Verdict:
        hold, release, answer = _late(ev, "Produce")
        if hold is None or release is None or answer is None:
            return Verdict(False, "no late Produce", "the held Produce was never handled")
        if not _next_begins(ev, hold, release):
            return Verdict(False, "not inside the next transaction", "the late Produce was handled before the producer's "
                                                                     "next transaction began: nothing to observe")
        visible = (ev.cluster or {}).get("read_committed", {}).get("t-0")
        if visible is None:
            return Verdict(False, "no log", "the run kept no read_committed view of t-0")
        if FIRST in visible:
            return _verdict(f"the aborted transaction's record is committed inside the next one (read_committed "
                            f"reads {visible})", "", version)
        first = next((o for o in ev.outcomes if o.operation == "txn_abort_then_commit"), None)
        delivered = first is not None and first.value is None   # the client's own retry of it was answered
        why = (f"refused with {', '.join(_refused(answer))}" if _refused(answer)
               else "answered without error as a duplicate: the client's retry had landed in the first transaction"
               if delivered else "answered without error, yet not committed")
        return _verdict(None, f"the late Produce was {why}; read_committed reads {visible}", version)

    return Contract("the late Produce tears the next transaction (an observation)", check, side="server")


def committed_holds_its_own() -> Contract:
    """The transaction the client committed holds the record it sent in it: read_committed reads
    txn-2 once the call said it committed. Whatever the late Produce did, losing the next
    transaction's own record is the client's doing, under any transaction version: a client that
    gives a failed attempt's sequence back sends its next record with the epoch and sequence the late
    one carries, and the broker answers it as a duplicate, appending nothing
    (``ProducerStateEntry.findDuplicateBatch`` compares only the epoch and the sequence range)."""

    def check(ev: Evidence) -> Verdict:
        call = next((o for o in ev.outcomes if o.operation == "txn_abort_then_commit"), None)
        if call is None or not call.ok:
            return Verdict(True, "the call did not say it committed: nothing to hold it to")
        visible = (ev.cluster or {}).get("read_committed", {}).get("t-0")
        if visible is None:
            return Verdict(False, "no log", "the run kept no read_committed view of t-0")
        if SECOND not in visible:
            return Verdict(False, f"read_committed reads {visible}",
                           f"the commit succeeded, yet its record {SECOND!r} is not among what read_committed reads")
        return Verdict(True, f"read_committed reads {visible}")

    return Contract("the committed transaction holds its own record", check, side="server")


def _version_config(version: int) -> dict[str, Any]:
    # named even for version 1: the emulator finalizes version 2 unless told otherwise (Kafka 4.x's default),
    # and a client that reads the feature (franz-go, Java) would run version 2's protocol
    return {TXN_VERSION_KEY: version}


def late_scenarios(version: int = 1) -> tuple[Scenario, ...]:
    suffix = "" if version == 1 else f"-v{version}"
    under = f"under transaction version {version}"
    return (
        Scenario(
            id=f"txn.late-end-txn{suffix}",
            family="Transactions",
            not_on_kafka=NOT_ON_KAFKA,
            title=f"A late EndTxn(commit) of one transaction lands in the next ({under})",
            teaching=("commitTransaction's EndTxn is delayed on the way; the client times out at request.timeout.ms, "
                      "closes the connection and retries, and the retry commits. The producer begins its next "
                      "transaction with the same epoch (transaction version 1), and then the delayed EndTxn(commit) "
                      "reaches the coordinator: nothing in it says which transaction it meant, so it commits the one "
                      "open now, with whatever it has written so far. The client did nothing wrong; transaction "
                      "version 2 (KIP-890) bumps the epoch per transaction and refuses it."),
            references=("TransactionCoordinator.handleEndTransaction", "KIP-890", "SocketServer.Processor", "KIP-98"),
            steps=(Operation("transaction", {"topic": "t", "partition": 0, "count": 2}),),
            faults=({"match": {"api": "EndTxn"}, "action": {"type": "hold", "until": "next_txn_produce", "ms": FALLBACK_MS},
                     "times": 1},),
            broker_config=_version_config(version),
            # max.block.ms well above the request timeout: commitTransaction waits for the EndTxn retried after it
            # (librdkafka's transactional requests time out at socket.timeout.ms, 60 s scaled by the adapter)
            client_config={"request.timeout.ms": 3000, "max.block.ms": 120_000},
            contracts=(C.outcome_is("transaction", ok=True), landed_inside_next("EndTxn"), end_txn_tear(version)),
        ),
        Scenario(
            id=f"txn.late-produce{suffix}",
            family="Transactions",
            not_on_kafka=NOT_ON_KAFKA,
            title=f"A late Produce of an aborted transaction lands in the next ({under})",
            teaching=("A transaction's Produce is delayed on the way; the client's delivery.timeout.ms fails the "
                      "record, and the application aborts the transaction and begins the next. Once the next has "
                      "added the partition, the delayed Produce arrives: with the producer's epoch unchanged "
                      "(transaction version 1) it is appended inside the open transaction, and commits with it. A "
                      "client that bumps its epoch after a timed-out batch (KIP-360) fences its own late Produce; "
                      "transaction version 2 (KIP-890) bumps it with every transaction."),
            references=("KIP-360", "KIP-890", "ProducerStateManager", "TransactionManager.handleFailedBatch"),
            steps=(Operation("txn_abort_then_commit", {"topic": "t", "partition": 0}),),
            faults=({"match": {"api": "Produce"}, "action": {"type": "hold", "ms": FALLBACK_MS,
                                                               "until": "next_add_partitions" if version == 1 else "next_txn_start"},
                     "times": 1},),
            broker_config=_version_config(version),
            # delivery.timeout.ms = linger.ms + request.timeout.ms (the least Java accepts, also once scaled by 30):
            # the batch's one attempt times out at its delivery timeout, so nothing retries it inside the first transaction
            client_config={"request.timeout.ms": 3000, "linger.ms": 30, "delivery.timeout.ms": 3030, "max.block.ms": 20_000},
            contracts=(C.outcome_is("txn_abort_then_commit", ok=True), landed_inside_next("Produce"), produce_tear(version),
                       committed_holds_its_own()),
        ),
    )


TXN_LATE_SCENARIOS = late_scenarios(1) + late_scenarios(2)
