"""ApiVersions, Metadata and the admin APIs over the in-memory transport."""

from broker_emu.runtime import open_cluster
from client.protocol import ApiKey
from tests.broker_emu.helpers import (
    API_VERSIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    DESCRIBE_CLUSTER,
    DESCRIBE_CONFIGS,
    INIT_PRODUCER_ID,
    METADATA,
    SASL_HANDSHAKE,
    WireClient,
)

ADVERTISED = {  # the ranges; old librdkafka needs Produce and the group APIs from v0
    "PRODUCE": (0, 12), "FETCH": (4, 17), "LIST_OFFSETS": (1, 10), "METADATA": (0, 13), "OFFSET_COMMIT": (2, 9),
    "OFFSET_FETCH": (1, 9), "FIND_COORDINATOR": (0, 6), "JOIN_GROUP": (0, 9), "HEARTBEAT": (0, 4),
    "LEAVE_GROUP": (0, 5), "SYNC_GROUP": (0, 5), "DESCRIBE_GROUPS": (0, 5), "LIST_GROUPS": (0, 5),
    "SASL_HANDSHAKE": (0, 1), "API_VERSIONS": (0, 4), "CREATE_TOPICS": (2, 7), "DELETE_TOPICS": (1, 6),
    "INIT_PRODUCER_ID": (0, 5), "OFFSET_FOR_LEADER_EPOCH": (2, 4), "DESCRIBE_CONFIGS": (1, 4),
    "SASL_AUTHENTICATE": (0, 2), "DESCRIBE_CLUSTER": (0, 1),
    # transactions, without KIP-890 part 2 (broker_emu.handlers.transactions)
    "ADD_PARTITIONS_TO_TXN": (0, 3), "ADD_OFFSETS_TO_TXN": (0, 4), "END_TXN": (0, 5), "TXN_OFFSET_COMMIT": (0, 5),
    "DESCRIBE_TRANSACTIONS": (0, 0), "LIST_TRANSACTIONS": (0, 2), "DESCRIBE_PRODUCERS": (0, 0),
    "CREATE_PARTITIONS": (0, 3), "DELETE_RECORDS": (0, 2),
    # KIP-848, while group.coordinator.rebalance.protocols lists consumer (broker_emu.handlers.groups_kip848)
    "CONSUMER_GROUP_HEARTBEAT": (0, 1), "CONSUMER_GROUP_DESCRIBE": (0, 1),
    "DELETE_GROUPS": (0, 2), "OFFSET_DELETE": (0, 0), "ELECT_LEADERS": (0, 2),
    "DESCRIBE_CLIENT_QUOTAS": (0, 1), "ALTER_CLIENT_QUOTAS": (0, 1), "DESCRIBE_LOG_DIRS": (1, 5),
    "ALTER_PARTITION_REASSIGNMENTS": (0, 1), "LIST_PARTITION_REASSIGNMENTS": (0, 0),
    "ALTER_CONFIGS": (0, 2), "INCREMENTAL_ALTER_CONFIGS": (0, 1),
    "DESCRIBE_ACLS": (1, 3), "CREATE_ACLS": (1, 3), "DELETE_ACLS": (1, 3),
    "DESCRIBE_USER_SCRAM_CREDENTIALS": (0, 0), "ALTER_USER_SCRAM_CREDENTIALS": (0, 0),
    # KIP-932 share groups (broker_emu.handlers.share_groups, share_fetch): Kafka 4.4's versions
    "SHARE_GROUP_HEARTBEAT": (1, 1), "SHARE_GROUP_DESCRIBE": (1, 1), "SHARE_FETCH": (1, 2), "SHARE_ACKNOWLEDGE": (1, 2),
    "DESCRIBE_SHARE_GROUP_OFFSETS": (0, 1), "ALTER_SHARE_GROUP_OFFSETS": (0, 0), "DELETE_SHARE_GROUP_OFFSETS": (0, 0),
}
SOFTWARE = {"client_software_name": "broker-emu-tests", "client_software_version": "1.0"}


