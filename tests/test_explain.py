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
