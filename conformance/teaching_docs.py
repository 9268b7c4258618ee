"""Generate the teaching pages' figures from real runs: `python -m conformance.teaching_docs`.

Each page in docs/teaching/ holds blocks between ``<!-- timeline:SCENARIO -->`` and
``<!-- /timeline -->`` markers. This command re-runs each block's scenario with our client in
virtual time, writes its SVG to docs/teaching/figures/ and rewrites the block: the picture, then
the same timeline as text for terminals. Two options in the marker:

- ``vs CLIENT`` draws a second run below ours on the same time axis: the third-party CLIENT, run
  in real time with its timeouts divided by 30 and stretched back (a race whose other outcome no
  run of our client shows);
- ``by CLIENT`` draws the third-party CLIENT's real-time run alone, for a scenario our client does
  not drive; like ``vs``, it is regenerated and checked only with ``--real-time``;
- ``lanes=a,b`` keeps only those lanes (underscores for spaces), for runs with hundreds of requests.

``--check`` only compares (the test suite runs it): virtual-time figures must match byte for
byte. A real-time panel's instants differ from run to run, so ``--check --real-time`` re-runs it and
compares what it shows — every outcome, every timeout and who gave up first — with times masked.
"""

from __future__ import annotations

import functools
import pathlib
import re
import sys
from dataclasses import dataclass

from conformance.explain import LANES, Mark, Span, explain, render_svg, render_text

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs" / "teaching"
FIGURES = DOCS / "figures"
BLOCK = re.compile(r"(<!-- timeline:(?P<id>[\w.\-]+)(?: (?P<how>vs|by) (?P<vs>[\w.\-]+))?(?: lanes=(?P<lanes>[\w,]+))? -->\n)"
                   r"(?P<body>.*?)(?P<close><!-- /timeline -->)", re.S)
# a real-time panel's timeouts are divided by this; its drawing is stretched back by it
SCALE = 30.0
RULE = "\n\n" + "-" * 64 + "\n\n"   # between the panels of a figure's text


@dataclass
class Figure:
    """One block's figure: its panels (title, spans, marks), drawn on one time axis."""
    scenario_id: str
    vs: str | None
    lanes: tuple[str, ...] | None
    panels: list[tuple[str, list[Span], list[Mark]]]
    alone: bool = False   # ``by``: the third-party client's run is the only panel

    @property
    def name(self) -> str:
        return self.scenario_id + (f"-{'by' if self.alone else 'vs'}-{self.vs}" if self.vs else "") + (
            "-" + "-".join(lane.replace(" ", "_") for lane in self.lanes) if self.lanes else "")

    def end(self) -> float:
        return max(max([s.end for s in sp] + [m.t for m in mk] + [1.0]) for _, sp, mk in self.panels)

    def text(self) -> str:
        return RULE.join(render_text(t, sp, mk, end=self.end()) for t, sp, mk in self.panels)

    def svg(self) -> str:
        return stack_svg([render_svg(t, sp, mk, end=self.end()) for t, sp, mk in self.panels])


def stack_svg(svgs: list[str]) -> str:
    """Several SVG drawings one above the other in one SVG file (one picture to embed)."""
    if len(svgs) == 1:
        return svgs[0]
    heights = [int(re.search(r'height="(\d+)"', s).group(1)) for s in svgs]   # type: ignore[union-attr]
    widths = [int(re.search(r'width="(\d+)"', s).group(1)) for s in svgs]     # type: ignore[union-attr]
    parts, y = [], 0
    for s, h in zip(svgs, heights):
        parts.append(s.replace("<svg ", f'<svg y="{y}" ', 1))
        y += h + 10
    return f'<svg xmlns="http://www.w3.org/2000/svg" width="{max(widths)}" height="{y}">{"".join(parts)}</svg>'


def _only(spans: list[Span], marks: list[Mark], lanes: tuple[str, ...] | None) -> tuple[list[Span], list[Mark]]:
    if not lanes:
        return spans, marks
    return [s for s in spans if s.lane in lanes], [m for m in marks if m.lane in lanes]


