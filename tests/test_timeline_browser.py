"""The timelines as a person sees them: rendered in headless Chromium (Debian's package, installed
by dev/install-clients), measured by a script in the page. Under CI a missing browser is a
failure; elsewhere the tests skip with the install hint."""

import os

import pytest

from conformance import browser_check
from conformance.explain import explain, render_svg
from conformance.scenarios import BY_ID
from conformance.teaching_docs import BLOCK, DOCS, SHOTS, first_timeline_svg, page_html


@pytest.fixture(scope="module", autouse=True)
def browser():
    try:
        return browser_check.chromium()
    except browser_check.BrowserMissing as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(str(exc))


def _embedded_scenarios():
    return sorted({m.group("id") for page in DOCS.glob("*.md") for m in BLOCK.finditer(page.read_text())})


def test_every_teaching_timeline_renders_with_lanes_spans_and_no_overlapping_labels():
    pages = []
    for sid in _embedded_scenarios():
        _, spans, marks = explain(BY_ID[sid])
        pages.append(render_svg(sid, spans, marks))
    found = browser_check.probe(page_html("".join(pages)))
    assert found["svgs"] == len(pages)
    assert {"application", "client requests", "wire", "broker"} <= set(found["lanes"])
    assert found["spans"] >= len(pages)
    assert found["overlaps"] == [] and found["outside"] == [], (found["overlaps"][:5], found["outside"][:5])


def test_the_probe_sees_overlaps_and_labels_off_the_drawing():
    bad = ('<svg xmlns="http://www.w3.org/2000/svg" width="200" height="60">'
           '<text class="label" x="10" y="20" font-size="11">first label here</text>'
           '<text class="label" x="14" y="22" font-size="11">second label here</text>'
           '<text class="label" x="150" y="50" font-size="11">this one runs off the right edge</text></svg>')
    found = browser_check.probe(page_html(bad))
    assert len(found["overlaps"]) == 1 and found["outside"] == ["this one runs off the right edge"]


def test_each_teaching_page_has_an_up_to_date_screenshot():
    for page in sorted(DOCS.glob("*.md")):
        svg = first_timeline_svg(page)
        if svg is None:
            continue
        stored = SHOTS / f"{page.stem}.svg"
        png = SHOTS / f"{page.stem}.png"
        assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"no screenshot for {page.name}"
        assert stored.exists() and stored.read_text() == svg, (
            f"the screenshot of {page.name} is stale: run python -m conformance.teaching_docs --screenshots")


def test_the_report_links_each_cell_to_its_timeline(tmp_path):
    from conformance import report
    from conformance.adapters.ours import OurAdapter
    from conformance.runner import Plan, run_plan
    from conformance.summary import write_timelines

    results = run_plan(Plan([BY_ID["kip19.produce-black-hole"], BY_ID["kip91.config-validation"]], [OurAdapter()]))
    links = write_timelines(results, str(tmp_path / "report.html"))
    page = report.to_html(results, timeline_links=links)
    for href in links.values():
        assert f'href="{href}"' in page and (tmp_path / href).exists()
    timeline = (tmp_path / links[("kip19.produce-black-hole", OurAdapter.name)]).read_text()
    found = browser_check.probe(timeline)
    assert found["spans"] >= 3 and found["overlaps"] == [] and found["outside"] == []
