"""``broker-emu proxy``: run the proxy until SIGINT/SIGTERM (the argument parsing is in
broker_emu.cli)."""

from __future__ import annotations

import argparse
import signal
import sys

import trio

from broker_emu.faults.rules import FaultConfigError
from broker_emu.faults.scenario_file import MAX_BROKERS, ScenarioFile, load_scenario, run_events
from broker_emu.proxy.proxy import Proxy, open_proxy

PROXY_EVENTS = ("stop_broker", "start_broker")


def load_faults_file(text: str) -> ScenarioFile:
    """A scenario file as the proxy reads it: ``seed``, ``faults`` and ``stop_broker`` /
    ``start_broker`` events. Topics, config and a broker count describe an emulated cluster;
    the proxy says it ignores them. Broker ids are checked once the upstream's are known."""
    scenario = load_scenario(text, MAX_BROKERS)
    for i, event in enumerate(scenario.events):
        if event.verb not in PROXY_EVENTS:
            raise FaultConfigError(f"events[{i}].{event.verb}", "a proxy cannot do this to its upstream cluster "
                                   f"(it can: {', '.join(PROXY_EVENTS)})")
    ignored = [name for name, value in (("topics", scenario.topics), ("config", scenario.config),
                                         ("brokers", scenario.brokers)) if value]
    if ignored:
        print(f"broker-emu proxy: ignoring {', '.join(ignored)} in the faults file (the upstream cluster has its own)",
              file=sys.stderr)
    return scenario


def add_faults(proxy: Proxy, scenario: ScenarioFile) -> None:
    for i, raw in enumerate(scenario.faults):
        try:
            proxy.faults.add(raw, proxy.now_ms())
        except FaultConfigError as exc:
            raise FaultConfigError(f"faults[{i}].{exc.field}", str(exc).split(": ", 1)[-1]) from None
    ids = proxy.broker_ids()
    for i, event in enumerate(scenario.events):
        if event.args["broker"] not in ids:
            raise FaultConfigError(f"events[{i}].{event.verb}", f"no broker {event.args['broker']} (brokers: {sorted(ids)})")


async def run(args: argparse.Namespace) -> None:
    from broker_emu.control.client import announce
    from broker_emu.control.http import serve_http
    from broker_emu.control.routes import Routes

    scenario = load_faults_file(await trio.Path(args.faults).read_text()) if args.faults else ScenarioFile()
    # closed in the finally below; the trace is written synchronously as events happen anyway
    sink = open(args.trace, "w") if args.trace else None  # noqa: ASYNC230, SIM115
    try:
        async with open_proxy(args.upstream, seed=scenario.seed, trace_sink=sink) as proxy:
            add_faults(proxy, scenario)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_events, proxy, scenario.events)
                print(f"bootstrap={proxy.bootstrap}", flush=True)
                for b in proxy.brokers.values():
                    print(f"broker {b.id}: 127.0.0.1:{b.port} -> {b.upstream[0]}:{b.upstream[1]}", flush=True)
                if args.control_port is not None:
                    port = await nursery.start(lambda task_status: serve_http(
                        Routes(proxy), "127.0.0.1", args.control_port, token=args.token or None, task_status=task_status))
                    announce(f"http://127.0.0.1:{port}")
                with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for _ in signals:
                        nursery.cancel_scope.cancel()
                        break
    finally:
        if sink:
            sink.close()


def proxy_command(args: argparse.Namespace) -> int:
    """Exit 2 for what the command line or the faults file got wrong (FaultConfigError, --upstream's
    format), 1 when the upstream does not answer or a port cannot be bound (UpstreamError, OSError)."""
    from broker_emu.runtime import run_until_stopped

    return run_until_stopped(run, args)
