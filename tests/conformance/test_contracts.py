from xml.etree import ElementTree as ET

from broker_emu.trace import TraceEvent
from conformance import contracts as C
from conformance.model import Evidence, Outcome, Result, Status
from conformance.report import matrix, to_html, to_json, to_junit


def ev(t, kind, conn=1, broker=0, api=None, corr=None, **details):
    return TraceEvent(t, kind, broker=broker, conn=conn, api=api, correlation_id=corr, client_id="c", details=details)


KIP19_GOOD = [
    ev(0, "conn_open"), ev(1, "recv", api="Metadata", corr=1), ev(2, "send", api="Metadata", corr=1),
    ev(10, "recv", api="Produce", corr=2),
    ev(30010, "conn_close", closed_by="client", reason="eof"),
    ev(30011, "conn_open", conn=2), ev(30012, "recv", conn=2, api="Metadata", corr=3),
    ev(30020, "conn_open", conn=3, broker=1), ev(30021, "recv", conn=3, broker=1, api="Produce", corr=4),
]


def evidence(trace, outcomes=(), scale=1.0):
    return Evidence(list(outcomes), trace, {}, scale=scale, client_id="c")


def test_disconnect_contract_passes_and_reports_figure():
    v = C.client_disconnects_after("Produce", 30000, 100).check(evidence(KIP19_GOOD))
    assert v.passed and v.figure == "disconnect at 30.00 s of 30.00 s"


def test_disconnect_contract_fails_when_late_or_by_broker_or_never():
    late = [e if e.kind != "conn_close" else ev(31000, "conn_close", closed_by="client") for e in KIP19_GOOD]
    assert not C.client_disconnects_after("Produce", 30000, 100).check(evidence(late)).passed
    by_broker = [e if e.kind != "conn_close" else ev(30010, "conn_close", closed_by="broker", reason="x") for e in KIP19_GOOD]
    assert "closed by the broker" in C.client_disconnects_after("Produce", 30000, 100).check(evidence(by_broker)).message
    never = [e for e in KIP19_GOOD if e.kind != "conn_close"]
    assert not C.client_disconnects_after("Produce", 30000, 100).check(evidence(never)).passed


def test_disconnect_contract_scales_for_real_time_runs():
    scaled = [ev(e.t_ms / 30, e.kind, e.conn, e.broker, e.api, e.correlation_id, **e.details) for e in KIP19_GOOD]
    assert C.client_disconnects_after("Produce", 30000, 100).check(evidence(scaled, scale=30)).passed


def test_metadata_before_retry():
    assert C.metadata_before_retry("Produce").check(evidence(KIP19_GOOD)).passed
    no_meta = [e for e in KIP19_GOOD if not (e.api == "Metadata" and e.t_ms > 100)]
    v = C.metadata_before_retry("Produce").check(evidence(no_meta))
    assert not v.passed and "without a Metadata" in v.message
    no_retry = [e for e in KIP19_GOOD if e.t_ms < 30021]
    assert not C.metadata_before_retry("Produce").check(evidence(no_retry)).passed


def test_metadata_before_retry_counts_a_refresh_the_broker_saw_just_before_the_close():
    """Real time: the client closes conn 1 and sends Metadata on conn 2; the broker may see the
    Metadata first (seen on the emulator: Metadata at 1051.4 ms, close at 1051.9 ms)."""
    early = [ev(0, "conn_open"), ev(10, "recv", api="Produce", corr=2),
             ev(1051.4, "recv", conn=2, api="Metadata", corr=3), ev(1051.9, "conn_close", closed_by="client"),
             ev(1055, "recv", conn=3, api="Produce", corr=4)]
    real_time = Evidence([], early, {}, scale=30.0, client_id="c", slack_ms=150.0)
    assert C.metadata_before_retry("Produce").check(real_time).passed
    # in virtual time (no slack) a refresh before the close is no refresh after it
    assert not C.metadata_before_retry("Produce").check(evidence(early)).passed


