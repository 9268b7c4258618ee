"""`broker-emu conformance`: run the timeout scenarios against clients and report."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def add_commands(sub) -> None:
    c = sub.add_parser("conformance", help="run the timeout conformance suite against clients")
    c.add_argument("--client", action="append",
                   help="client name (ours, ours-blocking, confluent-kafka, kafka-python, ...), or a Python client at a release (kafka-python@2.2.21: installed into "
                        "client-versions/ in broker-emu's cache and run in a process of its own); repeatable; default: all installed")
    c.add_argument("--scenario", action="append", help="scenario id, id prefix or family (repeatable)")
    c.add_argument("--list", action="store_true", help="list scenario ids and titles")
    c.add_argument("--scale", type=float, default=30.0,
                   help="real-time clients run every timeout divided by this (default 30: 30 s -> 1 s)")
    c.add_argument("--bootstrap", metavar="HOST:PORT",
                   help="run the scenarios that need no fault injection against this Kafka instead of the emulator "
                        "(client-side contracts only); pair with --scale 1 for a real broker")
    c.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="override a scenario parameter (conformance/params.py: request.timeout.ms=10000, fault.ms=5000, "
                        "timeout.ms=3000...); repeatable. With --seed this replays one campaign run")
    c.add_argument("--seed", type=int, help="the emulator's seed (emu.seed: fault probabilities, ids)")
    c.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="run N clients' columns side by side, each in a process of its own (default 1: one run at a time)")
    c.add_argument("--broker", choices=("emulator", "kafka"), default="emulator",
                   help="kafka: run through the proxy in front of a real Apache Kafka started for the run "
                        "(conformance/on_kafka.py; needs bash dev/install-kafka)")
    c.add_argument("--kafka-brokers", type=int, choices=(1, 3), default=1, help="nodes of that Kafka cluster")
    c.add_argument("--diff", action="store_true",
                   help="the differential report: each scenario on the emulator and on Kafka, both through the "
                        "proxy, observations side by side (--json/--html write it)")
    c.add_argument("--diff-reruns", type=int, default=2, metavar="N",
                   help="with --diff: run each cell that shows a difference N more times on both sides; a difference "
                        "that does not reproduce in every run is reported flaky (default 2)")
    c.add_argument("--json", metavar="FILE")
    c.add_argument("--junit", metavar="FILE")
    c.add_argument("--html", metavar="FILE")
    c.set_defaults(func=run)
    add_explain(sub)
    from conformance.lab import add_lab

    add_lab(sub)
    from conformance.campaign.cli import add_campaign

    add_campaign(sub)


def add_explain(sub) -> None:
    e = sub.add_parser("explain", help="run a scenario with our client and draw its timeline")
    e.add_argument("scenario", nargs="?", help="scenario id (see --list)")
    e.add_argument("--list", action="store_true", help="list scenario ids")
    e.add_argument("--out", metavar="FILE.svg|FILE.html", help="also write the timeline as SVG (or HTML)")
    e.add_argument("--client", help="run with this client instead of our async face (real time, scaled; "
                                    "drawn on Kafka's full time axis)")
    e.add_argument("--compare", metavar="CLIENT|SCENARIO|KEY=VALUE,...",
                   help="draw a second run below the first on the same time axis: another client, another "
                        "scenario, or the same scenario with parameter overrides (e.g. request.timeout.ms=40000)")
    e.set_defaults(func=run_explain)


def run_explain(args: argparse.Namespace) -> int:
    from conformance.explain import explain, render_svg, render_text
    from conformance.runner import UnknownName, did_you_mean
    from conformance.scenarios import BY_ID, CATALOGUE

    if args.list or not args.scenario:
        for s in CATALOGUE:
            print(f"{s.id:<42} {s.title}")
        return 0
    scenario = BY_ID.get(args.scenario)
    if scenario is None:
        print(f"error: no scenario {args.scenario!r}{did_you_mean(args.scenario, BY_ID)} (broker-emu explain --list)",
              file=sys.stderr)
        return 2
    if args.client:
        from conformance.client_names import adapter_name

        args.client = adapter_name(args.client)
    try:
        result, spans, marks = explain(scenario, args.client)
    except UnknownName as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    title = f"{scenario.id} ({args.client or 'broker-emu (async)'}): {scenario.title}"
    panels = [(title, spans, marks)]
    if args.compare:
        other = _compare_panel(scenario, args.compare)
        if other is None:
            return 2
        panels.append(other)
    if len(panels) == 1:
        print(render_text(title, spans, marks))
    else:
        from conformance.explain import render_compare_text
        print(render_compare_text(panels))
    print(f"\n{scenario.teaching}\n\nverdict for {args.client or 'our client'}: {result.status.value.upper()}")
    for name, status, detail in result.contracts:
        print(f"  {status.value:<5} {name}: {detail}")
    if args.out:
        import html  # here: the `broker-emu` command loads it only to write an explanation's page

        from conformance.explain import render_compare_svg
        svg = render_svg(title, spans, marks) if len(panels) == 1 else render_compare_svg(panels)
        body = svg if args.out.endswith(".svg") else (
            f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title><body>{svg}"
            f"<p>{html.escape(scenario.teaching)}</p></body>")
        with open(args.out, "w") as f:
            f.write(body)
        print(f"wrote {args.out}")
    return 0


def _compare_panel(scenario, spec: str):
    """The second panel of --compare: a client name, a scenario id, or KEY=VALUE overrides."""
    from conformance.client_names import adapter_name
    from conformance.explain import explain
    from conformance.params import ParamError, apply_params, parse_param
    from conformance.runner import default_adapters
    from conformance.scenarios import BY_ID

    spec = adapter_name(spec) if "=" not in spec and spec not in BY_ID else spec
    try:
        if spec in BY_ID:
            other = BY_ID[spec]
            _, sp, mk = explain(other)
            return (f"{other.id} (broker-emu (async)): {other.title}", sp, mk)
        if "=" in spec:
            params = dict(parse_param(part) for part in spec.split(",") if part)
            variant = apply_params(scenario, params)
            _, sp, mk = explain(variant)
            return (f"{scenario.id} with {spec} (broker-emu (async))", sp, mk)
        if spec in {a.name for a in default_adapters()}:
            _, sp, mk = explain(scenario, spec)
            return (f"{scenario.id} ({spec}, real time x{30:.0f}, stretched to full scale)", sp, mk)
    except (ParamError, KeyError, ValueError) as exc:
        print(f"error: --compare {spec!r}: {exc}", file=sys.stderr)
        return None
    print(f"error: --compare {spec!r} is neither a client, a scenario id nor KEY=VALUE overrides", file=sys.stderr)
    return None


def run(args: argparse.Namespace) -> int:
    from conformance.model import Status
    from conformance.runner import Plan, run_plan
    from conformance.scenarios import CATALOGUE

    if args.list:
        _print_catalogue(CATALOGUE)
        return 0
    pinned = [c for c in args.client or () if "@" in c]
    if pinned:
        from conformance.campaign import client_versions

        try:
            if not os.environ.get(client_versions.PINNED_ENV):
                return client_versions.run_pinned(args.argv, pinned)
            args.client = client_versions.unpin(args.client)
        except client_versions.ClientVersionError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    try:
        adapters, scenarios = _chosen(args)
    except ValueError as exc:   # UnknownName, ParamError: usage errors, one line
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.broker == "kafka" or args.diff:
        from conformance.kafka_cli import run_kafka

        return run_kafka(args, scenarios, adapters, _progress)
    start = time.perf_counter()
    if args.jobs < 1:
        print(f"error: --jobs must be at least 1, got {args.jobs}", file=sys.stderr)
        return 2
    if args.jobs > 1 and len(scenarios) * len(adapters) > 1:
        from conformance.parallel_plan import Recipe, run_parallel
        from conformance.params import parse_param

        recipe = Recipe(tuple(s.id for s in scenarios), tuple(parse_param(p) for p in args.param or ()), args.seed,
                        args.scale, args.bootstrap)
        # the last report's wall times order the cells, longest first (the main job writes this one)
        report = Path(args.json) if args.json else Path("out/conformance.json")
        results = run_parallel(scenarios, adapters, recipe, args.jobs, report, _progress)
    else:
        results = run_plan(Plan(scenarios, adapters, args.scale, args.bootstrap), _progress)
    from conformance.summary import print_summary  # here: `broker-emu serve` loads none of the suite

    print_summary(results, time.perf_counter() - start, args)
    ours = [r for r in results if r.client.startswith("broker-emu")]
    broken = [r for r in results if r.status is Status.ERROR]
    failed_ours = [r for r in ours if r.status is Status.FAIL]
    # exit 0 only if every applicable contract holds for our client and the harness ran cleanly;
    # third-party failures are findings (docs/findings.md), not errors
    return 1 if broken or failed_ours else 0


def _chosen(args: argparse.Namespace):
    """The adapters and scenarios --client, --scenario, --param and --seed name; UnknownName or
    ParamError (ValueErrors) for a name that names nothing or a bad parameter."""
    from conformance.params import apply_params, parse_param
    from conformance.runner import default_adapters, select, unknown_client
    from conformance.scenarios import CATALOGUE

    adapters = default_adapters()
    if args.client:
        from conformance.client_names import adapter_name, cli_name

        known = {a.name: a for a in adapters}
        names = [adapter_name(name) for name in args.client]
        for name in names:
            if name not in known:
                raise unknown_client(name, [cli_name(k) for k in known])
        adapters = [known[c] for c in names]
    scenarios = select(CATALOGUE, args.scenario)
    if args.param or args.seed is not None:
        overrides = dict(parse_param(p) for p in args.param or ())
        scenarios = [apply_params(s, overrides, args.seed) for s in scenarios]
    return adapters, scenarios


def _print_catalogue(catalogue) -> None:
    from conformance.runner import external_ok

    for s in catalogue:
        where = " (also --bootstrap)" if external_ok(s) else ""
        print(f"{s.id:<42} [{s.family}] {s.title}{where}")


def _progress(done: int, total: int, result) -> None:
    bar = "#" * int(30 * done / total)
    print(f"\r[{bar:<30}] {done}/{total} {result.client}: {result.scenario} {result.status.value}".ljust(110),
          end="" if done < total else "\n", file=sys.stderr, flush=True)
