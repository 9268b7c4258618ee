"""Golden cases of the APIs the emulator serves since wave 2 (transactions, CreatePartitions, DeleteRecords, KIP-848) (worked out by hand from Kafka 4.4.0's
message JSON, as test_golden.py's): AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
DescribeProducers, DescribeTransactions, ListTransactions. Each value names every field; fields
absent from the version hold their defaults."""

from __future__ import annotations

import uuid

from tests.client.protocol.strategies import NO_TAGS, arr32, boolean, carr, cbytes, cstr, i8, i16, i32, i64, str16, uuid_

NULL = b"\x00"
F64_1024 = bytes.fromhex("4090000000000000")   # 1024.0, IEEE 754 big-endian
ZERO_UUID = uuid.UUID(int=0)
FLEXIBLE_FROM_TXN = {21: 2, 24: 3, 25: 3, 26: 3, 27: 1, 28: 3, 29: 2, 30: 2, 31: 2, 33: 2, 35: 2, 37: 2, 42: 2, 43: 2,
                     44: 1, 45: 0, 46: 0, 47: None, 48: 1, 49: 1, 50: 0, 51: 0, 61: 0, 65: 0, 66: 0, 69: 0}


def txn_cases(Case):
    """``Case`` is test_golden's (key, version, direction, value, body)."""
    return [
        # -- AddPartitionsToTxn (24): the clients' form, v0-3 -------------------------------------
        Case(24, 1, "request",
             {"transactions": [], "v3_and_below_transactional_id": "tx", "v3_and_below_producer_id": 1000,
              "v3_and_below_producer_epoch": 2, "v3_and_below_topics": [{"name": "events", "partitions": [0, 2]}]},
             str16("tx") + i64(1000) + i16(2) + arr32([str16("events") + arr32([i32(0), i32(2)])])),
        Case(24, 3, "request",
             {"transactions": [], "v3_and_below_transactional_id": "tx", "v3_and_below_producer_id": 1000,
              "v3_and_below_producer_epoch": 2, "v3_and_below_topics": [{"name": "events", "partitions": [1]}]},
             cstr("tx") + i64(1000) + i16(2) + carr([cstr("events") + carr([i32(1)]) + NO_TAGS]) + NO_TAGS),
        Case(24, 3, "response",
             {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": [],
              "results_by_topic_v3_and_below": [{"name": "events", "results_by_partition": [
                  {"partition_index": 1, "partition_error_code": 51}]}]},
             i32(0) + carr([cstr("events") + carr([i32(1) + i16(51) + NO_TAGS]) + NO_TAGS]) + NO_TAGS),

        # -- AddOffsetsToTxn (25) ---------------------------------------------------------------------
        Case(25, 3, "request",
             {"transactional_id": "tx", "producer_id": 1000, "producer_epoch": 2, "group_id": "g"},
             cstr("tx") + i64(1000) + i16(2) + cstr("g") + NO_TAGS),
        Case(25, 3, "response", {"throttle_time_ms": 0, "error_code": 90}, i32(0) + i16(90) + NO_TAGS),

        # -- EndTxn (26) ------------------------------------------------------------------------------
        Case(26, 2, "request",
             {"transactional_id": "tx", "producer_id": 1000, "producer_epoch": 2, "committed": True},
             str16("tx") + i64(1000) + i16(2) + boolean(True)),
        Case(26, 3, "response", {"throttle_time_ms": 0, "error_code": 51, "producer_id": -1, "producer_epoch": -1},
             i32(0) + i16(51) + NO_TAGS),

        # -- TxnOffsetCommit (28) ---------------------------------------------------------------------
        Case(28, 3, "request",
             {"transactional_id": "tx", "group_id": "g", "producer_id": 1000, "producer_epoch": 2,
              "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
              "topics": [{"name": "events", "topic_id": ZERO_UUID, "partitions": [
                  {"partition_index": 0, "committed_offset": 42, "committed_leader_epoch": -1, "committed_metadata": ""}]}]},
             cstr("tx") + cstr("g") + i64(1000) + i16(2) + i32(-1) + cstr("") + NULL
             + carr([cstr("events") + carr([i32(0) + i64(42) + i32(-1) + cstr("") + NO_TAGS]) + NO_TAGS]) + NO_TAGS),
        Case(28, 3, "response",
             {"throttle_time_ms": 0, "topics": [{"name": "events", "topic_id": ZERO_UUID,
                                                 "partitions": [{"partition_index": 0, "error_code": 0}]}]},
             i32(0) + carr([cstr("events") + carr([i32(0) + i16(0) + NO_TAGS]) + NO_TAGS]) + NO_TAGS),

        # -- DescribeProducers (61) -------------------------------------------------------------------
        Case(61, 0, "request", {"topics": [{"name": "events", "partition_indexes": [0]}]},
             carr([cstr("events") + carr([i32(0)]) + NO_TAGS]) + NO_TAGS),
        Case(61, 0, "response",
             {"throttle_time_ms": 0, "topics": [{"name": "events", "partitions": [
                 {"partition_index": 0, "error_code": 0, "error_message": None, "active_producers": [
                     {"producer_id": 1000, "producer_epoch": 2, "last_sequence": 5, "last_timestamp": -1,
                      "coordinator_epoch": 0, "current_txn_start_offset": 7}]}]}]},
             i32(0) + carr([cstr("events") + carr([i32(0) + i16(0) + NULL + carr([
                 i64(1000) + i32(2) + i32(5) + i64(-1) + i32(0) + i64(7) + NO_TAGS]) + NO_TAGS]) + NO_TAGS]) + NO_TAGS),

        # -- DescribeTransactions (65) ----------------------------------------------------------------
        Case(65, 0, "request", {"transactional_ids": ["tx"]}, carr([cstr("tx")]) + NO_TAGS),
        Case(65, 0, "response",
             {"throttle_time_ms": 0, "transaction_states": [
                 {"error_code": 0, "transactional_id": "tx", "transaction_state": "Ongoing", "transaction_timeout_ms": 60000,
                  "transaction_start_time_ms": 1700000000000, "producer_id": 1000, "producer_epoch": 2,
                  "topics": [{"topic": "events", "partitions": [0]}]}]},
             i32(0) + carr([i16(0) + cstr("tx") + cstr("Ongoing") + i32(60000) + i64(1700000000000) + i64(1000) + i16(2)
                            + carr([cstr("events") + carr([i32(0)]) + NO_TAGS]) + NO_TAGS]) + NO_TAGS),

        # -- CreatePartitions (37) --------------------------------------------------------------------
        Case(37, 1, "request",
             {"topics": [{"name": "events", "count": 4, "assignments": None}], "timeout_ms": 30000, "validate_only": False},
             arr32([str16("events") + i32(4) + i32(-1)]) + i32(30000) + boolean(False)),
        Case(37, 3, "request",
             {"topics": [{"name": "events", "count": 3, "assignments": [{"broker_ids": [1, 2]}]}], "timeout_ms": 5000,
              "validate_only": True},
             carr([cstr("events") + i32(3) + carr([carr([i32(1), i32(2)]) + NO_TAGS]) + NO_TAGS]) + i32(5000) + boolean(True)
             + NO_TAGS),
        Case(37, 3, "response",
             {"throttle_time_ms": 0, "results": [{"name": "events", "error_code": 37,
                                                  "error_message": "Topic already has 3 partition(s)."}]},
             i32(0) + carr([cstr("events") + i16(37) + cstr("Topic already has 3 partition(s).") + NO_TAGS]) + NO_TAGS),

        # -- DeleteRecords (21) ------------------------------------------------------------------------
        Case(21, 1, "request",
             {"topics": [{"name": "events", "partitions": [{"partition_index": 0, "offset": 3}]}], "timeout_ms": 30000},
             arr32([str16("events") + arr32([i32(0) + i64(3)])]) + i32(30000)),
        Case(21, 2, "request",
             {"topics": [{"name": "events", "partitions": [{"partition_index": 1, "offset": -1}]}], "timeout_ms": 5000},
             carr([cstr("events") + carr([i32(1) + i64(-1) + NO_TAGS]) + NO_TAGS]) + i32(5000) + NO_TAGS),
        Case(21, 2, "response",
             {"throttle_time_ms": 0, "topics": [{"name": "events", "partitions": [
                 {"partition_index": 1, "low_watermark": -1, "error_code": 7}]}]},
             i32(0) + carr([cstr("events") + carr([i32(1) + i64(-1) + i16(7) + NO_TAGS]) + NO_TAGS]) + NO_TAGS),

        # -- ListTransactions (66) --------------------------------------------------------------------
        Case(66, 1, "request",
             {"state_filters": ["Ongoing"], "producer_id_filters": [1000], "duration_filter": 5000,
              "transactional_id_pattern": None},
             carr([cstr("Ongoing")]) + carr([i64(1000)]) + i64(5000) + NO_TAGS),
        Case(66, 1, "response",
             {"throttle_time_ms": 0, "error_code": 0, "unknown_state_filters": ["Bogus"],
              "transaction_states": [{"transactional_id": "tx", "producer_id": 1000, "transaction_state": "Ongoing"}]},
             i32(0) + i16(0) + carr([cstr("Bogus")]) + carr([cstr("tx") + i64(1000) + cstr("Ongoing") + NO_TAGS]) + NO_TAGS),

        # -- ConsumerGroupHeartbeat (68) v1: a regex subscription ------------------------------------
        Case(68, 1, "request",
             {"group_id": "g", "member_id": "m", "member_epoch": 0, "instance_id": "i", "rack_id": None,
              "rebalance_timeout_ms": 45000, "subscribed_topic_names": None, "subscribed_topic_regex": "orders-.*",
              "server_assignor": "range", "topic_partitions": []},
             cstr("g") + cstr("m") + i32(0) + cstr("i") + NULL + i32(45000) + NULL + cstr("orders-.*") + cstr("range")
             + carr([]) + NO_TAGS),

        # -- ConsumerGroupDescribe (69) ---------------------------------------------------------------
        Case(69, 1, "request", {"group_ids": ["g", "nope"], "include_authorized_operations": False},
             carr([cstr("g"), cstr("nope")]) + boolean(False) + NO_TAGS),
        Case(69, 1, "response",
             {"throttle_time_ms": 0, "groups": [
                 {"error_code": 0, "error_message": None, "group_id": "g", "group_state": "Stable", "group_epoch": 3,
                  "assignment_epoch": 3, "assignor_name": "uniform", "authorized_operations": -2147483648,
                  "members": [{"member_id": "m", "instance_id": None, "rack_id": None, "member_epoch": 3,
                               "client_id": "c", "client_host": "/127.0.0.1", "subscribed_topic_names": ["t"],
                               "subscribed_topic_regex": None, "member_type": 1,
                               "assignment": {"topic_partitions": [{"topic_id": uuid.UUID(int=0x11), "topic_name": "t",
                                                                    "partitions": [0, 1]}]},
                               "target_assignment": {"topic_partitions": []}}]},
                 {"error_code": 69, "error_message": "Group nope not found.", "group_id": "nope", "group_state": "",
                  "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
                  "authorized_operations": -2147483648}]},
             i32(0) + carr([
                 i16(0) + NULL + cstr("g") + cstr("Stable") + i32(3) + i32(3) + cstr("uniform")
                 + carr([cstr("m") + NULL + NULL + i32(3) + cstr("c") + cstr("/127.0.0.1") + carr([cstr("t")]) + NULL
                         + carr([uuid_(0x11) + cstr("t") + carr([i32(0), i32(1)]) + NO_TAGS]) + NO_TAGS
                         + carr([]) + NO_TAGS + i8(1) + NO_TAGS])
                 + i32(-2147483648) + NO_TAGS,
                 i16(69) + cstr("Group nope not found.") + cstr("nope") + cstr("") + i32(0) + i32(0) + cstr("")
                 + carr([]) + i32(-2147483648) + NO_TAGS]) + NO_TAGS),

        # -- DeleteGroups (42) and OffsetDelete (47) ----------------------------------------------------
        Case(42, 2, "request", {"groups_names": ["g", "busy"]}, carr([cstr("g"), cstr("busy")]) + NO_TAGS),
        Case(42, 2, "response",
             {"throttle_time_ms": 0, "results": [{"group_id": "g", "error_code": 0, "error_message": None},
                                                 {"group_id": "busy", "error_code": 68, "error_message": None}]},
             i32(0) + carr([cstr("g") + i16(0) + NO_TAGS, cstr("busy") + i16(68) + NO_TAGS]) + NO_TAGS),
        Case(42, 1, "response",
             {"throttle_time_ms": 0, "results": [{"group_id": "g", "error_code": 69, "error_message": None}]},
             i32(0) + arr32([str16("g") + i16(69)])),
        Case(47, 0, "request",
             {"group_id": "g", "topics": [{"name": "events", "partitions": [{"partition_index": 0}, {"partition_index": 2}]}]},
             str16("g") + arr32([str16("events") + arr32([i32(0), i32(2)])])),
        Case(47, 0, "response",
             {"error_code": 0, "throttle_time_ms": 0, "topics": [{"name": "events", "partitions": [
                 {"partition_index": 0, "error_code": 0}, {"partition_index": 2, "error_code": 86}]}]},
             i16(0) + i32(0) + arr32([str16("events") + arr32([i32(0) + i16(0), i32(2) + i16(86)])])),

        # -- ElectLeaders (43) ------------------------------------------------------------------------
        Case(43, 2, "request",
             {"election_type": 0, "topic_partitions": [{"topic": "events", "partitions": [0, 1]}], "timeout_ms": 5000},
             i8(0) + carr([cstr("events") + carr([i32(0), i32(1)]) + NO_TAGS]) + i32(5000) + NO_TAGS),
        Case(43, 2, "response",
             {"throttle_time_ms": 0, "error_code": 0, "replica_election_results": [{"topic": "events", "partition_result": [
                 {"partition_id": 0, "error_code": 0, "error_message": None},
                 {"partition_id": 1, "error_code": 84, "error_message": "not needed"}]}]},
             i32(0) + i16(0) + carr([cstr("events") + carr([i32(0) + i16(0) + NULL + NO_TAGS,
                                                             i32(1) + i16(84) + cstr("not needed") + NO_TAGS]) + NO_TAGS])
             + NO_TAGS),
        Case(43, 0, "request", {"election_type": 0, "topic_partitions": None, "timeout_ms": 60000},
             i32(-1) + i32(60000)),

        # -- IncrementalAlterConfigs (44) and AlterConfigs (33) ------------------------------------
        Case(44, 1, "request",
             {"resources": [{"resource_type": 2, "resource_name": "t", "configs": [
                 {"name": "retention.ms", "config_operation": 0, "value": "1000"},
                 {"name": "cleanup.policy", "config_operation": 1, "value": None}]}], "validate_only": False},
             carr([i8(2) + cstr("t") + carr([cstr("retention.ms") + i8(0) + cstr("1000") + NO_TAGS,
                                              cstr("cleanup.policy") + i8(1) + NULL + NO_TAGS]) + NO_TAGS])
             + boolean(False) + NO_TAGS),
        Case(44, 1, "response",
             {"throttle_time_ms": 0, "responses": [
                 {"error_code": 40, "error_message": "bad", "resource_type": 2, "resource_name": "t"}]},
             i32(0) + carr([i16(40) + cstr("bad") + i8(2) + cstr("t") + NO_TAGS]) + NO_TAGS),
        Case(44, 0, "request",
             {"resources": [{"resource_type": 4, "resource_name": "", "configs": [
                 {"name": "message.max.bytes", "config_operation": 0, "value": "2000"}]}], "validate_only": True},
             arr32([i8(4) + str16("") + arr32([str16("message.max.bytes") + i8(0) + str16("2000")])]) + boolean(True)),
        Case(33, 2, "request",
             {"resources": [{"resource_type": 2, "resource_name": "t", "configs": [
                 {"name": "retention.ms", "value": "5000"}]}], "validate_only": False},
             carr([i8(2) + cstr("t") + carr([cstr("retention.ms") + cstr("5000") + NO_TAGS]) + NO_TAGS])
             + boolean(False) + NO_TAGS),
        Case(33, 0, "response",
             {"throttle_time_ms": 0, "responses": [
                 {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "t"}]},
             i32(0) + arr32([i16(0) + str16(None) + i8(2) + str16("t")])),

        # -- AlterClientQuotas (49) and DescribeClientQuotas (48) -----------------------------------
        Case(49, 1, "request",
             {"entries": [{"entity": [{"entity_type": "client-id", "entity_name": None}],
                           "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}], "validate_only": False},
             carr([carr([cstr("client-id") + NULL + NO_TAGS]) + carr([cstr("producer_byte_rate") + F64_1024 + boolean(False)
                                                                     + NO_TAGS]) + NO_TAGS]) + boolean(False) + NO_TAGS),
        Case(49, 1, "response",
             {"throttle_time_ms": 0, "entries": [{"error_code": 42, "error_message": "bad",
                                                   "entity": [{"entity_type": "client-id", "entity_name": "p"}]}]},
             i32(0) + carr([i16(42) + cstr("bad") + carr([cstr("client-id") + cstr("p") + NO_TAGS]) + NO_TAGS]) + NO_TAGS),
        Case(48, 1, "request",
             {"components": [{"entity_type": "client-id", "match_type": 2, "match": None}], "strict": False},
             carr([cstr("client-id") + i8(2) + NULL + NO_TAGS]) + boolean(False) + NO_TAGS),
        Case(48, 1, "response",
             {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "entries": [
                 {"entity": [{"entity_type": "client-id", "entity_name": "p"}],
                  "values": [{"key": "producer_byte_rate", "value": 1024.0}]}]},
             i32(0) + i16(0) + NULL + carr([carr([cstr("client-id") + cstr("p") + NO_TAGS])
                                            + carr([cstr("producer_byte_rate") + F64_1024 + NO_TAGS]) + NO_TAGS]) + NO_TAGS),

        # -- DescribeLogDirs (35) -------------------------------------------------------------------
        Case(35, 4, "request", {"topics": None}, NULL + NO_TAGS),

        # -- AlterPartitionReassignments (45), ListPartitionReassignments (46) ---------------------
        Case(45, 1, "request",
             {"timeout_ms": 60000, "allow_replication_factor_change": False, "topics": [
                 {"name": "t", "partitions": [{"partition_index": 0, "replicas": [1, 2]},
                                              {"partition_index": 1, "replicas": None}]}]},
             i32(60000) + boolean(False) + carr([cstr("t") + carr([i32(0) + carr([i32(1), i32(2)]) + NO_TAGS,
                                                                   i32(1) + NULL + NO_TAGS]) + NO_TAGS]) + NO_TAGS),
        Case(45, 0, "response",
             {"throttle_time_ms": 0, "allow_replication_factor_change": True, "error_code": 0, "error_message": None,
              "responses": [{"name": "t", "partitions": [{"partition_index": 1, "error_code": 85, "error_message": None}]}]},
             i32(0) + i16(0) + NULL + carr([cstr("t") + carr([i32(1) + i16(85) + NULL + NO_TAGS]) + NO_TAGS]) + NO_TAGS),
        Case(46, 0, "request", {"timeout_ms": 60000, "topics": None}, i32(60000) + NULL + NO_TAGS),
        Case(46, 0, "response",
             {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": [{"name": "t", "partitions": [
                 {"partition_index": 0, "replicas": [1, 2, 0], "adding_replicas": [1, 2], "removing_replicas": [0]}]}]},
             i32(0) + i16(0) + NULL + carr([cstr("t") + carr([i32(0) + carr([i32(1), i32(2), i32(0)])
                                                              + carr([i32(1), i32(2)]) + carr([i32(0)]) + NO_TAGS])
                                            + NO_TAGS]) + NO_TAGS),
        Case(35, 4, "response",
             {"throttle_time_ms": 0, "error_code": 0, "results": [
                 {"error_code": 0, "log_dir": "/d", "topics": [{"name": "t", "partitions": [
                     {"partition_index": 0, "partition_size": 100, "offset_lag": 1, "is_future_key": False}]}],
                  "total_bytes": 1000, "usable_bytes": 900, "is_cordoned": False}]},
             i32(0) + i16(0) + carr([i16(0) + cstr("/d") + carr([cstr("t") + carr([i32(0) + i64(100) + i64(1)
                                                                                    + boolean(False) + NO_TAGS]) + NO_TAGS])
                                     + i64(1000) + i64(900) + NO_TAGS]) + NO_TAGS),

        # -- DescribeAcls (29), CreateAcls (30), DeleteAcls (31) ----------------------------------
        Case(29, 3, "request",
             {"resource_type_filter": 2, "resource_name_filter": "t", "pattern_type_filter": 2, "principal_filter": None,
              "host_filter": None, "operation": 1, "permission_type": 1},
             i8(2) + cstr("t") + i8(2) + NULL + NULL + i8(1) + i8(1) + NO_TAGS),
        Case(29, 3, "response",
             {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "resources": [
                 {"resource_type": 2, "resource_name": "t", "pattern_type": 3,
                  "acls": [{"principal": "User:a", "host": "*", "operation": 3, "permission_type": 3}]}]},
             i32(0) + i16(0) + NULL + carr([i8(2) + cstr("t") + i8(3) + carr([cstr("User:a") + cstr("*") + i8(3) + i8(3)
                                                                            + NO_TAGS]) + NO_TAGS]) + NO_TAGS),
        Case(30, 3, "request",
             {"creations": [{"resource_type": 2, "resource_name": "p-", "resource_pattern_type": 4, "principal": "User:a",
                             "host": "*", "operation": 4, "permission_type": 2}]},
             carr([i8(2) + cstr("p-") + i8(4) + cstr("User:a") + cstr("*") + i8(4) + i8(2) + NO_TAGS]) + NO_TAGS),
        Case(30, 3, "response",
             {"throttle_time_ms": 0, "results": [{"error_code": 42, "error_message": "Invalid empty resource name"}]},
             i32(0) + carr([i16(42) + cstr("Invalid empty resource name") + NO_TAGS]) + NO_TAGS),
        Case(31, 3, "request",
             {"filters": [{"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                           "principal_filter": "User:a", "host_filter": None, "operation": 1, "permission_type": 1}]},
             carr([i8(1) + NULL + i8(1) + cstr("User:a") + NULL + i8(1) + i8(1) + NO_TAGS]) + NO_TAGS),
        Case(31, 3, "response",
             {"throttle_time_ms": 0, "filter_results": [{"error_code": 0, "error_message": None, "matching_acls": [
                 {"error_code": 0, "error_message": None, "resource_type": 3, "resource_name": "g", "pattern_type": 3,
                  "principal": "User:a", "host": "*", "operation": 3, "permission_type": 3}]}]},
             i32(0) + carr([i16(0) + NULL + carr([i16(0) + NULL + i8(3) + cstr("g") + i8(3) + cstr("User:a") + cstr("*")
                                                 + i8(3) + i8(3) + NO_TAGS]) + NO_TAGS]) + NO_TAGS),

        # -- DescribeUserScramCredentials (50), AlterUserScramCredentials (51) --------------------
        Case(50, 0, "request", {"users": None}, NULL + NO_TAGS),
        Case(50, 0, "response",
             {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": [
                 {"user": "u", "error_code": 0, "error_message": None, "credential_infos": [{"mechanism": 2, "iterations": 4096}]}]},
             i32(0) + i16(0) + NULL + carr([cstr("u") + i16(0) + NULL + carr([i8(2) + i32(4096) + NO_TAGS]) + NO_TAGS])
             + NO_TAGS),
        Case(51, 0, "request",
             {"deletions": [{"name": "a", "mechanism": 1}],
              "upsertions": [{"name": "b", "mechanism": 2, "iterations": 8192, "salt": b"s", "salted_password": b"pw"}]},
             carr([cstr("a") + i8(1) + NO_TAGS]) + carr([cstr("b") + i8(2) + i32(8192) + cbytes(b"s") + cbytes(b"pw")
                                                         + NO_TAGS]) + NO_TAGS),
        Case(51, 0, "response",
             {"throttle_time_ms": 0, "results": [{"user": "b", "error_code": 93, "error_message": "Too few iterations"}]},
             i32(0) + carr([cstr("b") + i16(93) + cstr("Too few iterations") + NO_TAGS]) + NO_TAGS),
    ]
