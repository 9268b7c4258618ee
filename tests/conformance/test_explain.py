"""`broker-emu explain`: timelines built from the real trace of a virtual-time run."""

import html
import re

from conformance.explain import Mark, build, explain, render_svg, render_text
from conformance.scenarios import BY_ID


def test_black_hole_timeline_shows_the_client_side_timeout():
    result, spans, marks = explain(BY_ID["kip19.produce-black-hole"])
    timeouts = [s for s in spans if s.kind == "timeout-client"]
    assert len(timeouts) == 1 and timeouts[0].end - timeouts[0].start == 30000
    assert "request.timeout.ms" in timeouts[0].label
    call = next(s for s in spans if s.lane == "application")
    assert call.kind == "ok" and call.end >= timeouts[0].end  # the call outlived the first attempt and succeeded
    assert any("black_hole" in m.label for m in marks)
    text = render_text("t", spans, marks)
    assert "!" * 10 in text and "client gave up" in text


def test_purgatory_timeline_shows_the_server_side_timeout():
    _, spans, _ = explain(BY_ID["server.purgatory-request-timed-out"])
    parked = [s for s in spans if s.lane == "purgatory"]
    assert len(parked) == 1 and parked[0].kind == "timeout-server" and parked[0].end - parked[0].start == 30000
    svg = render_svg("t", spans, [])
    assert svg.startswith("<svg") and 'class="span timeout-server"' in svg and "purgatory" in svg


def test_build_on_an_empty_trace():
    assert build([]) == ([], [])


def test_who_gave_up_first_is_marked_for_each_side():
    _, _, marks = explain(BY_ID["server.purgatory-request-timed-out"])
    first = [m for m in marks if m.lane == "who gave up first"]
    assert len(first) == 1 and "the client" in first[0].label and first[0].t == 30000
    _, _, marks = explain(BY_ID["kip266.poll-empty-at-deadline"])   # nobody timed out
    assert not [m for m in marks if m.lane == "who gave up first"]


def test_wire_lane_has_every_frame_each_way():
    result, _, marks = explain(BY_ID["kip19.produce-black-hole"])
    wire = [m.label for m in marks if m.lane == "wire"]
    recvs = [e for e in result.trace if e.kind == "recv" and e.api != "ApiVersions"]
    assert len([w for w in wire if w.startswith("->")]) == len(recvs)
    assert any(w.startswith("<- Produce") for w in wire)


def test_compare_draws_both_runs_on_one_axis(capsys, tmp_path):
    from conformance.main import build_parser as build_parser_for_tests

    out = tmp_path / "race.svg"
    args = build_parser_for_tests().parse_args(["explain", "server.purgatory-request-timed-out",
                                                "--compare", "request.timeout.ms=40000", "--out", str(out)])
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert text.count("time axis: 0 .. 40.01 s") == 2          # one axis for both panels
    assert "with request.timeout.ms=40000" in text and "30.000 s           first to give up" in text
    assert out.read_text().count("<svg") == 2
    bad = build_parser_for_tests().parse_args(["explain", "kip19.produce-black-hole", "--compare", "nonsense"])
    assert bad.func(bad) == 2


def test_ticks_read_differently_and_use_milliseconds_below_two_seconds():
    from conformance.explain import ticks

    for end in (67.0, 500.0, 1999.0, 2300.0, 5000.0, 29900.0, 150100.0):
        labels = [label for _, label in ticks(end)]
        assert len(labels) == len(set(labels)) and 4 <= len(labels) <= 11, (end, labels)
        assert all(label.endswith(" ms") for label in labels) == (end < 2000), (end, labels)


def test_answers_name_their_error_and_long_messages_are_wrapped_whole():
    from broker_emu.trace import TraceEvent

    answered = [TraceEvent(0.0, "recv", broker=1, conn=1, client_id="c", correlation_id=1, api="Produce", details={}),
                TraceEvent(30.0, "send", broker=1, conn=1, client_id="c", correlation_id=1, api="Produce",
                           details={"errors": [7, 999]})]
    spans, _ = build(answered)
    assert [s.label for s in spans] == ["Produce -> REQUEST_TIMED_OUT (7), error 999"]
    long = "committed() gave up after 5000 ms: the group coordinator for 'cg' (broker 1) did not answer; " * 3
    svg = render_svg("t", [], [Mark("application", 4900.0, long.strip())])
    label = re.search(r'<text class="label".*?</text>', svg).group(0)
    shown = " ".join(html.unescape(t) for t in re.findall(r"<tspan[^>]*>([^<]*)</tspan>", label))
    assert "…" not in svg and shown == f"{long.strip()} (4.900 s)"
    assert label.count("<tspan") >= 2   # wrapped over lines, not cut


