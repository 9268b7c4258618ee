"""Version profiles: emu.kafka.version narrows ApiVersions to what that
release's broker advertised (version_profiles_data.py, generated from its schemas),
emu.api.max.versions caps single APIs, and 2.8's ZooKeeper-mode CreateTopics applies before it
times out. A real client negotiating down: tests/realclients/test_version_profiles.py."""

import pytest
import trio

from broker_emu.config import ConfigError
from broker_emu.runtime import open_cluster
from tests.broker_emu.helpers import API_VERSIONS, CREATE_TOPICS, WireClient, produce_body

SOFTWARE = {"client_software_name": "t", "client_software_version": "1"}


async def advertised(config) -> dict[int, tuple[int, int]]:
    async with open_cluster(1, listen=False, config=config) as cluster:
        r = await WireClient(cluster.connect(0)).call(API_VERSIONS, 3, SOFTWARE)
        return {a.api_key: (a.min_version, a.max_version) for a in r.api_keys}


@pytest.mark.parametrize("release,produce,fetch,heartbeat848", [
    ("2.8", (0, 9), (4, 12), None), ("3.6", (0, 9), (4, 15), None), ("3.9", (0, 11), (4, 17), (0, 0)),
    ("4.1", (3, 12), (4, 17), (0, 1)), ("", (0, 12), (4, 17), (0, 1))])
async def test_a_profile_advertises_that_releases_ranges(autojump_clock, release, produce, fetch, heartbeat848):
    got = await advertised({"emu.kafka.version": release})
    assert (got[0], got[1], got.get(68)) == (produce, fetch, heartbeat848)


async def features(config) -> tuple[list, int, list]:
    async with open_cluster(1, listen=False, config=config) as cluster:
        r = await WireClient(cluster.connect(0)).call(API_VERSIONS, 3, SOFTWARE)
        return ([(f.name, f.min_version, f.max_version) for f in r.supported_features], r.finalized_features_epoch,
                [(f.name, f.min_version_level, f.max_version_level) for f in r.finalized_features])


async def test_transaction_version_is_advertised_as_kafka_4_4_does_and_only_from_4_0(autojump_clock):
    # measured on Kafka 4.4.0 (ApiVersions v4, a new cluster, and one formatted with
    # --feature transaction.version=1): supported 0-2, finalized at the cluster's level
    supported, epoch, finalized = await features({})
    assert supported == [("transaction.version", 0, 2)] and finalized == [("transaction.version", 2, 2)] and epoch >= 0
    assert (await features({"transaction.version": 1}))[2] == [("transaction.version", 1, 1)]
    assert (await features({"transaction.version": 0}))[2] == []     # KRaft lists no feature at level 0
    assert (await features({"emu.kafka.version": "4.1"}))[2] == [("transaction.version", 2, 2)]
    for release in ("2.8", "3.6", "3.9"):
        assert await features({"emu.kafka.version": release}) == ([], -1, [])
    # the EndTxn and Produce versions that carry version 2 are served at any level, as Kafka 4.4's
    for config in ({}, {"transaction.version": 1}):
        got = await advertised(config)
        assert (got[0][1], got[26][1], got[28][1]) == (12, 5, 5)
    assert (await advertised({"emu.kafka.version": "3.9"}))[26] == (0, 4)
    with pytest.raises(ConfigError, match="transaction.version 2 needs Kafka 4.0"):
        await advertised({"emu.kafka.version": "3.9", "transaction.version": 2})
    with pytest.raises(ConfigError, match="transaction.version"):
        await advertised({"transaction.version": 3})


async def test_caps_narrow_single_apis_and_bad_ones_are_refused(autojump_clock):
    got = await advertised({"emu.kafka.version": "3.6", "emu.api.max.versions": "Fetch=11,Metadata=9"})
    assert (got[1], got[3]) == ((4, 11), (0, 9))
    with pytest.raises(ConfigError, match="ApiName=version"):
        await advertised({"emu.api.max.versions": "Fetch"})
    with pytest.raises(ConfigError, match="must be one of 2.8, 3.6, 3.9, 4.1"):
        await advertised({"emu.kafka.version": "1.0"})


