"""KIP-368 re-authentication by our client, on Apache Kafka 4.4 and on the emulator: a broker with
connections.max.reauth.ms = 3 s closes a connection whose session has ended
(SocketServer's "disconnecting expired channel"); our producer sends a record every 0.4 s for 8 s
and must keep the connections it opened — each one re-authenticated two or three times. A client
that does not re-authenticate still delivers every record (it reconnects), so the test looks at
the connections themselves."""

from __future__ import annotations

import trio

from broker_emu.runtime import run_cluster_in_thread
from client.producer.async_producer import open_producer

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret";')
REAUTH_MS = 3000


def produce_for_a_while(bootstrap: str) -> tuple[list[int], int, int]:
    """(offsets, connections at the first record, of them still open at the end)."""

    async def main() -> tuple[list[int], int, int]:
        config = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                  "sasl.username": "alice", "sasl.password": "alice-secret", "linger.ms": 0}
        async with open_producer(config) as p:
            offsets = [(await (await p.send("reauth", b"0", partition=0)).get()).offset]
            first = dict(p.net.connections)
            for i in range(1, 21):
                await trio.sleep(0.4)
                offsets.append((await (await p.send("reauth", b"%d" % i, partition=0)).get()).offset)
            kept = sum(1 for node, conn in first.items() if p.net.connections.get(node) is conn and not conn.closed)
        return offsets, len(first), kept

    return trio.run(main)


def test_our_producer_keeps_its_connections_through_re_authentication(kafka_factory):
    kafka = kafka_factory(config={"sasl.enabled.mechanisms": "PLAIN", "connections.max.reauth.ms": REAUTH_MS,
                                  "listener.name.client.plain.sasl.jaas.config": JAAS,
                                  "num.partitions": 1, "auto.create.topics.enable": "true"},
                          client_protocol="SASL_PLAINTEXT")
    theirs = produce_for_a_while(kafka.client_bootstrap)
    config = {"emu.security.protocol": "SASL_PLAINTEXT", "emu.sasl.users": "alice:alice-secret",
              "connections.max.reauth.ms": REAUTH_MS}
    with run_cluster_in_thread(brokers=1, topics=[("reauth", 1, 1)], config=config) as tc:
        ours = produce_for_a_while(tc.bootstrap)
    for offsets, opened, kept in (theirs, ours):
        assert offsets[-1] - offsets[0] == 20 and opened >= 1 and kept == opened
