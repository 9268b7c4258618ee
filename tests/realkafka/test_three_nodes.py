"""Three Apache Kafka nodes: all registered, one paused with SIGSTOP and resumed, the cluster
still serving acks=all, and no JVM of ours left after a clean stop."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import client
from conformance.realkafka import wire

pytestmark = pytest.mark.realkafka


def _java_pids_under(run_dir: Path) -> list[int]:
    """JVMs whose command line names a file of this run (ours, not another test's Kafka)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        # the folder with its separator: run folders made in the same second are named
        # <stamp>, <stamp>-1, ... and another test's cluster may be running beside this one
        if "kafka.Kafka" in cmdline and f"{run_dir}{os.sep}" in cmdline:
            pids.append(int(entry.name))
    return pids


def test_three_nodes_pause_resume_and_clean_stop(kafka_factory):
    k = kafka_factory(brokers=3, config={"min.insync.replicas": 2})
    assert len(k.nodes) == 3 and len(k.bootstrap.split(",")) == 3
    for node in k.nodes:
        assert wire.broker_ids("127.0.0.1", node.ports.broker_port) == [1, 2, 3]
    k.create_topic("replicated", partitions=3)   # replication factor 3
    leader, followers, isr = k.partition_replicas("replicated", 0)
    assert isr == [1, 2, 3] and len(followers) == 2 and leader not in followers
    follower = followers[0]
    follower.pause()
    assert follower.state() == "T"
    assert wire.broker_ids("127.0.0.1", leader.ports.broker_port)  # the others still answer
    time.sleep(1)
    follower.resume()
    assert follower.state() in ("R", "S")
    with client.Producer({"bootstrap.servers": k.bootstrap, "acks": "all"}) as p:
        metas = [p.send("replicated", b"v%d" % i, partition=i % 3).result(60) for i in range(6)]
    assert sorted((m.partition, m.offset) for m in metas) == [(p, o) for p in range(3) for o in range(2)]

    pids = [n.pid for n in k.nodes]
    assert sorted(_java_pids_under(k.run_dir)) == sorted(pids)
    clean = k.stop()
    # Either every JVM exited by itself, or exactly one was stranded: its broker still waited for
    # the quorum's approval of its controlled shutdown when the other two had gone (Kafka's
    # BrokerServer waits 5 minutes for it; the harness kills such a node at once).
    assert clean or len(k.stranded) == 1, "\n\n".join(f"{n}:\n{n.log_tail(15)}" for n in k.nodes)
    assert _java_pids_under(k.run_dir) == []
    assert not any(os.path.exists(f"/proc/{pid}") for pid in pids)   # exited and reaped
    assert all((n.directory / "kafka.log").stat().st_size > 0 for n in k.nodes)