async def test_a_version_the_profile_does_not_serve_closes_the_connection(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.kafka.version": "2.8"}) as cluster:
        w = WireClient(cluster.connect(0))
        await w.send(0, 10, produce_body("t", 0, [b"x"]))   # 2.8 served Produce up to v9
        assert await w.closed()


@pytest.mark.parametrize("release,exists", [("2.8", True), ("", False)])
async def test_create_topics_past_timeout_zookeeper_applies_kraft_does_not(autojump_clock, release, exists):
    config = {"emu.kafka.version": release, "emu.controller.delay.ms": 2000}
    async with open_cluster(1, listen=False, config=config) as cluster:
        w = WireClient(cluster.connect(0))
        start = trio.current_time()
        r = await w.call(CREATE_TOPICS, 5, {"topics": [{"name": "late", "num_partitions": 1, "replication_factor": 1,
                                                         "assignments": [], "configs": []}],
                                             "timeout_ms": 1500, "validate_only": False})
        assert (r.topics[0].error_code, trio.current_time() - start) == (7, 1.5)   # REQUEST_TIMED_OUT at timeout_ms
        assert ("late" in cluster.topics) is exists


@pytest.mark.parametrize("release,applied", [("2.8", True), ("", False)])
async def test_create_partitions_and_delete_topics_past_timeout(autojump_clock, release, applied):
    """ZkAdminManager.createPartitions / deleteTopics: the change is written, then the answer
    times out while it spreads; KRaft's controller deadline changes nothing."""
    config = {"emu.kafka.version": release, "emu.controller.delay.ms": 2000}
    async with open_cluster(1, topics=[("grow", 1, 1), ("gone", 1, 1)], listen=False, config=config) as cluster:
        w = WireClient(cluster.connect(0))
        start = trio.current_time()
        r = await w.call(37, 2, {"topics": [{"name": "grow", "count": 3, "assignments": None}],
                                 "timeout_ms": 1500, "validate_only": False})
        assert (r.results[0].error_code, trio.current_time() - start) == (7, 1.5)
        assert len(cluster.topics["grow"].partitions) == (3 if applied else 1)
        r = await w.call(20, 5, {"topic_names": ["gone"], "timeout_ms": 0})
        assert r.responses[0].error_code == 7   # timeout_ms 0: at once, either way
        assert ("gone" in cluster.topics) is not applied


@pytest.mark.parametrize("release,applied", [("2.8", True), ("", False)])
async def test_elect_leaders_past_timeout(autojump_clock, release, applied):
    """ReplicaManager.electLeaders / DelayedElectLeader (2.8): the controller elects, the answer
    times out per partition while the new leader spreads (the request's own error NONE); KRaft's
    controller deadline fails the whole request and moves nothing."""
    config = {"emu.kafka.version": release, "emu.controller.delay.ms": 2000}
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config=config) as cluster:
        w = WireClient(cluster.connect(0))
        p = cluster.partition("t", 0)
        preferred = p.replicas[0]
        cluster.move_leader("t", 0, p.replicas[1])
        start = trio.current_time()
        r = await w.call(43, 2, {"election_type": 0, "timeout_ms": 1500,
                                 "topic_partitions": [{"topic": "t", "partitions": [0]}]})
        result = r.replica_election_results[0].partition_result[0]
        assert (r.error_code, result.error_code, result.error_message) == (0 if applied else 7, 7, None)
        assert trio.current_time() - start == 1.5
        assert (cluster.partition("t", 0).leader == preferred) is applied
        r = await w.call(43, 2, {"election_type": 0, "timeout_ms": 5000,
                                 "topic_partitions": [{"topic": "t", "partitions": [0]}]})
        assert r.replica_election_results[0].partition_result[0].error_code == (84 if applied else 0)


def test_the_transaction_version_is_chosen_per_cluster_from_the_cli_and_the_pytest_options():
    from broker_emu.cli import build_parser, plan_serve
    from conformance.pytest_cluster import cluster_options

    plan = plan_serve(build_parser().parse_args(["serve", "--transaction-version", "1"]))
    assert plan.config["transaction.version"] == 1
    assert "transaction.version" not in plan_serve(build_parser().parse_args(["serve"])).config   # the default: 2
    with pytest.raises(ValueError, match="needs Kafka 4.0"):
        plan_serve(build_parser().parse_args(["serve", "--kafka-version", "3.9", "--transaction-version", "2"]))
    assert cluster_options(transaction_version=1)["config"]["transaction.version"] == 1
    assert "transaction.version" not in cluster_options()["config"]
