"""The kip848 family: confluent-kafka (group.protocol=consumer) and our async face keep their
contracts on the emulator, and each contract fails on a client that would keep the timers itself."""

import pytest

from broker_emu.trace import Kind, TraceEvent
from conformance.adapters.confluent import ConfluentAdapter
from conformance.model import Evidence, Outcome, Status
from conformance.runner import Plan, run_plan
from conformance.scenarios import BY_ID
from conformance.scenarios_kip848 import KIP848_SCENARIOS, heartbeats_at_broker_interval, takeover_at_broker_session
from tests.realclients.conftest import require_client

# librdkafka 2.16 keeps its partitions past max.poll.interval.ms until the application polls
# again, on Kafka 4.4 as here (docs/findings.md, "librdkafka's KIP-848 consumer and max.poll.interval.ms")
CONFLUENT_FAILS = {"kip848.late-poll-leaves-and-rejoins"}


@pytest.mark.realclient
def test_confluent_kafka_keeps_the_kip848_contracts_but_one():
    require_client("confluent-kafka")
    adapter = ConfluentAdapter()
    results = run_plan(Plan(list(KIP848_SCENARIOS), [adapter]))
    want = [(s.id, Status.FAIL if s.id in CONFLUENT_FAILS else Status.PASS if adapter.supports(s.steps)[0] else Status.NA)
            for s in KIP848_SCENARIOS]
    assert [(r.scenario, r.status) for r in results] == want, [(r.scenario, r.contracts) for r in results]


def test_our_async_face_keeps_the_kip848_contracts_in_virtual_time():
    from conformance.adapters.ours import OurAdapter

    adapter = OurAdapter()
    results = run_plan(Plan(list(KIP848_SCENARIOS), [adapter]))
    want = [(s.id, Status.PASS if adapter.supports(s.steps)[0] else Status.NA) for s in KIP848_SCENARIOS]
    assert [(r.scenario, r.status) for r in results] == want, [(r.scenario, r.contracts) for r in results]
    assert sum(status == Status.PASS for _, status in want) == 6


def test_our_blocking_face_keeps_the_kip848_contracts_in_real_time():
    """client.Consumer with group.protocol=consumer at scale 30: its rebalance callbacks run on the
    application thread (the slow revoker's on its own), its heartbeats on the network thread."""
    from conformance.adapters.ours import OurBlockingAdapter

    results = run_plan(Plan(list(KIP848_SCENARIOS), [OurBlockingAdapter()], scale=30.0))
    assert [(r.scenario, r.status, r.message) for r in results] == [(s.id, Status.PASS, "") for s in KIP848_SCENARIOS]


# real time: in CI beside four workers on two cores its application thread's poll() once expired before the
# revocation it waits for (a PytestUnhandledThreadExceptionWarning); alone it passes (2 of 2, 2026-11-28)
@pytest.mark.alone
def test_callbacks_on_the_network_thread_fail_the_slow_revocation(monkeypatch):
    """Broken on purpose, as the blocking face was before: a rebalance callback run on the
    network thread holds its whole trio loop, so the slow revoker's heartbeats stop and the broker
    expires it at its session timeout (1.5 s scaled), before its rebalance timeout (2 s)."""
    from client.consumer.app_callbacks import AppThreadCallbacks
    from client.consumer.group import call_back
    from conformance.adapters.ours import OurBlockingAdapter

    async def on_the_network_thread(self, callback, tps):
        await call_back(callback, tps)

    monkeypatch.setattr(AppThreadCallbacks, "run", on_the_network_thread)
    result = run_plan(Plan([BY_ID["kip848.slow-revocation-fenced-at-rebalance-timeout"]], [OurBlockingAdapter()]))[0]
    verdicts = {name: status for name, status, _ in result.contracts}
    assert verdicts["a member slow to revoke is fenced at its rebalance timeout"] is Status.FAIL, result.contracts


class TakesOverOnItsOwnTimer(ConfluentAdapter):
    """Broken on purpose: after the crash it claims the partitions when its own 10 s session
    timer (scaled) runs out, as a client-side group protocol would, not when the broker moves them."""

    name = "broken-own-session"

    def _kip848_member_crash(self, step, env):
        real = super()._kip848_member_crash(step, env)
        own = 10_000 / env.scale / 1000
        return Outcome(real.operation, real.ok, own, value=real.value)


@pytest.mark.realclient
def test_a_client_that_keeps_its_own_session_timer_fails_the_takeover_contract():
    require_client("confluent-kafka")
    result = run_plan(Plan([BY_ID["kip848.crashed-member-expires-at-broker-session"]], [TakesOverOnItsOwnTimer()]))[0]
    verdicts = {name: status for name, status, _ in result.contracts}
    assert verdicts["the partitions move at the broker's session timeout"] == Status.FAIL


def _heartbeats(gap_ms: float, n: int = 10) -> list:
    return [TraceEvent(i * gap_ms, Kind.RECV, client_id="c", api="ConsumerGroupHeartbeat") for i in range(n)]


def test_heartbeats_contract_passes_at_the_broker_interval_and_fails_at_a_client_setting():
    contract = heartbeats_at_broker_interval()
    at_broker = Evidence([], _heartbeats(5000 / 30), {}, scale=30, client_id="c", slack_ms=10)
    own_interval = Evidence([], _heartbeats(3000 / 30), {}, scale=30, client_id="c", slack_ms=10)
    assert contract.check(at_broker).passed and not contract.check(own_interval).passed


