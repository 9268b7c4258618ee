"""The txn.late scenarios on our client (virtual time): under transaction version 1 the late
EndTxn tears the next transaction, and that is recorded, not failed; the late Produce is fenced by
the epoch bump that follows an abort after a failed send (as Java's), and tears a client without
it. Each contract is shown to fail where it should (a client that never gives up on its request,
the version-2 reading of the same tear); under version 2 both faces are fenced, never torn."""

from dataclasses import replace

import pytest

from conformance.adapters.ours import OurAdapter, OurBlockingAdapter
from conformance.judging import judge
from conformance.model import Status
from conformance.runner import Plan, run_plan
from conformance.scenarios import BY_ID
from conformance.scenarios_txn_late import TXN_LATE_SCENARIOS, TXN_VERSION_KEY, late_scenarios

TEAR_END_TXN = "the late EndTxn tears the next transaction (an observation)"
TEAR_PRODUCE = "the late Produce tears the next transaction (an observation)"
OWN_RECORD = "the committed transaction holds its own record"


def run(scenario, adapter=None):
    return run_plan(Plan([scenario], [adapter or OurAdapter()]))[0]


class NoEpochBump(OurAdapter):
    """Broken on purpose (as kafka-python is): no epoch bump after aborting a transaction whose send failed."""

    name = "broken-no-epoch-bump"

    async def run(self, steps, env):
        from client.producer.transactions import TransactionManager

        bump, TransactionManager._bump_epoch = TransactionManager._bump_epoch, _no_bump
        try:
            return await super().run(steps, env)
        finally:
            TransactionManager._bump_epoch = bump


async def _no_bump(self) -> None:
    self.bump_required = False


def test_our_client_keeps_the_contracts_and_the_late_end_txn_tears_under_version_1():
    results = {r.scenario: r for r in run_plan(Plan(list(late_scenarios(1)), [OurAdapter()]))}
    assert {sid: r.status for sid, r in results.items()} == {"txn.late-end-txn": Status.PASS, "txn.late-produce": Status.PASS}
    end_txn, produce = results["txn.late-end-txn"].figures, results["txn.late-produce"].figures
    assert end_txn[TEAR_END_TXN].startswith("torn (transaction version 1") and "1 Produce(s)" in end_txn[TEAR_END_TXN]
    assert "after its client had closed the connection" in end_txn["the late EndTxn lands inside the next transaction"]
    # the abort after the expired record bumped the epoch: the late Produce carries the old one
    assert produce[TEAR_PRODUCE] == "not torn: the late Produce was refused with INVALID_PRODUCER_EPOCH; read_committed reads ['txn-2']"


@pytest.mark.parametrize("adapter", [OurAdapter(), OurBlockingAdapter()], ids=["ours", "ours-blocking"])
def test_under_version_2_our_client_on_both_faces_is_never_torn(adapter):
    """The cluster finalizes transaction.version 2 and our client speaks it: the late EndTxn and
    the late Produce carry the epoch before the bump of their transaction's end, and are fenced."""
    v2 = [s for s in TXN_LATE_SCENARIOS if s.broker_config.get(TXN_VERSION_KEY) == 2]
    results = {r.scenario: r for r in run_plan(Plan(v2, [adapter]))}
    assert {sid: r.status for sid, r in results.items()} == {"txn.late-end-txn-v2": Status.PASS,
                                                             "txn.late-produce-v2": Status.PASS}
    end_txn, produce = results["txn.late-end-txn-v2"].figures, results["txn.late-produce-v2"].figures
    assert end_txn[TEAR_END_TXN] == "not torn: the late EndTxn was answered PRODUCER_FENCED and ended no transaction"
    assert "released 0 ms into the next transaction" in end_txn["the late EndTxn lands inside the next transaction"] \
        or isinstance(adapter, OurBlockingAdapter)   # real time: released when the next transaction's first Produce is answered
    assert produce[TEAR_PRODUCE].startswith("not torn: the late Produce was refused with INVALID_PRODUCER_EPOCH")
    assert produce[TEAR_PRODUCE].endswith("read_committed reads ['txn-2']")


def test_without_the_epoch_bump_the_late_produce_tears_the_next_transaction():
    result = run(BY_ID["txn.late-produce"], NoEpochBump())
    assert result.status is Status.PASS   # the protocol's tear under version 1, not the client's failure
    assert "['txn-1', 'txn-2']" in result.figures[TEAR_PRODUCE]


