"""The report's per-client comparison: per scenario, one row per parameter set and one column per
client, so the same question reads across every client at once. A pinned release
(``confluent-kafka@2.12.0``) is a column of its own beside the installed one, and a row where
releases of one client disagree on the verdict is marked: a regression between releases shows as
two cells of different colour side by side.

Each cell: the runs passed out of those judged (its colour: the pass rate), then the p50 of where
the client's disconnect landed against the request's own timeout and the p50 overshoot of the API
call past its deadline, when the runs had them (ms; real-time clients' in scaled ms).
"""

from __future__ import annotations

import json
from collections import defaultdict
from html import escape
from typing import Any

from conformance.campaign.client_versions import split

PASS_COLOURS = ((1.0, "#cfeccf"), (0.5, "#f3e3b5"), (0.0, "#f2c4c4"))
NA_COLOUR = "#eeeeee"


def _colour(rate: float | None) -> str:
    if rate is None:
        return NA_COLOUR
    return next(colour for floor, colour in PASS_COLOURS if rate >= floor)


def _params_label(params: str) -> str:
    values = json.loads(params)
    return ", ".join(f"{k}={v}" for k, v in sorted(values.items())) or "(defaults)"


def _column_label(client: str, rows: list[dict[str, Any]]) -> str:
    versions = sorted({r["client_version"] for r in rows if r["client"] == client and r.get("client_version")})
    name, pinned = split(client)
    version = pinned or (versions[0] if len(versions) == 1 else "")
    return f"{name} {version}".strip()


def _cell(row: dict[str, Any] | None) -> tuple[str, float | None]:
    """The cell's text and pass rate (None: nothing judged)."""
    if row is None:
        return "", None
    judged = row["passed"] + row["failed"] + row["errors"]
    if not judged:
        return "n/a", None
    text = [f"{row['passed']}/{judged}"]
    if row.get("disconnect_n"):
        text.append(f"disc {row['disconnect_error_pct'][0]:+.0f}")
    if row.get("overshoot_n"):
        text.append(f"over {row['overshoot_pct'][0]:+.0f}")
    return " · ".join(text), row["passed"] / judged


def releases_disagree(cells: dict[str, float | None]) -> list[str]:
    """Clients (by name) of which two releases got different pass rates in one row."""
    by_name: dict[str, set[float]] = defaultdict(set)
    for client, rate in cells.items():
        if rate is not None:
            by_name[split(client)[0]].add(rate)
    releases: dict[str, int] = defaultdict(int)
    for client in cells:
        releases[split(client)[0]] += 1
    return sorted(name for name, rates in by_name.items() if releases[name] > 1 and len(rates) > 1)


def comparison_tables(per_key: list[dict[str, Any]]) -> str:
    by_scenario: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in per_key:
        by_scenario[row["scenario"]].append(row)
    out = []
    for scenario, rows in sorted(by_scenario.items()):
        clients = sorted({r["client"] for r in rows}, key=lambda c: (split(c)[0], split(c)[1] or "~"))
        found = {(r["params"], r["client"]): r for r in rows}
        head = "".join(f"<th>{escape(_column_label(c, rows))}</th>" for c in clients)
        body = []
        for params in sorted({r["params"] for r in rows}):
            cells = {c: _cell(found.get((params, c))) for c in clients}
            differ = releases_disagree({c: rate for c, (_, rate) in cells.items()})
            mark = (f' <b class="differs">≠ releases of {escape(", ".join(differ))}</b>' if differ else "")
            tds = "".join(f'<td style="background:{_colour(rate)}">{escape(text)}</td>'
                          for text, rate in cells.values())
            body.append(f"<tr><td>{escape(_params_label(params))}{mark}</td>{tds}</tr>")
        out.append(f"<h3>{escape(scenario)}</h3><table class=\"compare\"><tr><th>parameters</th>{head}</tr>"
                   f"{''.join(body)}</table>")
    return "\n".join(out) or "<p>No scenario runs: nothing to compare.</p>"
