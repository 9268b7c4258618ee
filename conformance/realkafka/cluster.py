"""A KRaft cluster of 1 or 3 combined broker+controller nodes on free loopback ports.

    with apache_kafka_cluster(brokers=3, config={"min.insync.replicas": 2}) as k:
        k.bootstrap            # "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
        k.nodes[1].pause()     # SIGSTOP one JVM ... k.nodes[1].resume()

Logs stay in ``out/kafka/<run>/node-<id>/`` (kafka.log, format.log, server.properties)."""

from __future__ import annotations

import base64
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path

from conformance.cache_dir import cache_dir, source_checkout
from conformance.realkafka import wire
from conformance.realkafka.config import HOST, NodePorts, log4j2_properties, server_properties
from conformance.realkafka.install import check_installed, java_binary
from conformance.realkafka.node import KafkaNode, wait_all


class KafkaStartError(RuntimeError):
    """A node exited or the cluster was not ready in time; the message has the log's tail."""


def free_ports(count: int) -> list[int]:
    """Ports the kernel hands out on 127.0.0.1, all bound at once so they differ."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def new_cluster_id() -> str:
    """A random cluster id as KRaft writes them: a UUID in URL-safe base64 without padding,
    never starting with "-" (Kafka's Uuid.randomUuid draws again then: such an id reads as an
    option on a command line, and StorageTool's --cluster-id refused one, 1 start in 64)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def new_run_dir(base: Path | None = None) -> Path:
    """A fresh folder for one cluster's data and logs: under out/kafka in a source checkout, else
    under kafka-runs in the cache (never inside an installed package)."""
    checkout = source_checkout()
    base = base or (checkout / "out" / "kafka" if checkout is not None else cache_dir("kafka-runs"))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        path = base / (f"{stamp}-{n}" if n else stamp)
        try:
            path.mkdir(parents=True)
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"no free run folder under {base}")