def test_the_same_tears_fail_the_version_2_contracts():
    """The version-2 family differs by its broker setting and by failing on a tear: judged on the
    version-1 runs' evidence, both tear contracts fail."""
    v2 = {s.id.removesuffix("-v2"): s for s in late_scenarios(2)}
    assert {s.broker_config.get(TXN_VERSION_KEY) for s in v2.values()} == {2}
    for sid, contract, adapter in (("txn.late-end-txn", TEAR_END_TXN, OurAdapter()),
                                   ("txn.late-produce", TEAR_PRODUCE, NoEpochBump())):
        evidence = run(BY_ID[sid], adapter).evidence
        verdict = judge(v2[sid], "ours", evidence, {})
        statuses = {name: status for name, status, _ in verdict.contracts}
        assert statuses[contract] is Status.FAIL, verdict.contracts
        assert statuses[f"the late {'EndTxn' if 'end' in sid else 'Produce'} lands inside the next transaction"] is Status.PASS


class GivesSequenceBack(NoEpochBump):
    """Broken on purpose (as kafkajs 2.2.4 is, producer/sendMessages.js): no epoch bump, and an
    expired batch gives its sequence numbers back, so the next record reuses the late one's."""

    name = "broken-gives-sequence-back"

    async def run(self, steps, env):
        from client.producer.sender import Sender

        expire = Sender._expire

        def give_back(sender, now):
            expired = [b for b in sender.acc.batches() if b.sequence >= 0]
            expire(sender, now)
            for b in expired:
                if b.done:
                    sender.sequences[b.tp] = b.sequence

        Sender._expire = give_back
        try:
            return await super().run(steps, env)
        finally:
            Sender._expire = expire


def test_a_client_that_gives_its_sequence_back_loses_the_committed_record():
    """The late Produce lands in the next transaction with the epoch and sequence the next record
    then reuses: that record is answered as a duplicate and never appended, the commit succeeds
    without it. The version-1 tear is an observation; the lost record fails the client."""
    result = run(BY_ID["txn.late-produce"], GivesSequenceBack())
    statuses = {name: (status, detail) for name, status, detail in result.contracts}
    assert statuses["txn_abort_then_commit outcome"][0] is Status.PASS
    assert statuses[TEAR_PRODUCE][0] is Status.PASS and "read_committed reads ['txn-1']" in statuses[TEAR_PRODUCE][1]
    assert statuses[OWN_RECORD] == (Status.FAIL, "the commit succeeded, yet its record 'txn-2' is not among what "
                                                 "read_committed reads"), result.contracts
    assert result.figures[OWN_RECORD] == "read_committed reads ['txn-1']"
    assert result.status is Status.FAIL
    # the same client without the give-back keeps its record (torn, both committed)
    kept = {name: status for name, status, _ in run(BY_ID["txn.late-produce"], NoEpochBump()).contracts}
    assert kept[OWN_RECORD] is Status.PASS


class NeverGivesUp(OurAdapter):
    """Broken on purpose for these scenarios: its requests never time out, so nothing is late."""

    name = "broken-never-gives-up"

    async def run(self, steps, env):
        env.config.update({"request.timeout.ms": 900_000, "delivery.timeout.ms": 900_030, "max.block.ms": 900_000})
        return await super().run(steps, env)


def test_nothing_is_judged_torn_when_the_client_never_gave_up():
    result = run(BY_ID["txn.late-end-txn"], NeverGivesUp())
    statuses = {name: status for name, status, _ in result.contracts}
    # the held EndTxn waits out its fallback on an open connection, inside the first transaction
    assert statuses["the late EndTxn lands inside the next transaction"] is Status.FAIL, result.contracts
    assert statuses[TEAR_END_TXN] is Status.FAIL
    assert result.status is Status.FAIL


def test_a_release_before_the_next_transaction_is_no_tear():
    """The hold released by its fallback before the producer moves on: the request lands in its
    own transaction, and neither contract calls that late."""
    early = replace(BY_ID["txn.late-produce"], faults=({"match": {"api": "Produce"}, "times": 1,
                                                        "action": {"type": "hold", "until": "delay", "ms": 500}},))
    result = run(early)
    statuses = {name: status for name, status, _ in result.contracts}
    assert statuses["the late Produce lands inside the next transaction"] is Status.FAIL, result.contracts
    assert statuses[TEAR_PRODUCE] is Status.FAIL