def test_takeover_contract_bounds():
    """Scaled by 30: the broker's 45 s session is 1.5 s, one heartbeat interval 167 ms."""
    contract = takeover_at_broker_session("op")
    for took_s, ok in ((1.5, True), (1.4, True), (0.34, False), (2.0, False)):
        ev = Evidence([Outcome("op", True, took_s)], [], {}, scale=30, slack_ms=10)
        assert contract.check(ev).passed is ok, took_s


def test_one_owner_contract_fails_when_two_members_hold_a_partition():
    from conformance.scenarios_kip848 import one_owner_per_partition

    def epoch(t, member, assigned, revoking=None):
        return TraceEvent(t, Kind.GROUP_MEMBER_EPOCH, details={"group": "g", "member": member, "from": 0, "to": 1,
                                                               "state": "stable", "assigned": assigned,
                                                               "revoking": revoking or {}})

    handed_over = [epoch(0, "a", {"t": [0, 1]}), epoch(1, "a", {"t": [0]}, {"t": [1]}), epoch(2, "a", {"t": [0]}),
                   epoch(3, "b", {"t": [1]})]
    too_early = [epoch(0, "a", {"t": [0, 1]}), epoch(1, "a", {"t": [0]}, {"t": [1]}), epoch(2, "b", {"t": [1]})]
    contract = one_owner_per_partition()
    assert contract.check(Evidence([], handed_over, {})).passed
    verdict = contract.check(Evidence([], too_early, {}))
    assert not verdict.passed and "[('t', 1)] held by a and b" in verdict.message


@pytest.mark.realclient
def test_java_consumer_protocol_keeps_the_kip848_contracts_it_can_run():
    """The reference: kafka-clients 4.4's AsyncKafkaConsumer heartbeats at the broker's interval,
    leaves at max.poll.interval.ms (where librdkafka does not), loses a killed member's partitions
    at the broker's session timeout and a slow revoker's at its rebalance timeout, carries on when
    the coordinator dies mid-revocation, and has its commits racing a rebalance accepted."""
    from conformance.adapters.java_client import JavaConsumerProtocolAdapter
    from tests.realclients.clients import require_adapter

    adapter = JavaConsumerProtocolAdapter()
    require_adapter(adapter)
    try:
        results = run_plan(Plan(list(KIP848_SCENARIOS), [adapter]))
    finally:
        adapter.shutdown()
    want = [(s.id, Status.PASS if adapter.supports(s.steps)[0] else Status.NA) for s in KIP848_SCENARIOS]
    assert [(r.scenario, r.status) for r in results] == want, [(r.scenario, r.contracts) for r in results]
    assert sum(status == Status.PASS for _, status in want) == 6


def test_slow_revocation_contract_fails_when_the_partitions_move_at_the_callbacks_end():
    """A broker (or a client) that waits for the slow member's callback, 4 s here, instead of
    fencing it at its 2 s rebalance timeout fails; at the timeout plus a heartbeat it passes."""
    from conformance.scenarios_kip848 import fenced_at_rebalance_timeout

    contract = fenced_at_rebalance_timeout("op")
    for took_s, ok in ((2.2, True), (4.0, False), (1.0, False)):
        ev = Evidence([Outcome("op", True, took_s)], [], {"max.poll.interval.ms": 2000}, scale=30, slack_ms=10)
        assert contract.check(ev).passed is ok, took_s


def test_commit_race_contracts_fail_on_a_broker_without_kip1251():
    """A broker that refuses a lagging epoch for partitions the member still holds (Kafka before
    4.3, or the emulator before KIP-1251) fails the wire contract, and the client's outcome."""
    from conformance import contracts as C
    from conformance.scenarios_kip848 import commits_never_refused_as_stale

    def answers(*errors):
        return [TraceEvent(float(i), Kind.SEND, client_id="c", api="OffsetCommit", details={"errors": e} if e else {})
                for i, e in enumerate(errors)]

    wire = commits_never_refused_as_stale()
    assert wire.check(Evidence([], answers(None, None, None, None), {}, client_id="c")).passed
    assert not wire.check(Evidence([], answers(None, None, [113], None), {}, client_id="c")).passed
    outcome = C.outcome_is("op", ok=True)
    assert not outcome.check(Evidence([Outcome("op", False, 1.0, "CommitFailedException", "stale")], [], {})).passed


def test_coordinator_stop_contract_fails_unless_the_stop_lands_mid_revocation_and_it_completes():
    from conformance.scenarios_kip848 import stopped_mid_revocation

    def epoch(t, member, state, to):
        return TraceEvent(t, Kind.GROUP_MEMBER_EPOCH, details={"group": "g", "member": member, "state": state,
                                                               "from": 1, "to": to, "assigned": {}, "revoking": {}})

    stop_first = [TraceEvent(10, Kind.BROKER_STOP), epoch(20, "a", "unrevoked_partitions", 1), epoch(30, "a", "stable", 2)]
    never_done = [epoch(10, "a", "unrevoked_partitions", 1), TraceEvent(20, Kind.BROKER_STOP)]
    good = never_done + [epoch(30, "a", "stable", 2)]
    contract = stopped_mid_revocation()
    assert [contract.check(Evidence([], trace, {})).passed for trace in (stop_first, never_done, good)] == \
        [False, False, True]
