"""DIR/summary.json and DIR/report.html (inline SVG drawn here: no plotting dependency)."""

from __future__ import annotations

import html
import json
import math
from collections import defaultdict
from typing import Any

from conformance.campaign.chaos_runs import SCENARIO as CHAOS_SCENARIO
from conformance.campaign.compare import comparison_tables

CELL = 46


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _colour(rate: float | None) -> str:
    if rate is None:
        return "#ddd"
    # red (0) -> amber -> green (1)
    r = int(220 - 170 * rate)
    g = int(60 + 150 * rate)
    return f"rgb({r},{g},70)"


def text_width(text: str, size: float = 11) -> float:
    """A generous estimate of a sans-serif label's width, so no drawing clips its own text
    (tests/conformance/campaign/test_campaign_report_browser.py measures the real widths in Chromium)."""
    return 0.62 * size * len(str(text)) + 4


def _params(key: str) -> dict[str, Any]:
    return json.loads(key) if key else {}


def heat_maps(per_key: list[dict[str, Any]]) -> str:
    """Per scenario x client: pass rate over the two parameters with most values (others
    averaged, by run counts)."""
    out = []
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in per_key:
        groups[(row["scenario"], row["client"])].append(row)
    for (scenario, client), rows in groups.items():
        values: dict[str, set] = defaultdict(set)
        for row in rows:
            for k, v in _params(row["params"]).items():
                values[k].add(json.dumps(v))
        axes = sorted((k for k in values if len(values[k]) > 1), key=lambda k: -len(values[k]))[:2]
        if not axes:
            continue
        xk = axes[0]
        yk = axes[1] if len(axes) > 1 else None
        xs = sorted(values[xk], key=lambda v: (isinstance(json.loads(v), str), json.loads(v)))
        ys = sorted(values[yk], key=lambda v: (isinstance(json.loads(v), str), json.loads(v))) if yk else ["-"]
        cells: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
        for row in rows:
            p = _params(row["params"])
            judged = row["passed"] + row["failed"] + row["errors"]
            c = cells[(json.dumps(p.get(xk)), json.dumps(p.get(yk)) if yk else "-")]
            c[0] += row["passed"]
            c[1] += judged
        title = f"{scenario} · {client}"
        left = max(60.0, text_width(f"{yk} ↓") if yk else 0.0, *(text_width(y) for y in ys)) + 8
        top = 40
        w = max(left + CELL * len(xs) + 20, text_width(title) + 10, left + text_width(f"{xk} →") + 10,
                left + CELL * (len(xs) - 1) + text_width(xs[-1]) + 10)
        h = top + CELL * len(ys) + 40
        svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-size="11">',
               f'<text x="4" y="14" font-weight="bold">{_esc(title)}</text>',
               f'<text x="{left}" y="30">{_esc(xk)} →</text>']
        if yk:
            svg.append(f'<text x="4" y="{top + 12}">{_esc(yk)} ↓</text>')
        for j, y in enumerate(ys):
            svg.append(f'<text x="4" y="{top + CELL * j + CELL // 2 + 16}">{_esc(y)}</text>')
            for i, x in enumerate(xs):
                passed, judged = cells.get((x, y), (0.0, 0.0))
                rate = passed / judged if judged else None
                label = "n/a" if rate is None else f"{rate:.0%}"
                svg.append(f'<rect x="{left + CELL * i}" y="{top + CELL * j + 4}" width="{CELL - 2}" height="{CELL - 2}" '
                           f'fill="{_colour(rate)}"><title>{_esc(xk)}={_esc(x)} {_esc(yk or "")}={_esc(y)}: '
                           f'{int(passed)}/{int(judged)} pass</title></rect>')
                svg.append(f'<text x="{left + CELL * i + 8}" y="{top + CELL * j + CELL // 2 + 8}">{label}</text>')
        for i, x in enumerate(xs):
            svg.append(f'<text x="{left + CELL * i + 2}" y="{top + CELL * len(ys) + 20}">{_esc(x)}</text>')
        svg.append("</svg>")
        out.append("".join(svg))
    return "\n".join(out) or "<p>No parameter varies: no heat map.</p>"


def symlog(v: float) -> float:
    """Signed log10(1 + |v|): 3 ms and 10,000 ms legible on one axis (an overshoot of a few
    milliseconds beside a record that failed ten seconds early)."""
    return math.copysign(math.log10(1 + abs(v)), v)


