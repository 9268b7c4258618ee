"""The ``broker-emu`` command: the emulator's commands (serve, fault: ``broker_emu.cli``) and the
conformance suite's (conformance, explain, campaign: ``conformance.cli``; chaos:
``conformance.chaos.cli``; kafka, Apache Kafka itself: ``conformance.realkafka.cli``), composed
here, in the layer above both, so the emulator never imports the suite. The same goes for the web
console's timeout playground: ``serve`` gets the suite's scenarios (``conformance.playground``)
from here."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from broker_emu import cli as emulator_cli
from conformance import cli as conformance_cli
from conformance.chaos import cli as chaos_cli
from conformance.realkafka import cli as realkafka_cli


def scenario_playground() -> Any:
    """The suite's playground, loaded when serve's control API starts: the scenarios and the
    timeline renderer behind it cost every `broker-emu` command a tenth of serve's start-up."""
    from conformance.playground import ScenarioPlayground

    return ScenarioPlayground()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="broker-emu", description="A Kafka broker emulator for testing and teaching timeouts.")
    emulator_cli.add_version(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    emulator_cli.add_commands(sub, playground=scenario_playground)   # serve's timeout playground (docs/console.md)
    conformance_cli.add_commands(sub)
    chaos_cli.add_chaos(sub)   # docs/chaos.md
    realkafka_cli.add_commands(sub)   # docs/real-kafka.md
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)   # a command that re-runs itself (pinned releases)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
