"""The Go adapters' Python side (conformance/adapters/go_clients.py), without their programs:
which scenarios each client can express and why not, and how step arguments are scaled. The
programs themselves run in tests/realclients/test_go_clients.py and the conformance matrix."""

from __future__ import annotations

from conformance.adapters.go_clients import (
    FRANZ_INEXPRESSIBLE,
    SARAMA_NO_CONFIG_RULE,
    FranzGoAdapter,
    SaramaAdapter,
    _scaled_step,
)
from conformance.model import Operation
from conformance.scenarios import BY_ID, CATALOGUE

TXN = [s for s in CATALOGUE if s.id.startswith("txn.")]
KIP848 = [s for s in CATALOGUE if s.id.startswith("kip848.")]
ADMIN = [s for s in CATALOGUE if s.id.startswith("admin.")]


def test_franz_go_expresses_transactions_admin_and_kip848_but_the_late_poll():
    franz = FranzGoAdapter(broker_has_kip848=True)
    for scenario in TXN + ADMIN + KIP848:
        ok, why = franz.supports_scenario(scenario)
        if scenario.id in FRANZ_INEXPRESSIBLE:
            assert not ok and "no max.poll.interval.ms" in why and "config.go" in why
        else:
            assert ok, (scenario.id, why)


def test_franz_go_needs_a_broker_serving_kip848():
    ok, why = FranzGoAdapter(broker_has_kip848=False).supports_scenario(BY_ID["kip848.heartbeat-interval-from-broker"])
    assert not ok and "ConsumerGroupHeartbeat v1" in why and "should848" in why


def test_franz_go_close_runs_with_the_applications_deadline():
    """kgo's Client.Close() takes no context: the step's deadline is the application's."""
    assert FranzGoAdapter().supports_scenario(BY_ID["kip266.close-timeout"]) == (True, "")


def test_sarama_expresses_transactions_and_admin_those_timed_by_max_block_with_its_retry_budget():
    """sarama has no max.block.ms: its scenarios run with the timing contract N/A (Adapter.lacks), the
    outcome and the commit markers judging sarama."""
    sarama = SaramaAdapter()
    for scenario in TXN + ADMIN:
        assert sarama.supports_scenario(scenario) == (True, ""), scenario.id
    assert "max.block.ms" in sarama.lacks and "transaction_manager.go" in sarama.lacks["max.block.ms"]
    for sid in ("txn.commit-endtxn-black-hole", "txn.init-coordinator-unreachable", "kip91.max-block-missing-topic"):
        settings = [c.setting for c in BY_ID[sid].contracts]
        assert "max.block.ms" in settings and any(s is None for s in settings), sid


def test_sarama_runs_the_delivery_timeout_scenario_but_not_the_config_rule():
    sarama = SaramaAdapter()
    assert sarama.supports_scenario(BY_ID["kip91.delivery-timeout-in-flight"]) == (True, "")
    ok, why = sarama.supports_scenario(BY_ID["kip91.config-validation"])
    assert not ok and why == SARAMA_NO_CONFIG_RULE and "config.go" in why
    declared = sarama.capabilities
    assert declared.missing(BY_ID["kip91.config-validation"]) == ["delivery.timeout.ms"]
    assert declared.missing(BY_ID["kip91.delivery-timeout-in-flight"]) == []


def test_both_go_programs_drive_join_group_held():
    for adapter in (SaramaAdapter(), FranzGoAdapter()):
        assert adapter.supports_scenario(BY_ID["server.joingroup-held"]) == (True, ""), adapter.name


def test_sarama_has_no_kip848_and_says_where():
    for scenario in KIP848:
        ok, why = SaramaAdapter().supports_scenario(scenario)
        assert not ok and "no KIP-848" in why and "request.go" in why, scenario.id


def test_every_sarama_reason_cites_its_source():
    """Each N/A reason names the sarama code (file: function) that makes it so."""
    sarama = SaramaAdapter()
    for why in [SARAMA_NO_CONFIG_RULE, *sarama.lacks.values(), sarama.no_position]:
        assert ".go" in why, why
    for scenario in CATALOGUE:
        ok, why = sarama.supports_scenario(scenario)
        if not ok and "in-memory" not in why and "SASL" not in why:
            assert ".go" in why, (scenario.id, why)


def test_pauses_and_kip848_times_are_scaled_for_the_program():
    step = _scaled_step(Operation("transaction", {"topic": "t", "open_s": 12.0}), 30.0)
    assert step.args["open_s"] == 12.0 / 30
    step = _scaled_step(Operation("kip848_slow_revoke", {"revoke_ms": 120_000, "group": "g"}), 30.0)
    assert step.args == {"revoke_ms": 4000.0, "group": "g"}
    for key in ("run_ms", "stall_ms", "every_ms"):
        assert _scaled_step(Operation("kip848_late_poll", {key: 3000}), 30.0).args[key] == 100.0


def test_sarama_runs_the_calls_that_take_no_deadline_with_the_applications_deadline():
    """committed, the offsets, list_topics, commit_sync and close take no deadline in sarama: the
    matrix runs them with the step's as a Go application gives one (lineproto.WithinDeadline) and
    judges what happens; position stays N/A (sarama has no such call)."""
    sarama = SaramaAdapter()
    for sid in ("kip266.committed-coordinator-black-hole", "kip266.list-topics-black-hole", "kip266.close-timeout",
                "kip266.commit-sync-coordinator-black-hole", "kip266.offsets-for-times-black-hole"):
        assert sarama.supports_scenario(BY_ID[sid]) == (True, ""), sid
    ok, why = sarama.supports_scenario(BY_ID["kip266.position-leader-black-hole"])
    assert not ok and "no position()" in why


def test_franz_go_runs_every_share_scenario_sarama_none():
    """kgo v1.22.2 has a share consumer with RENEW (pkg/kgo/consumer_share.go AckRenew) and a close with
    a context (LeaveGroupContext): all six share scenarios run; sarama has no share consumer."""
    franz = FranzGoAdapter()
    for scenario in (s for s in CATALOGUE if s.family == "share"):
        assert franz.supports_scenario(scenario) == (True, ""), scenario.id
        ok, why = SaramaAdapter().supports_scenario(scenario)
        assert not ok and "share" in why, scenario.id


def test_share_steps_are_scaled_as_the_stories_expect():
    """The share steps' Kafka-time ms and the group's *.ms configs reach the program in real ms."""
    step = _scaled_step(Operation("share_renew", {
        "topic": "t", "group": "sg", "process_ms": 75_000, "renew_ms": 10_000, "max_ms": 60_000,
        "group_config": {"share.record.lock.duration.ms": 30_000, "share.delivery.count.limit": 3}}), 10.0)
    assert step.args["process_ms"] == 7_500 and step.args["renew_ms"] == 1_000
    assert step.args["max_ms"] == 60_000   # a bound on the story, not a Kafka time
    assert step.args["group_config"] == {"share.record.lock.duration.ms": 3_000, "share.delivery.count.limit": 3}
