"""Which clock ended each give-up in a timeline (conformance/attribution.py, drawn by
conformance/explain.py): decided from the run's configuration and its trace, one family at a time,
on synthetic traces (no broker, no client)."""

from __future__ import annotations

from broker_emu.trace import Kind, TraceEvent
from conformance import attribution as A
from conformance.explain import build


def ev(t: float, kind: str, api: str | None = None, conn: int = 1, corr: int | None = None, **details) -> TraceEvent:
    return TraceEvent(t, kind, broker=1, conn=conn, client_id="c", correlation_id=corr, api=api, details=details)


def call(op: str, start: float, end: float, timeout_ms: float | None = None, ok: bool = False, timed: float | None = None,
         elapsed: float | None = None) -> list[TraceEvent]:
    out = [ev(start, Kind.APP_CALL, op=op, phase="start", **({} if timeout_ms is None else {"timeout_ms": timeout_ms}))]
    if timed is not None:
        out.append(ev(timed, Kind.APP_CALL, op=op, phase="timed"))
    out.append(ev(end, Kind.APP_CALL, op=op, phase="end", ok=ok, error=None if ok else "TimeoutException", message=None,
                  **({} if elapsed is None else {"elapsed_ms": elapsed})))
    return out


def abandoned(api: str, sent: float, closed: float, conn: int = 1) -> list[TraceEvent]:
    return [ev(sent, Kind.RECV, api, conn, 1), ev(closed, Kind.CONN_CLOSE, None, conn, closed_by="client", reason="eos")]


def spans_of(trace: list[TraceEvent], config: dict, **kw):
    spans, marks = build(sorted(trace, key=lambda e: e.t_ms), config, **kw)
    return spans, marks


def request_span(spans, api: str):
    return next(s for s in spans if s.lane == "client requests" and s.label.startswith(api))


def first_to_give_up(marks) -> str:
    return next(m.label for m in marks if m.lane == "who gave up first")


def test_kip19_request_abandoned_at_request_timeout_names_it_with_its_value():
    spans, marks = spans_of(call("produce", 0, 60_000, ok=True) + abandoned("Produce", 0, 30_000), {"request.timeout.ms": 30_000})
    span = request_span(spans, "Produce")
    assert span.kind == "timeout-client" and span.clock == "request.timeout.ms = 30000 ms"
    assert "request.timeout.ms = 30000 ms" in span.label
    assert "request.timeout.ms = 30000 ms" in first_to_give_up(marks)


def test_kip266_request_abandoned_at_the_calls_timeout_is_not_request_timeout():
    # the KIP-266 figure: OffsetFetch abandoned at 5 s with request.timeout.ms at 30 s
    trace = call("committed", 0, 5_000, timeout_ms=5_000) + abandoned("OffsetFetch", 0, 5_000)
    spans, marks = spans_of(trace, {"request.timeout.ms": 30_000})
    span = request_span(spans, "OffsetFetch")
    assert span.clock == "committed()'s timeout = 5000 ms" and "request.timeout.ms" not in span.label
    app = next(s for s in spans if s.lane == "application")
    assert app.clock == "committed()'s timeout = 5000 ms" and "raised TimeoutException when" in app.label
    assert "committed()'s timeout = 5000 ms" in first_to_give_up(marks)


def test_kip266_without_a_timeout_the_call_falls_back_to_default_api_timeout():
    trace = call("committed", 0, 4_000) + abandoned("OffsetFetch", 0, 4_000)
    spans, _ = spans_of(trace, {"request.timeout.ms": 30_000, "default.api.timeout.ms": 4_000})
    assert request_span(spans, "OffsetFetch").clock == "default.api.timeout.ms = 4000 ms"
    # poll() has no such fallback: a poll without a timeout is not attributed to it
    assert not A.call_clocks(A.Call("poll", 0, 4_000, None), {"default.api.timeout.ms": 4_000})


def test_kip266_a_call_that_ends_a_request_sent_by_an_earlier_call():
    # close(timeout=2 s) after a first poll: the fetch the poll sent is ended by close's deadline,
    # counted from the timed call's start (after the poll), not the step's
    trace = call("close", 0, 2_300, timeout_ms=2_000, ok=True, timed=200, elapsed=2_000) + abandoned("Fetch", 0, 2_200)
    spans, _ = spans_of(trace, {"request.timeout.ms": 30_000})
    assert request_span(spans, "Fetch").clock == "close()'s timeout = 2000 ms"
    assert next(s for s in spans if s.lane == "application").clock == "close()'s timeout = 2000 ms"


def test_kip91_the_last_attempt_is_cut_short_by_delivery_timeout():
    trace = (call("produce", 0, 120_000, ok=False) + abandoned("Produce", 0, 30_000)
             + abandoned("Produce", 90_663, 120_000, conn=2))
    config = {"request.timeout.ms": 30_000, "delivery.timeout.ms": 120_000}
    spans, marks = spans_of(trace, config)
    first, last = sorted((s for s in spans if s.lane == "client requests"), key=lambda s: s.start)
    assert first.clock == "request.timeout.ms = 30000 ms" and last.clock == "delivery.timeout.ms = 120000 ms"
    assert next(s for s in spans if s.lane == "application").clock == "delivery.timeout.ms = 120000 ms"
    assert "request.timeout.ms = 30000 ms" in first_to_give_up(marks)   # the first give-up, at 30 s


def test_kip91_max_block_ends_a_send_that_never_found_its_topic():
    spans, _ = spans_of(call("produce", 0, 10_000), {"max.block.ms": 10_000})
    assert next(s for s in spans if s.lane == "application").clock == "max.block.ms = 10000 ms"


