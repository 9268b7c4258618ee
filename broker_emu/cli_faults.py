"""``broker-emu fault latency|jitter|bandwidth|timeout|reset|slow-close|error|black-hole|late``: the
named faults (``broker_emu.faults.named``) on a running cluster's control API, as sub-commands of
``broker-emu fault``. Each builds its rule here, checks it as the server will, and posts it
(``POST /faults``); a usage error is one line on stderr with a suggestion, and exit status 2.
``broker-emu fault wait KIND ...`` is the control API's ``GET /wait/...`` for shell scripts."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any, Callable, NoReturn

from broker_emu.faults.named import CONNECTION_SELECTORS, NAMED, rule
from broker_emu.faults.rules import FaultConfigError, parse_rule, suggest

ARGUMENT_TYPES: dict[str, Any] = {"ms": float, "jitter_ms": float, "bytes_per_s": int, "error": str, "mode": str,
                                  "until": str, "api": str, "broker": int, "topic": str, "partition": int, "client_id": str,
                                  "transactional_id": str,
                                  "probability": float, "count": int, "after": int, "duration_ms": float}
HELP = {"ms": "milliseconds", "jitter_ms": "± this many ms, drawn from the rule's seeded RNG",
        "bytes_per_s": "bytes per second", "mode": "silent (never answered) or no-brokers",
        "until": "what releases the held request: next_init_producer_id, next_add_partitions, next_end_txn, "
                 "next_txn_produce, next_txn_start or delay", "transactional_id": "only requests naming this transactional id", "error": "a Kafka error name (NOT_LEADER_OR_FOLLOWER) or code",
        "api": "only this API (Produce, Fetch, ...)", "broker": "only this broker id", "topic": "only requests for this topic",
        "partition": "only this partition (with --topic)", "client_id": "only this client id",
        "probability": "fire with this probability (seeded: reproducible)", "count": "fire at most this many times",
        "after": "skip the first N matching requests", "duration_ms": "active for this long"}
SELECTORS = ("api", "broker", "topic", "partition", "client_id", "transactional_id", "probability", "count", "after",
             "duration_ms")


def one_line_errors(parser: argparse.ArgumentParser, prog: str) -> None:
    """Make ``parser`` report a usage error in one line with a suggestion, exit status 2."""
    def error(message: str) -> NoReturn:
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            choices = re.findall(r"'([^']*)'", choice.group(2))
            message = f"unknown command {choice.group(1)!r}{suggest(choice.group(1), choices)}; known: {', '.join(choices)}"
        print(f"{prog}: error: {message}", file=sys.stderr)
        sys.exit(2)
    parser.error = error  # type: ignore[method-assign]


def strict(parser: argparse.ArgumentParser, known: list[str]) -> None:
    """Refuse unknown arguments in the sub-command itself, with a suggestion, rather than leave
    them to the top-level parser's generic message."""
    parse_known_args = parser.parse_known_args

    def parse(args: Any = None, namespace: Any = None) -> Any:
        ns, extras = parse_known_args(args, namespace)
        if extras:
            word = extras[0].split("=", 1)[0]
            parser.error(f"unknown argument {word}{suggest(word, known)}")
        return ns, extras
    parser.parse_known_args = parse  # type: ignore[method-assign]


def built_when_used(parser: argparse.ArgumentParser, build: Callable[[argparse.ArgumentParser], None]) -> None:
    """Call ``build(parser)`` once, just before ``parser`` first parses arguments or formats its
    usage or help (argparse hands a sub-command's arguments to its ``parse_known_args``)."""
    names = ("parse_known_args", "format_usage", "format_help")

    def first(name: str) -> Callable[..., Any]:
        def method(*args: Any, **kwargs: Any) -> Any:
            for each in names:
                delattr(parser, each)   # the class's own methods again
            build(parser)
            return getattr(parser, name)(*args, **kwargs)
        return method

    for name in names:
        setattr(parser, name, first(name))


def add_named_fault_commands(fault: argparse.ArgumentParser, commands: Any) -> None:
    """Add one sub-command per named fault to ``broker-emu fault`` (``commands``: its sub-parsers)."""
    one_line_errors(fault, "broker-emu fault")
    for name, spec in NAMED.items():
        p = commands.add_parser(name, help=spec.summary, description=spec.summary)
        p.set_defaults(func=named_fault_command, named=name)
        selectors = CONNECTION_SELECTORS[:1] + ("probability", "count", "after", "duration_ms") if spec.connection_level \
            else tuple(s for s in SELECTORS if s not in dict(spec.fixed))
        for arg in spec.params + selectors:
            p.add_argument("--" + arg.replace("_", "-"), dest=arg, type=ARGUMENT_TYPES[arg],
                           required=arg in spec.required, help=HELP[arg])
        p.add_argument("--name", help="a name for the rule (default: the fault's)")
        # also accepted after the sub-command (SUPPRESS: absent here, the value given to `fault` stands)
        p.add_argument("--control", default=argparse.SUPPRESS, help="control API URL (printed by serve)")
        p.add_argument("--token", default=argparse.SUPPRESS)
        one_line_errors(p, f"broker-emu fault {name}")
        strict(p, ["--" + a.replace("_", "-") for a in spec.params + selectors] + ["--name", "--control", "--token"])
    add_wait_command(commands)


