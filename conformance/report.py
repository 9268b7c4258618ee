"""Reports of a conformance run: terminal matrix, JSON, JUnit XML and HTML."""

from __future__ import annotations

import html
import json
from typing import Iterable
from xml.etree import ElementTree as ET

from conformance.model import Result, Status

SYMBOL = {Status.PASS: "PASS", Status.FAIL: "FAIL", Status.NA: "N/A", Status.ERROR: "ERROR"}


def _grid(results: Iterable[Result]) -> tuple[list[str], list[str], dict[tuple[str, str], Result]]:
    results = list(results)
    scenarios = list(dict.fromkeys(r.scenario for r in results))
    clients = list(dict.fromkeys(r.client for r in results))
    return scenarios, clients, {(r.scenario, r.client): r for r in results}


def key_figure(r: Result) -> str:
    """The most telling figure: a timing one ("returned at 2.00 s of 2.00 s") if there is one."""
    timed = next((r.figures[name] for name in r.timings if name in r.figures), None)
    return timed if timed is not None else next(iter(r.figures.values()), "")


def matrix(results: Iterable[Result], width: int = 42) -> str:
    """Scenario x client, each cell ``STATUS figure``."""
    scenarios, clients, cells = _grid(results)
    name_w = max([len("scenario")] + [len(s) for s in scenarios])
    lines = [f"{'scenario':<{name_w}}  " + "  ".join(f"{c:<{width}}" for c in clients)]
    for s in scenarios:
        row = []
        for c in clients:
            r = cells.get((s, c))
            text = "" if r is None else f"{SYMBOL[r.status]} {key_figure(r)}".strip()
            row.append(f"{text[:width]:<{width}}")
        lines.append(f"{s:<{name_w}}  " + "  ".join(row))
    return "\n".join(lines)


def to_json(results: Iterable[Result], **summary) -> str:
    return json.dumps({"results": [r.to_dict() for r in results], **summary}, indent=2)


def to_junit(results: Iterable[Result]) -> str:
    results = list(results)
    suite = ET.Element("testsuite", name="broker-emu conformance", tests=str(len(results)),
                       failures=str(sum(r.status is Status.FAIL for r in results)),
                       errors=str(sum(r.status is Status.ERROR for r in results)),
                       skipped=str(sum(r.status is Status.NA for r in results)))
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=r.client, name=r.scenario, time=f"{r.wall_s:.3f}")
        if r.status is Status.FAIL:
            ET.SubElement(case, "failure", message=r.message[:500]).text = _details(r)
        elif r.status is Status.ERROR:
            ET.SubElement(case, "error", message=r.message[:500]).text = _details(r)
        elif r.status is Status.NA:
            ET.SubElement(case, "skipped", message=r.message or "not applicable to this client")
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def _details(r: Result) -> str:
    lines = [f"{name}: {status.value} {detail}" for name, status, detail in r.contracts]
    lines += ["", "trace:"] + [e.to_json() for e in r.trace[:200]]
    return "\n".join(lines)


def to_html(results: Iterable[Result], title: str = "broker-emu conformance", timeline_links: dict | None = None) -> str:
    scenarios, clients, cells = _grid(results)
    links = timeline_links or {}
    head = "".join(f"<th>{html.escape(c)}</th>" for c in clients)
    rows = []
    for s in scenarios:
        tds = []
        for c in clients:
            r = cells.get((s, c))
            if r is None:
                tds.append("<td></td>")
                continue
            text = f"<b>{SYMBOL[r.status]}</b><br><small>{html.escape(key_figure(r))}</small>"
            link = links.get((s, c))
            if link:
                text = f'<a href="{html.escape(link)}">{text}</a>'
            detail = "".join(f"<li>{html.escape(n)}: {st.value} {html.escape(d)}</li>" for n, st, d in r.contracts)
            tds.append(f'<td class="{r.status.name.lower()}" title="{html.escape(r.message)}">{text}<details><summary>contracts</summary><ul>{detail}</ul></details></td>')
        rows.append(f"<tr><th>{html.escape(s)}</th>{''.join(tds)}</tr>")
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;vertical-align:top}}
.pass{{background:#e6f4ea}}.fail{{background:#fce8e6}}.na{{background:#f1f3f4}}.error{{background:#fef7e0}}</style></head>
<body><h1>{html.escape(title)}</h1><table><tr><th>scenario</th>{head}</tr>{''.join(rows)}</table></body></html>"""
