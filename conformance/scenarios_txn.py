"""The ``txn`` family: a transaction's two clocks (docs/transactions.md). The broker's coordinator
aborts an open transaction at its check interval, after transaction.timeout.ms, and fences the
producer; the client bounds initTransactions and commitTransaction with max.block.ms, and a commit
called again after a timeout completes the same transaction.

The family runs on transaction version 1 (``transaction.version=1``): its contracts are that
protocol's (AddPartitionsToTxn retried through CONCURRENT_TRANSACTIONS, a producer fenced once the
coordinator aborted its transaction). On a version 2 cluster a client that reads the feature (the
Java client 4.x) sends no AddPartitionsToTxn, and after a timed-out abort its EndTxn v5, one epoch
behind, reads as a retry and gets INVALID_TXN_STATE, as Kafka 4.4's coordinator answers it
(docs/transactions.md)."""

from __future__ import annotations

import math

from broker_emu.trace import Kind
from conformance import contracts as C
from conformance.model import Contract, Evidence, Operation, Scenario, Verdict

FENCED = ("ProducerFencedError", "ProducerFencedException", "InvalidProducerEpochError")
INTERVAL_KEY = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
V1 = {"transaction.version": 1}


def aborted_at_first_check_after_timeout() -> Contract:
    """The coordinator aborted the transaction at its first timeout check after
    transaction.timeout.ms had passed since the transaction began, not at the timeout itself
    (``TransactionCoordinator.abortTimedOutTransactions`` runs every interval). Both values are
    the ones the run used (the client's config; the interval the coordinator reports), so the
    contract follows a campaign's overrides."""

    def check(ev: Evidence) -> Verdict:
        states = ev.events(Kind.TXN_STATE)
        began = next((e for e in states if e.details.get("to") == "Ongoing"), None)
        aborted = next((e for e in states if "timed out" in str(e.details.get("reason", ""))), None)
        if began is None or aborted is None:
            return Verdict(False, "not aborted", "the coordinator never timed the transaction out")
        interval = float(aborted.details.get("check_interval_ms", 10_000))
        timeout = float(ev.config.get("transaction.timeout.ms", 60_000))
        want = math.ceil((began.t_ms + timeout) / interval) * interval   # checks run every interval from the start
        figure = f"aborted {aborted.t_ms - began.t_ms:.0f} ms after it began (timeout {timeout:.0f}, check every {interval:.0f})"
        if abs(aborted.t_ms - want) > max(ev.slack_ms, 1.0):
            return Verdict(False, figure, f"aborted at {aborted.t_ms:.0f} ms, the first check after the timeout is at {want:.0f} ms")
        return Verdict(True, figure)

    return Contract("the coordinator aborts at its first check after the timeout", check, side="server")


def commits_decided(count: int) -> Contract:
    """The coordinator decided ``count`` commits (PrepareCommit); their markers follow on their own."""

    def check(ev: Evidence) -> Verdict:
        n = sum(1 for e in ev.events(Kind.TXN_STATE) if e.details.get("to") == "PrepareCommit")
        return Verdict(n == count, f"{n} commit(s) decided", "" if n == count else f"expected {count}, found {n}")

    return Contract(f"{count} commit(s) decided by the coordinator", check, side="server")


def commit_markers(count: int) -> Contract:
    """Exactly ``count`` commit markers per partition reached the log: a commit retried after a
    timeout completed the same transaction, and nothing was committed twice."""

    def check(ev: Evidence) -> Verdict:
        commits = [e for e in ev.events(Kind.TXN_MARKER) if e.details.get("commit")]
        figure = f"{len(commits)} commit marker(s)"
        return Verdict(len(commits) == count, figure, "" if len(commits) == count else f"expected {count}, found {len(commits)}")

    return Contract(f"{count} commit marker(s) written", check, side="server")


