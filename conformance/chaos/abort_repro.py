"""confluent-kafka's committed write lost after an abort (docs/chaos.md, "What it found", 5),
without chaos, on the emulator or on Apache Kafka 4.4, through the proxy both times:

    python -m conformance.chaos.abort_repro [--broker emulator|kafka] [--debug eos,msg]

A transactional producer commits A; in the next transaction B's Produce is handled and its
answer lost (the proxy's ``close_after`` on the node's next Produce); the application aborts
before librdkafka retries (the reconnect and retry back-offs are 2 s); the third transaction sends
C to the same partition and commits. librdkafka purged B as never sent and reuses its sequence
for C without an epoch bump, so the broker answers C as B's retry (B's offset, nothing appended):
C is acknowledged at an offset that holds the aborted B, and a read_committed reader never
returns it. Exit status 1 when C is lost so, 0 when C is stored at its offset.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from typing import Iterator

from conformance.chaos.kafka_readback import committed_on_kafka

TOPIC = "abort-repro"
BACKOFF_MS = 2000         # librdkafka retries B only after the application aborted
FAILED_S = 0.5            # how long the application waits for B's answer before it aborts
PRODUCER = {"transactional.id": "abort-repro", "linger.ms": 0, "socket.timeout.ms": 6000,
            "reconnect.backoff.ms": BACKOFF_MS, "reconnect.backoff.max.ms": BACKOFF_MS,
            "retry.backoff.ms": BACKOFF_MS, "retry.backoff.max.ms": BACKOFF_MS}


@contextlib.contextmanager
def upstream(broker: str) -> Iterator[tuple[str, dict[int, int]]]:
    """(bootstrap, node id -> broker port) of a one-node cluster with the topic (1 partition)."""
    if broker == "kafka":
        from conformance.realkafka.cluster import apache_kafka_cluster
        from conformance.realkafka.config import HARNESS

        with apache_kafka_cluster(brokers=1, config=HARNESS, timeout=240) as kafka:
            kafka.create_topic(TOPIC, 1, 1)
            yield kafka.bootstrap, {n.node_id: n.ports.broker_port for n in kafka.nodes}
        return
    from broker_emu.runtime import run_cluster_in_thread

    with run_cluster_in_thread(brokers=1, topics=[(TOPIC, 1, 1)]) as tc:
        cluster = tc.cluster
        assert cluster is not None   # started
        yield tc.bootstrap, tc.call(lambda: {b.id: b.port for b in cluster.brokers.values()})


def run(broker: str, debug: str = "") -> dict:
    """The three transactions; what the producer was told, what the log holds, what a
    read_committed reader returned."""
    from confluent_kafka import Producer

    from broker_emu.proxy.proxy import run_proxy_in_thread

    with upstream(broker) as (bootstrap, ports), run_proxy_in_thread(bootstrap, seed=0) as tp:
        told: dict[bytes, tuple[str | None, int | None]] = {}

        def delivered(err, msg) -> None:
            told[msg.value()] = (err.name() if err else None, msg.offset())
        p = Producer({**PRODUCER, "bootstrap.servers": tp.bootstrap, **({"debug": debug} if debug else {})})
        p.init_transactions(30)
        _transaction(p, b"A", delivered)
        node, proxy = next(iter(ports)), tp.cluster
        assert proxy is not None   # started
        tp.call(lambda: proxy.faults.add({"match": {"broker": node, "api": "Produce"}, "action": "close_after",
                                          "times": 1}, proxy.now_ms()))
        p.begin_transaction()
        p.produce(TOPIC, b"B", partition=0, on_delivery=delivered)
        end = time.monotonic() + FAILED_S
        while time.monotonic() < end:
            p.poll(0.05)
        p.abort_transaction(30)
        _transaction(p, b"C", delivered)
        log, _ = committed_on_kafka(ports, TOPIC, 1)
        read = _read_committed(bootstrap)
    return {"told": told, "log": {o: s.value for (_, o), s in sorted(log.items())}, "read_committed": read}


def _transaction(p, value: bytes, delivered) -> None:
    p.begin_transaction()
    p.produce(TOPIC, value, partition=0, on_delivery=delivered)
    p.flush(30)
    p.commit_transaction(30)


def _read_committed(bootstrap: str, quiet_s: float = 3.0) -> list[tuple[int, bytes]]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "abort-repro", "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    read, last = [], time.monotonic()
    while time.monotonic() - last < quiet_s:
        m = c.poll(0.2)
        if m is not None and not m.error():
            read.append((m.offset(), m.value()))
            last = time.monotonic()
    c.close()
    return read


def c_lost(found: dict) -> bool:
    """C was acknowledged at an offset whose record is not C."""
    error, offset = found["told"].get(b"C", ("no answer", None))
    return error is None and found["log"].get(offset) != b"C"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.chaos.abort_repro", description=__doc__.split("\n\n")[0])
    p.add_argument("--broker", choices=("emulator", "kafka"), default="emulator")
    p.add_argument("--debug", default="", help="librdkafka's debug contexts (eos,msg)")
    args = p.parse_args(argv)
    found = run(args.broker, args.debug)
    print(f"delivery reports: {found['told']}")
    print(f"log (data records): {found['log']}")
    print(f"read_committed: {found['read_committed']}")
    lost = c_lost(found)
    print("C lost: acknowledged at an offset holding another record" if lost else "C stored at its offset")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