def test_outcome_and_deadline_contracts():
    o = Outcome("poll", True, 2.003)
    assert C.returns_within("poll", 2000, late_ms=10).check(evidence([], [o])).passed
    assert not C.returns_within("poll", 2000, late_ms=1).check(evidence([], [o])).passed
    early = Outcome("poll", True, 1.5)
    assert "before its deadline" in C.returns_within("poll", 2000, late_ms=10).check(evidence([], [early])).message
    failed = Outcome("send", False, 120.0, "TimeoutException", "delivery.timeout.ms of 120000 ms expired")
    assert C.outcome_is("send", error="TimeoutException", message_mentions=["delivery.timeout.ms"]).check(evidence([], [failed])).passed
    assert not C.outcome_is("send", ok=True).check(evidence([], [failed])).passed
    assert not C.outcome_is("send", error="TimeoutException", message_mentions=["linger"]).check(evidence([], [failed])).passed


def test_no_client_disconnect_and_purgatory():
    assert not C.no_client_disconnect().check(evidence(KIP19_GOOD)).passed  # Produce corr 2 was pending
    calm = [e for e in KIP19_GOOD if e.kind != "conn_close"]
    assert C.no_client_disconnect().check(evidence(calm)).passed
    purg = [ev(5, "purgatory_enter", corr=9), ev(1005, "purgatory_expire", corr=9)]
    assert C.purgatory_expires_after(1000, 1).check(evidence(purg)).passed
    assert not C.purgatory_expires_after(2000, 1).check(evidence(purg)).passed


def test_reports():
    results = [
        Result("kip19.produce", "ours", Status.PASS, {"disconnect": "disconnect at 30.00 s of 30.00 s"}),
        Result("kip19.produce", "kafkajs", Status.FAIL, {"disconnect": "no disconnect"}, "kept the connection",
               [("disconnect", Status.FAIL, "never closed")]),
        Result("kip266.poll", "kcat", Status.NA, message="kcat has no poll(timeout)"),
    ]
    text = matrix(results)
    assert "PASS disconnect at 30.00 s of 30.00 s" in text and "FAIL no disconnect" in text and "N/A" in text
    suite = ET.fromstring(to_junit(results))
    assert suite.get("failures") == "1" and suite.get("skipped") == "1" and len(suite) == 3
    assert '"status": "fail"' in to_json(results)
    page = to_html(results, timeline_links={("kip19.produce", "ours"): "t/kip19.html"})
    assert 'href="t/kip19.html"' in page and 'class="fail"' in page


def test_replies_in_order_fails_when_a_later_request_overtakes_the_parked_one():
    parked = [ev(0, "recv", api="Produce", corr=1), ev(1, "purgatory_enter", api="Produce", corr=1),
              ev(5, "recv", api="Produce", corr=2, arrived_ms=2)]
    in_order = parked + [ev(10000, "send", api="Produce", corr=1), ev(10001, "send", api="Produce", corr=2)]
    overtaken = parked + [ev(6, "send", api="Produce", corr=2), ev(10000, "send", api="Produce", corr=1)]
    contract = C.replies_in_order_behind("Produce", "Produce")
    assert contract.check(evidence(in_order)).passed
    verdict = contract.check(evidence(overtaken))
    assert not verdict.passed and "before the parked" in verdict.message
    # sent only once the parked one was answered (franz-go's trace): nothing was queued behind it
    after = parked[:2] + [ev(335, "send", api="Produce", corr=1), ev(336, "recv", api="Produce", corr=2, arrived_ms=335.5),
                          ev(670, "send", api="Produce", corr=2)]
    verdict = contract.check(evidence(after))
    assert not verdict.passed and "nothing queued" in verdict.figure
    # the broker reads ahead and traces when a queued request arrived (arrived_ms); one read at the instant the
    # parked one was answered, with no earlier arrival, came after the answer (our client's second batch of the
    # same partition, in virtual time): nothing was queued behind the parked one
    read_at_answer = parked[:2] + [ev(10000, "send", api="Produce", corr=1), ev(10000, "recv", api="Produce", corr=2),
                                   ev(20000, "send", api="Produce", corr=2)]
    verdict = contract.check(evidence(read_at_answer))
    assert not verdict.passed and "nothing queued" in verdict.figure
    queued_in_memory = parked[:2] + [ev(10000, "recv", api="Produce", corr=2, arrived_ms=10), ev(10000, "send", api="Produce", corr=1),
                                     ev(20000, "send", api="Produce", corr=2)]
    assert contract.check(evidence(queued_in_memory)).passed


