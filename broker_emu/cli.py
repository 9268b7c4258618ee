"""The ``broker-emu`` command line."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from dataclasses import dataclass
from typing import Any, Callable

from broker_emu.cli_faults import add_named_fault_commands, built_when_used, control_request
from broker_emu.version_profiles import PROFILES

TOPIC_SPEC = "--topic wants NAME[:PARTITIONS[:RF]]"


def parse_topic(text: str) -> tuple[str, int, int | None]:
    """``orders``, ``orders:3`` or ``orders:3:3``; ValueError (one line) for anything else."""
    parts = text.split(":")
    try:
        name = parts[0]
        partitions = int(parts[1]) if len(parts) > 1 else 1
        rf = int(parts[2]) if len(parts) > 2 else None
    except ValueError:
        raise ValueError(f"{TOPIC_SPEC}, got {text!r}") from None
    if not name or len(parts) > 3:
        raise ValueError(f"{TOPIC_SPEC}, got {text!r}")
    return name, partitions, rf


def check_topic(name: str, partitions: int, rf: int | None, brokers: int) -> None:
    """What the cluster would refuse when it creates the topic, said before it starts (one line)."""
    from broker_emu.topic_names import validate_topic_name
    from broker_emu.topics import MAX_PARTITIONS

    try:
        validate_topic_name(name)
    except ValueError as exc:
        raise ValueError(f"topic {name!r}: {exc}") from None
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise ValueError(f"topic {name}: partitions must be between 1 and {MAX_PARTITIONS}, got {partitions}")
    if rf is not None and rf < 1:
        raise ValueError(f"topic {name}: replication factor must be at least 1, got {rf}")
    if rf is not None and rf > brokers:
        raise ValueError(f"topic {name}: replication factor {rf} is more than the {brokers} broker(s) (--brokers)")


@dataclass
class ServePlan:
    """What `serve` will run, checked before anything starts: the command line and the scenario file."""

    brokers: int
    topics: list[Any]
    config: dict[str, Any]
    scenario: Any = None   # broker_emu.faults.scenario_file.ScenarioFile


def serve_config(args: argparse.Namespace) -> dict[str, Any]:
    config = dict(args.config or [])
    if args.listener:
        config.setdefault("emu.security.protocol", args.listener[0][0])
        if args.listener[1:]:
            config.setdefault("emu.extra.listeners", ",".join(f"{proto}:{port}" for proto, _, port in args.listener[1:]))
    if args.user:
        config.setdefault("emu.sasl.users", ",".join(args.user))
    if args.client_cert:
        config.setdefault("emu.tls.client.certs", ",".join(args.client_cert))
        config.setdefault("ssl.client.auth", "required")
    if args.kafka_version:
        config.setdefault("emu.kafka.version", args.kafka_version)
    if args.transaction_version is not None:
        config.setdefault("transaction.version", args.transaction_version)
    return config


def plan_serve(args: argparse.Namespace) -> ServePlan:
    """The cluster `serve` asked for; ValueError (one line) for what it would refuse, OSError if the
    scenario file cannot be read."""
    from broker_emu.config import broker_config
    from broker_emu.faults.scenario_file import MAX_BROKERS, load_scenario

    if args.brokers is not None and not 1 <= args.brokers <= MAX_BROKERS:
        raise ValueError(f"--brokers must be between 1 and {MAX_BROKERS}, got {args.brokers}")
    config = serve_config(args)
    scenario = None
    if args.scenario:
        with open(args.scenario) as f:
            scenario = load_scenario(f.read(), args.brokers or 3)
        config = {**scenario.config, **config}
        if scenario.seed:
            config.setdefault("emu.seed", scenario.seed)
    brokers = args.brokers or (scenario.brokers if scenario and scenario.brokers else 3)
    topics = [parse_topic(text) for text in args.topic or []]
    for name, partitions, rf in topics:
        check_topic(name, partitions, rf, brokers)
    broker_config(config)   # ConfigError: an unknown key (with the key meant) or a bad value
    return ServePlan(brokers, topics + (scenario.topics if scenario else []), config, scenario)


def parse_config(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"--config wants KEY=VALUE, got {text!r}")
    return key, value


def tune_allocator() -> None:
    """Keep large buffers on the heap instead of a fresh mmap per allocation: every request
    batch is ~1 MB, and glibc would otherwise map, page-fault and unmap each one (measured:
    +59% produce throughput at 10 KB messages, benchmarks/broker). glibc only; a no-op elsewhere."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name or not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(name)
        m_trim_threshold, m_mmap_threshold = -1, -3
        libc.mallopt(m_mmap_threshold, 256 * 1024 * 1024)
        libc.mallopt(m_trim_threshold, 512 * 1024 * 1024)
    except (OSError, AttributeError):
        pass