def _ticks(lo: float, hi: float, x, size: float = 10) -> list[float]:
    """0 and the powers of ten (either sign) within [lo, hi] whose labels do not collide."""
    candidates = sorted({0.0, *(s * 10.0 ** k for k in range(0, 7) for s in (-1, 1) if lo <= s * 10.0 ** k <= hi)})
    chosen: list[float] = []
    for v in sorted(candidates, key=abs):     # 0 first, then outwards: the small ones matter most
        half = text_width(f"{v:g}", size) / 2 + 3
        if all(abs(x(v) - x(c)) >= half + text_width(f"{c:g}", size) / 2 for c in chosen):
            chosen.append(v)
    return sorted(chosen)


def range_plot(rows: list[dict[str, Any]], labels: list[str], pct: str, count: str, axis: str,
               peak: str | None = None) -> str:
    """One row per label: a bar from p50 to p99 of ``rows[i][pct]``, a tick at p95, a dot at
    ``peak`` (when given), a dashed line at 0, on a signed-log axis with labelled ticks; the left
    margin fits the longest label."""
    lo = min(min(r[pct][0], 0.0) for r in rows)
    hi = max(max(r[peak] if peak else r[pct][2], 1.0) for r in rows)
    axis = f"{axis}; signed-log scale, {lo:.0f} … {hi:.0f}"
    width, row_h = 420, 18
    left = max(text_width(label, 10) for label in labels) + 10 + text_width(f"{lo:g}", 10) / 2
    span = symlog(hi) - symlog(lo) or 1.0
    x = lambda v: left + (symlog(v) - symlog(lo)) / span * width
    bottom = row_h * len(rows) + 10
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{max(left + width + 60, left + text_width(axis, 10))}" '
           f'height="{bottom + 44}" font-size="10">',
           f'<line x1="{x(0)}" y1="0" x2="{x(0)}" y2="{bottom}" stroke="#888" stroke-dasharray="3"/>',
           f'<text x="{left}" y="{bottom + 36}">{_esc(axis)}</text>']
    for v in _ticks(lo, hi, x):
        label = f"{v:g}"
        svg.append(f'<line x1="{x(v)}" y1="{bottom}" x2="{x(v)}" y2="{bottom + 4}" stroke="#000"/>'
                   f'<text x="{x(v) - text_width(label, 10) / 2 + 2}" y="{bottom + 16}">{label}</text>')
    for i, (r, label) in enumerate(zip(rows, labels)):
        y = 10 + row_h * i
        p50, p95, p99 = r[pct]
        most = f" max {r[peak]:.1f}" if peak else ""
        svg.append(f'<text x="2" y="{y + 4}">{_esc(label)}</text>')
        svg.append(f'<rect x="{min(x(p50), x(p99))}" y="{y - 5}" width="{max(1.5, abs(x(p99) - x(p50)))}" height="10" '
                   f'fill="#4a7ab5"><title>p50 {p50:.1f} p95 {p95:.1f} p99 {p99:.1f}{most} ms ({r[count]} runs)'
                   f'</title></rect>')
        svg.append(f'<line x1="{x(p95)}" y1="{y - 7}" x2="{x(p95)}" y2="{y + 7}" stroke="#000"/>')
        if peak:
            svg.append(f'<circle cx="{x(r[peak])}" cy="{y}" r="3" fill="#c33"/>')
    svg.append("</svg>")
    return "".join(svg)


def overshoot_plot(per_key: list[dict[str, Any]]) -> str:
    rows = [r for r in per_key if r.get("overshoot_n")]
    if not rows:
        return "<p>No run ended at an API deadline: no overshoot to plot.</p>"
    return range_plot(rows, [f'{r["scenario"]} · {r["client"]} · {r["params"]}' for r in rows], "overshoot_pct",
                      "overshoot_n", "overshoot ms (bar p50→p99, tick p95, dot max; dashed: the deadline)",
                      peak="overshoot_max")


