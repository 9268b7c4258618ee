"""The conformance suite on our client (virtual time), and each contract shown to fail on a
deliberately broken variant, so no contract is vacuous."""

from dataclasses import replace

import pytest
import trio

from conformance.adapters.ours import OurAdapter
from conformance.model import Status
from conformance.runner import Plan, run_plan
from conformance.scenarios import BY_ID, CATALOGUE

# what our client does not do as Java does, each failing its scenario for that reason (docs/client.md)
KNOWN_FAILURES = {"server.parked-produce-blocks-the-connection": "one batch per partition in flight"}


def test_our_client_keeps_every_applicable_contract():
    results = run_plan(Plan(list(CATALOGUE), [OurAdapter()]))
    assert [r.scenario for r in results if r.status in (Status.FAIL, Status.ERROR)] == list(KNOWN_FAILURES)
    passed = {r.scenario: r for r in results if r.status is Status.PASS}
    assert set(passed) >= {"kip19.produce-black-hole", "kip91.delivery-timeout-in-flight", "server.purgatory-request-timed-out"}
    assert passed["kip19.produce-black-hole"].figures["disconnect at request.timeout.ms after Produce"] == "disconnect at 30.00 s of 30.00 s"
    assert sum(r.simulated_s for r in results) > 200  # minutes of simulated time, in well under a second


class LateTimeout(OurAdapter):
    """Broken on purpose: its real request timeout is 1.5x what the scenario configured."""

    name = "broken-late-timeout"

    async def run(self, steps, env):
        env.config["request.timeout.ms"] = int(env.config.get("request.timeout.ms", 30000) * 1.5)
        env.config["delivery.timeout.ms"] = int(env.config.get("delivery.timeout.ms", 120000) * 1.5)
        return await super().run(steps, env)


class NoRetry(OurAdapter):
    name = "broken-no-retry"

    async def run(self, steps, env):
        env.config.update({"retries": 0, "enable.idempotence": False})
        return await super().run(steps, env)


@pytest.mark.parametrize("scenario, adapter, contract", [
    ("kip19.produce-black-hole", LateTimeout, "disconnect at request.timeout.ms after Produce"),
    ("kip91.delivery-timeout-in-flight", LateTimeout, "produce returns at its deadline"),
    ("kip19.produce-black-hole", NoRetry, "Metadata before Produce retry, on a new connection"),
    ("kip19.produce-black-hole", NoRetry, "produce outcome"),
    ("kip19.leader-move-during-black-hole", NoRetry, "Produce retried on the new leader"),
])
def test_contracts_fail_on_broken_clients(scenario, adapter, contract):
    result = run_plan(Plan([BY_ID[scenario]], [adapter()]))[0]
    statuses = {name: status for name, status, _ in result.contracts}
    assert statuses[contract] is Status.FAIL, result.contracts
    assert result.status is Status.FAIL


def test_the_throttle_contract_fails_on_a_client_that_ignores_throttle_time(monkeypatch):
    """The broker mutes a throttled connection itself (KIP-219), so the contract must judge when
    the next request *arrived*, not when the muted broker read it — else it could not fail."""
    from client.transport import BrokerConnection

    monkeypatch.setattr(BrokerConnection, "throttled_until", property(lambda self: 0.0, lambda self, value: None),
                        raising=False)
    result = run_plan(Plan([BY_ID["server.throttle-honoured"]], [OurAdapter()]))[0]
    statuses = {name: status for name, status, _ in result.contracts}
    assert statuses["Produce throttle honoured"] is Status.FAIL, result.contracts


def _contract_status(scenario_id, adapter=None):
    result = run_plan(Plan([BY_ID[scenario_id]], [adapter or OurAdapter()]))[0]
    return {name: status for name, status, _ in result.contracts}, result


def test_the_held_joingroup_contract_fails_when_joingroup_uses_request_timeout(monkeypatch):
    import client.network

    monkeypatch.setattr(client.network.NetworkClient, "request_timeout_for",
                        lambda self, api_key, body: (self.config["request.timeout.ms"] / 1000, "request.timeout.ms"))
    statuses, result = _contract_status("server.joingroup-held")
    assert statuses["JoinGroup held without a client disconnect"] is Status.FAIL, result.contracts