async def serve(args: argparse.Namespace, plan: ServePlan) -> None:
    import trio  # here, with the cluster: `broker-emu fault ...` and `--help` run without it

    from broker_emu.config import differences_from_kafka
    from broker_emu.faults.scenario_file import run_events
    from broker_emu.runtime import open_cluster

    scenario = plan.scenario
    # closed in the finally below; the trace is written synchronously as events happen anyway
    sink = open(args.trace, "w") if args.trace else None  # noqa: ASYNC230, SIM115
    try:
        async with open_cluster(plan.brokers, topics=plan.topics, config=plan.config, host=args.host, port=args.port, trace_sink=sink) as cluster:
            async with trio.open_nursery() as nursery:
                if scenario:
                    for rule in scenario.faults:
                        cluster.faults.add(rule, cluster.now_ms())
                    nursery.start_soon(run_events, cluster, scenario.events)
                print(f"bootstrap={cluster.bootstrap}", flush=True)
                differs = differences_from_kafka(cluster.config)
                if differs:   # on stderr: stdout's lines are for scripts to read
                    print("note: Kafka's defaults, except " + "; ".join(differs) + "; and the log is in memory "
                          "(emu.log.memory.bytes bounds it)", file=sys.stderr, flush=True)
                if cluster.security.protocol != "PLAINTEXT":
                    print(f"security.protocol={cluster.security.protocol}", flush=True)
                for protocol in cluster.security.extra_listeners:
                    print(f"bootstrap.{protocol}={cluster.bootstrap_for(protocol)}", flush=True)
                if cluster.security.tls is not None:
                    print(f"ca={cluster.security.tls.ca_path}", flush=True)
                    for name, (cert, key) in cluster.security.tls.client_paths.items():
                        print(f"client.cert.{name}={cert} client.key.{name}={key}", flush=True)
                if args.control_port is not None:
                    # imported only here: the control API's HTTP server, routes and client cost a
                    # cluster without one a twentieth of its start-up
                    from broker_emu.control.client import announce
                    from broker_emu.control.http import serve_http
                    from broker_emu.control.loopback import is_loopback
                    from broker_emu.control.routes import Routes

                    # the control API stays on loopback unless remote control was asked for
                    host = args.host if args.allow_remote_control or is_loopback(args.host) else "127.0.0.1"
                    # the playground's scenarios come from the command that composed this one (conformance.main)
                    playground = args.playground() if getattr(args, "playground", None) else None
                    port = await nursery.start(lambda task_status: serve_http(
                        Routes(cluster, playground=playground), host, args.control_port, token=args.token or None,
                        allow_remote=args.allow_remote_control, task_status=task_status))
                    announce(f"http://{host}:{port}")
                with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for _ in signals:
                        nursery.cancel_scope.cancel()
                        break
    finally:
        if sink:
            sink.close()


def parse_listener(text: str) -> tuple[str, str, int]:
    """``SASL_SSL://127.0.0.1:9092`` as Kafka's ``listeners`` writes one."""
    from broker_emu.security.settings import PROTOCOLS

    protocol, sep, rest = text.partition("://")
    host, colon, port = rest.rpartition(":")
    if not sep or protocol.upper() not in PROTOCOLS or not colon or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected PROTOCOL://HOST:PORT with PROTOCOL one of {', '.join(PROTOCOLS)}, "
                                         f"got {text!r}")
    return protocol.upper(), host.strip("[]") or "127.0.0.1", int(port)


def check_serve_exposure(args: argparse.Namespace) -> str | None:
    """What `serve` refuses to expose to the network without an explicit opt-in (one line)."""
    from broker_emu.control.loopback import is_loopback

    if args.allow_remote_control and not args.token:
        return "--allow-remote-control needs --token: without one, anyone who can reach the control API can stop brokers"
    if not is_loopback(args.host) and not args.allow_remote:
        return (f"--host {args.host} is not loopback: the Kafka listeners have no authentication; "
                "pass --allow-remote to expose them anyway")
    return None


