"""Generate the teaching pages' timelines from real runs: `python -m conformance.teaching_docs`.

Each page in docs/teaching/ holds a block between <!-- timeline:SCENARIO --> and
<!-- /timeline --> markers; this command re-runs that scenario with our client in virtual time
and rewrites the block. `--check` only compares (the test suite runs it). `--screenshots` also
renders each page's first timeline in headless Chromium to docs/teaching/screenshots/PAGE.png,
next to the SVG it was made from (the test suite compares that SVG with a fresh one)."""

from __future__ import annotations

import pathlib
import re
import sys

from conformance.explain import explain, render_text
from conformance.scenarios import BY_ID

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs" / "teaching"
BLOCK = re.compile(r"(<!-- timeline:(?P<id>[\w.\-]+) -->\n)(?P<body>.*?)(<!-- /timeline -->)", re.S)


def timeline(scenario_id: str) -> str:
    scenario = BY_ID[scenario_id]
    _, spans, marks = explain(scenario)
    return "```\n" + render_text(f"{scenario.id}: {scenario.title}", spans, marks) + "\n```\n"


SHOTS = DOCS / "screenshots"


def first_timeline_svg(page: pathlib.Path) -> str | None:
    from conformance.explain import render_svg

    found = BLOCK.search(page.read_text())
    if not found:
        return None
    scenario = BY_ID[found.group("id")]
    _, spans, marks = explain(scenario)
    return render_svg(f"{scenario.id}: {scenario.title}", spans, marks)


def page_html(svg: str) -> str:
    return f"<!doctype html><meta charset='utf-8'><body style='margin:8px'>{svg}</body>"


def screenshots() -> list[str]:
    from conformance.browser_check import screenshot

    SHOTS.mkdir(exist_ok=True)
    written = []
    for page in sorted(DOCS.glob("*.md")):
        svg = first_timeline_svg(page)
        if svg is None:
            continue
        (SHOTS / f"{page.stem}.svg").write_text(svg)
        m = re.search(r'height="(\d+)"', svg)
        if m is None:
            raise ValueError(f"{page.name}: its first timeline <svg> has no height attribute")
        height = int(m.group(1)) + 20
        screenshot(page_html(svg), str(SHOTS / f"{page.stem}.png"), height=min(height, 4000))
        written.append(f"{page.stem}.png")
    return written


def regenerate(check: bool = False) -> list[str]:
    stale = []
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text()
        new = BLOCK.sub(lambda m: m.group(1) + timeline(m.group("id")) + m.group(4), text)
        if new != text:
            stale.append(page.name)
            if not check:
                page.write_text(new)
    return stale


if __name__ == "__main__":
    check = "--check" in sys.argv
    stale = regenerate(check)
    if check and stale:
        print(f"stale timelines in: {', '.join(stale)} (run python -m conformance.teaching_docs)")
        sys.exit(1)
    print("updated: " + (", ".join(stale) or "nothing"))
    if "--screenshots" in sys.argv:
        print("screenshots: " + ", ".join(screenshots()))