def test_the_min_rule_contract_fails_when_retries_keep_the_full_request_timeout(monkeypatch):
    import trio

    from client.consumer.async_consumer import AsyncConsumer
    from client.errors import KafkaError, TimeoutException

    async def full_timeouts(self, call, deadline, attempt, waiting_for):   # broken: no min(time left, ...)
        while True:
            try:
                return await attempt(self.request_timeout)
            except KafkaError as exc:
                if trio.current_time() >= deadline:
                    raise TimeoutException(f"{call} gave up: {exc}") from None
            await trio.sleep(0.1)

    monkeypatch.setattr(AsyncConsumer, "_attempt_then_check", full_timeouts)
    statuses, result = _contract_status("kip266.retries-shrink-to-time-left")
    assert statuses["no OffsetFetch attempt outlives committed"] is Status.FAIL, result.contracts


class AsksTwice(OurAdapter):
    """Broken on purpose: every committed() step calls committed() twice."""

    name = "broken-asks-twice"

    async def _committed(self, step, env):
        await super()._committed(step, env)
        return await super()._committed(step, env)


def test_the_attempt_once_contract_fails_on_a_client_that_asks_twice():
    statuses, result = _contract_status("kip266.timeout-zero-attempts-once", AsksTwice())
    assert statuses["attempted once with timeout 0"] is Status.FAIL, result.contracts


def test_the_warm_attempt_contract_fails_on_a_client_that_checks_its_deadline_first(monkeypatch):
    import trio

    from client.consumer.async_consumer import AsyncConsumer
    from client.errors import TimeoutException

    attempt_then_check = AsyncConsumer._attempt_then_check

    async def check_first(self, call, deadline, attempt, waiting_for):   # broken: check-then-attempt
        if trio.current_time() >= deadline:
            raise TimeoutException(f"{call}: no time left")
        return await attempt_then_check(self, call, deadline, attempt, waiting_for)

    assert _contract_status("kip266.timeout-zero-warm-attempts-once")[0]["attempted once with timeout 0, warm"] is Status.PASS
    monkeypatch.setattr(AsyncConsumer, "_attempt_then_check", check_first)
    statuses, result = _contract_status("kip266.timeout-zero-warm-attempts-once")
    assert statuses["attempted once with timeout 0, warm"] is Status.FAIL, result.contracts
    assert "gave up before attempting" in result.message


def test_the_warm_attempt_contract_fails_on_a_client_that_asks_twice_or_never_warms():
    statuses, result = _contract_status("kip266.timeout-zero-warm-attempts-once", AsksTwice())
    assert statuses["attempted once with timeout 0, warm"] is Status.FAIL and "3 times" in result.message

    class Cold(OurAdapter):   # ignores warm_up but says it honours it
        name = "broken-cold"

        async def _committed(self, step, env):
            return await super()._committed(replace(step, args={**step.args, "warm_up": False}), env)

    statuses, result = _contract_status("kip266.timeout-zero-warm-attempts-once", Cold())
    assert statuses["attempted once with timeout 0, warm"] is Status.FAIL, result.contracts


def test_an_adapter_that_cannot_warm_its_consumer_is_na_for_a_warm_step():
    class NoWarmUp(OurAdapter):
        name = "no-warm-up"
        warm_up_calls = frozenset()

    result = run_plan(Plan([BY_ID["kip266.timeout-zero-warm-attempts-once"]], [NoWarmUp()]))[0]
    assert result.status is Status.NA and "cannot warm up its consumer before committed" in result.message


def test_the_config_message_contract_fails_on_a_terse_error(monkeypatch):
    import client.config

    def terse(config):
        raise client.config.ConfigException("invalid configuration")

    monkeypatch.setattr(client.config, "producer_config", terse)
    statuses, result = _contract_status("kip91.config-validation")
    assert statuses["configure_producer error names the settings"] is Status.FAIL, result.contracts


def test_the_close_and_poll_zero_contracts_fail_on_a_client_that_overstays():
    class Overstays(OurAdapter):
        name = "broken-overstays"

        async def run(self, steps, env):
            from dataclasses import replace
            return await super().run(tuple(replace(s, timeout_s=(s.timeout_s or 0) + 3.0) for s in steps), env)

    for scenario, contract in (("kip266.close-timeout", "close returns at its deadline"),
                               ("kip266.poll-zero", "poll returns at its deadline"),
                               ("kip266.position-leader-black-hole", "position returns at its deadline")):
        statuses, result = _contract_status(scenario, Overstays())
        assert statuses[contract] is Status.FAIL, (scenario, result.contracts)


