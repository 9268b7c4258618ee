"""The teaching pages' timelines are generated from real runs; a page that no longer matches
its scenario fails here (regenerate with `python -m conformance.teaching_docs`)."""

from conformance.teaching_docs import DOCS, regenerate


def test_teaching_pages_match_their_scenarios():
    assert list(DOCS.glob("*.md")), "no teaching pages found"
    assert regenerate(check=True) == []
