"""Golden tests: the error paths of each API carry the fields Kafka fills beside the error
(docs/responses.md names the Kafka class behind each expectation)."""

import uuid

import trio

from broker_emu.runtime import open_cluster
from client.protocol.codec import decode_response
from tests.broker_emu.groups_fake import DESCRIBE, FIND, JOIN, commit_body, join_body
from tests.broker_emu.helpers import (
    API_VERSIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    DESCRIBE_CLUSTER,
    DESCRIBE_CONFIGS,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    WireClient,
    fetch_body,
    follower_of,
    leader_of,
    produce_body,
)

OFFSET_COMMIT, OFFSET_FETCH = 8, 9
MIN_INT = -(1 << 31)
TOPIC_OPS, GROUP_OPS, CLUSTER_OPS = 3576, 3400, 8096  # AclEntry.supportedOperations as bit fields
ZERO = uuid.UUID(int=0)


async def raw_call(w: WireClient, api: int, version: int, body: dict) -> tuple[bytes, dict]:
    """One request; the response frame's bytes and its decoding."""
    await w.send(api, version, body)
    while not w.pending:
        w.pending += w.splitter.feed(await w.stream.receive_some(1 << 20))
    frame = w.pending.pop(0)
    w.sent.pop(int.from_bytes(frame[:4], "big", signed=True))
    return frame, decode_response(api, version, frame)[1]


def part0(r):
    return r.responses[0].partitions[0]


def read_failed(p, error: int) -> bool:
    """ReplicaManager.createLogReadResult: every offset unknown, no aborted transactions, no records."""
    return (p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset, p.aborted_transactions,
            p.preferred_read_replica, p.records) == (error, -1, -1, -1, None, -1, b"")


def with_id(cluster, body: dict, topic: str = "t") -> dict:
    body["topics"][0]["topic_id"] = cluster.topics[topic].topic_id
    return body


async def five_records(cluster, topic: str = "t") -> WireClient:
    w = WireClient(cluster.connect(leader_of(cluster, topic)))
    for i in range(5):
        assert (await w.call(PRODUCE, 9, produce_body(topic, 0, [b"v%d" % i], acks=1))).responses[0] \
            .partition_responses[0].error_code == 0
    return w


# -- Fetch -----------------------------------------------------------------------------------------------------
async def test_fetch_offset_out_of_range_has_an_empty_record_set_not_null(autojump_clock):
    """Regression: the record set went out null (length -1); librdkafka dropped the whole
    response ("invalid MessageSetSize -1") and its consumer never reset."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = await five_records(cluster)
        frame, r = await raw_call(w, FETCH, 11, fetch_body("t", 0, 1000, max_wait_ms=0))
        assert read_failed(part0(r), 1)
        assert frame[-4:] == b"\0\0\0\0"  # v11: int32 records length 0 ends the frame (null would be ff ff ff ff)
        frame, r = await raw_call(w, FETCH, 12, fetch_body("t", 0, 1000, max_wait_ms=0))
        assert read_failed(part0(r), 1)
        # v12: compact records (length + 1 = 1, null would be 0), then the partition's, topic's and body's tags
        assert frame[-4:] == b"\x01\0\0\0"
        ok = part0(await w.call(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=0)))
        assert (ok.error_code, ok.high_watermark, ok.last_stable_offset, ok.log_start_offset) == (0, 5, 5, 0)


async def test_fetch_not_leader_and_fenced_epoch_name_the_leader_only_from_v16(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        leader = leader_of(cluster, "t")
        f = WireClient(cluster.connect(follower_of(cluster, "t")))
        r = await f.call(FETCH, 15, with_id(cluster, fetch_body("t", 0, 0, max_wait_ms=0)))
        assert read_failed(part0(r), 6)
        assert part0(r).current_leader.leader_id == -1 and r.node_endpoints == []  # v15: tagged fields left out
        r = await f.call(FETCH, 16, with_id(cluster, fetch_body("t", 0, 0, max_wait_ms=0)))
        assert read_failed(part0(r), 6) and part0(r).current_leader.leader_id == leader
        assert [(n.node_id, n.port) for n in r.node_endpoints] == [(leader, cluster.brokers[leader].port)]
        new = follower_of(cluster, "t")
        cluster.move_leader("t", 0, new)  # epoch 1
        body = with_id(cluster, fetch_body("t", 0, 0, max_wait_ms=0))
        body["topics"][0]["partitions"][0]["current_leader_epoch"] = 0
        r = await WireClient(cluster.connect(new)).call(FETCH, 16, body)
        assert read_failed(part0(r), 74)  # FENCED_LEADER_EPOCH
        assert (part0(r).current_leader.leader_id, part0(r).current_leader.leader_epoch) == (new, 1)
        body["topics"][0]["partitions"][0]["current_leader_epoch"] = 9
        r = await WireClient(cluster.connect(new)).call(FETCH, 16, body)
        assert read_failed(part0(r), 75) and r.node_endpoints == []  # UNKNOWN_LEADER_EPOCH names no leader


async def test_fetch_unknown_topics_are_refused_before_the_read(autojump_clock):
    """FetchResponse.partitionResponse: high watermark -1 and the schema defaults (an empty
    aborted-transactions list), then MemoryRecords.EMPTY from createResponse."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        p = part0(await w.call(FETCH, 12, fetch_body("t", 7, 0, max_wait_ms=0)))
        assert (p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset, p.aborted_transactions,
                p.records) == (3, -1, -1, -1, [], b"")
        body = fetch_body("t", 0, 0, max_wait_ms=0)
        body["topics"][0]["topic_id"] = uuid.UUID(int=7)
        p = part0(await w.call(FETCH, 13, body))
        assert (p.error_code, p.high_watermark, p.aborted_transactions, p.records) == (100, -1, [], b"")


