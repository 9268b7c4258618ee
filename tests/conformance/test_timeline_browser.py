"""The timelines as a person sees them: rendered in headless Chromium (Debian's package, installed
by dev/install-clients), measured by a script in the page. Under CI a missing browser is a
failure; elsewhere the tests skip with the install hint."""

import os

import pytest

from conformance import browser_check
from conformance.explain import explain, render_svg
from conformance.scenarios import BY_ID
from conformance.teaching_docs import BLOCK, DOCS, referenced_figures

pytestmark = pytest.mark.browser


def page_html(svg: str) -> str:
    return f"<!doctype html><meta charset='utf-8'><body style='margin:8px'>{svg}</body>"


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


def test_each_teaching_page_shows_its_figures_whole_in_a_browser():
    """Every lesson as a reader's browser draws it: each figure the page embeds (one per timeline
    block, the files the page links) renders with its lanes, and no label overlaps another or
    runs off its drawing."""
    checked = 0
    for page in sorted(DOCS.glob("*.md")):
        blocks = list(BLOCK.finditer(page.read_text()))
        figures = referenced_figures(page)
        assert len(figures) == len(blocks), f"{page.name}: {len(blocks)} timelines but {len(figures)} embedded figures"
        if not figures:
            continue
        assert all(f.exists() for f in figures), [f.name for f in figures if not f.exists()]
        found = browser_check.probe(page_html("".join(f.read_text() for f in figures)), labels="text.label, text.lane, text.title")
        assert found["svgs"] >= len(figures) and found["spans"] >= len(figures), (page.name, found["svgs"], found["spans"])
        assert found["overlaps"] == [] and found["outside"] == [], (page.name, found["overlaps"][:3], found["outside"][:3])
        checked += 1
    assert checked >= 8


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