def test_librdkafka_socket_timeout_when_the_run_sets_it():
    spans, _ = spans_of(abandoned("Produce", 0, 2_000), {"request.timeout.ms": 1_000, "socket.timeout.ms": 2_000})
    assert request_span(spans, "Produce").clock == "socket.timeout.ms = 2000 ms"


def test_no_clock_ends_there_claims_none():
    spans, marks = spans_of(call("poll", 0, 3_000, timeout_ms=5_000, ok=True) + abandoned("Fetch", 0, 2_200),
                            {"request.timeout.ms": 30_000})
    span = request_span(spans, "Fetch")
    assert span.kind == "request" and span.clock == "" and "no timeout of its configuration ends there" in span.label
    assert not [m for m in marks if m.lane == "who gave up first"]
    assert next(s for s in spans if s.lane == "application").clock == ""   # poll returned before its deadline


def test_clocks_firing_together_are_both_named():
    spans, _ = spans_of(call("committed", 0, 30_000, timeout_ms=30_000) + abandoned("OffsetFetch", 0, 30_000),
                        {"request.timeout.ms": 30_000})
    assert request_span(spans, "OffsetFetch").clock == "request.timeout.ms = 30000 ms and committed()'s timeout = 30000 ms"


def test_real_time_run_within_its_slack_and_shown_at_the_scenarios_values():
    # scale 30: request.timeout.ms 1000 (30 s as the scenario sets it), closed 40 ms late
    spans, _ = spans_of(abandoned("Produce", 0, 1_040), {"request.timeout.ms": 1_000}, tol_ms=150.0, scale=30.0)
    assert request_span(spans, "Produce").clock == "request.timeout.ms = 30000 ms"


def test_broker_purgatory_names_the_produces_own_timeout():
    trace = [ev(5, Kind.RECV, "Produce", 1, 1), ev(5, Kind.PURGATORY_ENTER, "Produce", 1, 1, timeout_ms=25_000),
             ev(25_005, Kind.PURGATORY_EXPIRE, "Produce", 1, 1, timeout_ms=25_000),
             ev(25_005, Kind.SEND, "Produce", 1, 1, errors=[7])]
    spans, marks = spans_of(trace, {"request.timeout.ms": 30_000})
    parked = next(s for s in spans if s.lane == "purgatory")
    assert parked.clock == "the Produce's timeout_ms = 25000 ms"
    assert "the broker (the Produce's timeout_ms = 25000 ms, in its purgatory)" in first_to_give_up(marks)


def test_broker_group_session_and_transaction_timers_carry_their_values():
    fenced = ev(10_000, Kind.GROUP_MEMBER_FENCED, group="g", member="m1", reason="session", protocol="consumer",
                timeout_ms=9_000, released=[0])
    spans, marks = spans_of([fenced], {})
    assert next(s for s in spans if s.lane == "group coordinator").clock == "group.consumer.session.timeout.ms = 9000 ms"
    assert "group.consumer.session.timeout.ms = 9000 ms" in first_to_give_up(marks)
    txn = [ev(0, Kind.TXN_STATE, transactional_id="tx", producer_id=1, epoch=0, **{"from": "Empty", "to": "Ongoing"},
              reason="AddPartitionsToTxn"),
           ev(3_100, Kind.TXN_STATE, transactional_id="tx", producer_id=1, epoch=1,
              **{"from": "Ongoing", "to": "PrepareAbort"}, reason="timed out", timeout_ms=3_000)]
    spans, marks = spans_of(txn, {})
    assert next(s for s in spans if s.lane == "transaction coordinator").clock == "transaction.timeout.ms = 3000 ms"
    assert "transaction.timeout.ms = 3000 ms" in first_to_give_up(marks)


def test_a_stalled_handshake_is_ended_by_the_connection_setup_timeout_within_its_window():
    config = {"request.timeout.ms": 30_000, "socket.connection.setup.timeout.ms": 30_000,
              "socket.connection.setup.timeout.max.ms": 60_000, "delivery.timeout.ms": 120_000}
    # jittered and doubled: abandoned after 29.0 s, then 57.7 s; the last cut short by the record's expiry
    trace = (call("produce", 0, 120_000) + abandoned("SaslHandshake", 0, 29_046, conn=2)
             + abandoned("SaslHandshake", 29_091, 86_809, conn=3) + abandoned("SaslHandshake", 86_920, 120_000, conn=4))
    spans, _ = spans_of(trace, config)
    first, second, last = sorted((s for s in spans if s.lane == "client requests"), key=lambda s: s.start)
    assert first.clock.startswith("socket.connection.setup.timeout.ms = 30000 ms") and "60000" in first.clock
    assert second.clock == first.clock
    assert last.clock == "delivery.timeout.ms = 120000 ms"   # an exact clock beats a window that holds it
    # a request that is no part of a handshake is never put down to the set-up timeout
    spans, _ = spans_of(abandoned("Produce", 0, 29_046), config)
    assert request_span(spans, "Produce").clock == ""


def test_every_scenario_of_our_client_draws_and_names_each_give_up():
    from conformance.adapters.ours import OurAdapter
    from conformance.explain import explain
    from conformance.scenarios import CATALOGUE

    adapter = OurAdapter()
    for scenario in CATALOGUE:
        if not adapter.supports_scenario(scenario)[0]:
            continue
        _, spans, marks = explain(scenario)
        for s in spans:
            assert s.kind not in ("timeout-client", "timeout-server") or s.clock, (scenario.id, s.label)
