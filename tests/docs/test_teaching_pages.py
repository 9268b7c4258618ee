"""The teaching pages' figures are generated from real runs; a page or figure that no longer
matches its scenario fails here (regenerate with `python -m conformance.teaching_docs`, and
`--real-time` for the panels of third-party clients)."""

import shutil

import pytest

from conformance import teaching_docs
from conformance.teaching_docs import DOCS, essentials, regenerate


def test_teaching_pages_and_figures_match_their_scenarios():
    assert list(DOCS.glob("*.md")), "no teaching pages found"
    assert regenerate(check=True) == []


def test_a_stale_figure_or_page_is_caught(tmp_path, monkeypatch):
    copy = tmp_path / "teaching"
    shutil.copytree(DOCS, copy)
    monkeypatch.setattr(teaching_docs, "DOCS", copy)
    monkeypatch.setattr(teaching_docs, "FIGURES", copy / "figures")
    (copy / "figures" / "kip19.produce-black-hole.svg").write_text("<svg/>")
    page = copy / "kip266-deadlines.md"
    page.write_text(page.read_text().replace("5000 ms", "5001 ms", 1))
    stale = regenerate(check=True)
    assert "figures/kip19.produce-black-hole.svg" in stale and "kip266-deadlines.md" in stale


def test_essentials_mask_times_and_keep_outcomes():
    text = ("client requests:\n"
            "  | =     |    0.584-   0.587 s  Metadata\n"
            "  | ===== |    0.833-  30.995 s  Produce -> REQUEST_TIMED_OUT (7)\n"
            "who gave up first:\n"
            "  |     ^ |   30.913 s           first to give up: the broker\n")
    assert essentials(text) == ["client requests: Produce -> REQUEST_TIMED_OUT (7)",
                                "who gave up first: first to give up: the broker"]


def test_essentials_mask_a_measured_duration_whether_or_not_it_is_whole():
    line = "  |  ====  |   34.513-  53.611 s  ShareAcknowledge unanswered: the client closed the connection after {} ms"
    whole, fraction = (essentials("client requests:\n" + line.format(ms)) for ms in ("19098", "19328.1"))
    assert whole == fraction == ["client requests: ShareAcknowledge unanswered: the client closed the connection "
                                 "after # ms"]
    configured = "  | ! |  1.0- 31.0 s  Produce unanswered: the client gave up when request.timeout.ms = 30000 ms ran out"
    assert "30000 ms" in essentials("client requests:\n" + configured)[0]


@pytest.mark.realclient
def test_the_third_party_panels_show_what_a_fresh_run_shows():
    """The produce race's other outcome comes from confluent-kafka in real time: a fresh run must
    show the same outcomes, timeouts and winner (its instants differ run to run)."""
    assert regenerate(check=True, real_time=True) == []


def test_the_course_page_links_every_lesson_and_names_only_real_scenarios():
    import re

    from conformance.lab import LESSONS
    from conformance.scenarios import BY_ID

    course = (DOCS / "README.md").read_text()
    linked = set(re.findall(r"\]\(([\w\-]+\.md)\)", course))
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    assert pages <= linked, f"lessons the course page does not link: {sorted(pages - linked)}"
    named = set(re.findall(r"`((?:kip\d+|server|admin|txn|failover|security|faithful|rebootstrap)\.[\w.\-]+)`", course))
    assert named and named <= set(BY_ID), sorted(named - set(BY_ID))
    for lesson in LESSONS:   # each lesson's page offers its exercises
        page = (DOCS / f"{lesson.page}.md").read_text()
        assert f"broker-emu lab {lesson.page}" in page and "](README.md)" in page, lesson.page