def concurrent_transactions_retried(api: str, pending_ms: float) -> Contract:
    """While the markers of the previous transaction were being written, the coordinator answered
    ``api`` CONCURRENT_TRANSACTIONS; the client retried until it succeeded, after the markers."""

    def check(ev: Evidence) -> Verdict:
        answers = [e for e in ev.events(Kind.SEND) if e.api == api]
        refused = [e for e in answers if 51 in (e.details.get("errors") or [])]
        accepted = [e for e in answers if not e.details.get("errors")]
        markers = [e for e in ev.events(Kind.TXN_MARKER) if e.details.get("commit")]
        if not refused:
            return Verdict(False, "never refused", f"no {api} was answered CONCURRENT_TRANSACTIONS")
        later = [e for e in accepted if e.t_ms > refused[0].t_ms]
        if not later or not markers or later[0].t_ms < markers[0].t_ms:
            return Verdict(False, f"{len(refused)} refused", f"{api} was not retried to success after the markers")
        figure = f"{len(refused)} x CONCURRENT_TRANSACTIONS, then accepted {later[0].t_ms - refused[0].t_ms:.0f} ms later"
        return Verdict(True, figure)

    return Contract(f"{api} retried through CONCURRENT_TRANSACTIONS", check, side="server")


def visible_when_the_coordinator_aborts(operation: str) -> Contract:
    """The read_committed consumer saw the record behind the open transaction when the coordinator
    aborted it, not before, and never the aborted record."""

    def check(ev: Evidence) -> Verdict:
        o = next((x for x in ev.outcomes if x.operation == operation), None)
        aborted = next((e for e in ev.events(Kind.TXN_STATE) if "timed out" in str(e.details.get("reason", ""))), None)
        if o is None or not o.ok or aborted is None:
            return Verdict(False, "nothing seen", "no record became visible" if aborted else "the transaction was never aborted")
        waited = o.elapsed_s * 1000
        # the consumer starts polling once the plain record is written: the abort, on that clock
        plain = next((e for e in ev.trace if e.kind == Kind.RECV and e.api == "Produce"
                      and str(e.client_id or "").endswith("-plain")), None)
        due = aborted.t_ms - (plain.t_ms if plain is not None else 0.0)
        figure = f"visible after {waited:.0f} ms, the abort {due:.0f} ms after the consumer began"
        if o.value != [b"after it"]:
            return Verdict(False, figure, f"read {o.value!r}, not only the record after the transaction")
        if not due - max(ev.slack_ms, 1.0) <= waited <= due + 100 + ev.slack_ms:
            return Verdict(False, figure, "the record should become visible when the transaction is aborted")
        return Verdict(True, figure)

    return Contract("read_committed waits for the open transaction's abort", check)


# the coordinator's side of these contracts is its trace (txn_state, txn_marker)
NOT_ON_KAFKA = ("its contracts read the transaction coordinator's own trace (txn_state, txn_marker), which a proxy "
                "in front of Kafka cannot see; tests/realclients/test_transactions.py runs the clients on Kafka instead")

# the two scenarios with a 3 s transaction.timeout.ms run real-time clients at most 3x faster: at
# the default 30x it would be 100 ms, which librdkafka refuses (its transaction.timeout.ms ranges
# from 1000 ms), so confluent-kafka could not run them at all
SUB_SECOND_FLOOR = 3.0

