"""The two named faults for KIP-899/KIP-1102 rebootstrap: ``rebootstrap`` (Metadata answered with
REBOOTSTRAP_REQUIRED) and ``metadata-starve`` (Metadata never answered, or answered with no
brokers), scoped like any rule, through the pipeline in virtual time."""

import pytest
import trio

from broker_emu.faults import named
from broker_emu.faults.rules import FaultConfigError
from broker_emu.proxy.proxy import run_proxy_in_thread
from broker_emu.runtime import open_cluster, run_cluster_in_thread
from client.errors import ErrorCode
from conformance.realkafka import wire
from tests.broker_emu.wire import WireClient

METADATA, API_VERSIONS = 3, 18
ASK = {"topics": [{"name": "t"}], "allow_auto_topic_creation": False}


def test_the_rules_they_make_always_match_metadata():
    assert named.rebootstrap(client_id="app", count=1) == {
        "action": {"type": "error", "error": "REBOOTSTRAP_REQUIRED"}, "name": "rebootstrap",
        "match": {"api": "Metadata", "client_id": "app"}, "times": 1}
    assert named.metadata_starve(broker=1) == {"action": {"type": "black_hole"}, "name": "metadata-starve",
                                               "match": {"api": "Metadata", "broker": 1}}
    assert named.metadata_starve("no-brokers")["action"] == {"type": "no_brokers"}
    with pytest.raises(FaultConfigError, match="rebootstrap always matches api Metadata"):
        named.rule("rebootstrap", api="Fetch")
    with pytest.raises(FaultConfigError, match="mode must be one of silent, no-brokers.*did you mean 'no-brokers'"):
        named.metadata_starve("no-broker")


async def test_rebootstrap_answers_v13_with_the_top_level_error_and_only_for_its_client(autojump_clock):
    async with open_cluster(2, topics=[("t", 1, 2)], listen=False) as cluster:
        handle = cluster.faults.rebootstrap(client_id="app")
        app, other = WireClient(cluster.connect(0), client_id="app"), WireClient(cluster.connect(1), client_id="x")
        r = await app.call(METADATA, 13, ASK)
        assert (r.error_code, r.brokers) == (ErrorCode.REBOOTSTRAP_REQUIRED, [])
        assert [(t.name, t.error_code) for t in r.topics] == [("t", ErrorCode.REBOOTSTRAP_REQUIRED)]
        # v12 cannot carry the top-level error: only the topics say it (MetadataRequest.getErrorResponse)
        old = await app.call(METADATA, 12, ASK)
        assert (old.error_code, old.brokers, old.topics[0].error_code) == (0, [], ErrorCode.REBOOTSTRAP_REQUIRED)
        fine = await other.call(METADATA, 13, ASK)
        assert fine.error_code == 0 and len(fine.brokers) == 2 and fine.topics[0].partitions
        assert handle.hits == 2