def test_a_long_title_is_wrapped_not_cut():
    title = "kip19.connection-setup-timeout: " + "the leader drops connection attempts, " * 6
    svg = render_svg(title.strip(), [], [Mark("broker", 1.0, "x")])
    heading = re.search(r'<text class="title".*?</text>', svg).group(0)
    lines = re.findall(r"<tspan[^>]*>([^<]*)</tspan>", heading)
    assert len(lines) >= 2 and " ".join(lines) == title.strip()
    assert max(len(line) for line in lines) * 8.5 <= 1100 - 20


def test_a_controller_deadline_and_an_isr_shrink_name_the_broker_clock_that_fired():
    _, spans, marks = explain(BY_ID["admin.create-topics-controller-deadline"])
    deadline = [s for s in spans if s.lane == "controller"]
    assert len(deadline) == 1 and deadline[0].kind == "timeout-server"
    assert deadline[0].clock == "the CreateTopics's timeout_ms = 29900 ms" and deadline[0].end == 29900
    first = [m.label for m in marks if m.lane == "who gave up first"]
    assert first == ["first to give up: the broker (the CreateTopics's timeout_ms = 29900 ms, its controller's deadline): "
                     "it answered REQUEST_TIMED_OUT"]
    from broker_emu.trace import TraceEvent

    shrink = TraceEvent(10_000.0, "isr_change", details={"topic": "t", "partition": 0, "shrink": [2], "isr": [1],
                                                         "high_watermark": 3, "replica_lag_time_max_ms": 10_000})
    _, marks = build([shrink])
    assert [m.label for m in marks] == ["ISR of t-0 shrank to [1]: follower(s) [2] not caught up for "
                                        "replica.lag.time.max.ms = 10000 ms (server side)"]


def test_kip848_members_are_named_by_arrival_so_a_figure_is_the_same_every_run():
    labels = []
    for _ in range(2):
        _, _, marks = explain(BY_ID["kip848.crashed-member-expires-at-broker-session"])
        labels.append([m.label for m in marks if m.lane == "group coordinator"])
    assert labels[0] == labels[1]
    assert "k848-crash group epoch 1: member-1 joined or changed its subscription" in labels[0]


def test_a_classic_member_expelled_at_its_own_session_is_a_broker_timer_on_the_clients_number():
    _, spans, marks = explain(BY_ID["server.joingroup-held"])
    expelled = [s for s in spans if s.lane == "group coordinator"]
    assert len(expelled) == 1 and expelled[0].kind == "timeout-server"
    assert expelled[0].clock == "session.timeout.ms = 20000 ms" and expelled[0].end - expelled[0].start == 20000
    rebalances = [m.label for m in marks if m.lane == "group coordinator"]
    assert "held rebalance (member-1 joined); rebalance timeout 60000 ms" in rebalances


def test_a_retry_backoff_is_named_only_when_its_length_fits_the_configuration():
    result, spans, _ = explain(BY_ID["kip91.delivery-timeout-in-flight"])
    waits = [(s.start, s.end) for s in spans if s.kind == "backoff"]
    assert [round(b - a) for a, b in waits] == [110, 180, 384]   # retries 0, 1, 2: 100, 200, 400 ms ±20 %
    assert all("retry.backoff.ms = 100 ms" in s.label for s in spans if s.kind == "backoff")
    config = dict(result.evidence.config, **{"retry.backoff.ms": 1000})   # gaps that this config cannot explain
    spans, _ = build(result.trace, config)
    assert not [s for s in spans if s.kind == "backoff"]


def test_dropped_connection_attempts_are_named_by_the_setup_timeout_window_they_fit():
    _, spans, marks = explain(BY_ID["kip19.connection-setup-timeout"])
    attempts = [s for s in spans if s.label.startswith("connection attempt")]
    # 10 s, 20 s, then the 30 s max, each ±20 % (never above the max): a fifth attempt fits before the deadline
    assert [round((s.end - s.start) / 1000) for s in attempts] == [11, 21, 24, 30, 27]
    assert all(s.clock.startswith("socket.connection.setup.timeout.ms = 10000 ms") for s in attempts)
    first = [m.label for m in marks if m.lane == "who gave up first"]
    assert first and "socket.connection.setup.timeout.ms" in first[0]


def test_a_held_request_and_its_late_answer_are_drawn():
    """The hold fault's request: held on the broker lane until released, then handled with its
    answer dropped; under version 1 the late EndTxn is answered without error, under 2 fenced."""
    for sid, answer in (("txn.late-end-txn", "without error"), ("txn.late-end-txn-v2", "PRODUCER_FENCED (90)")):
        _, spans, marks = explain(BY_ID[sid])
        held = [s for s in spans if s.lane == "broker" and s.label.startswith("EndTxn held by the broker")]
        assert len(held) == 1 and held[0].end - held[0].start > 3000 and "its client gone" in held[0].label
        late = [m.label for m in marks if m.lane == "broker" and m.label.startswith("late EndTxn handled")]
        assert late == [f"late EndTxn handled: answered {answer}, the answer dropped (no connection left to send it on)"]
