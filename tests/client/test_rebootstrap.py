"""Rebootstrap (KIP-899, KIP-1102) in our client, against the emulator in virtual time: at once on
REBOOTSTRAP_REQUIRED, at metadata.recovery.rebootstrap.trigger.ms when Metadata starves, and
never with metadata.recovery.strategy=none (whose calls still end at their deadlines)."""

import pytest
import trio

from broker_emu.runtime import open_cluster
from client.admin import NewTopic, open_admin
from client.config import COMMON, ConfigException, consumer_config, parse_config, producer_config
from client.consumer.async_consumer import open_consumer
from client.exceptions import DeliveryTimeoutException, MaxBlockTimeoutException, UnknownBrokerError
from client.producer.async_producer import open_producer
from client.rebootstrap import RebootstrapClock

BOOT = "boot.example:9092"


def in_memory(cluster, connects=None):
    """Connections by node id; the bootstrap address (node -1) reaches broker 0."""
    async def connect(node, host, port):
        if connects is not None:
            connects.append((trio.current_time(), node))
        return cluster.connect(max(node, 0))
    return connect


def closed_by_client_at(cluster, t: float) -> list[int]:
    return sorted(e.conn for e in cluster.trace.events
                  if e.kind == "conn_close" and e.details.get("closed_by") == "client" and e.t_ms == t * 1000)


def test_the_settings_default_as_java_4_and_are_checked():
    config = parse_config({"bootstrap.servers": BOOT}, COMMON)
    assert (config["metadata.recovery.strategy"], config["metadata.recovery.rebootstrap.trigger.ms"]) == ("rebootstrap", 300000)
    assert parse_config({"bootstrap.servers": BOOT, "metadata.recovery.strategy": "NONE"}, COMMON)[
        "metadata.recovery.strategy"] == "none"   # MetadataRecoveryStrategy.forName: any case
    with pytest.raises(ConfigException, match="metadata.recovery.strategy must be one of none, rebootstrap, got 'sometimes'"):
        producer_config({"bootstrap.servers": BOOT, "metadata.recovery.strategy": "sometimes"})
    with pytest.raises(ConfigException, match="metadata.recovery.rebootstrap.trigger.ms must not be negative"):
        consumer_config({"bootstrap.servers": BOOT, "metadata.recovery.rebootstrap.trigger.ms": -1})


def test_the_clock_is_due_the_first_millisecond_after_the_trigger_and_only_while_starving():
    clock = RebootstrapClock("rebootstrap", 1000)
    assert clock.due_at() == float("inf")             # no attempt outstanding
    assert clock.attempting(5.0) and not clock.attempting(5.5)   # the first wish starts it
    assert not clock.needs(6.0) and clock.needs(6.001)   # Java: now - start > trigger, in whole ms
    clock.rebootstrapped(6.001)
    assert clock.due_at() == pytest.approx(7.002)     # a new attempt counted from the rebootstrap
    clock.succeeded()
    assert clock.due_at() == float("inf")
    clock.server_asked()
    assert clock.needs(0.0)                           # REBOOTSTRAP_REQUIRED: at once
    never = RebootstrapClock("none", 1000)
    never.attempting(0.0)
    assert never.due_at() == float("inf") and not never.needs(1e9)


async def test_rebootstrap_required_sends_the_producer_back_to_bootstrap_at_once(autojump_clock):
    async with open_cluster(2, topics=[("t", 1, 2)], listen=False) as cluster:
        config = {"bootstrap.servers": BOOT, "linger.ms": 0, "metadata.max.age.ms": 10000}
        async with open_producer(config, connect=in_memory(cluster)) as p:
            await (await p.send("t", b"before")).get()
            leader_conn = [e.conn for e in cluster.trace.events if e.kind == "recv" and e.api == "Produce"][0]
            known = sorted(p.net.broker_nodes())
            assert known == [0, 1] and p.net.rebootstraps == []
            fault = cluster.faults.rebootstrap(count=1)
            await trio.sleep(10.5)   # the refresh due at 10 s is answered REBOOTSTRAP_REQUIRED
            assert fault.hits == 1
            [(at, why)] = p.net.rebootstraps
            answered = [e.t_ms for e in cluster.trace.events if e.kind == "fault_applied"][-1] / 1000
            assert at == answered == 10.0
            assert why.startswith("a broker answered REBOOTSTRAP_REQUIRED: forgetting 0 (") and BOOT in why
            assert closed_by_client_at(cluster, at) == [leader_conn]   # the one broker connection, at that instant
            # the next refresh went to the bootstrap address and the brokers are known again
            assert sorted(p.net.broker_nodes()) == known and p.metadata.last_success > at
            assert (await (await p.send("t", b"after")).get()).offset == 1