class KafkaCluster:
    """Nodes numbered 1..n (``nodes[i]`` is node id i+1). ``start()`` formats and starts them and
    waits until every node answers Metadata listing all n brokers; ``stop()`` shuts them down."""

    def __init__(self, brokers: int = 1, config: Mapping[str, object] | None = None,
                 run_dir: Path | None = None, version: str | None = None, client_protocol: str = "",
                 features: Mapping[str, int] | None = None) -> None:
        if brokers < 1:
            raise ValueError("brokers must be at least 1")
        self.lib = check_installed(version)
        self.java = java_binary()
        self.config = dict(config or {})
        self.run_dir = run_dir or new_run_dir()
        self.cluster_id = new_cluster_id()
        self.client_protocol = client_protocol   # an extra CLIENT listener (config.server_properties)
        self.features = dict(features or {})      # feature levels the storage is formatted with (transaction.version=1)
        self.ports = self._pick_ports(brokers)
        self.nodes = [KafkaNode(p, self.run_dir / f"node-{p.node_id}", self.java, self.lib) for p in self.ports]
        self.format_seconds: float | None = None
        self.startup_seconds: float | None = None
        self.stopped_cleanly: bool | None = None
        self.stranded: list[int] = []   # nodes left without a quorum to approve their shutdown (stop())

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    def node(self, node_id: int) -> KafkaNode:
        return self.nodes[node_id - 1]

    def _write_files(self) -> None:
        for node in self.nodes:
            node.directory.mkdir(parents=True, exist_ok=True)
            (node.directory / "server.properties").write_text(
                server_properties(node.ports, self.ports, str(node.data_dir), self.config, self.client_protocol))
            (node.directory / "log4j2.properties").write_text(log4j2_properties())

    def _format(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        procs = []
        for node in self.nodes:
            with open(node.directory / "format.log", "wb") as log:
                procs.append(subprocess.Popen(node.format_command(self.cluster_id, self.features), stdin=subprocess.DEVNULL,
                                              stdout=log, stderr=subprocess.STDOUT, cwd=node.directory))
        wait_all(procs, deadline)
        for node, proc in zip(self.nodes, procs):
            if proc.returncode != 0:
                tail = (node.directory / "format.log").read_text(errors="replace")[-3000:]
                raise KafkaStartError(f"formatting node {node.node_id} failed ({proc.returncode}):\n{tail}")

    def start(self, timeout: float = 90.0, attempts: int = 3) -> KafkaCluster:
        """Format, start, wait until ready. A port that another process took between our pick
        and the JVM's bind ("Address already in use") means new ports and another attempt."""
        t0 = time.monotonic()
        for attempt in range(1, attempts + 1):
            try:
                self._start_once(t0, t0 + timeout)
                break
            except KafkaStartError:
                if attempt == attempts or not self._bind_failed():
                    raise
                for node in self.nodes:   # keep the failed attempt's logs beside the next one's
                    with suppress(OSError):
                        node.log_path.rename(node.directory / f"kafka.attempt-{attempt}.log")
                self._new_ports()
        self.startup_seconds = time.monotonic() - t0
        (self.run_dir / "cluster.txt").write_text(
            f"bootstrap={self.bootstrap}\ncluster.id={self.cluster_id}\nstartup_s={self.startup_seconds:.2f}\n")
        return self

    def _start_once(self, t0: float, deadline: float) -> None:
        self._write_files()
        self._format(deadline - time.monotonic())
        self.format_seconds = time.monotonic() - t0
        try:
            for node in self.nodes:
                node.start()
            self.wait_ready(deadline)
        except BaseException:
            self.stop(timeout=10)
            raise

    def _bind_failed(self) -> bool:
        for node in self.nodes:
            with suppress(OSError):
                if "Address already in use" in node.log_path.read_text(errors="replace"):
                    return True
        return False

    def _pick_ports(self, brokers: int) -> list[NodePorts]:
        ports = free_ports(3 * brokers)
        return [NodePorts(i + 1, ports[3 * i], ports[3 * i + 1], ports[3 * i + 2] if self.client_protocol else 0)
                for i in range(brokers)]

    @property
    def client_bootstrap(self) -> str:
        """The CLIENT listener's addresses (``client_protocol``)."""
        return ",".join(f"{HOST}:{p.client_port}" for p in self.ports)

    def _new_ports(self) -> None:
        self.ports = self._pick_ports(len(self.nodes))
        for node, node_ports in zip(self.nodes, self.ports):
            node.ports = node_ports

    def wait_ready(self, deadline: float) -> None:
        """Until every node answers Metadata listing all n brokers (each registered and
        unfenced); raises ``KafkaStartError`` when a node exits or the deadline passes."""
        want = [n.node_id for n in self.nodes]
        pending = list(self.nodes)
        last_error = ""
        while pending:
            node = pending[0]
            if not node.running():
                errors = "\n".join(node.log_errors()) or "(no ERROR line)"
                raise KafkaStartError(f"node {node.node_id} exited ({node.proc and node.proc.returncode}): "
                                      f"{errors}\n{node.log_path}, its tail:\n{node.log_tail(10)}")
            try:
                got = wire.broker_ids(HOST, node.ports.broker_port, timeout=2.0)
                if got == want:
                    pending.pop(0)
                    continue
                last_error = f"lists brokers {got}, want {want}"
            except (OSError, ValueError, RuntimeError) as exc:
                last_error = f"{type(exc).__name__}: {exc}"
            if time.monotonic() > deadline:
                raise KafkaStartError(f"node {node.node_id} not ready in time ({last_error}); "
                                      f"{node.log_path}:\n{node.log_tail()}")
            time.sleep(0.1)

    def stop(self, timeout: float = 30.0, keep_data: bool = False) -> bool:
        """SIGTERM every node (resuming paused ones), wait up to ``timeout`` s in all, SIGKILL
        what is left. Returns True when every JVM exited by itself. Logs are kept.

        All at once is the quickest clean stop of a 3-node quorum (~5.5 s): a voter's graceful
        Raft shutdown ends at once while it knows a remote leader, so the followers are quick
        and only the leader waits out Kafka's 5 s graceful-shutdown bound for a quorum that
        is gone. Stopping the leader first is slower (~8 s): a survivor becomes leader and
        waits the same 5 s.

        One node can be *stranded*: Kafka's BrokerServer.shutdown waits up to 5 minutes for the
        controller quorum to approve its controlled shutdown, and if the other nodes have
        already exited (a JVM slow to start its shutdown, e.g. on a loaded machine) no quorum is
        left to approve it (measured: the last of three nodes stopped one by one never exits by
        itself). Such a node is killed at once rather than waited for, and named in
        ``self.stranded`` (``stopped_cleanly`` stays False: it did not exit by itself)."""
        for node in self.nodes:
            node.terminate()
        deadline = time.monotonic() + timeout
        self.stranded = []
        while time.monotonic() < deadline:
            alive = [n for n in self.nodes if n.running()]
            if not alive:
                break
            if len(alive) == 1 and len(self.nodes) > 1 and _awaits_shutdown_approval(alive[0]):
                if not alive[0].wait_stopped(2.0):   # 2 s: in case the approval was just being logged
                    self.stranded = [alive[0].node_id]
                break
            time.sleep(0.05)
        clean = all([node.wait_stopped(deadline - time.monotonic()) for node in self.nodes]) and not self.stranded
        self.stopped_cleanly = clean
        if not keep_data:
            import shutil

            for node in self.nodes:
                shutil.rmtree(node.data_dir, ignore_errors=True)
        return clean

    def quorum_leader(self) -> KafkaNode | None:
        """The KRaft quorum's leader as the nodes last wrote it (``quorum-state`` in each
        node's metadata log folder), or None when no node has one."""
        import json

        for node in self.nodes:
            with suppress(OSError, ValueError):
                state = json.loads((node.data_dir / "__cluster_metadata-0" / "quorum-state").read_text())
                leader_id = int(state.get("leaderId", -1))
                if 1 <= leader_id <= len(self.nodes):
                    return self.node(leader_id)
        return None

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None) -> None:
        """Create ``name`` (replication factor defaults to the cluster's size, at most 3) and
        wait until every node's metadata shows a leader for each partition."""
        rf = replication_factor or min(3, len(self.nodes))
        first = next(n for n in self.nodes if n.running() and not n.paused)
        wire.create_topic(HOST, first.ports.broker_port, name, partitions, rf, configs)
        self.wait_topic(name, partitions)

    def wait_topic(self, name: str, partitions: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        for node in [n for n in self.nodes if n.running() and not n.paused]:
            while True:
                with suppress(OSError, ValueError):
                    meta = wire.metadata(HOST, node.ports.broker_port, [name], timeout=2.0)
                    parts = [p for t in meta.topics if t.error_code == 0 for p in t.partitions]
                    if len(parts) == partitions and all(p.leader_id >= 0 for p in parts):
                        break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"topic {name} has no leaders on node {node.node_id} after {timeout} s")
                time.sleep(0.1)

    def partition_replicas(self, topic: str, partition: int = 0) -> tuple[KafkaNode, list[KafkaNode], list[int]]:
        """(leader, followers, isr ids) of one partition, as a running, unpaused node's metadata
        shows it: the nodes to stall (``followers[0].pause()``) or to watch."""
        asker = next(n for n in self.nodes if n.running() and not n.paused)
        meta = wire.metadata(HOST, asker.ports.broker_port, [topic])
        for t in meta.topics:
            for p in t.partitions:
                if p.partition_index == partition and p.leader_id >= 0:
                    followers = [self.node(r) for r in p.replica_nodes if r != p.leader_id]
                    return self.node(p.leader_id), followers, sorted(p.isr_nodes)
        raise LookupError(f"{topic}-{partition} has no leader in node {asker.node_id}'s metadata")

    def rss(self) -> dict[int, int | None]:
        return {n.node_id: n.rss_bytes() for n in self.nodes}

    def __repr__(self) -> str:
        return f"KafkaCluster(bootstrap={self.bootstrap!r}, run_dir={str(self.run_dir)!r}, nodes={self.nodes})"


@contextmanager
def apache_kafka_cluster(brokers: int = 1, config: Mapping[str, object] | None = None, timeout: float = 90.0,
                  run_dir: Path | None = None, stop_timeout: float = 30.0,
                  client_protocol: str = "", features: Mapping[str, int] | None = None) -> Iterator[KafkaCluster]:
    """Start a cluster, yield it, and stop every node on the way out, whatever happened.
    ``features``: levels to format with (``{"transaction.version": 1}``: StorageTool's --feature)."""
    cluster = KafkaCluster(brokers, config, run_dir, client_protocol=client_protocol, features=features)
    cluster.start(timeout)
    try:
        yield cluster
    finally:
        cluster.stop(stop_timeout)


def _awaits_shutdown_approval(node: KafkaNode) -> bool:
    """The node's broker began a controlled shutdown and the controller has not approved it
    (BrokerLifecycleManager's log lines)."""
    try:
        text = node.log_path.read_text(errors="replace")
    except OSError:
        return False
    begun = text.rfind("Beginning controlled shutdown")
    return begun >= 0 and text.find("asked us to exit controlled shutdown", begun) < 0