def test_setup_timeout_contract_wants_growth_up_to_the_cap():
    def attempts(*ts):
        return [ev(t, "connect_dropped", broker=1) for t in ts]

    config = {"socket.connection.setup.timeout.ms": 10000, "socket.connection.setup.timeout.max.ms": 30000,
              "reconnect.backoff.max.ms": 1000}
    contract = C.setup_timeout_grows(1)
    good = Evidence([], attempts(0, 9700, 29100, 59000, 89400), config, client_id="c")
    flat = Evidence([], attempts(0, 10000, 20000, 30000, 40000), config, client_id="c")
    assert contract.check(good).passed
    assert not contract.check(flat).passed


def test_scenario_ids_are_unique():
    from conformance.scenarios import BY_ID, CATALOGUE

    assert len(BY_ID) == len(CATALOGUE)


def test_a_timing_verdict_carries_its_numbers_and_the_report_picks_it():
    """Reports take the key figure from the typed timing, not by reading the words back."""
    from conformance.model import Result, Status, Timing
    from conformance.report import key_figure

    r = Result("s", "c", Status.PASS, figures={"count": "3 Produce request(s)", "deadline": "returned at 2.00 s of 2.00 s"},
               timings={"deadline": Timing(2000.0, 2000.0)})
    assert key_figure(r) == "returned at 2.00 s of 2.00 s"
    assert r.to_dict()["timings"] == {"deadline": {"got_ms": 2000.0, "want_ms": 2000.0}}
    assert key_figure(Result("s", "c", Status.PASS, figures={"count": "3 Produce request(s)"})) == "3 Produce request(s)"


def test_stalled_handshakes_closed_at_the_clients_shutdown_are_not_judged_abandoned():
    """confluent-kafka closes its last stalled handshake together with its other connections
    once the record failed (0.4 s into it): that close is the shutdown, not the setup timeout."""
    from conformance.scenarios_security import stalled_handshakes_abandoned

    def stall(conn, opened, closed):
        return [ev(opened, "conn_open", conn=conn, broker=1), ev(opened + 1, "recv", conn=conn, broker=1, api="SaslHandshake"),
                ev(closed, "conn_close", conn=conn, broker=1, closed_by="client", reason="end of stream")]

    trace = [ev(0, "conn_open", conn=1), *stall(2, 540, 1650), *stall(3, 1651, 2657), *stall(4, 3662, 4062.4),
             ev(4062.2, "conn_close", conn=1, closed_by="client", reason="end of stream")]
    config = {"socket.connection.setup.timeout.ms": 1000.0, "socket.connection.setup.timeout.max.ms": 2000.0}
    v = stalled_handshakes_abandoned(1).check(Evidence([], trace, config, client_id="c", slack_ms=150.0))
    assert v.passed and v.figure == "3 stalled handshake(s); abandoned after 1.1 s, 1.0 s (1 closed as the client shut down)"
    early = [e if not (e.kind == "conn_close" and e.conn == 4) else ev(3000 + 800, "conn_close", conn=4, broker=1, closed_by="client")
             for e in trace]   # conn 4 dropped 0.14 s in, long before the shutdown: judged, too early
    v = stalled_handshakes_abandoned(1).check(Evidence([], early, config, client_id="c", slack_ms=150.0))
    assert not v.passed and "held 138 ms" in v.message