def test_the_setup_timeout_contract_fails_on_a_client_whose_setup_timeout_never_grows(monkeypatch):
    from client.backoff import ExponentialBackoff

    monkeypatch.setattr(ExponentialBackoff, "backoff", lambda self, attempts, rng=None: self.initial_ms / 1000)  # broken: never grows
    statuses, result = _contract_status("kip19.connection-setup-timeout")
    assert statuses["connection setup timeout grows per attempt (KIP-601)"] is Status.FAIL, result.contracts


# alone: real time, judged on the gaps between connection attempts as the kernel's socket table
# shows them (broker_emu/dropped_connects.py, read every 20 ms)
@pytest.mark.alone
@pytest.mark.parametrize("broken", [False, True])
def test_the_blocking_face_runs_the_dropped_connects_scenario_over_tcp(monkeypatch, broken):
    """kip19.connection-setup-timeout over loopback TCP: the leader's listener has the kernel drop
    the SYNs (broker_emu/syn_gate.py), the attempts are read from the socket table, and the
    contract on the growing setup timeout fails when the timeout never grows."""
    from client.backoff import ExponentialBackoff
    from conformance.adapters.ours import OurBlockingAdapter

    scenario = BY_ID["kip19.connection-setup-timeout"]
    if broken:
        monkeypatch.setattr(ExponentialBackoff, "backoff", lambda self, attempts, rng=None: self.initial_ms / 1000)
    result = run_plan(Plan([scenario], [OurBlockingAdapter()], scale=30.0))[0]
    statuses = {name: status for name, status, _ in result.contracts}
    grows = statuses["connection setup timeout grows per attempt (KIP-601)"]
    assert (result.status, grows) == ((Status.FAIL, Status.FAIL) if broken else (Status.PASS, Status.PASS)), result.contracts


def test_the_blocking_faces_keep_the_kip266_contracts_in_real_time():
    from conformance.adapters.ours import OurBlockingAdapter

    ids = ["kip266.committed-coordinator-black-hole", "kip266.end-offsets-default-api-timeout",
           "kip266.retries-shrink-to-time-left", "kip266.timeout-zero-attempts-once", "kip266.timeout-zero-warm-attempts-once",
           "kip266.close-timeout"]
    results = run_plan(Plan([BY_ID[i] for i in ids], [OurBlockingAdapter()], scale=30.0))
    assert [(r.scenario, r.status, r.message) for r in results if r.status is not Status.PASS] == []


def test_the_blocking_face_runs_the_config_sasl_admin_and_pipelining_scenarios():
    """Once n/a for the blocking face. server.parked-produce-blocks-the-connection fails there for
    a real reason: our producer keeps one batch per partition in flight (client/producer/accumulator.py,
    "muted"), so the second Produce leaves only after the parked one is answered (docs/client.md). The
    async face fails it too, in virtual time (test_the_async_face_queues_nothing_behind_a_parked_produce)."""
    from conformance.adapters.ours import OurBlockingAdapter

    ids = ["kip91.config-validation", "security.sasl-handshake-stall", "admin.create-topics-controller-deadline",
           "admin.delete-records-purgatory", "server.parked-produce-blocks-the-connection"]
    results = {r.scenario: r for r in run_plan(Plan([BY_ID[i] for i in ids], [OurBlockingAdapter()], scale=30.0))}
    assert [(i, results[i].status, results[i].message) for i in ids[:-1] if results[i].status is not Status.PASS] == []
    parked = results["server.parked-produce-blocks-the-connection"]
    assert parked.status is Status.FAIL and "no Produce arrived on conn" in parked.message, parked.contracts
    assert dict((name, status) for name, status, _ in parked.contracts)["produce_pipelined outcome"] is Status.PASS


class OnlyTheFirstBroker:
    """Broken on purpose, as our consumer was before its rebuild: every request that may go to any
    broker goes to the first one it knows (the bootstrap broker), and only there."""

    @staticmethod
    def candidates(self, *, metadata=False):
        known = sorted(n for n in self.nodes if n >= 0) or sorted(self.nodes, reverse=True)
        return known[:1]