def _fault_request(args: argparse.Namespace) -> tuple[str, str, Any]:
    """The control API request a ``fault`` action makes: method, path, body."""
    if args.fault_cmd == "add":
        return "POST", "/faults", json.loads(args.rule)
    if args.fault_cmd == "list":
        return "GET", "/faults", None
    if args.fault_cmd == "clear":
        return "DELETE", f"/faults/{args.id}" if args.id else "/faults", None
    if args.fault_cmd == "broker":
        return "POST", f"/brokers/{args.broker}/{args.verb}", None
    if args.fault_cmd == "leader":
        return "POST", f"/partitions/{args.topic}/{args.partition}/leader", {"broker": args.broker}
    return "POST", "/replication", {"topic": args.topic, "partition": args.partition, "follower": args.follower,
                                    "mode": args.mode, "lag_ms": args.lag_ms}


def fault_command(args: argparse.Namespace) -> int:
    from broker_emu.control.client import ControlError

    try:
        method, path, body = _fault_request(args)
        out, status = control_request(args, method, path, body)
    except json.JSONDecodeError as exc:
        print(f"error: the rule is not JSON: {exc}", file=sys.stderr)
        return 2
    except ControlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if status is not None:
        return status
    print(json.dumps(out, indent=1))
    return 0


def package_version() -> str:
    """The installed package's version; in a source tree that is not installed, pyproject.toml's."""
    import importlib.metadata
    import tomllib
    from pathlib import Path

    try:
        return importlib.metadata.version("broker-emu")
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        with open(Path(__file__).resolve().parent.parent / "pyproject.toml", "rb") as f:
            return str(tomllib.load(f)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


class PrintVersion(argparse.Action):
    """``--version``, which reads the version only when asked: ``importlib.metadata`` (and the e-mail
    parser behind it) or ``tomllib`` cost every other command about a tenth of serve's start-up."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str = "show program's version number and exit") -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        print(f"{parser.prog} {package_version()}")
        parser.exit()


def add_version(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", action=PrintVersion)


def build_parser() -> argparse.ArgumentParser:
    """The emulator's own commands (serve, proxy, fault). The ``broker-emu`` command composes them with
    the conformance suite's in ``conformance.main``, the layer above both."""
    parser = argparse.ArgumentParser(prog="broker-emu", description="A Kafka broker emulator for testing and teaching timeouts.")
    add_version(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    add_commands(sub)
    return parser


class OldSpelling(argparse.Action):
    """An option's former name: still works, with a one-line note naming the new one."""

    def __init__(self, *args: Any, new: str, **kwargs: Any) -> None:
        self.new = new
        super().__init__(*args, **kwargs)

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        print(f"note: {option_string} is spelled {self.new} now (the old spelling still works)", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_commands(sub: Any, playground: Callable[[], Any] | None = None) -> None:
    """The emulator's commands on ``sub``. ``playground`` makes the control API's timeout
    playground provider (broker_emu.control.playground); the ``broker-emu`` command passes the
    conformance suite's, the emulator alone has none."""
    s = sub.add_parser("serve", help="run an emulated cluster on loopback")
    s.set_defaults(func=serve_command, playground=playground)
    s.add_argument("--brokers", type=int, default=None, help="number of brokers (default 3)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=0, help="first broker port; 0 picks free ports")
    s.add_argument("--topic", action="append", metavar="NAME:PARTITIONS:RF")
    s.add_argument("--config", action="append", type=parse_config, metavar="KEY=VALUE", help="broker config (Kafka's names)")
    s.add_argument("--control-port", type=int, default=None, help="serve the HTTP control API (0 picks a port)")
    s.add_argument("--token", default=None, help="require this bearer token on the control API")
    s.add_argument("--allow-remote", action="store_true",
                   help="let --host be non-loopback: anyone who can reach it can use the Kafka listeners (no auth)")
    s.add_argument("--allow-remote-control", action="store_true",
                   help="bind the control API to --host even if it is not loopback (needs --token)")
    s.add_argument("--listener", type=parse_listener, metavar="PROTOCOL://HOST:PORT", action="append",
                   help="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; the first sets --host and the first --port, each "
                        "further one (another protocol, same host) adds a listener to every broker; repeatable")
    s.add_argument("--user", action="append", metavar="NAME:PASSWORD",
                   help="a SASL user (PLAIN, and SCRAM-SHA-256/512 credentials); repeatable")
    s.add_argument("--client-cert", action="append", metavar="NAME",
                   help="mutual TLS: issue a client certificate for NAME (principal User:CN=NAME,OU=client,O=broker-emu) "
                        "and require one (ssl.client.auth=required unless --config says otherwise); repeatable")
    s.add_argument("--kafka-version", choices=PROFILES, default=None,
                   help="advertise the API versions that release's broker did (docs/version-profiles.md)")
    s.add_argument("--transaction-version", type=int, choices=(0, 1, 2), default=None,
                   help="the finalized transaction.version feature: 2 (Kafka 4.x's default: an epoch bump per "
                        "transaction, KIP-890) or 1; the same as --config transaction.version=N")
    s.add_argument("--faults", dest="scenario", metavar="FILE.yaml",
                   help="a scenario file: faults and timed events (docs/control.md); the proxy's --faults too")
    # the old spelling: `--scenario` names a scenario id in `conformance` and `explain`
    s.add_argument("--scenario", dest="scenario", action=OldSpelling, new="--faults", help=argparse.SUPPRESS)
    s.add_argument("--trace", help="write the trace as JSONL to this file")

    add_proxy_command(sub)

    add_fault_command(sub)


def add_control_options(parser: argparse.ArgumentParser, default: Any) -> None:
    """--control and --token, on ``fault`` and on each of its actions (so either place works; an
    action's own copy defaults to SUPPRESS and so never hides one given before the action)."""
    parser.add_argument("--control", default=default, metavar="URL",
                        help="control API URL, as serve prints it (default: $BROKER_EMU_CONTROL, else "
                             "http://127.0.0.1:9080)")
    parser.add_argument("--token", default=default, help="the bearer token serve was started with")


def add_fault_command(sub: Any) -> None:
    f = sub.add_parser("fault", help="drive a running cluster's control API")
    f.set_defaults(func=fault_command)
    add_control_options(f, None)
    # its actions (six, and one per named fault) are added when `fault` itself is parsed: their
    # parsers cost every other command, serve's start-up among them, a few milliseconds
    built_when_used(f, add_fault_actions)


def add_fault_actions(f: argparse.ArgumentParser) -> None:
    fs = f.add_subparsers(dest="fault_cmd", required=True)
    add = fs.add_parser("add", help="add a fault rule (JSON)")
    add.add_argument("rule", help='e.g. \'{"match": {"api": "Produce"}, "action": {"type": "black_hole"}}\'')
    listing = fs.add_parser("list", help="list fault rules")
    clear = fs.add_parser("clear", help="remove one rule (--id) or all")
    clear.add_argument("--id", type=int)
    br = fs.add_parser("broker", help="stop or start a broker")
    br.add_argument("verb", choices=["stop", "start"])
    br.add_argument("broker", type=int)
    ld = fs.add_parser("leader", help="move a partition leader")
    ld.add_argument("topic")
    ld.add_argument("partition", type=int)
    ld.add_argument("broker", type=int)
    rp = fs.add_parser("replication", help="stall, lag or restore replication")
    rp.add_argument("mode", choices=["stall", "lag", "normal"])
    rp.add_argument("--topic")
    rp.add_argument("--partition", type=int)
    rp.add_argument("--follower", type=int)
    rp.add_argument("--lag-ms", type=float, default=0)
    add_named_fault_commands(f, fs)   # latency, jitter, ... (broker_emu/cli_faults.py)
    for action in (add, listing, clear, br, ld, rp):
        add_control_options(action, argparse.SUPPRESS)


def add_proxy_command(sub: Any) -> None:
    p = sub.add_parser("proxy", help="the fault engine, control API and trace in front of a Kafka cluster (docs/proxy.md)")
    p.set_defaults(func=proxy_command)
    p.add_argument("--upstream", required=True, metavar="HOST:PORT[,HOST:PORT]", help="the cluster's bootstrap servers")
    p.add_argument("--control-port", type=int, default=None, help="serve the HTTP control API on loopback (0 picks a port)")
    p.add_argument("--token", default=None, help="require this bearer token on the control API")
    p.add_argument("--faults", help="YAML scenario file: its seed, faults and stop_broker/start_broker events")
    p.add_argument("--trace", help="write the trace as JSONL to this file")


def proxy_command(args: argparse.Namespace) -> int:
    from broker_emu.proxy.main import proxy_command as run_proxy

    return run_proxy(args)


def serve_command(args: argparse.Namespace) -> int:
    if args.listener:
        _, args.host, listener_port = args.listener[0]
        args.port = args.port or listener_port
        if any(host != args.host for _, host, _ in args.listener):
            print("error: every --listener must be on the same host", file=sys.stderr)
            return 2
    refusal = check_serve_exposure(args)
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    try:
        plan = plan_serve(args)
    except (ValueError, OSError) as exc:   # the command line or the scenario file: usage errors
        print(f"error: {exc}", file=sys.stderr)
        return 2
    tune_allocator()
    from broker_emu.runtime import run_until_stopped

    return run_until_stopped(serve, args, plan)


def main(argv: list[str] | None = None) -> int:
    """``python -m broker_emu.cli serve|fault``: the emulator alone (the full command is
    ``broker-emu``, conformance.main)."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
