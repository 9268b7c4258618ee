"""`broker-emu kafka start`: run Apache Kafka itself (1 or 3 KRaft nodes on loopback) until
Ctrl-C or SIGTERM, then stop every node cleanly."""

from __future__ import annotations

import argparse
import signal
import sys
import threading


def add_commands(sub) -> None:
    k = sub.add_parser("kafka", help="run Apache Kafka itself as a reference broker (dev/install-kafka)")
    ksub = k.add_subparsers(dest="kafka_command", required=True)
    s = ksub.add_parser("start", help="start 1 or 3 KRaft nodes on loopback; runs until Ctrl-C/SIGTERM")
    s.add_argument("--brokers", type=int, choices=(1, 3), default=1, help="number of broker+controller nodes")
    s.add_argument("--config", action="append", metavar="KEY=VALUE",
                   help="a server.properties override for every node (repeatable)")
    s.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the cluster (default 90)")
    s.add_argument("--topic", action="append", metavar="NAME[:PARTITIONS]",
                   help="create this topic once ready (replication factor: the number of nodes)")
    s.set_defaults(func=run_start)


def run_start(args: argparse.Namespace) -> int:
    from conformance.realkafka.cluster import KafkaCluster, KafkaStartError
    from conformance.realkafka.config import parse_overrides
    from conformance.realkafka.install import KafkaNotInstalled

    try:
        topics = [parse_topic(spec) for spec in args.topic or []]
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        overrides = parse_overrides(args.config)
        cluster = KafkaCluster(args.brokers, overrides)
    except (KafkaNotInstalled, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    # SIGINT too, explicitly: a shell starts a background job with SIGINT ignored
    previous = {sig: signal.signal(sig, _interrupt_start) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            cluster.start(args.timeout)
        except KafkaStartError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130
        for sig in previous:
            signal.signal(sig, lambda *_: stop.set())
        for name, partitions in topics:
            cluster.create_topic(name, partitions)
        _print_ready(cluster, overrides)
        while not stop.wait(0.5):
            if not all(n.running() for n in cluster.nodes):
                print("error: a node exited; see its kafka.log", file=sys.stderr)
                return 1
        return 0
    finally:
        print("stopping...", flush=True)
        clean = cluster.stop()
        how = "cleanly" if clean else "(some nodes needed SIGKILL)"
        if cluster.stranded:
            how = (f"(node {cluster.stranded[0]} was killed: the others had gone before the quorum approved its "
                   "controlled shutdown)")
        print(f"stopped {how}; logs in {cluster.run_dir}", flush=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def parse_topic(spec: str) -> tuple[str, int]:
    """``NAME[:PARTITIONS]``, checked before any node starts; ValueError (one line) otherwise."""
    name, _, parts = spec.partition(":")
    if not name or not (parts or "1").isdigit() or int(parts or 1) < 1:
        raise ValueError(f"--topic wants NAME[:PARTITIONS] with PARTITIONS at least 1, got {spec!r}")
    return name, int(parts or 1)


def _interrupt_start(*_) -> None:
    """Ctrl-C or SIGTERM while the nodes start: KafkaCluster.start stops what it started."""
    raise KeyboardInterrupt


def _print_ready(cluster, overrides) -> None:
    from conformance.realkafka.config import differences_from_kafka
    from conformance.realkafka.install import kafka_version

    print(f"bootstrap={cluster.bootstrap}")
    print(f"Apache Kafka {kafka_version()}: {len(cluster.nodes)} node(s) ready in {cluster.startup_seconds:.1f} s "
          f"(storage formatted in {cluster.format_seconds:.1f} s); cluster.id={cluster.cluster_id}")
    for node in cluster.nodes:
        rss = node.rss_bytes()
        print(f"  node {node.node_id}: {node.bootstrap} pid {node.pid} "
              f"rss {rss / 2**20 if rss else 0:.0f} MiB, log {node.log_path}")
    print("Kafka's defaults, except (a small loopback cluster, or your --config): "
          + "; ".join(differences_from_kafka(len(cluster.nodes), overrides)))
    print("Ctrl-C or SIGTERM stops it", flush=True)