async def test_injected_fetch_error_has_an_empty_record_set(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = await five_records(cluster)
        cluster.faults.add({"match": {"api": "Fetch"}, "action": {"type": "error", "error": "NOT_LEADER_OR_FOLLOWER"},
                            "times": 2}, 0)
        frame, r = await raw_call(w, FETCH, 11, fetch_body("t", 0, 0, max_wait_ms=0))
        assert read_failed(part0(r), 6) and frame[-4:] == b"\0\0\0\0"
        frame, r = await raw_call(w, FETCH, 17, with_id(cluster, fetch_body("t", 0, 0, max_wait_ms=0)))
        assert read_failed(part0(r), 6) and r.responses[0].topic_id == cluster.topics["t"].topic_id


# -- Produce, ListOffsets ---------------------------------------------------------------------------------------
async def test_produce_errors_carry_no_offsets(autojump_clock):
    """ProduceResponse.PartitionResponse(error) / LogAppendInfo.UNKNOWN_LOG_APPEND_INFO."""
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        leader = leader_of(cluster, "t")
        f = WireClient(cluster.connect(follower_of(cluster, "t")))
        r = await f.call(PRODUCE, 11, produce_body("t", 0, [b"x"], acks=1))
        p = r.responses[0].partition_responses[0]
        assert (p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset) == (6, -1, -1, -1)
        assert p.current_leader.leader_id == leader and [n.node_id for n in r.node_endpoints] == [leader]
        r = await f.call(PRODUCE, 11, produce_body("nope", 0, [b"x"], acks=1))
        p = r.responses[0].partition_responses[0]
        assert (p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset) == (3, -1, -1, -1)
        assert r.node_endpoints == []
        cluster.faults.add({"match": {"api": "Produce"}, "action": {"type": "error", "error": "NOT_ENOUGH_REPLICAS"},
                            "times": 1}, 0)
        p = (await WireClient(cluster.connect(leader)).call(PRODUCE, 11, produce_body("t", 0, [b"x"], acks=1))) \
            .responses[0].partition_responses[0]
        assert (p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset) == (19, -1, -1, -1)


async def test_list_offsets_errors(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        f = WireClient(cluster.connect(follower_of(cluster, "t")))
        r = await f.call(LIST_OFFSETS, 7, {"replica_id": -1, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "timestamp": -1}, {"partition_index": 9, "timestamp": -1}]}]})
        got = [(p.error_code, p.timestamp, p.offset, p.leader_epoch) for p in r.topics[0].partitions]
        assert got == [(6, -1, -1, -1), (3, -1, -1, -1)]  # KafkaApis' buildErrorResponse