def figure(scenario_id: str, vs: str | None = None, lanes: str | None = None, alone: bool = False) -> Figure:
    from conformance.scenarios import BY_ID

    scenario = BY_ID[scenario_id]
    keep = tuple(lane.replace("_", " ") for lane in lanes.split(",")) if lanes else None
    unknown = [lane for lane in keep or () if lane not in LANES]
    if unknown:
        raise ValueError(f"{scenario_id}: no lane {unknown[0]!r} (lanes: {', '.join(LANES)})")
    title = f"{scenario.id}: {scenario.title}"
    if vs and alone:
        _, spans, marks = explain(scenario, vs, scale=SCALE)
        used = scenario.scale_in(SCALE)
        return Figure(scenario_id, vs, keep, [(f"{title} ({vs}, real time, its timeouts divided by {used:.0f}, drawn "
                                               f"{used:.0f}x longer)", *_only(spans, marks, keep))], alone=True)
    _, spans, marks = explain(scenario)
    panels = [(title + (" (broker-emu's client, virtual time)" if vs else ""), *_only(spans, marks, keep))]
    if vs:
        _, spans, marks = explain(scenario, vs, scale=SCALE)
        used = scenario.scale_in(SCALE)
        panels.append((f"{scenario.id} with {vs} (real time, its timeouts divided by {used:.0f}, drawn {used:.0f}x "
                       "longer to share the axis)", *_only(spans, marks, keep)))
    return Figure(scenario_id, vs, keep, panels)


def block_body(fig: Figure) -> str:
    from conformance.scenarios import BY_ID

    alt = f"{fig.scenario_id}: {BY_ID[fig.scenario_id].title}" + (
        f", {fig.vs}" if fig.alone else f", broker-emu's client and {fig.vs}" if fig.vs else "")
    return (f"![{alt}](figures/{fig.name}.svg)\n\n"
            "<details><summary>the same timeline as text</summary>\n\n"
            f"```\n{fig.text()}\n```\n\n</details>\n")


# lanes and requests whose lines say what happened; a real-time run's other lines (how many
# Metadata requests, which connection closed when) vary from run to run
_ESSENTIAL = {"application", "purgatory", "controller", "transaction coordinator", "group coordinator", "who gave up first"}


def essentials(text: str) -> list[str]:
    """The lines of a timeline's text that must not change between runs, times masked."""
    out, lane = [], ""
    for line in text.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            lane = line[:-1]
            continue
        if not line.startswith("  |"):
            continue
        # every measured figure masked: the lane's instants (3 decimals) and the durations a label
        # gives (one decimal: "closed the connection after 19050.4 ms")
        label = re.sub(r"\d+\.\d+", "#", line.split("|", 2)[2]).strip()
        # a duration that happens to be whole is printed without its decimal ("after 19098 ms")
        label = re.sub(r"after \d+ ms", "after # ms", label)
        label = re.sub(r"^#(-\s*#)? s\s+", "", label)
        if lane in _ESSENTIAL or (lane == "client requests" and ("->" in label or "unanswered" in label)):
            out.append(f"{lane}: {label}")
    return out


def _panel_text(body: str, index: int) -> str:
    found = re.search(r"```\n(.*?)\n```", body, re.S)
    panels = found.group(1).split(RULE) if found else []
    return panels[index] if len(panels) > index else ""


def _fresh_block(m: re.Match, page: str, check: bool, real_time: bool, stale: list[str]) -> str:
    """One block as a fresh run draws it (its figure written unless ``check``); what is stale
    goes to ``stale``."""
    if m.group("vs") and not real_time:
        return m.group(0)
    fig = figure(m.group("id"), m.group("vs"), m.group("lanes"), alone=m.group("how") == "by")
    path = FIGURES / f"{fig.name}.svg"
    if m.group("vs"):
        panel = 0 if fig.alone else 1
        stored = _panel_text(m.group("body"), panel)
        if check and (not path.exists() or essentials(stored) != essentials(render_text(*fig.panels[panel], end=fig.end()))):
            stale.append(f"{page} ({fig.name})")
        if check:
            return m.group(0)
    elif check and (not path.exists() or path.read_text() != fig.svg()):
        stale.append(f"figures/{fig.name}.svg")
    if not check:
        FIGURES.mkdir(exist_ok=True)
        path.write_text(fig.svg())
    return m.group(1) + block_body(fig) + m.group("close")


def regenerate(check: bool = False, real_time: bool = False) -> list[str]:
    """Rewrite (or with ``check`` only compare) every page's blocks and figures; the names of the
    stale ones. Blocks with a real-time panel are left alone unless ``real_time``."""
    stale: list[str] = []
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text()
        new = BLOCK.sub(functools.partial(_fresh_block, page=page.name, check=check, real_time=real_time, stale=stale), text)
        if new != text:
            stale.append(page.name)
            if not check:
                page.write_text(new)
    return stale


def referenced_figures(page: pathlib.Path) -> list[pathlib.Path]:
    return [DOCS / rel for rel in re.findall(r"!\[[^\]]*\]\((figures/[\w.\-]+\.svg)\)", page.read_text())]


if __name__ == "__main__":
    check, real_time = "--check" in sys.argv, "--real-time" in sys.argv
    stale = regenerate(check, real_time)
    if check and stale:
        print(f"stale: {', '.join(stale)} (run python -m conformance.teaching_docs{' --real-time' * real_time})")
        sys.exit(1)
    print("updated: " + (", ".join(stale) or "nothing"))
