"""The differential report: what the broker did, on the emulator and on Apache Kafka, side by side.

Both sides run the same scenario with the same client through the same proxy (the emulator
behind it for one, a real Kafka cluster for the other), so both are observed the same way: from
the proxy's trace (``broker_emu.trace_reading``), with purgatory stays derived from the answers
(``conformance.on_kafka.derive_purgatory``). Per scenario and client, the observations are:

- per API: how many requests the client sent and abandoned; over the exchanges that say something
  about the broker (answered, or owed on a connection the client kept; not swallowed by a wire
  fault or queued behind one): the answers' error codes (and whether one never came), when the first answer and the slowest answer went out relative to the
  request's own timeout (Produce: timeout_ms = request.timeout.ms; Fetch: fetch.max.wait.ms;
  JoinGroup: the rebalance timeout, max.poll.interval.ms), how many requests the client abandoned;
- connections the broker closed (and why);
- purgatory outcomes: Produce stays that expired (REQUEST_TIMED_OUT) or completed late, and after
  how long.

Each row says same or different under its tolerance: times within max(TIME_TOL_MS, 10 % of the
reference timeout), counts within max(2, half the larger), error codes and closes exactly.

A difference is one that reproduces. Real clients in real time race their own timers, and two
cores shared by a JVM, the emulator, the proxy and the client stall now and then: a verdict that
flips with a client's race, or an answer that came late once, is not the emulator's. So each cell
with a difference is run again on both sides (``settle``): a row stays "different" only if it
differs in every run; otherwise it is "flaky", with the count ("different in 1 of 3 runs").
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, replace
from typing import Any, Iterable

from broker_emu.trace import Kind, TraceEvent
from broker_emu.trace_reading import Exchange, closed_by, exchanges, purgatory_stays
from client.errors import ErrorCode
from conformance.model import Result, Status

TIME_TOL_MS = 100.0     # scheduling noise of a real-time run on shared cores (scaled ms)
TIME_TOL_FRACTION = 0.1
REFERENCE = {"Produce": "request.timeout.ms", "Fetch": "fetch.max.wait.ms", "JoinGroup": "max.poll.interval.ms"}
NOISE_APIS = {"ApiVersions"}   # the handshake: same on both by construction (the proxy caps it)


@dataclass(frozen=True)
class Obs:
    """One observation of one side: ``kind`` says how two of them compare."""

    value: Any
    kind: str                  # "exact" | "count" | "time"
    ref_ms: float | None = None   # for "time": the reference timeout the tolerance scales with
    text: str = ""             # how the report shows it

    def show(self) -> str:
        return self.text or str(self.value)


def _code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _ref_ms(api: str, config: dict[str, Any]) -> tuple[float | None, str]:
    key = REFERENCE.get(api, "request.timeout.ms")
    value = config.get(key)
    return (float(value), key) if isinstance(value, (int, float)) else (None, key)


def _time_obs(ms: float, ref: float | None, key: str) -> Obs:
    note = f" ({ms / ref:.2f} x {key})" if ref else ""
    return Obs(round(ms, 1), "time", ref, f"{ms:.0f} ms{note}")


SWALLOWING = ("black_hole", "partial_response", "close_after")


def _swallowed_conns(trace: list[TraceEvent]) -> dict[tuple[int | None, int | None], float]:
    """Connections on which the proxy swallowed a request (a wire fault of the scenario) or the
    client closed, and from when: nothing on them from then on is the broker's to answer."""
    out: dict[tuple[int | None, int | None], float] = {}
    for e in trace:
        action = (e.details or {}).get("action") if e.kind == Kind.FAULT_APPLIED else None
        kind = action.get("type") if isinstance(action, dict) else action
        if kind in SWALLOWING:
            out.setdefault((e.broker, e.conn), e.t_ms)
        elif e.kind == Kind.CONN_CLOSE and closed_by(e) == "client":
            # a request read after the client closed (it was in the buffer) is owed nothing
            out.setdefault((e.broker, e.conn), e.t_ms)
    return out