# -- Metadata, DescribeCluster, ApiVersions ---------------------------------------------------------------------
async def test_metadata_topic_errors_and_authorized_operations(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"auto.create.topics.enable": False}) as cluster:
        w = WireClient(cluster.connect(0))
        r = await w.call(METADATA, 10, {"topics": [{"name": "t"}, {"name": "nope"}, {"name": "bad name"},
                                                   {"name": "__consumer_offsets"}],
                                        "include_cluster_authorized_operations": True,
                                        "include_topic_authorized_operations": True})
        got = [(t.name, t.error_code, t.topic_id, t.is_internal, len(t.partitions), t.topic_authorized_operations)
               for t in r.topics]
        assert got == [("t", 0, cluster.topics["t"].topic_id, False, 1, TOPIC_OPS), ("nope", 3, ZERO, False, 0, TOPIC_OPS),
                       ("bad name", 17, ZERO, False, 0, TOPIC_OPS), ("__consumer_offsets", 3, ZERO, True, 0, TOPIC_OPS)]
        assert r.cluster_authorized_operations == CLUSTER_OPS
        r = await w.call(METADATA, 10, {"topics": [{"name": "t"}]})
        assert (r.topics[0].topic_authorized_operations, r.cluster_authorized_operations) == (MIN_INT, MIN_INT)
        r = await w.call(METADATA, 12, {"topics": [{"name": None, "topic_id": uuid.UUID(int=5)}],
                                        "include_topic_authorized_operations": True})
        t = r.topics[0]  # an unknown id: a null name and no authorized operations (not in getTopicMetadata)
        assert (t.name, t.error_code, t.topic_id, t.partitions, t.topic_authorized_operations) == \
            (None, 100, uuid.UUID(int=5), [], MIN_INT)