async def test_starved_metadata_rebootstraps_exactly_after_the_trigger(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        config = {"bootstrap.servers": BOOT, "linger.ms": 0, "metadata.max.age.ms": 5000,
                  "metadata.recovery.rebootstrap.trigger.ms": 10000}   # request.timeout.ms stays 30000
        async with open_producer(config, connect=in_memory(cluster)) as p:
            await (await p.send("t", b"x")).get()
            known_conn = [e.conn for e in cluster.trace.events if e.kind == "recv" and e.api == "Produce"][0]
            # the broker the client knows (node 0's connection) never answers Metadata again; the
            # bootstrap address's connection still would
            cluster.faults.metadata_starve(connection=known_conn)
            await trio.sleep(20)
            # the refresh due at 5 s starved; 10 000 ms later (and Java's one more ms) the client
            # closed that connection, forgot broker 0 and asked the bootstrap address instead
            [(at, why)] = p.net.rebootstraps
            assert at == pytest.approx(15.001, abs=1e-9)
            assert "since 5.000 s (10001 ms > metadata.recovery.rebootstrap.trigger.ms=10000)" in why
            assert closed_by_client_at(cluster, at) == [known_conn]
            assert p.metadata.last_success == at and p.net.broker_nodes() == [0]
            assert (await (await p.send("t", b"y")).get()).offset == 1


async def test_without_the_trigger_the_same_starvation_waits_for_request_timeout(autojump_clock):
    """The control: trigger.ms above request.timeout.ms, so the starved request times out first; its
    connection closes, the one broker the client knows backs off, and with no broker available the
    client rebootstraps then, not at the trigger (Java: DefaultMetadataUpdater.maybeUpdate)."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        config = {"bootstrap.servers": BOOT, "linger.ms": 0, "metadata.max.age.ms": 5000}
        async with open_producer(config, connect=in_memory(cluster)) as p:
            await (await p.send("t", b"x")).get()
            known_conn = [e.conn for e in cluster.trace.events if e.kind == "recv" and e.api == "Produce"][0]
            cluster.faults.metadata_starve(connection=known_conn)
            await trio.sleep(40)
            [(at, why)] = p.net.rebootstraps
            assert at == 35.0 and why.startswith("no broker it knows is available (0 (") and p.metadata.last_success == 35.0


async def test_strategy_none_never_rebootstraps_and_max_block_still_holds(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        connects = []
        config = {"bootstrap.servers": BOOT, "linger.ms": 0, "max.block.ms": 20000, "request.timeout.ms": 5000,
                  "metadata.recovery.strategy": "none", "metadata.recovery.rebootstrap.trigger.ms": 1000}
        async with open_producer(config, connect=in_memory(cluster, connects)) as p:
            await (await p.send("t", b"x")).get()
            cluster.faults.metadata_starve("no-brokers")   # answered, but naming no broker
            start = trio.current_time()
            with pytest.raises(MaxBlockTimeoutException) as info:
                await (await p.send("new-topic", b"y")).get()
            assert trio.current_time() - start == 20.0
            assert p.net.rebootstraps == [] and p.net.candidates() == [0]   # the bootstrap address is gone
            assert [n for _, n in connects].count(-1) == 1
            message = str(info.value)
            assert "answered Metadata naming no broker" in message
            assert "metadata.recovery.strategy=none: the client keeps asking them" in message and BOOT in message


async def test_the_consumer_rebootstraps_on_the_same_answer(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        async with open_consumer({"bootstrap.servers": BOOT}, connect=in_memory(cluster)) as c:
            assert await c.list_topics(timeout=5) == {"t": [0, 1]}
            cluster.faults.rebootstrap(count=1)
            start = trio.current_time()
            assert await c.list_topics(timeout=5) == {"t": [0, 1]}   # asked again, after the refresh backoff
            [(at, why)] = c.net.rebootstraps
            assert at == start and "REBOOTSTRAP_REQUIRED" in why
            assert 0 < trio.current_time() - start <= 0.12   # retry.backoff.ms 100 ±20 %


async def test_the_admin_rebootstraps_and_its_call_still_succeeds(autojump_clock):
    async with open_cluster(1, listen=False) as cluster, open_admin({"bootstrap.servers": BOOT}, in_memory(cluster)) as admin:
        assert (await admin.create_topics([NewTopic("a", 1, 1)], timeout=5)) == {"a": None}
        cluster.faults.rebootstrap(count=1)
        assert (await admin.create_topics([NewTopic("b", 1, 1)], timeout=5)) == {"b": None}
        [(at, why)] = admin.net.rebootstraps
        assert "REBOOTSTRAP_REQUIRED" in why and "b" in cluster.topics


async def test_after_a_rebootstrap_into_answers_naming_no_broker_the_send_still_ends_at_its_deadline(autojump_clock):
    """Every Metadata answer names no broker (broker 0 after its first two) and the leader answers
    NOT_LEADER_OR_FOLLOWER: the client rebootstraps at each trigger and forgets the partitions'
    leaders with the brokers (Java's Metadata.rebootstrap), so it neither connects to a broker it
    has no address for nor spins at one instant (in virtual time the clock would stand still);
    the record fails at delivery.timeout.ms."""
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.move_leader("t", 0, 1)
        for raw in ({"match": {"api": "Produce"}, "action": {"type": "error", "error": "NOT_LEADER_OR_FOLLOWER"}},
                    {"match": {"api": "Metadata", "broker": 0}, "action": {"type": "no_brokers"}, "after": 2},
                    {"match": {"api": "Metadata", "broker": 1}, "action": {"type": "no_brokers"}},
                    {"match": {"api": "Metadata", "broker": 2}, "action": {"type": "no_brokers"}}):
            cluster.faults.add(raw, 0)
        config = {"bootstrap.servers": BOOT, "linger.ms": 0, "delivery.timeout.ms": 30000, "request.timeout.ms": 3000,
                  "metadata.recovery.rebootstrap.trigger.ms": 5000, "acks": "all"}
        async with open_producer(config, connect=in_memory(cluster)) as p:
            with pytest.raises(DeliveryTimeoutException):
                await (await p.send("t", b"x")).get()
            assert trio.current_time() == pytest.approx(30.0)
            assert len(p.net.rebootstraps) >= 4      # one per trigger, not one per instant
            metadata = sum(1 for e in cluster.trace.events if e.kind == "recv" and e.api == "Metadata")
            assert metadata < 200                    # at the refresh backoff, not in a loop


async def test_a_request_on_its_way_to_a_forgotten_broker_fails_retriably(autojump_clock):
    """A rebootstrap forgets the brokers while requests are on their way to them (a Produce taken for
    its leader, a connection waiting out its backoff): each fails with a retriable error, so the
    batch is retried on what the bootstrap addresses name, never failed for good."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        refused = []

        async def connect(node, host, port):
            if node < 0 and refused:
                raise OSError("connection refused")   # the bootstrap address, while the test wants it so
            return cluster.connect(max(node, 0))

        async with open_producer({"bootstrap.servers": BOOT, "linger.ms": 0}, connect=connect) as p:
            await (await p.send("t", b"x")).get()
            p.net.rebootstrap("test")
            with pytest.raises(UnknownBrokerError, match=r"broker 0 is not known \(forgotten by a rebootstrap\)") as caught:
                await p.net.connection(0)
            assert caught.value.retriable and caught.value.broker == 0
            await p.refresh_metadata(["t"])          # broker 0 known again, through the bootstrap address
            assert p.net.broker_nodes() == [0] and not p.net.is_ready(0)   # the refresh went through the bootstrap address
            p.net.state(0).blackout_until = trio.current_time() + 1.0
            got = []

            async def connect() -> None:
                try:
                    await p.net.connection(0)
                except UnknownBrokerError as exc:
                    got.append(str(exc))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(connect)
                await trio.sleep(0.5)                # the connection waits out its backoff
                refused.append(True)                 # so nothing names broker 0 again before it wakes
                for node in [n for n in p.net.connections if n < 0]:
                    p.net.connections[node].close("test: the bootstrap address is gone", "client")
                p.net.rebootstrap("test")
            assert got == ["broker 0 is not known (forgotten by a rebootstrap): the request was not sent"]
            refused.clear()
            assert (await (await p.send("t", b"y")).get()).offset == 1