def first_timeout_plot(rows: list[dict[str, Any]]) -> str:
    """Per client, one bar per timeout_ms / request.timeout.ms ratio: the share of runs where the
    client disconnected first and where the broker answered REQUEST_TIMED_OUT first."""
    if not rows:
        return "<p>No produce was parked in the purgatory: nothing to plot.</p>"
    by_client: dict[str, dict[float, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    for r in rows:
        by_client[r["client"]][r["ratio"]][r["side"]] += r["runs"]
    bar, gap, height, top = 34, 14, 150, 30
    legend = (("client", "#4a7ab5", "client disconnected first"), ("broker", "#e0a030", "broker answered REQUEST_TIMED_OUT first"))
    svg: list[str] = []
    x0 = 50.0
    for client in sorted(by_client):
        ratios = sorted(by_client[client])
        span = max(len(ratios) * (bar + gap), text_width(client) + gap)
        for i, ratio in enumerate(ratios):
            sides = by_client[client][ratio]
            total = sum(sides.values())
            x, y = x0 + (bar + gap) * i, float(top + height)
            for side, colour, _ in legend:
                h = height * sides.get(side, 0) / total
                y -= h
                svg.append(f'<rect x="{x}" y="{y}" width="{bar}" height="{h}" fill="{colour}">'
                           f'<title>{_esc(client)}, ratio {ratio:g}: {side} first in {sides.get(side, 0)}/{total} runs'
                           f'</title></rect>')
            svg.append(f'<text x="{x}" y="{top + height + 14}">{ratio:g}</text>')
        svg.append(f'<text x="{x0}" y="{top + height + 30}" font-weight="bold">{_esc(client)}</text>')
        x0 += span + 16
    axis = "timeout_ms the broker got / the client's own request timeout (librdkafka: socket.timeout.ms), per client"
    lx = x0 + 10
    width = lx + max(text_width(label) for _, _, label in legend) + 24
    head = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{max(width, 50 + text_width(axis))}" '
            f'height="{top + height + 60}" font-size="11">',
            f'<text x="4" y="{top + 4}">100%</text><text x="4" y="{top + height}">0%</text>']
    for i, (_, colour, label) in enumerate(legend):
        head.append(f'<rect x="{lx}" y="{top + 20 * i}" width="10" height="10" fill="{colour}"/>'
                    f'<text x="{lx + 14}" y="{top + 9 + 20 * i}">{_esc(label)}</text>')
    return "".join(head + svg + [f'<text x="50" y="{top + height + 50}">{_esc(axis)}</text></svg>'])


def disconnect_plot(per_key: list[dict[str, Any]]) -> str:
    """Per scenario × client × parameters: where the client's disconnect landed against the
    abandoned request's own timeout (min(deadline, the client's request timeout)), p50 to p99."""
    rows = sorted((r for r in per_key if r.get("disconnect_n")), key=lambda r: r["client"])
    if not rows:
        return "<p>No client abandoned a request: no disconnect to plot.</p>"
    return range_plot(rows, [f'{r["client"]} · {r["scenario"]} · {r["params"]}' for r in rows], "disconnect_error_pct",
                      "disconnect_n", "disconnect − the request's own timeout, ms (bar p50→p99, tick p95)")


SEED_COLOURS = {"fail": "#c33", "error": "#700", "n/a": "#bbb"}
SEED_LEGEND = (("#4a4", "clean"), ("#e0a030", "counted, not promised: across-epoch duplicates, reordering, failures, "
                                             "losses under acks=1"),
               ("#c33", "a promise broken: lost, misplaced, duplicated in epoch, consumer off"), ("#700", "error"),
               ("#bbb", "n/a"))


def chaos_strips(seeds: list[dict[str, Any]], per_row: int = 100, cell: int = 7) -> str:
    """Per client x parameters: one square per seed, coloured by what the accounting found."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for s in seeds:
        groups[(s["client"], s["params"])].append(s)
    out = []
    for (client, params), rows in groups.items():
        lines = (len(rows) + per_row - 1) // per_row
        height = 22 + cell * lines + 24
        title = f"{client} · {params}"
        legend_width = sum(24 + text_width(label) for _, label in SEED_LEGEND)
        width = max(per_row * cell, legend_width, text_width(title) * 1.1) + 10   # bold runs wider
        svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-size="11">',
               f'<text x="2" y="14" font-weight="bold">{_esc(title)}</text>']
        for i, s in enumerate(rows):
            colour = SEED_COLOURS.get(s["status"]) or ("#e0a030" if s["odd"] or s["bad"] else "#4a4")
            x, y = 2 + cell * (i % per_row), 20 + cell * (i // per_row)
            svg.append(f'<rect x="{x}" y="{y}" width="{cell - 1}" height="{cell - 1}" fill="{colour}">'
                       f'<title>seed {s["seed"]}: {_esc(s["status"])}, bad {s["bad"] or 0}, odd {s["odd"] or 0}</title></rect>')
        lx = 2.0
        for colour, label in SEED_LEGEND:
            svg.append(f'<rect x="{lx}" y="{height - 14}" width="9" height="9" fill="{colour}"/>'
                       f'<text x="{lx + 12}" y="{height - 6}">{_esc(label)}</text>')
            lx += 24 + text_width(label)
        svg.append("</svg>")
        out.append("".join(svg))
    return "\n".join(out)


def chaos_section(summary: dict[str, Any]) -> list[str]:
    chaos = summary.get("chaos", {})
    if not chaos.get("per_config"):
        return []
    counts = ["sent", "acked", "lost", "misplaced", "dup_in_epoch", "dup_across_epochs", "reordered",
              "failed_records", "failed_but_stored", "unresolved", "acked_without_offset", "consumer_missed",
              "consumer_wrong"]
    return [
        "<h2>Failover chaos (docs/chaos.md)</h2>",
        ("<p>Per client × parameters, summed over the seeds. Judged where the producers' settings promise it "
         "(a seed with any is <i>bad</i>): lost and misplaced under acks=all, dup_in_epoch with idempotence, "
         "consumer_missed / consumer_wrong always. Counted only: those under weaker settings (acks=1, no "
         "idempotence), duplicated across producer epochs, reordered, failed (told so), unresolved (no "
         "outcome).</p>"),
        _table(chaos["per_config"], ["client", "params", "seeds", "first_seed", "last_seed", "passed", "bad_seeds",
                                     "errors", "na", *counts, "simulated_s", "wall_s"]),
        chaos_strips(chaos.get("seeds", [])),
        "<h3>Chaos actions that fired</h3>", _table(chaos["actions"], ["client", "params", "action", "steps"]),
        "<h3>Broken guarantees</h3>",
        _table([v for v in summary["violations"] if v["scenario"] == CHAOS_SCENARIO], ["client", "contract", "runs"]),
        "<h3>Worst seeds</h3>",
        _table(chaos["worst_seeds"], ["seed", "client", "status", "bad", "odd", "sent", "acked", "lost", "misplaced",
                                      "dup_in_epoch", "dup_across_epochs", "reordered", "failed_records",
                                      "unresolved", "simulated_s", "message", "replay"]),
    ]


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    head = "".join(f"<th>{_esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_esc(_fmt(r.get(c)))}</td>" for c in columns) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    if isinstance(v, list):
        return " / ".join(_fmt(x) for x in v)
    return "" if v is None else str(v)


def to_html(summary: dict[str, Any]) -> str:
    t = summary["totals"]
    meta = summary.get("campaign", {})
    parts = [
        "<!doctype html><meta charset='utf-8'><title>broker-emu campaign</title>",
        ("<style>body{font-family:sans-serif;margin:20px} table{border-collapse:collapse;font-size:12px}"
        "td,th{border:1px solid #ccc;padding:2px 6px} svg{margin:6px 12px 6px 0}</style>"),
        f"<h1>Campaign {_esc(meta.get('name', ''))}</h1>",
        (f"<p>{t['runs']} runs: {t['passed']} pass, {t['failed']} fail, {t['errors']} error, {t['na']} n/a; "
        f"{t['events']} trace events; simulated {t['simulated_s'] or 0:.0f} s. "
        f"Wall: {meta.get('wall_s', 0):.1f} s ({meta.get('runs_per_minute', 0):.0f} runs/min) on {_esc(meta.get('master', ''))}.</p>"),
    ]
    # a chaos-only campaign has no scenario figures to draw
    if any(r["scenario"] != CHAOS_SCENARIO for r in summary["per_key"]):
        parts += scenario_sections(summary)
    return "\n".join(parts + chaos_section(summary))


def scenario_sections(summary: dict[str, Any]) -> list[str]:
    return [
        "<h2>Clients side by side</h2>",
        ("<p>Per scenario: runs passed of those judged (colour: green all, amber half or more, red fewer); "
         "<i>disc</i>: p50 of the disconnect against the request's own timeout; <i>over</i>: p50 of the "
         "call's return past its deadline (ms; real-time clients' scaled).</p>"),
        comparison_tables(summary["per_key"]),
        "<h2>Pass rate over the parameter grid</h2>", heat_maps(summary["per_key"]),
        "<h2>Overshoot of API return time over its deadline</h2>", overshoot_plot(summary["per_key"]),
        "<h2>Which side timed out first</h2>", first_timeout_plot(summary["first_timeout"]),
        "<h2>Where each client's disconnect landed</h2>", disconnect_plot(summary["per_key"]),
        "<h2>Per scenario × client × parameters</h2>",
        _table(summary["per_key"], ["scenario", "client", "client_version", "params", "runs", "pass_rate", "overshoot_pct", "overshoot_max",
                                    "disconnect_error_pct", "disconnect_error_absmax", "lost", "duplicated"]),
        "<h2>Attempts (requests of the scenario's API per run)</h2>",
        _table(summary["attempts"], ["scenario", "client", "params", "attempts", "runs"]),
        "<h2>Violations</h2>", _table(summary["violations"], ["scenario", "client", "contract", "runs"]),
        "<h2>Worst runs</h2>",
        _table(summary["worst_runs"], ["run_id", "scenario", "client", "params", "seed", "status", "overshoot_ms",
                                       "disconnect_error_ms", "message", "replay"]),
    ]


def write(out_dir: str, summary: dict[str, Any]) -> tuple[str, str]:
    import pathlib

    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    (out / "report.html").write_text(to_html(summary))
    return str(out / "summary.json"), str(out / "report.html")