def test_trying_again_is_a_new_handshake_even_one_the_shutdown_ends():
    """Java's setup timeout grows (1 s, then up to 2.4 s): the second handshake may still be held
    when the record fails and the client shuts down. It was tried again all the same."""
    from conformance.scenarios_security import stalled_handshakes_abandoned

    config = {"socket.connection.setup.timeout.ms": 1000.0, "socket.connection.setup.timeout.max.ms": 2000.0}
    once = [ev(0, "conn_open", conn=1),
            ev(100, "conn_open", conn=2, broker=1), ev(101, "recv", conn=2, broker=1, api="SaslHandshake"),
            ev(1150, "conn_close", conn=2, broker=1, closed_by="client")]
    again = once + [ev(1200, "conn_open", conn=3, broker=1), ev(1201, "recv", conn=3, broker=1, api="SaslHandshake"),
                    ev(4000, "conn_close", conn=3, broker=1, closed_by="client"), ev(4000.5, "conn_close", conn=1, closed_by="client")]
    v = stalled_handshakes_abandoned(1).check(Evidence([], again, config, client_id="c", slack_ms=150.0))
    assert v.passed, v.message
    never = once + [ev(4000.5, "conn_close", conn=1, closed_by="client")]
    v = stalled_handshakes_abandoned(1).check(Evidence([], never, config, client_id="c", slack_ms=150.0))
    assert not v.passed and "did not try again" in v.message


def test_a_refresh_set_out_before_the_retry_counts_though_its_connection_was_slower():
    """kafka-python (and Java) ask for Metadata and the retry at once, each on a new connection:
    the retry reached the broker 0.5 ms ahead because its connection was set up first. A refresh
    on a connection opened after the retry, or sent late on one that was open all along, does not."""
    base = [ev(0, "conn_open", conn=1, broker=0), ev(100, "conn_open", conn=2, broker=1),
            ev(109, "recv", conn=2, broker=1, api="Fetch", corr=4),
            ev(1110.8, "conn_close", conn=2, broker=1, closed_by="client", reason="timeout")]

    def judged(*later):
        return C.metadata_before_retry("Fetch").check(Evidence([], base + list(later), {}, scale=30.0, client_id="c", slack_ms=150.0))

    v = judged(ev(1112.0, "conn_open", conn=3, broker=0), ev(1113.0, "conn_open", conn=4, broker=1),
               ev(1114.4, "recv", conn=4, broker=1, api="Fetch", corr=2), ev(1114.9, "recv", conn=3, broker=0, api="Metadata", corr=2))
    assert v.passed, v.message
    v = judged(ev(1113.0, "conn_open", conn=4, broker=1), ev(1114.4, "recv", conn=4, broker=1, api="Fetch", corr=2),
               ev(1115.0, "conn_open", conn=3, broker=0), ev(1116.0, "recv", conn=3, broker=0, api="Metadata", corr=2))
    assert not v.passed and "without a Metadata request first" in v.message
    v = judged(ev(1113.0, "conn_open", conn=4, broker=1), ev(1114.4, "recv", conn=4, broker=1, api="Fetch", corr=2),
               ev(1114.9, "recv", conn=1, broker=0, api="Metadata", corr=7))
    assert not v.passed


def test_the_last_handshake_cut_short_by_the_clients_end_is_left_out_though_others_closed_earlier():
    """franz-go closed its idle connection to broker 0 at 4009 ms, then, as the record failed, a
    handshake it had opened 9 ms before (4198 -> 4207 ms): its end, not a setup timeout."""
    from conformance.scenarios_security import stalled_handshakes_abandoned

    def stall(conn, opened, closed):
        return [ev(opened, "conn_open", conn=conn, broker=1), ev(opened + 1, "recv", conn=conn, broker=1, api="SaslHandshake"),
                ev(closed, "conn_close", conn=conn, broker=1, closed_by="client")]

    config = {"socket.connection.setup.timeout.ms": 1000.0, "socket.connection.setup.timeout.max.ms": 2000.0}
    trace = [ev(2187, "conn_open", conn=4), *stall(5, 2191.5, 3193.4), *stall(6, 3195.1, 4197.9),
             ev(4008.9, "conn_close", conn=4, closed_by="client"), *stall(7, 4198.1, 4207.4)]
    v = stalled_handshakes_abandoned(1).check(Evidence([], trace, config, client_id="c", slack_ms=150.0))
    assert v.passed and v.figure.endswith("abandoned after 1.0 s, 1.0 s (1 closed as the client shut down)"), v