@pytest.mark.parametrize("scenario, contract", [
    ("failover.bootstrap-broker-dies-producer", "Produce resumes on a surviving broker"),
    ("failover.leader-stops-during-long-poll", "Fetch resumes on a surviving broker"),
    ("failover.bootstrap-broker-dies-metadata", "Metadata resumes on a surviving broker"),
    ("failover.bootstrap-broker-dies-metadata", "admin_list_topics outcome"),
])
def test_the_failover_contracts_fail_on_a_client_tied_to_its_first_broker(monkeypatch, scenario, contract):
    import client.network

    monkeypatch.setattr(client.network.NetworkClient, "candidates", OnlyTheFirstBroker.candidates)
    result = run_plan(Plan([BY_ID[scenario]], [OurAdapter()]))[0]
    statuses = {name: status for name, status, _ in result.contracts}
    assert statuses[contract] is Status.FAIL, result.contracts


def test_the_broker_close_contract_fails_on_a_client_whose_metadata_request_is_cut(monkeypatch):
    """A request the broker must refuse (a Metadata body cut short) costs the connection, and the
    contract says so; the listing itself may still succeed on a retry elsewhere."""
    import client.connection
    from client.protocol import ApiKey
    from client.protocol.codec import encode_request

    def cut_metadata(api_key, version, corr, client_id, body):
        frame = encode_request(api_key, version, corr, client_id, body)
        if api_key != ApiKey.METADATA:
            return [frame]
        return [(len(frame) - 5).to_bytes(4, "big") + frame[4:-1]]   # one byte short, size fixed up

    monkeypatch.setattr(client.connection, "encode_request_parts", cut_metadata)
    result = run_plan(Plan([BY_ID["faithful.admin-list-all-topics"]], [OurAdapter()]))[0]
    statuses = {name: status for name, status, _ in result.contracts}
    assert statuses["no connection closed by the broker"] is Status.FAIL, result.contracts


def test_the_async_face_queues_nothing_behind_a_parked_produce():
    """In virtual time the second Produce is read the instant the parked one is answered, with no
    earlier arrival traced (the broker reads ahead and would have noted one): it was sent after the
    answer, as the blocking face's is, and the contract says so instead of passing on the tie."""
    [result] = run_plan(Plan([BY_ID["server.parked-produce-blocks-the-connection"]], [OurAdapter()]))
    assert result.status is Status.FAIL and "no Produce arrived on conn" in result.message, result.contracts


# -- the share family (conformance/scenarios_share.py): each contract fails on a share consumer broken on purpose

def _share_statuses(scenario_id, adapter=None):
    statuses, result = _contract_status(scenario_id, adapter)
    assert result.status is not Status.ERROR, result.message
    return statuses, result


def test_the_share_commit_deadline_contract_fails_when_commit_sync_waits_for_the_request_timeout(monkeypatch):
    """Java's KafkaShareConsumer (docs/findings.md): commitSync's own deadline not kept, the call
    waiting for the ShareAcknowledge to time out at request.timeout.ms instead."""
    import client.share.consumer as share_consumer

    monkeypatch.setattr(share_consumer, "api_deadline",
                        lambda config, timeout: trio.current_time() + config["request.timeout.ms"] / 1000)
    statuses, result = _share_statuses("share.ack-black-holed")
    assert statuses["first commit returns at its deadline"] is Status.FAIL, result.contracts


def test_the_renew_contracts_fail_when_renew_is_never_sent(monkeypatch):
    """A RENEW the client takes as done without sending it: the lock runs out, the other member gets the record."""
    from client.share.consumer import AsyncShareConsumer

    def renewed_in_its_head(self, renew, deadline=None, call="renew"):
        self._renewing, self._renewed, self._renew_outcome = trio.Event(), self.in_flight.renewed(renew), {}
        self._renewing.set()
        return self._renewing

    monkeypatch.setattr(AsyncShareConsumer, "_start_renewal", renewed_in_its_head)
    statuses, result = _share_statuses("share.renew-keeps-the-lock")
    assert statuses["RENEW keeps the record: no redelivery, every acknowledgement accepted"] is Status.FAIL, result.contracts
    assert statuses["each RENEW restarts the lock; no lock expires"] is Status.FAIL, result.contracts