TXN_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        id="txn.coordinator-aborts-at-check-interval",
        family="Transactions",
        not_on_kafka=NOT_ON_KAFKA,
        title="A transaction left open: the coordinator aborts it at its next check, and the producer is fenced",
        teaching=("transaction.timeout.ms is enforced by the broker, not the client, and not to the millisecond: "
                  "the coordinator looks for expired transactions every "
                  "transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s). A 3 s transaction that "
                  "began at t=0 is aborted at t=10 s, with a new epoch, so the producer's commit is refused as fenced."),
        references=("TransactionCoordinator.abortTimedOutTransactions", "KIP-98"),
        steps=(Operation("transaction", {"topic": "t", "partition": 0, "open_s": 12.0}),),
        broker_config={**V1, INTERVAL_KEY: 10_000},
        client_config={"transaction.timeout.ms": 3000},
        max_scale=SUB_SECOND_FLOOR,
        contracts=(C.outcome_is("transaction", error=FENCED), aborted_at_first_check_after_timeout(),
                   commit_markers(0)),
    ),
    Scenario(
        id="txn.commit-endtxn-black-hole",
        family="Transactions",
        not_on_kafka=NOT_ON_KAFKA,
        title="commitTransaction against a black-holed EndTxn: TimeoutException at max.block.ms, then the retry commits",
        teaching=("commitTransaction blocks at most max.block.ms. When it times out the commit is not lost and not "
                  "to be restarted: calling commitTransaction again waits for the same pending result, which "
                  "completes once EndTxn is retried after request.timeout.ms. One transaction, one commit."),
        references=("KafkaProducer.commitTransaction", "TransactionalRequestResult", "KIP-98"),
        steps=(Operation("transaction", {"topic": "t", "partition": 0, "retry_commit": True}),),
        faults=({"match": {"api": "EndTxn"}, "action": "black_hole", "times": 1},),
        broker_config=V1,
        client_config={"max.block.ms": 5000, "request.timeout.ms": 10_000},
        needs=("max.block.ms",),
        contracts=(C.outcome_is("transaction", error="TimeoutException"),
                   C.returns_within("transaction", "max.block.ms", late_ms=50), commit_markers(1)),
    ),
    Scenario(
        id="txn.concurrent-transactions-retried",
        family="Transactions",
        not_on_kafka=NOT_ON_KAFKA,
        title="The next transaction begins while the last one's markers are pending: CONCURRENT_TRANSACTIONS, retried",
        teaching=("EndTxn is answered once the coordinator has decided; the commit markers are written to each "
                  "partition afterwards. A producer that begins its next transaction at once gets "
                  "CONCURRENT_TRANSACTIONS for AddPartitionsToTxn until they are written: a retriable error, "
                  "retried with backoff, not a failure."),
        references=("TransactionCoordinator.handleAddPartitionsToTransaction", "TransactionMarkerChannelManager"),
        steps=(Operation("transaction", {"topic": "t", "partition": 0, "count": 2}),),
        broker_config={**V1, "emu.txn.marker.delay.ms": 2000},
        contracts=(C.outcome_is("transaction", ok=True), concurrent_transactions_retried("AddPartitionsToTxn", 2000),
                   commits_decided(2)),
    ),
    Scenario(
        id="txn.zombie-fenced-after-restart",
        family="Transactions",
        not_on_kafka=NOT_ON_KAFKA,
        title="A restarted producer fences its zombie: the old instance's open transaction is aborted, its commit refused",
        teaching=("initTransactions by a new instance with the same transactional.id bumps the epoch: the old "
                  "instance's open transaction is aborted, and whatever it sends next is refused as fenced. "
                  "That is how exactly-once survives a restart that left the old process running."),
        references=("TransactionCoordinator.handleInitProducerId", "KIP-98"),
        steps=(Operation("txn_zombie", {"topic": "t", "partition": 0}),),
        broker_config=V1,
        contracts=(C.outcome_is("txn_zombie", error=FENCED), commits_decided(1)),
    ),
    Scenario(
        id="txn.read-committed-behind-open-transaction",
        family="Transactions",
        not_on_kafka=NOT_ON_KAFKA,
        title="A read_committed consumer waits behind a hung transaction until the coordinator aborts it",
        teaching=("A read_committed consumer reads up to the last stable offset: one open transaction holds back "
                  "everything after it, even records of other producers. It waits until the coordinator's check "
                  "aborts the transaction (transaction.timeout.ms, then the next check), then reads on, skipping "
                  "the aborted record."),
        references=("UnifiedLog.lastStableOffset", "TransactionCoordinator.abortTimedOutTransactions", "KIP-98"),
        steps=(Operation("read_committed_behind_open_txn", {"topic": "t", "partition": 0}, timeout_s=60.0),),
        broker_config={**V1, INTERVAL_KEY: 10_000},
        client_config={"transaction.timeout.ms": 3000},
        max_scale=SUB_SECOND_FLOOR,
        contracts=(C.outcome_is("read_committed_behind_open_txn", ok=True),
                   visible_when_the_coordinator_aborts("read_committed_behind_open_txn"),
                   aborted_at_first_check_after_timeout()),
    ),
    Scenario(
        id="txn.init-coordinator-unreachable",
        family="Transactions",
        not_on_kafka=NOT_ON_KAFKA,
        title="initTransactions while the transaction coordinator does not answer: TimeoutException at max.block.ms",
        teaching=("initTransactions needs the coordinator's InitProducerId. It is bounded by max.block.ms, however "
                  "many times the client retries or re-finds the coordinator meanwhile."),
        references=("KafkaProducer.initTransactions", "KIP-98"),
        steps=(Operation("transaction", {"topic": "t", "partition": 0, "time_init": True}),),
        faults=({"match": {"api": "InitProducerId"}, "action": "black_hole"},),
        broker_config=V1,
        client_config={"max.block.ms": 5000, "request.timeout.ms": 2000},
        needs=("max.block.ms",),
        contracts=(C.outcome_is("transaction", error="TimeoutException"),
                   C.returns_within("transaction", "max.block.ms", late_ms=50), commit_markers(0)),
    ),
)