def test_held_request_abandoned_at_the_request_timeout_fails_as_abandoned():
    """aiokafka 0.14 sends JoinGroup under request_timeout_ms: the held JoinGroup is never
    answered (the client closes its connection at 333 ms of a scaled 10 s), and its rejoin is
    answered after a shorter wait. That is the failure the contract names, not a scenario that
    held nothing."""
    trace = [ev(0, "recv", api="JoinGroup", corr=1), ev(334, "conn_close", closed_by="client"),
             ev(340, "recv", conn=2, api="JoinGroup", corr=2), ev(610, "send", conn=2, api="JoinGroup", corr=2)]
    real_time = Evidence([], trace, {"request.timeout.ms": 333}, scale=30.0, client_id="c", slack_ms=150.0)
    v = C.held_without_disconnect("JoinGroup", "request.timeout.ms").check(real_time)
    assert not v.passed and v.figure == "JoinGroup held 0.33 s"
    assert v.message == "the client closed conn 1 334 ms into the wait"
    answered = trace[2:]   # only the shorter, answered wait: nothing was held past request.timeout.ms
    v = C.held_without_disconnect("JoinGroup", "request.timeout.ms").check(
        Evidence([], answered, {"request.timeout.ms": 333}, scale=30.0, client_id="c", slack_ms=150.0))
    assert not v.passed and "did not exercise a held request" in v.message


def test_a_refusal_names_the_settings_in_kafkas_spelling_or_the_clients_keyword_spelling():
    """kafka-python refuses delivery_timeout_ms < linger_ms + request_timeout_ms naming the settings as
    its application wrote them; a message that leaves one out still fails."""
    names = C.error_names("configure_producer", "delivery.timeout.ms", "linger.ms", "request.timeout.ms")

    def refused(message):
        return evidence([], [Outcome("configure_producer", False, 0.0, "ConfigException", message)])

    kafka_python = "KafkaConfigurationError: Must set delivery_timeout_ms higher than linger_ms + request_timeout_ms"
    assert names.check(refused(kafka_python)).passed
    java = "delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms"
    assert names.check(refused(java)).passed
    v = names.check(refused("Must set delivery_timeout_ms higher than linger_ms"))
    assert not v.passed and "request.timeout.ms" in v.message


def test_max_block_is_judged_where_librdkafkas_one_second_scan_is_inside_the_tolerance():
    """librdkafka fails an unknown topic's record at message.timeout.ms (its max.block.ms stand-in), found
    by a scan once a second. The scenario runs unscaled whatever the run's scale, where up to a second late
    passes; at scale 30 (333 ms) the same second failed confluent-kafka and kcat, and still would."""
    from conformance.scenarios import CATALOGUE

    scenario = next(s for s in CATALOGUE if s.id == "kip91.max-block-missing-topic")
    (contract,) = [c for c in scenario.contracts if c.name == "produce returns at its deadline"]

    def run(scale):
        want = scenario.client_config["max.block.ms"] / scale
        late = Outcome("produce", False, (want + 990.0) / 1000, "TimeoutException", "Local: Message timed out")
        return contract.check(Evidence([late], [], {"max.block.ms": want}, scale=scale, client_id="c", slack_ms=150.0))

    assert run(scenario.scale_in(30.0)).passed
    assert not run(30.0).passed