def test_a_share_story_broken_by_the_client_is_a_failed_step_not_an_error(monkeypatch):
    """The consumer's own refusal (here: the renewed record not handed back, so acknowledging it
    again is refused) ends the step with the client's error: the contracts fail, the run is no error."""
    from client.share.acknowledgements import InFlight

    take = InFlight.take
    monkeypatch.setattr(InFlight, "take", lambda self, renewals=True: (take(self, renewals)[0], {}))
    statuses, result = _share_statuses("share.renew-keeps-the-lock")
    assert result.status is Status.FAIL and set(statuses.values()) == {Status.FAIL}, result.contracts
    outcome = result.evidence.outcomes[-1]
    assert (outcome.ok, outcome.error_type) == (False, "IllegalStateError"), outcome


def test_the_delivery_limit_contracts_fail_when_release_goes_out_as_accept(monkeypatch):
    from client.share import acknowledgements

    acknowledge = acknowledgements.InFlight.acknowledge
    monkeypatch.setattr(acknowledgements.InFlight, "acknowledge", lambda self, t, p, o, kind: acknowledge(
        self, t, p, o, acknowledgements.AcknowledgeType.ACCEPT if kind == acknowledgements.AcknowledgeType.RELEASE else kind))
    statuses, result = _share_statuses("share.delivery-limit-archives")
    assert statuses["a released record delivered 3 times, then no more"] is Status.FAIL, result.contracts
    assert statuses["archived at share.delivery.count.limit (3)"] is Status.FAIL, result.contracts


def test_the_close_contracts_fail_when_close_sends_no_share_acknowledge(monkeypatch):
    """A close that neither sends the pending acknowledgement nor closes the share session."""
    from client.share.fetcher import ShareFetcher

    acknowledge = ShareFetcher.acknowledge

    async def no_final(self, acks, deadline, call, *, renew=False, final=False):
        return {} if final else await acknowledge(self, acks, deadline, call, renew=renew, final=final)

    monkeypatch.setattr(ShareFetcher, "acknowledge", no_final)
    statuses, result = _share_statuses("share.close-with-pending-acks")
    assert statuses["a ShareAcknowledge carried the pending acknowledgement and was answered"] is Status.FAIL
    assert statuses["the pending acknowledgement reaches the broker: accepted once"] is Status.FAIL, result.contracts
    statuses, result = _share_statuses("share.close-acks-black-holed")
    assert statuses["the acknowledgement reached the broker and was black-holed"] is Status.FAIL, result.contracts
    assert statuses["close returns at its deadline"] is Status.FAIL, result.contracts   # at once: too early


def test_the_share_close_deadline_contract_fails_on_a_close_that_overstays():
    class Overstays(OurAdapter):
        name = "broken-overstays"

        async def run(self, steps, env):
            return await super().run(tuple(replace(s, timeout_s=(s.timeout_s or 0) + 3.0) for s in steps), env)

    statuses, result = _share_statuses("share.close-acks-black-holed", Overstays())
    assert statuses["close returns at its deadline"] is Status.FAIL, result.contracts
    statuses, result = _share_statuses("share.close-with-pending-acks", Overstays())
    assert result.status is Status.PASS, result.contracts   # answered at 3 s: a longer deadline changes nothing


def test_the_lock_expiry_contracts_fail_when_the_holder_accepts_at_once(monkeypatch):
    """A holder that accepts what it received at once (as if implicit): the record never comes back."""
    from client.share.consumer import AsyncShareConsumer

    poll = AsyncShareConsumer.poll

    async def accepting_poll(self, timeout=0.0):
        records = await poll(self, timeout)
        for r in records:
            self.acknowledge(r)
        if records:
            await self.commit_sync(5.0)
        return records

    monkeypatch.setattr(AsyncShareConsumer, "poll", accepting_poll)
    statuses, result = _share_statuses("share.lock-expires-redelivered")
    assert statuses["the record redelivered to the other member, delivery count 2 or 3, at a lock's expiry"] is Status.FAIL
    assert statuses["the lock expires at its deadline on the broker's clock, and only then is the record "
                    "acquired again"] is Status.FAIL, result.contracts


def test_the_blocking_face_keeps_the_share_family_in_real_time():
    """The same stories (conformance/adapters/share_stories.py) told with client.ShareConsumer's
    blocking calls over loopback TCP, every time divided by the family's scale (a 3 s lock)."""
    from conformance.adapters.ours import OurBlockingAdapter

    family = [s for s in CATALOGUE if s.family == "share"]
    results = run_plan(Plan(family, [OurBlockingAdapter()], scale=10.0))
    assert [(r.scenario, r.status, r.message) for r in results if r.status is not Status.PASS] == []