def _comparable(x: Exchange, swallowed: dict[tuple[int | None, int | None], float], end_ms: float) -> bool:
    """An exchange whose answer (or its absence) says something about the broker: answered, or
    never answered although the client kept the connection (open to the end, or closed by the
    broker), and not swallowed by a wire fault nor queued behind one. A request the client gave
    up on says when the client gave up, not what the broker would have answered: a Produce parked
    past the client's own timeout shows in the purgatory observations, every abandonment in the
    abandoned count (clients also close connections with a Metadata in flight as they shut down)."""
    if x.answer is not None:
        return True
    if x.close is not None and closed_by(x.close) == "client":
        return False
    if x.close is None and end_ms - x.request.t_ms <= TIME_TOL_MS:
        return False   # sent as the run ended (a client's periodic Metadata): nothing owed yet
    since = swallowed.get((x.request.broker, x.request.conn))
    return since is None or x.request.t_ms < since


def observe_api(trace: list[TraceEvent], api: str, config: dict[str, Any]) -> dict[str, Obs]:
    everything = exchanges(trace, api)
    swallowed = _swallowed_conns(trace)
    end_ms = max((e.t_ms for e in trace), default=0.0)
    xs = [x for x in everything if _comparable(x, swallowed, end_ms)]
    answered = [x for x in xs if x.answer is not None]
    out = {f"{api}: requests": Obs(len(everything), "count"),
           f"{api}: abandoned by the client": Obs(sum(x.abandoned for x in everything), "count")}
    if xs:
        codes = sorted({_code_name(c) for x in answered for c in (x.answer.details or {}).get("errors") or []}  # type: ignore[union-attr]
                       | ({"NONE"} if any(not (x.answer.details or {}).get("errors") for x in answered) else set())  # type: ignore[union-attr]
                       | ({"(unanswered)"} if len(answered) < len(xs) else set()))
        out[f"{api}: answers"] = Obs(codes, "exact", text=", ".join(codes))
    ref, key = _ref_ms(api, config)
    if answered:
        out[f"{api}: first answer after"] = _time_obs(answered[0].wait_ms or 0.0, ref, key)
        out[f"{api}: slowest answer after"] = _time_obs(max(x.wait_ms or 0.0 for x in answered), ref, key)
    return out


def observe(trace: list[TraceEvent], config: dict[str, Any]) -> dict[str, Obs]:
    """Every observation of one run (a proxied trace, purgatory stays derived)."""
    apis = sorted({e.api for e in trace if e.kind == Kind.RECV and e.api and e.api not in NOISE_APIS})
    out: dict[str, Obs] = {}
    for api in apis:
        out.update(observe_api(trace, api, config))
    closes = [e for e in trace if e.kind == Kind.CONN_CLOSE and closed_by(e) == "broker"]
    reasons = sorted({str((e.details or {}).get("reason", "?")) for e in closes})
    out["connections closed by the broker"] = Obs(bool(closes), "exact",
                                                  text=f"{len(closes)}: {'; '.join(reasons)}" if closes else "none")
    stays = purgatory_stays(trace, "Produce")
    expired = [s for s in stays if s.expired]
    out["Produce purgatory: expired (REQUEST_TIMED_OUT)"] = Obs(len(expired), "count")
    out["Produce purgatory: completed late"] = Obs(sum(1 for s in stays if s.end is not None and not s.expired), "count")
    if expired:
        ref = expired[0].timeout_ms
        out["Produce purgatory: expiry after"] = _time_obs(expired[0].duration_ms or 0.0, ref, "timeout_ms")
    return out


