"""What a conformance run prints and writes at its end: the matrix and counts on stdout, then the
reports asked for (--json, --junit, --html with a timeline page per run)."""

from __future__ import annotations

import argparse
import html


def write_timelines(results, html_path: str) -> dict:
    """One timeline page per run that has a trace, next to the HTML report, drawn from the
    run's own trace (nothing is re-run); returns the report's links to them."""
    import os
    import re

    from conformance.explain import build, render_svg
    from conformance.scenarios import BY_ID

    folder = os.path.join(os.path.dirname(os.path.abspath(html_path)), "timelines")
    links = {}
    for r in results:
        if not r.trace:
            continue
        spans, marks = build(r.trace)
        slug = re.sub(r"[^a-z0-9]+", "-", r.client.lower()).strip("-")
        name = f"{r.scenario}--{slug}.html"
        scenario = BY_ID.get(r.scenario)
        note = "" if r.client.startswith("broker-emu (async)") else " (real time: every timeout divided by the scale)"
        title = f"{r.scenario} — {r.client}: {r.status.value.upper()}{note}"
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, name), "w") as f:
            f.write(f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title><body>"
                    f"{render_svg(title, spans, marks)}<p>{html.escape(scenario.teaching if scenario else '')}</p>"
                    f"<ul>{''.join(f'<li>{html.escape(n)}: {st.value} {html.escape(d)}</li>' for n, st, d in r.contracts)}</ul>"
                    f"</body>")
        links[(r.scenario, r.client)] = f"timelines/{name}"
    return links


def print_summary(results: list, wall: float, args: argparse.Namespace) -> None:
    """The matrix and the counts on stdout, then the reports asked for (--json, --junit, --html)."""
    from conformance import report
    from conformance.model import Status

    simulated = sum(r.simulated_s for r in results)
    print(report.matrix(results))
    print(f"\n{len(results)} runs: {sum(r.status is Status.PASS for r in results)} pass, "
          f"{sum(r.status is Status.FAIL for r in results)} fail, {sum(r.status is Status.NA for r in results)} n/a, "
          f"{sum(r.status is Status.ERROR for r in results)} error; simulated {simulated:.1f} s in {wall:.1f} s of wall time")
    capped = sorted({f"{r.scenario} by {_scenario_scale(r.scenario, args.scale):g}" for r in results
                     if _scenario_scale(r.scenario, args.scale) != args.scale})
    print(f"Figures of real-time clients are in their scaled time (every timeout divided by {args.scale:g}"
          f"{'; ' + ', '.join(capped) if capped else ''}); our async face runs in virtual time at full length.")
    for r in results:
        if r.status in (Status.FAIL, Status.ERROR):
            print(f"  {r.status.value.upper()} {r.client} {r.scenario}: {r.message}")
    summary = {"simulated_s": round(simulated, 3), "wall_s": round(wall, 3), "scale": args.scale}
    if args.json:
        with open(args.json, "w") as f:
            f.write(report.to_json(results, **summary))
    if args.junit:
        with open(args.junit, "w") as f:
            f.write(report.to_junit(results))
    if args.html:
        links = write_timelines(results, args.html)
        with open(args.html, "w") as f:
            f.write(report.to_html(results, timeline_links=links))


def _scenario_scale(scenario_id: str, scale: float) -> float:
    from conformance.scenarios import BY_ID

    scenario = BY_ID.get(scenario_id)
    return scenario.scale_in(scale) if scenario is not None else scale