async def test_api_versions_advertises_what_is_registered(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        r = await w.call(API_VERSIONS, 3, SOFTWARE)
        got = {ApiKey(k.api_key).name: (k.min_version, k.max_version) for k in r.api_keys}
        assert r.error_code == 0 and got == ADVERTISED
        assert (await w.call(API_VERSIONS, 0, {})).api_keys == r.api_keys
        assert (await w.call(API_VERSIONS, 3, {**SOFTWARE, "client_software_name": "-bad"})).error_code == 42
    async with open_cluster(1, listen=False, config={"emu.telemetry": True}) as cluster:
        r = await WireClient(cluster.connect(0)).call(API_VERSIONS, 4, SOFTWARE)
        assert (71, 0, 0) in [(k.api_key, k.min_version, k.max_version) for k in r.api_keys]


async def test_metadata_describes_brokers_leaders_epochs_and_topic_ids(autojump_clock):
    async with open_cluster(3, topics=[("t", 2, 3)], listen=False) as cluster:
        w = WireClient(cluster.connect(1))
        cluster.move_leader("t", 0, cluster.partition("t", 0).replicas[1])
        r = await w.call(METADATA, 12, {"topics": None})
        assert r.cluster_id == "broker-emu-cluster" and r.controller_id == 0
        assert sorted(b.node_id for b in r.brokers) == [0, 1, 2]
        t = r.topics[0]
        assert (t.name, t.topic_id) == ("t", cluster.topics["t"].topic_id)
        p0 = t.partitions[0]
        assert (p0.leader_id, p0.leader_epoch) == (cluster.partition("t", 0).leader, 1)
        assert sorted(p0.isr_nodes) == sorted(p0.replica_nodes) and len(p0.replica_nodes) == 3
        assert [x.name for x in (await w.call(METADATA, 0, {"topics": []})).topics] == ["t"]  # v0: empty = all


async def test_metadata_auto_creates_unless_disabled(autojump_clock):
    async with open_cluster(3, listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        r = await w.call(METADATA, 9, {"topics": [{"name": "fresh"}], "allow_auto_topic_creation": True})
        assert r.topics[0].error_code == 0 and len(r.topics[0].partitions) == 1  # num.partitions
        assert len(cluster.partition("fresh", 0).replicas) == 3
        r = await w.call(METADATA, 9, {"topics": [{"name": "other"}], "allow_auto_topic_creation": False})
        assert r.topics[0].error_code == 3 and "other" not in cluster.topics
    async with open_cluster(1, listen=False, config={"auto.create.topics.enable": False}) as cluster:
        r = await WireClient(cluster.connect(0)).call(METADATA, 1, {"topics": [{"name": "fresh"}]})
        assert r.topics[0].error_code == 3 and not cluster.topics


async def test_create_and_delete_topics(autojump_clock):
    async with open_cluster(3, listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        r = await w.call(CREATE_TOPICS, 7, {"timeout_ms": 1000, "topics": [
            {"name": "a", "num_partitions": 4, "replication_factor": 2},
            {"name": "b", "num_partitions": -1, "replication_factor": -1, "assignments": [
                {"partition_index": 0, "broker_ids": [2, 1]}, {"partition_index": 1, "broker_ids": [0, 2]}]},
            {"name": "c", "num_partitions": 1, "replication_factor": 4},
            {"name": "huge", "num_partitions": 2**31 - 1, "replication_factor": 1},
            {"name": "bad name", "num_partitions": 1, "replication_factor": 1}]})
        codes = {t.name: t.error_code for t in r.topics}
        assert codes == {"a": 0, "b": 0, "c": 38, "huge": 37, "bad name": 17}
        assert [p.replicas for p in cluster.topics["b"].partitions] == [[2, 1], [0, 2]]
        again = await w.call(CREATE_TOPICS, 7, {"timeout_ms": 1000, "topics": [{"name": "a", "num_partitions": 1,
                                                                                  "replication_factor": 1}]})
        assert again.topics[0].error_code == 36
        dry = await w.call(CREATE_TOPICS, 7, {"timeout_ms": 1000, "validate_only": True, "topics": [
            {"name": "d", "num_partitions": 2, "replication_factor": -1}]})
        assert (dry.topics[0].error_code, dry.topics[0].num_partitions, dry.topics[0].replication_factor) == (0, 2, 3)
        assert "d" not in cluster.topics
        tid = cluster.topics["b"].topic_id
        r = await w.call(DELETE_TOPICS, 6, {"timeout_ms": 1000, "topics": [{"name": "a"}, {"name": None, "topic_id": tid},
                                                                          {"name": "zzz"}]})
        assert [(x.name, x.error_code) for x in r.responses] == [("a", 0), ("b", 0), ("zzz", 3)]
        assert cluster.topics == {}


async def test_describe_configs_cluster_sasl_and_init_producer_id(autojump_clock):
    async with open_cluster(3, listen=False, config={"min.insync.replicas": 2}) as cluster:
        cluster.create_topic("t", 1, 3, configs={"retention.bytes": "1000"})
        w = WireClient(cluster.connect(0))
        r = await w.call(DESCRIBE_CONFIGS, 4, {"resources": [
            {"resource_type": 2, "resource_name": "t", "configuration_keys": None},
            {"resource_type": 4, "resource_name": "0", "configuration_keys": ["min.insync.replicas"]}]})
        topic = {c.name: (c.value, c.config_source) for c in r.results[0].configs}
        # sources: 1 topic override, 3 cluster-wide dynamic (Kafka 4.x formats min.insync.replicas so), 5 default
        assert (topic["retention.bytes"], topic["min.insync.replicas"], topic["max.message.bytes"]) == \
            (("1000", 1), ("2", 3), ("1048588", 5))
        assert [(c.name, c.value) for c in r.results[1].configs] == [("min.insync.replicas", "2")]
        dc = await w.call(DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False})
        assert (dc.cluster_id, dc.controller_id, len(dc.brokers)) == ("broker-emu-cluster", 0, 3)
        sasl = await w.call(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        # a PLAINTEXT listener: KafkaApis.handleSaslHandshakeRequest answers ILLEGAL_SASL_STATE
        assert (sasl.error_code, list(sasl.mechanisms)) == (34, [])
        a = await w.call(INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 1})
        b = await w.call(INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 1})
        assert a.error_code == b.error_code == 0 and b.producer_id == a.producer_id + 1 and a.producer_epoch == 0


async def test_metadata_v13_carries_a_top_level_error_code_only_where_the_release_had_it(autojump_clock):
    """KIP-1102 (Kafka 4.0): Metadata v13 adds the answer's ErrorCode; the 3.9 profile stops at v12."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        r = await w.call(METADATA, 13, {"topics": None})
        assert r.error_code == 0 and [t.name for t in r.topics] == ["t"] and len(r.brokers) == 1
    for release, top in (("3.9", 12), ("4.1", 13)):
        async with open_cluster(1, listen=False, config={"emu.kafka.version": release}) as cluster:
            r = await WireClient(cluster.connect(0)).call(API_VERSIONS, 3, SOFTWARE)
            assert [k.max_version for k in r.api_keys if k.api_key == ApiKey.METADATA] == [top]
