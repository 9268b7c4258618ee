"""`broker-emu explain`: timelines built from the real trace of a virtual-time run."""

from conformance.explain import build, explain, render_svg, render_text
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