async def test_metadata_starve_never_answers_metadata_and_nothing_else_is_held(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.faults.metadata_starve()
        w = WireClient(cluster.connect(0))
        await w.call(API_VERSIONS, 3, {"client_software_name": "x", "client_software_version": "1"})
        await w.send(METADATA, 13, ASK)
        with trio.move_on_after(3600) as waited:
            await w.recv()
        assert waited.cancelled_caught   # an hour of virtual time, no answer
        fresh = WireClient(cluster.connect(0))   # other APIs on another connection still answer
        assert (await fresh.call(API_VERSIONS, 3, {"client_software_name": "x", "client_software_version": "1"})).error_code == 0


async def test_metadata_starve_no_brokers_keeps_the_topics_and_spoils_no_kept_answer(autojump_clock):
    async with open_cluster(2, topics=[("t", 1, 2)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        assert len((await w.call(METADATA, 13, ASK)).brokers) == 2   # kept for the repeat below
        handle = cluster.faults.metadata_starve("no-brokers", count=1)
        starved = await w.call(METADATA, 13, ASK)
        assert starved.brokers == [] and starved.error_code == 0
        assert [(t.name, len(t.partitions)) for t in starved.topics] == [("t", 1)]
        assert handle.hits == 1 and len((await w.call(METADATA, 13, ASK)).brokers) == 2


def test_no_brokers_through_the_proxy_rewrites_the_upstreams_answer():
    """The proxy reads its upstream's Metadata answer (a cached one too: the second call's bytes
    are the first's) and sends it on with no brokers and the topics kept, as the emulator does:
    the same fault in front of real Kafka."""
    with run_cluster_in_thread(brokers=2, topics=[("t", 1, 2)]) as upstream, \
            run_proxy_in_thread(upstream.bootstrap) as proxy:
        host, port = proxy.bootstrap.split(",")[0].rsplit(":", 1)
        assert len(wire.call(host, int(port), METADATA, 13, ASK).brokers) == 2
        handle = proxy.call(lambda: proxy.cluster.faults.metadata_starve("no-brokers", count=2))
        for _ in range(2):
            starved = wire.call(host, int(port), METADATA, 13, ASK)
            assert starved.brokers == [] and starved.error_code == 0
            assert [(t.name, len(t.partitions), t.partitions[0].leader_id >= 0) for t in starved.topics] == [("t", 1, True)]
        assert proxy.call(lambda: handle.hits) == 2
        assert len(wire.call(host, int(port), METADATA, 13, ASK).brokers) == 2


def test_the_proxys_front_door_is_a_bootstrap_address_the_faults_tell_apart():
    """A bootstrap address of the proxy's own (as the emulator's front door): connections through
    it are traced ``via: bootstrap`` and a rule with ``bootstrap: false`` spares them, so a scenario
    can starve the brokers' own addresses of real Kafka and leave the way back open."""
    with run_cluster_in_thread(brokers=2, topics=[("t", 1, 2)]) as upstream, \
            run_proxy_in_thread(upstream.bootstrap) as proxy:
        door = proxy.acall(proxy.cluster.open_front_door, 0)
        proxy.call(lambda: proxy.cluster.faults.add({"match": {"api": "Metadata", "bootstrap": False},
                                                     "action": {"type": "no_brokers"}}, 0.0))
        host, port = door.rsplit(":", 1)
        assert len(wire.call(host, int(port), METADATA, 13, ASK).brokers) == 2        # the door: spared
        own = proxy.bootstrap.split(",")[0].rsplit(":", 1)
        assert wire.call(own[0], int(own[1]), METADATA, 13, ASK).brokers == []       # a broker's own address
        opened = proxy.call(lambda: [e for e in proxy.cluster.trace.events if e.kind == "conn_open"])
        assert [(e.details or {}).get("via") for e in opened] == ["bootstrap", None]
        with pytest.raises(ValueError, match="already has a front door"):
            proxy.acall(proxy.cluster.open_front_door, 0)


def test_the_bootstrap_selector_is_a_boolean_named_faults_take():
    from broker_emu.faults.rules import parse_match

    assert named.metadata_starve(bootstrap=False)["match"] == {"api": "Metadata", "bootstrap": False}
    assert parse_match({"bootstrap": True}).bootstrap is True and parse_match({}).bootstrap is None
    with pytest.raises(FaultConfigError, match="match.bootstrap: expected true or false, got 'yes'"):
        parse_match({"bootstrap": "yes"})


async def test_a_connection_level_rule_can_spare_the_front_door(autojump_clock):
    from broker_emu.broker_set import connect_front_door, open_front_door

    async with open_cluster(1, listen=False) as cluster:
        open_front_door(cluster, 0)
        cluster.faults.add({"match": {"bootstrap": False}, "action": {"type": "refuse_connections"}}, 0)
        md = await WireClient(connect_front_door(cluster)).call(METADATA, 13, ASK)
        assert [b.node_id for b in md.brokers] == [0]
        with pytest.raises((trio.EndOfChannel, trio.BrokenResourceError, ConnectionError, EOFError)):
            await WireClient(cluster.connect(0)).call(METADATA, 13, ASK)
        refused = [e for e in cluster.trace.events if e.kind == "conn_close" and "refuse_connections" in e.details["reason"]]
        assert [e.conn for e in refused] == [2]