async def test_injected_metadata_error(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.faults.add({"match": {"api": "Metadata"}, "action": {"type": "error", "error": "LEADER_NOT_AVAILABLE"},
                            "times": 1}, 0)
        r = await WireClient(cluster.connect(0)).call(METADATA, 12, {"topics": [{"name": "t"}]})
        t = r.topics[0]
        assert (t.name, t.error_code, t.topic_id, t.is_internal, t.partitions, t.topic_authorized_operations) == \
            ("t", 5, ZERO, False, [], MIN_INT)


async def test_describe_cluster_operations_endpoint_types_and_a_dead_controller(autojump_clock):
    async with open_cluster(3, listen=False) as cluster:
        w = WireClient(cluster.connect(1))
        r = await w.call(DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": True})
        assert (r.error_code, r.error_message, r.endpoint_type, r.cluster_authorized_operations) == (0, None, 1, CLUSTER_OPS)
        assert (await w.call(DESCRIBE_CLUSTER, 0, {})).cluster_authorized_operations == MIN_INT
        r = await w.call(DESCRIBE_CLUSTER, 1, {"endpoint_type": 2})
        assert (r.error_code, r.cluster_id, r.controller_id, r.brokers) == (114, "", -1, [])  # MISMATCHED_ENDPOINT_TYPE
        assert "CONTROLLER" in r.error_message
        r = await w.call(DESCRIBE_CLUSTER, 1, {"endpoint_type": 9})
        assert (r.error_code, r.error_message) == (115, "Unsupported endpoint type 9")  # UNSUPPORTED_ENDPOINT_TYPE
        cluster.brokers[0].alive = False  # the controller; a live broker is named instead, never a dead one
        r = await w.call(DESCRIBE_CLUSTER, 1, {})
        assert r.controller_id in {b.broker_id for b in r.brokers} and r.controller_id != 0


async def test_api_versions_invalid_request_lists_no_api_keys(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        r = await WireClient(cluster.connect(0)).call(API_VERSIONS, 3, {"client_software_name": "-bad",
                                                                        "client_software_version": "1"})
        assert (r.error_code, r.api_keys) == (42, [])  # ApiVersionsRequest.getErrorResponse


# -- CreateTopics, DeleteTopics, DescribeConfigs ----------------------------------------------------------------
async def test_create_topics_results(autojump_clock):
    async with open_cluster(3, listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        r = await w.call(CREATE_TOPICS, 7, {"timeout_ms": 1000, "topics": [
            {"name": "a", "num_partitions": 2, "replication_factor": 1, "configs": [{"name": "retention.bytes", "value": "9"}]},
            {"name": "a", "num_partitions": 1, "replication_factor": 9}]})
        ok, bad = r.topics
        configs = {c.name: (c.value, c.config_source) for c in ok.configs}
        assert (ok.error_code, ok.error_message, ok.topic_id, ok.num_partitions) == (0, None, cluster.topics["a"].topic_id, 2)
        assert configs["retention.bytes"] == ("9", 1) and configs["max.message.bytes"] == ("1048588", 5)
        assert (bad.error_code, bad.topic_id, bad.num_partitions, bad.replication_factor, bad.configs) == (36, ZERO, -1, -1, [])
        assert bad.error_message


async def test_delete_topics_errors(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        r = await WireClient(cluster.connect(0)).call(DELETE_TOPICS, 6, {"timeout_ms": 1000, "topics": [
            {"name": "nope"}, {"name": None, "topic_id": uuid.UUID(int=3)}]})
        got = [(x.name, x.topic_id, x.error_code, x.error_message) for x in r.responses]
        assert got == [("nope", ZERO, 3, "This server does not host this topic-partition."),
                       (None, uuid.UUID(int=3), 100, "This server does not host this topic ID.")]


async def test_describe_configs_errors(autojump_clock):
    async with open_cluster(3, listen=False) as cluster:
        r = await WireClient(cluster.connect(1)).call(DESCRIBE_CONFIGS, 4, {"resources": [
            {"resource_type": 2, "resource_name": "nope", "configuration_keys": None},
            {"resource_type": 2, "resource_name": "bad name", "configuration_keys": None},
            {"resource_type": 4, "resource_name": "0", "configuration_keys": None},
            {"resource_type": 4, "resource_name": "", "configuration_keys": None},
            {"resource_type": 4, "resource_name": "1", "configuration_keys": ["message.max.bytes"]}]})
        got = [(x.error_code, x.error_message, len(x.configs)) for x in r.results]
        assert got[0] == (3, "", 0)  # ConfigHelper: UNKNOWN_TOPIC_OR_PARTITION with the schema's "" message
        assert got[1][0] == 17 and got[1][1] and got[1][2] == 0
        assert got[2] == (42, "Unexpected broker id, expected 1 or empty string, but received 0", 0)
        assert got[3] == (0, None, 1)  # "": cluster-wide dynamic defaults: min.insync.replicas, as Kafka 4.x formats it
        assert got[4] == (0, None, 1)


# -- group APIs -------------------------------------------------------------------------------------------------
async def test_group_api_errors_through_the_pipeline(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        coord = cluster.coordinator_for("g")
        other = WireClient(cluster.connect((coord + 1) % 3))
        r = await other.call(JOIN, 9, join_body(member_id="m-1"))
        assert (r.error_code, r.member_id, r.generation_id, r.protocol_type, r.protocol_name, r.leader, r.members) == \
            (16, "", -1, None, None, "", [])  # NOT_COORDINATOR: no member id (handleOperationException)
        r = await other.call(JOIN, 5, join_body(member_id="m-1"))
        assert (r.error_code, r.protocol_name) == (16, "")  # not nullable before v7
        r = await other.call(DESCRIBE, 5, {"groups": ["g"], "include_authorized_operations": True})
        g = r.groups[0]
        assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data, g.members, g.authorized_operations) == \
            (16, "", "", "", [], MIN_INT)
        w = WireClient(cluster.connect(coord))
        r = await w.call(DESCRIBE, 5, {"groups": ["g"], "include_authorized_operations": True})
        assert (r.groups[0].error_code, r.groups[0].group_state, r.groups[0].authorized_operations) == (0, "Dead", GROUP_OPS)
        assert (await w.call(DESCRIBE, 5, {"groups": ["g"]})).groups[0].authorized_operations == MIN_INT
        r = await other.call(OFFSET_FETCH, 7, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]})
        assert (r.error_code, r.topics) == (16, [])
        r = await other.call(OFFSET_FETCH, 1, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]})
        p = r.topics[0].partitions[0]  # v1 has no top-level error: it goes in each partition
        assert (p.error_code, p.committed_offset, p.metadata) == (16, -1, "")
        r = await other.call(OFFSET_COMMIT, 9, commit_body({("t", 0): 5}))
        assert r.topics[0].partitions[0].error_code == 16


async def test_find_coordinator_error_messages(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        r = await w.call(FIND, 3, {"key": "g", "key_type": 0})
        assert (r.error_code, r.error_message, r.node_id) == (0, "NONE", 0)
        r = await w.call(FIND, 4, {"key_type": 0, "coordinator_keys": ["g"]})
        assert [(c.error_code, c.error_message, c.node_id) for c in r.coordinators] == [(0, "", 0)]
        r = await w.call(FIND, 3, {"key": "g", "key_type": 2})  # share groups: no share coordinator here
        assert (r.error_code, r.node_id, r.host, r.port) == (42, -1, "", -1) and r.error_message.startswith("This most")
        r = await w.call(FIND, 5, {"key_type": 2, "coordinator_keys": ["g"]})
        assert [(c.error_code, c.error_message, c.node_id) for c in r.coordinators] == [(42, "", -1)]
        r = await w.call(FIND, 5, {"key_type": 7, "coordinator_keys": ["g", "h"]})  # the whole request fails
        assert [(c.key, c.error_code, c.node_id) for c in r.coordinators] == [("g", 42, -1), ("h", 42, -1)]
        assert all(c.error_message.startswith("This most") for c in r.coordinators)
        cluster.faults.add({"match": {"api": "FindCoordinator"},
                            "action": {"type": "error", "error": "COORDINATOR_NOT_AVAILABLE"}, "times": 2}, 0)
        r = await w.call(FIND, 2, {"key": "g", "key_type": 0})
        assert (r.error_code, r.error_message, r.node_id, r.host, r.port) == \
            (15, "The coordinator is not available.", -1, "", -1)
        r = await w.call(FIND, 4, {"key_type": 0, "coordinator_keys": ["g"]})
        assert [(c.error_code, c.error_message, c.node_id) for c in r.coordinators] == \
            [(15, "The coordinator is not available.", -1)]


async def test_injected_errors_of_the_other_apis(autojump_clock):
    """Each shaped like the API's getErrorResponse."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))

        def inject(api: str) -> None:
            cluster.faults.add({"match": {"api": api}, "action": {"type": "error", "error": "NOT_COORDINATOR"},
                                "times": 1}, 0)

        inject("JoinGroup")
        r = await w.call(JOIN, 9, join_body(member_id="m"))
        assert (r.error_code, r.member_id, r.generation_id, r.protocol_name, r.leader) == (16, "", -1, None, "")
        inject("OffsetFetch")
        r = await w.call(OFFSET_FETCH, 1, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}]})
        assert [(p.partition_index, p.error_code, p.committed_offset) for p in r.topics[0].partitions] == \
            [(0, 16, -1), (1, 16, -1)]
        inject("OffsetFetch")
        r = await w.call(OFFSET_FETCH, 8, {"groups": [{"group_id": "g", "topics": None}]})
        assert [(g.group_id, g.error_code, g.topics) for g in r.groups] == [("g", 16, [])]
        inject("DescribeGroups")
        g = (await w.call(DESCRIBE, 5, {"groups": ["g"], "include_authorized_operations": True})).groups[0]
        assert (g.error_code, g.group_state, g.members, g.authorized_operations) == (16, "", [], MIN_INT)
        inject("CreateTopics")
        t = (await w.call(CREATE_TOPICS, 7, {"timeout_ms": 1, "topics": [{"name": "x", "num_partitions": 1,
                                                                           "replication_factor": 1}]})).topics[0]
        assert (t.error_code, t.error_message, t.num_partitions, t.replication_factor, t.configs) == (16, None, -1, -1, [])
        inject("DeleteTopics")
        r = await w.call(DELETE_TOPICS, 6, {"timeout_ms": 1, "topics": [{"name": "t"}]})
        assert [(x.name, x.error_code) for x in r.responses] == [("t", 16)] and "t" in cluster.topics
        inject("DescribeConfigs")
        x = (await w.call(DESCRIBE_CONFIGS, 4, {"resources": [{"resource_type": 2, "resource_name": "t",
                                                                "configuration_keys": None}]})).results[0]
        assert (x.error_code, x.error_message, x.resource_name, x.configs) == (16, "This is not the correct coordinator.", "t", [])
        inject("ListOffsets")
        p = (await w.call(LIST_OFFSETS, 7, {"replica_id": -1, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "timestamp": -1}]}]})).topics[0].partitions[0]
        assert (p.error_code, p.offset, p.timestamp, p.leader_epoch) == (16, -1, -1, -1)
        inject("ApiVersions")
        r = await w.call(API_VERSIONS, 3, {"client_software_name": "a", "client_software_version": "1"})
        assert (r.error_code, r.api_keys) == (16, [])
        assert trio.current_time() == 0


async def test_injected_errors_of_the_transaction_apis_name_every_partition(autojump_clock):
    """AddPartitionsToTxn (below v4) and TxnOffsetCommit answer the error per partition, as their
    getErrorResponse does; an answer without the partitions is one a client cannot read."""
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        for api in ("AddPartitionsToTxn", "TxnOffsetCommit"):
            cluster.faults.add({"match": {"api": api}, "action": {"type": "error", "error": "CONCURRENT_TRANSACTIONS"},
                                "times": 1}, 0)
        r = await w.call(24, 3, {"v3_and_below_transactional_id": "tx", "v3_and_below_producer_id": 1,
                                 "v3_and_below_producer_epoch": 0, "v3_and_below_topics": [{"name": "t", "partitions": [0, 1]}]})
        assert [(t.name, [(p.partition_index, p.partition_error_code) for p in t.results_by_partition])
                for t in r.results_by_topic_v3_and_below] == [("t", [(0, 51), (1, 51)])]
        r = await w.call(28, 3, {"transactional_id": "tx", "group_id": "g", "producer_id": 1, "producer_epoch": 0,
                                 "topics": [{"name": "t", "partitions": [{"partition_index": 1, "committed_offset": 5,
                                                                          "committed_metadata": None}]}]})
        assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [("t", [(1, 51)])]


async def test_metadata_v10_with_a_null_topic_name_is_answered_invalid_request(autojump_clock):
    """Found by the fuzz campaign (docs/fuzzing.md): v10-11 may not name topics by id
    (KafkaApis.handleTopicMetadataRequest), and the answer is MetadataRequest.getErrorResponse's."""
    import uuid

    from broker_emu.runtime import open_cluster
    from tests.broker_emu.wire import WireClient

    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        wire = WireClient(cluster.connect(0))
        body = {"topics": [{"name": None, "topic_id": uuid.UUID(int=1)}], "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}
        answer = await wire.call(3, 10, body)
        (topic,) = answer["topics"]
        assert (topic["error_code"], topic["name"], topic["partitions"]) == (42, "", [])
        assert answer["brokers"] == []
        named = await wire.call(3, 11, {**body, "topics": [{"name": "t", "topic_id": uuid.UUID(int=0)}]})
        assert named["topics"][0]["error_code"] == 0   # a name, and no id: served as usual
        assert not [e for e in cluster.trace.events if e.kind in ("handler_error", "conn_close")]