def control_request(args: argparse.Namespace, method: str, path: str, body: Any = None,
                    timeout: float = 10.0) -> tuple[Any, int | None]:
    """``(answer, None)`` from the control API named by ``--control`` (before or after the action),
    else $BROKER_EMU_CONTROL, else the default; or ``(None, exit status)`` after one line on stderr
    when it cannot be reached (1) or the URL is none (2). The API's own refusal (ControlError)
    goes to the caller: each command words it its own way."""
    import os

    from broker_emu.control.client import CONTROL_ENV, call, control_url

    given = bool(getattr(args, "control", None) or os.environ.get(CONTROL_ENV))
    args.control = control_url(getattr(args, "control", None))
    try:
        return call(args.control, method, path, body, token=args.token, timeout=timeout), None
    except OSError as exc:
        where = "" if given else " (the default: pass --control URL or set BROKER_EMU_CONTROL, as serve prints)"
        print(f"error: cannot reach the control API at {args.control}{where}: {exc}", file=sys.stderr)
        return None, 1
    except ValueError as exc:   # urllib: not a URL
        print(f"error: --control {args.control!r}: {exc}", file=sys.stderr)
        return None, 2


def named_fault_command(args: argparse.Namespace) -> int:
    from broker_emu.control.client import ControlError

    spec = NAMED[args.named]
    keys = spec.params + SELECTORS + ("name",)
    try:
        raw = rule(args.named, **{k: getattr(args, k) for k in keys if getattr(args, k, None) is not None})
        parse_rule(raw, 0)   # the server's own check, here first: a usage error exits 2
    except FaultConfigError as exc:
        print(f"broker-emu fault {args.named}: error: {exc}", file=sys.stderr)
        return 2
    try:
        out, status = control_request(args, "POST", "/faults", raw)
    except ControlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if exc.status == 400 else 1
    if status is not None:
        return status
    print(json.dumps(out, indent=1))
    return 0


WAIT_PATHS = {   # kind -> (positional arguments, options, path template)
    "group": (("group",), ("state", "members"), "/wait/group/{group}"),
    "partition": (("topic", "partition"), ("high_watermark", "log_end_offset", "isr_size", "leader"),
                  "/wait/partition/{topic}/{partition}"),
    "fault": (("id",), ("hits",), "/wait/fault/{id}"),
    "transaction": (("transactional_id",), ("state",), "/wait/transaction/{transactional_id}"),
    "connections": ((), ("count", "broker"), "/wait/connections"),
    "trace": ((), ("kind", "count", "since_ms", "api", "client_id"), "/wait/trace"),
}
WAIT_TYPES = {"partition": int, "id": int, "members": int, "high_watermark": int, "log_end_offset": int, "isr_size": int,
              "leader": int, "hits": int, "count": int, "broker": int, "since_ms": float}


def add_wait_command(commands: Any) -> None:
    """``broker-emu fault wait KIND ...``: ``GET /wait/...`` from a shell script; exit status 0
    when the condition held, 1 when the time ran out (the message says what was last seen)."""
    w = commands.add_parser("wait", help="wait until the cluster reaches a state (GET /wait/...)")
    one_line_errors(w, "broker-emu fault wait")
    kinds = w.add_subparsers(dest="wait_kind", required=True)
    for kind, (positional, options, _) in WAIT_PATHS.items():
        k = kinds.add_parser(kind, help=f"wait on {kind}")
        k.set_defaults(func=wait_command)
        for arg in positional:
            k.add_argument(arg, type=WAIT_TYPES.get(arg, str))
        for arg in options:
            k.add_argument("--" + arg.replace("_", "-"), dest=arg, type=WAIT_TYPES.get(arg, str))
        k.add_argument("--timeout-ms", type=float, default=10_000, help="at most 60000 (default 10000)")
        k.add_argument("--control", default=argparse.SUPPRESS, help="control API URL (printed by serve)")
        k.add_argument("--token", default=argparse.SUPPRESS)
        one_line_errors(k, f"broker-emu fault wait {kind}")
        strict(k, ["--" + a.replace("_", "-") for a in options] + ["--timeout-ms", "--control", "--token"])


def wait_command(args: argparse.Namespace) -> int:
    from urllib.parse import quote, urlencode

    from broker_emu.control.client import ControlError

    positional, options, template = WAIT_PATHS[args.wait_kind]
    path = template.format(**{arg: quote(str(getattr(args, arg)), safe="") for arg in positional})
    query = {arg: getattr(args, arg) for arg in options if getattr(args, arg) is not None} | {"timeout_ms": args.timeout_ms}
    try:
        out, status = control_request(args, "GET", f"{path}?{urlencode(query)}", timeout=args.timeout_ms / 1000 + 10)
    except ControlError as exc:
        message = exc.body.get("error") if isinstance(exc.body, dict) else exc.body
        print(f"broker-emu fault wait {args.wait_kind}: {message}", file=sys.stderr)
        return 2 if exc.status == 400 else 1
    if status is not None:
        return status
    print(json.dumps(out, indent=1))
    return 0