def same(a: Obs, b: Obs) -> tuple[bool, str]:
    """Whether two observations agree, and the tolerance used (in words)."""
    if a.kind == "time":
        tol = max(TIME_TOL_MS, TIME_TOL_FRACTION * (a.ref_ms or b.ref_ms or 0.0))
        return abs(float(a.value) - float(b.value)) <= tol, f"± {tol:.0f} ms"
    if a.kind == "count":
        tol = max(2, max(int(a.value), int(b.value)) // 2)
        return abs(int(a.value) - int(b.value)) <= tol, f"± {tol}"
    return a.value == b.value, "exact"


@dataclass
class Row:
    scenario: str
    client: str
    observation: str
    emulator: str
    kafka: str
    tolerance: str
    verdict: str            # "same" | "different" | "flaky" | "n/a"
    runs: str = ""          # after re-runs of its cell: "different in 3 of 3 runs"

    def to_dict(self) -> dict[str, str]:
        return dict(self.__dict__)


def _status_row(emu: Result, kafka: Result) -> Row:
    def show(r: Result) -> str:
        return r.status.value + (f" ({r.message})" if r.status is not Status.PASS and r.message else "")
    verdict = "same" if emu.status == kafka.status else "different"
    return Row(emu.scenario, emu.client, "verdict of the scenario's contracts", show(emu), show(kafka), "exact", verdict)


def compare(emu: Result, kafka: Result) -> list[Row]:
    """The rows of one scenario and client: the verdicts, then each observation of either side."""
    rows = [_status_row(emu, kafka)]
    if emu.evidence is None or kafka.evidence is None:
        if Status.NA in (emu.status, kafka.status):
            rows[0].verdict = "n/a"
        return rows
    a = observe(emu.evidence.trace, emu.evidence.config)
    b = observe(kafka.evidence.trace, kafka.evidence.config)
    for key in list(a) + [k for k in b if k not in a]:
        if key not in a or key not in b:
            present = a.get(key) or b.get(key)
            assert present is not None
            # no comparable exchange of that API on one side (counts are always there: an API
            # one side never sent differs in its request count)
            rows.append(Row(emu.scenario, emu.client, key, a[key].show() if key in a else "(not seen)",
                            b[key].show() if key in b else "(not seen)", "-", "n/a"))
            continue
        ok, tol = same(a[key], b[key])
        rows.append(Row(emu.scenario, emu.client, key, a[key].show(), b[key].show(), tol, "same" if ok else "different"))
    return rows


def differential(emulator: Iterable[Result], kafka: Iterable[Result]) -> list[Row]:
    by_key = {(r.scenario, r.client): r for r in kafka}
    rows: list[Row] = []
    for emu in emulator:
        other = by_key.get((emu.scenario, emu.client))
        if other is not None:
            rows += compare(emu, other)
    return rows


VERDICTS = ("same", "different", "flaky", "n/a")


def summary(rows: list[Row]) -> dict[str, int]:
    return {v: sum(r.verdict == v for r in rows) for v in VERDICTS}


def to_confirm(rows: list[Row]) -> list[tuple[str, str]]:
    """The cells (scenario, client) with a difference, in the rows' order: to be run again."""
    out: list[tuple[str, str]] = []
    for r in rows:
        if r.verdict == "different" and (r.scenario, r.client) not in out:
            out.append((r.scenario, r.client))
    return out


def settle(rows: list[Row], again: dict[tuple[str, str], list[tuple[Result, Result]]]) -> list[Row]:
    """Each different row compared again in every re-run of its cell (``again``: pairs of results,
    emulator and Kafka, both run anew): still different in every run, it stays "different";
    otherwise it is "flaky". Either way the row says in how many runs it differed."""
    out: list[Row] = []
    for r in rows:
        pairs = again.get((r.scenario, r.client))
        if r.verdict != "different" or not pairs:
            out.append(r)
            continue
        verdicts = [r.verdict] + [next((x.verdict for x in compare(e, k) if x.observation == r.observation), "n/a")
                                  for e, k in pairs]
        n = sum(v == "different" for v in verdicts)
        out.append(replace(r, verdict="different" if n == len(verdicts) else "flaky",
                           runs=f"different in {n} of {len(verdicts)} runs"))
    return out


def reproduce(scenario: str, client: str, kafka_brokers: int, scale: float = 30.0) -> str:
    """The command that runs this one cell of the differential again."""
    from conformance.client_names import cli_name

    scaled = "" if scale == 30.0 else f" --scale {scale:g}"
    client = cli_name(client)
    quoted = f'"{client}"' if " " in client else client
    return (f"broker-emu conformance --diff --broker kafka --kafka-brokers {kafka_brokers}{scaled} "
            f"--scenario {scenario} --client {quoted}")


@dataclass
class Cell:
    """One scenario and client: how many of its observations matched."""

    scenario: str
    client: str
    same: int
    different: int
    na: int
    reproduce: str
    flaky: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def cells(rows: list[Row], kafka_brokers: int, scale: float = 30.0) -> list[Cell]:
    """Per scenario and client, in the rows' order: observations same, different and n/a (a cell
    N/A on either side has its one n/a row)."""
    out: dict[tuple[str, str], Cell] = {}
    for r in rows:
        c = out.setdefault((r.scenario, r.client), Cell(r.scenario, r.client, 0, 0, 0,
                                                        reproduce(r.scenario, r.client, kafka_brokers, scale)))
        if r.verdict == "same":
            c.same += 1
        elif r.verdict == "different":
            c.different += 1
        elif r.verdict == "flaky":
            c.flaky += 1
        else:
            c.na += 1
    return list(out.values())


def by_client(table: list[Cell]) -> dict[str, dict[str, int]]:
    """Per client: cells judged on both sides (not N/A), cells with a difference, observations."""
    out: dict[str, dict[str, int]] = {}
    for c in table:
        t = out.setdefault(c.client, {"cells": 0, "cells with a difference": 0, "same": 0, "different": 0, "flaky": 0,
                                      "n/a": 0})
        t["cells"] += c.same + c.different + c.flaky > 0
        t["cells with a difference"] += c.different > 0
        t["same"] += c.same
        t["different"] += c.different
        t["flaky"] += c.flaky
        t["n/a"] += c.na
    return out


def to_json(rows: list[Row], table: list[Cell] | None = None, **meta: Any) -> str:
    return json.dumps({"meta": meta, "summary": summary(rows), "clients": by_client(table or []),
                       "cells": [c.to_dict() for c in table or []], "rows": [r.to_dict() for r in rows]}, indent=2)


COLOUR = {"same": "#e6f4ea", "different": "#fde7e9", "flaky": "#fff4d6", "n/a": "#eeeeee"}


def _html_table(head: tuple[str, ...], lines: list[tuple[tuple[Any, ...], str]]) -> str:
    top = "".join(f"<th>{h}</th>" for h in head)
    body = "".join(f"<tr style='background:{COLOUR.get(verdict, '#fff')}'>"
                   + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>" for cells, verdict in lines)
    return f"<table><tr>{top}</tr>{body}</table>"


def to_html(rows: list[Row], table: list[Cell] | None = None, title: str = "broker-emu: emulator vs Apache Kafka",
            **meta: Any) -> str:
    counts = ", ".join(f"{n} {v}" for v, n in summary(rows).items())
    info = "".join(f"<li>{html.escape(k)}: {html.escape(str(v))}</li>" for k, v in meta.items())
    per_cell = _html_table(("scenario", "client", "same", "different", "flaky", "n/a", "reproduce"),
                           [((c.scenario, c.client, c.same, c.different, c.flaky, c.na, c.reproduce),
                             "different" if c.different else "flaky" if c.flaky else "same" if c.same else "n/a")
                            for c in table or []])
    per_row = _html_table(("scenario", "client", "observation", "emulator", "Kafka", "tolerance", "", "runs"),
                          [((r.scenario, r.client, r.observation, r.emulator, r.kafka, r.tolerance, r.verdict, r.runs),
                            r.verdict) for r in rows])
    return (f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}"
            "table{border-collapse:collapse}</style>"
            f"<h1>{html.escape(title)}</h1><p>{counts}</p><ul>{info}</ul>"
            f"<p>Both sides through the same proxy; times in the run's scaled milliseconds.</p>"
            f"<h2>Per scenario and client</h2>{per_cell}<h2>Every observation</h2>{per_row}")

