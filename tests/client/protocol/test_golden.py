"""Golden bytes, worked out by hand from the schemas, for a request and a response of every API,
both request headers (v1, v2), both response headers (v0, v1; ApiVersions always v0), and the
consumer-protocol blobs.

Each case gives the full decoded value (every field of the schema, the ones absent from that
version at their defaults — read off the JSON by hand) and the body bytes, spelled field by
field with the helpers in ``strategies`` (int16, compact string, uvarint, tagged section...).
Nothing here is produced by our encoder. The tests check encode == golden (whole frames, size
prefix and header included), decode(golden) == value, and that leaving out every field that
holds its default encodes to the same bytes.
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

import pytest

from client.protocol.codec import (
    decode_consumer_blob,
    decode_request,
    decode_request_header,
    decode_response,
    encode_consumer_blob,
    encode_request,
    encode_response,
)
from client.protocol.messages import ALL_APIS
from tests.client.protocol.golden_share import FLEXIBLE_FROM_SHARE, share_cases
from tests.client.protocol.golden_txn import FLEXIBLE_FROM_TXN, txn_cases
from tests.client.protocol.strategies import (
    BLOBS,
    NO_TAGS,
    arr32,
    boolean,
    bytes32,
    cbytes,
    cstr,
    default,
    i8,
    i16,
    i32,
    i64,
    message_fields,
    on_wire,
    str16,
    tags,
    uuid_,
    uvarint,
)

NULL = b"\x00"  # compact null: string, bytes or array
MIN_I32 = -(2**31)  # Kafka's "authorized operations not requested"
ZERO = uuid.UUID(int=0)


def U(n: int) -> uuid.UUID:
    return uuid.UUID(int=n)


# Versions from which each API is flexible (its flexibleVersions in Kafka's message JSON), where
# request header v2 starts.
FLEXIBLE_FROM = {0: 9, 1: 12, 2: 6, 3: 9, 8: 8, 9: 6, 10: 3, 11: 6, 12: 4, 13: 4, 14: 4, 15: 5, 16: 3, 17: None,
                 18: 3, 19: 5, 20: 4, 22: 2, 23: 4, 32: 4, 36: 2, 60: 0, 68: 0, 71: 0}

# Consumer-protocol blobs used inside JoinGroup and SyncGroup (they are opaque bytes there).
SUBSCRIPTION_V0 = i16(0) + arr32([str16("events")]) + bytes32(None)
ASSIGNMENT_V0 = i16(0) + arr32([str16("events") + arr32([i32(0), i32(1)])]) + bytes32(None)
RECORDS = bytes(range(200))  # opaque to the codec; 200 bytes make the compact length two bytes


class Case(NamedTuple):
    key: int
    version: int
    direction: str
    value: dict
    body: bytes

    @property
    def id(self) -> str:
        return f"{ALL_APIS[self.key].name}-v{self.version}-{self.direction}"


CASES = [
    # -- Produce (0) --------------------------------------------------------------------------
    Case(0, 9, "request",
         {"transactional_id": "tx", "acks": -1, "timeout_ms": 30000, "topic_data": [
             {"name": "events", "partition_data": [{"index": 2, "records": RECORDS}, {"index": 3, "records": None}]}]},
         cstr("tx") + i16(-1) + i32(30000)
         + uvarint(2) + cstr("events")
         + uvarint(3) + i32(2) + b"\xc9\x01" + RECORDS + NO_TAGS  # 201 = 0x49 | 0x80, then 0x01
         + i32(3) + NULL + NO_TAGS
         + NO_TAGS + NO_TAGS),
    Case(0, 3, "request",  # classic: null transactional id (int16 -1), null records (int32 -1)
         {"transactional_id": None, "acks": 1, "timeout_ms": 1500, "topic_data": [
             {"name": "t", "partition_data": [{"index": 0, "records": None}, {"index": 1, "records": b"RB"}]}]},
         b"\xff\xff" + i16(1) + i32(1500) + i32(1) + str16("t") + i32(2)
         + i32(0) + b"\xff\xff\xff\xff" + i32(1) + i32(2) + b"RB"),
    Case(0, 10, "response",
         {"responses": [{"name": "events", "partition_responses": [
             {"index": 2, "error_code": 6, "base_offset": -1, "log_append_time_ms": -1, "log_start_offset": -1,
              "record_errors": [], "error_message": None, "current_leader": {"leader_id": 3, "leader_epoch": 7}}]}],
          "throttle_time_ms": 0,
          "node_endpoints": [{"node_id": 3, "host": "b3", "port": 9092, "rack": None}]},
         uvarint(2) + cstr("events") + uvarint(2)
         + i32(2) + i16(6) + i64(-1) + i64(-1) + i64(-1) + uvarint(1) + NULL
         + tags({0: i32(3) + i32(7) + NO_TAGS})  # current_leader, a struct with its own tag section
         + NO_TAGS
         + i32(0)
         + tags({0: uvarint(2) + i32(3) + cstr("b3") + i32(9092) + NULL + NO_TAGS})),
    Case(0, 8, "response",  # classic: record errors and error messages
         {"responses": [{"name": "t", "partition_responses": [
             {"index": 0, "error_code": 87, "base_offset": -1, "log_append_time_ms": -1, "log_start_offset": 0,
              "record_errors": [{"batch_index": 1, "batch_index_error_message": None}],
              "error_message": "bad record", "current_leader": {"leader_id": -1, "leader_epoch": -1}}]}],
          "throttle_time_ms": 20, "node_endpoints": []},
         i32(1) + str16("t") + i32(1) + i32(0) + i16(87) + i64(-1) + i64(-1) + i64(0)
         + i32(1) + i32(1) + i16(-1) + str16("bad record") + i32(20)),

    # Produce v0-2: gone from Kafka 4.0 (KIP-896), so kio cannot cross-check them; spelled out here
    Case(0, 0, "request",
         {"transactional_id": None, "acks": 0, "timeout_ms": 100,
          "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"R"}]}]},
         i16(0) + i32(100) + i32(1) + str16("t") + i32(1) + i32(0) + i32(1) + b"R"),
    Case(0, 0, "response",
         {"responses": [{"name": "t", "partition_responses": [
             {"index": 0, "error_code": 0, "base_offset": 5, "log_append_time_ms": -1, "log_start_offset": -1,
              "record_errors": [], "error_message": None, "current_leader": {"leader_id": -1, "leader_epoch": -1}}]}],
          "throttle_time_ms": 0, "node_endpoints": []},
         i32(1) + str16("t") + i32(1) + i32(0) + i16(0) + i64(5)),
    Case(0, 2, "response",  # log_append_time_ms from v2, throttle_time_ms (v1+) after the responses
         {"responses": [{"name": "t", "partition_responses": [
             {"index": 0, "error_code": 0, "base_offset": 5, "log_append_time_ms": 1700000000000,
              "log_start_offset": -1, "record_errors": [], "error_message": None,
              "current_leader": {"leader_id": -1, "leader_epoch": -1}}]}],
          "throttle_time_ms": 10, "node_endpoints": []},
         i32(1) + str16("t") + i32(1) + i32(0) + i16(0) + i64(5) + i64(1700000000000) + i32(10)),

    # -- Fetch (1) ----------------------------------------------------------------------------
    Case(1, 12, "request",
         {"cluster_id": "kc1", "replica_id": -1, "replica_state": {"replica_id": -1, "replica_epoch": -1},
          "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52428800, "isolation_level": 1, "session_id": 0,
          "session_epoch": -1,
          "topics": [{"topic": "events", "topic_id": ZERO, "partitions": [
              {"partition": 0, "current_leader_epoch": 4, "fetch_offset": 100, "last_fetched_epoch": 3,
               "log_start_offset": -1, "partition_max_bytes": 1048576, "replica_directory_id": ZERO}]}],
          "forgotten_topics_data": [{"topic": "old", "topic_id": ZERO, "partitions": [1, 2]}],
          "rack_id": "rack-a"},
         i32(-1) + i32(500) + i32(1) + i32(52428800) + i8(1) + i32(0) + i32(-1)
         + uvarint(2) + cstr("events") + uvarint(2)
         + i32(0) + i32(4) + i64(100) + i32(3) + i64(-1) + i32(1048576) + NO_TAGS
         + NO_TAGS
         + uvarint(2) + cstr("old") + uvarint(3) + i32(1) + i32(2) + NO_TAGS
         + cstr("rack-a")
         + tags({0: cstr("kc1")})),  # cluster_id is tagged (tag 0) from v12
    Case(1, 12, "response",
         {"throttle_time_ms": 0, "error_code": 0, "session_id": 77, "responses": [
             {"topic": "events", "topic_id": ZERO, "partitions": [
                 {"partition_index": 0, "error_code": 0, "high_watermark": 60, "last_stable_offset": 60,
                  "log_start_offset": 0, "diverging_epoch": {"epoch": 2, "end_offset": 50},
                  "current_leader": {"leader_id": -1, "leader_epoch": -1},
                  "snapshot_id": {"end_offset": -1, "epoch": -1},
                  "aborted_transactions": None, "preferred_read_replica": -1, "records": None},
                 {"partition_index": 1, "error_code": 0, "high_watermark": 12, "last_stable_offset": 11,
                  "log_start_offset": 0, "diverging_epoch": {"epoch": -1, "end_offset": -1},
                  "current_leader": {"leader_id": -1, "leader_epoch": -1},
                  "snapshot_id": {"end_offset": -1, "epoch": -1},
                  "aborted_transactions": [{"producer_id": 9, "first_offset": 10}],
                  "preferred_read_replica": -1, "records": b"BATCH"}]}],
          "node_endpoints": []},
         i32(0) + i16(0) + i32(77)
         + uvarint(2) + cstr("events") + uvarint(3)
         + i32(0) + i16(0) + i64(60) + i64(60) + i64(0) + NULL + i32(-1) + NULL
         + tags({0: i32(2) + i64(50) + NO_TAGS})  # diverging_epoch; the default ones are not written
         + i32(1) + i16(0) + i64(12) + i64(11) + i64(0)
         + uvarint(2) + i64(9) + i64(10) + NO_TAGS + i32(-1) + cbytes(b"BATCH") + NO_TAGS
         + NO_TAGS + NO_TAGS),

    # -- ListOffsets (2) ----------------------------------------------------------------------
    Case(2, 7, "request",
         {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "events", "partitions": [
             {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -2, "max_num_offsets": 1},
             {"partition_index": 1, "current_leader_epoch": 5, "timestamp": -1, "max_num_offsets": 1}]}],
          "timeout_ms": 0},
         i32(-1) + i8(0) + uvarint(2) + cstr("events") + uvarint(3)
         + i32(0) + i32(-1) + i64(-2) + NO_TAGS + i32(1) + i32(5) + i64(-1) + NO_TAGS + NO_TAGS + NO_TAGS),
    Case(2, 7, "response",
         {"throttle_time_ms": 0, "topics": [{"name": "events", "partitions": [
             {"partition_index": 0, "error_code": 0, "old_style_offsets": [], "timestamp": -1, "offset": 42,
              "leader_epoch": 5}]}]},
         i32(0) + uvarint(2) + cstr("events") + uvarint(2)
         + i32(0) + i16(0) + i64(-1) + i64(42) + i32(5) + NO_TAGS + NO_TAGS + NO_TAGS),

    Case(2, 0, "request",  # v0 only: max_num_offsets
         {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "t", "partitions": [
             {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1, "max_num_offsets": 3}]}],
          "timeout_ms": 0},
         i32(-1) + i32(1) + str16("t") + i32(1) + i32(0) + i64(-1) + i32(3)),
    Case(2, 0, "response",  # v0 only: old_style_offsets, an int64 array
         {"throttle_time_ms": 0, "topics": [{"name": "t", "partitions": [
             {"partition_index": 0, "error_code": 0, "old_style_offsets": [10, 0], "timestamp": -1, "offset": -1,
              "leader_epoch": -1}]}]},
         i32(1) + str16("t") + i32(1) + i32(0) + i16(0) + i32(2) + i64(10) + i64(0)),

    # -- Metadata (3) -------------------------------------------------------------------------
    Case(3, 12, "request",  # by topic id, name null
         {"topics": [{"topic_id": U(0x0123456789ABCDEF0123456789ABCDEF), "name": None},
                     {"topic_id": ZERO, "name": "events"}],
          "allow_auto_topic_creation": False, "include_cluster_authorized_operations": False,
          "include_topic_authorized_operations": True},
         uvarint(3)
         + bytes.fromhex("0123456789abcdef0123456789abcdef") + NULL + NO_TAGS
         + bytes(16) + cstr("events") + NO_TAGS
         + boolean(False) + boolean(True) + NO_TAGS),
    Case(3, 1, "request",  # classic null array: all topics
         {"topics": None, "allow_auto_topic_creation": True, "include_cluster_authorized_operations": False,
          "include_topic_authorized_operations": False},
         b"\xff\xff\xff\xff"),
    Case(3, 9, "request",  # compact null array
         {"topics": None, "allow_auto_topic_creation": True, "include_cluster_authorized_operations": False,
          "include_topic_authorized_operations": False},
         NULL + boolean(True) + boolean(False) + boolean(False) + NO_TAGS),
    Case(3, 12, "response",
         {"throttle_time_ms": 0,
          "brokers": [{"node_id": 1, "host": "localhost", "port": 9092, "rack": None},
                      {"node_id": 2, "host": "h2", "port": 9093, "rack": "r2"}],
          "cluster_id": "cluster-ü", "controller_id": 1,
          "topics": [{"error_code": 0, "name": "events", "topic_id": U(0xF00D), "is_internal": False,
                      "partitions": [{"error_code": 0, "partition_index": 0, "leader_id": 1, "leader_epoch": 3,
                                      "replica_nodes": [1, 2], "isr_nodes": [1], "offline_replicas": []}],
                      "topic_authorized_operations": MIN_I32},
                     {"error_code": 100, "name": None, "topic_id": U(7), "is_internal": False, "partitions": [],
                      "topic_authorized_operations": MIN_I32}],
          "cluster_authorized_operations": MIN_I32, "error_code": 0},
         i32(0)
         + uvarint(3) + i32(1) + cstr("localhost") + i32(9092) + NULL + NO_TAGS
         + i32(2) + cstr("h2") + i32(9093) + cstr("r2") + NO_TAGS
         + b"\x0bcluster-\xc3\xbc"  # 10 bytes of UTF-8 ("ü" takes two), + 1
         + i32(1)
         + uvarint(3)
         + i16(0) + cstr("events") + uuid_(0xF00D) + boolean(False)
         + uvarint(2) + i16(0) + i32(0) + i32(1) + i32(3) + uvarint(3) + i32(1) + i32(2) + uvarint(2) + i32(1)
         + uvarint(1) + NO_TAGS
         + i32(MIN_I32) + NO_TAGS
         + i16(100) + NULL + uuid_(7) + boolean(False) + uvarint(1) + i32(MIN_I32) + NO_TAGS
         + NO_TAGS),
    Case(3, 13, "response",  # KIP-1102: the top-level ErrorCode, here REBOOTSTRAP_REQUIRED, after the topics
         {"throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": -1, "topics": [],
          "cluster_authorized_operations": MIN_I32, "error_code": 129},
         i32(0) + uvarint(1) + NULL + i32(-1) + uvarint(1) + i16(129) + NO_TAGS),

    # -- OffsetCommit (8) ---------------------------------------------------------------------
    Case(8, 8, "request",
         {"group_id": "g", "generation_id_or_member_epoch": 4, "member_id": "m-1", "group_instance_id": None,
          "retention_time_ms": -1, "topics": [{"name": "events", "partitions": [
              {"partition_index": 0, "committed_offset": 100, "committed_leader_epoch": 2, "commit_timestamp": -1,
               "committed_metadata": ""},
              {"partition_index": 1, "committed_offset": 7, "committed_leader_epoch": -1, "commit_timestamp": -1,
               "committed_metadata": None}]}]},
         cstr("g") + i32(4) + cstr("m-1") + NULL
         + uvarint(2) + cstr("events") + uvarint(3)
         + i32(0) + i64(100) + i32(2) + b"\x01" + NO_TAGS  # "" is length 0 + 1
         + i32(1) + i64(7) + i32(-1) + NULL + NO_TAGS
         + NO_TAGS + NO_TAGS),
    Case(8, 8, "response",
         {"throttle_time_ms": 0, "topics": [{"name": "events", "partitions": [
             {"partition_index": 0, "error_code": 0}, {"partition_index": 1, "error_code": 22}]}]},
         i32(0) + uvarint(2) + cstr("events") + uvarint(3)
         + i32(0) + i16(0) + NO_TAGS + i32(1) + i16(22) + NO_TAGS + NO_TAGS + NO_TAGS),

    # -- OffsetFetch (9) ----------------------------------------------------------------------
    Case(9, 8, "request",
         {"group_id": "", "topics": [], "require_stable": True, "groups": [
             {"group_id": "g1", "member_id": None, "member_epoch": -1,
              "topics": [{"name": "events", "partition_indexes": [0, 1]}]},
             {"group_id": "g2", "member_id": None, "member_epoch": -1, "topics": None}]},
         uvarint(3)
         + cstr("g1") + uvarint(2) + cstr("events") + uvarint(3) + i32(0) + i32(1) + NO_TAGS + NO_TAGS
         + cstr("g2") + NULL + NO_TAGS
         + boolean(True) + NO_TAGS),
    Case(9, 8, "response",
         {"throttle_time_ms": 0, "topics": [], "error_code": 0, "groups": [
             {"group_id": "g1", "error_code": 0, "topics": [{"name": "events", "partitions": [
                 {"partition_index": 0, "committed_offset": 100, "committed_leader_epoch": 2, "metadata": "m",
                  "error_code": 0}]}]}]},
         i32(0) + uvarint(2) + cstr("g1") + uvarint(2) + cstr("events") + uvarint(2)
         + i32(0) + i64(100) + i32(2) + cstr("m") + i16(0) + NO_TAGS + NO_TAGS
         + i16(0) + NO_TAGS + NO_TAGS),

    # -- FindCoordinator (10) -----------------------------------------------------------------
    Case(10, 4, "request",
         {"key": "", "key_type": 0, "coordinator_keys": ["g1", "g2"]},
         i8(0) + uvarint(3) + cstr("g1") + cstr("g2") + NO_TAGS),
    Case(10, 4, "response",
         {"throttle_time_ms": 0, "error_code": 0, "error_message": "", "node_id": 0, "host": "", "port": 0,
          "coordinators": [
              {"key": "g1", "node_id": 1, "host": "b1", "port": 9092, "error_code": 0, "error_message": None},
              {"key": "g2", "node_id": -1, "host": "", "port": -1, "error_code": 15,
               "error_message": "The coordinator is not available."}]},
         i32(0) + uvarint(3)
         + cstr("g1") + i32(1) + cstr("b1") + i32(9092) + i16(0) + NULL + NO_TAGS
         + cstr("g2") + i32(-1) + b"\x01" + i32(-1) + i16(15) + cstr("The coordinator is not available.") + NO_TAGS
         + NO_TAGS),
    Case(10, 1, "response",  # classic nullable string, null
         {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "node_id": 1, "host": "b1", "port": 9092,
          "coordinators": []},
         i32(0) + i16(0) + b"\xff\xff" + i32(1) + str16("b1") + i32(9092)),

    # -- JoinGroup (11) -----------------------------------------------------------------------
    Case(11, 6, "request",
         {"group_id": "g", "session_timeout_ms": 45000, "rebalance_timeout_ms": 300000, "member_id": "",
          "group_instance_id": None, "protocol_type": "consumer",
          "protocols": [{"name": "range", "metadata": SUBSCRIPTION_V0},
                        {"name": "cooperative-sticky", "metadata": b""}],
          "reason": None},
         cstr("g") + i32(45000) + i32(300000) + b"\x01" + NULL + cstr("consumer")
         + uvarint(3) + cstr("range") + cbytes(SUBSCRIPTION_V0) + NO_TAGS
         + cstr("cooperative-sticky") + b"\x01" + NO_TAGS
         + NO_TAGS),
    Case(11, 6, "response",
         {"throttle_time_ms": 0, "error_code": 0, "generation_id": 1, "protocol_type": None, "protocol_name": "range",
          "leader": "m-1", "skip_assignment": False, "member_id": "m-1",
          "members": [{"member_id": "m-1", "group_instance_id": None, "metadata": SUBSCRIPTION_V0},
                      {"member_id": "m-2", "group_instance_id": "i-2", "metadata": b"\x00"}]},
         i32(0) + i16(0) + i32(1) + cstr("range") + cstr("m-1") + cstr("m-1")
         + uvarint(3) + cstr("m-1") + NULL + cbytes(SUBSCRIPTION_V0) + NO_TAGS
         + cstr("m-2") + cstr("i-2") + b"\x02\x00" + NO_TAGS
         + NO_TAGS),

    # -- Heartbeat (12) -----------------------------------------------------------------------
    Case(12, 4, "request",
         {"group_id": "g", "generation_id": 1, "member_id": "m-1", "group_instance_id": "i-1"},
         cstr("g") + i32(1) + cstr("m-1") + cstr("i-1") + NO_TAGS),
    Case(12, 0, "request",
         {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None},
         b"\x00\x01g" + i32(1) + b"\x00\x01m"),
    Case(12, 4, "response",
         {"throttle_time_ms": 0, "error_code": 27},
         i32(0) + i16(27) + NO_TAGS),

    # -- LeaveGroup (13) ----------------------------------------------------------------------
    Case(13, 5, "request",
         {"group_id": "g", "member_id": "", "members": [
             {"member_id": "m-1", "group_instance_id": None, "reason": "the consumer is being closed"}]},
         cstr("g") + uvarint(2) + cstr("m-1") + NULL + cstr("the consumer is being closed") + NO_TAGS + NO_TAGS),
    Case(13, 5, "response",
         {"throttle_time_ms": 0, "error_code": 0, "members": [
             {"member_id": "m-1", "group_instance_id": None, "error_code": 0}]},
         i32(0) + i16(0) + uvarint(2) + cstr("m-1") + NULL + i16(0) + NO_TAGS + NO_TAGS),

    # -- SyncGroup (14) -----------------------------------------------------------------------
    Case(14, 5, "request",
         {"group_id": "g", "generation_id": 1, "member_id": "m-1", "group_instance_id": None,
          "protocol_type": "consumer", "protocol_name": "range",
          "assignments": [{"member_id": "m-1", "assignment": ASSIGNMENT_V0}]},
         cstr("g") + i32(1) + cstr("m-1") + NULL + cstr("consumer") + cstr("range")
         + uvarint(2) + cstr("m-1") + cbytes(ASSIGNMENT_V0) + NO_TAGS + NO_TAGS),
    Case(14, 5, "response",
         {"throttle_time_ms": 0, "error_code": 0, "protocol_type": "consumer", "protocol_name": "range",
          "assignment": ASSIGNMENT_V0},
         i32(0) + i16(0) + cstr("consumer") + cstr("range") + cbytes(ASSIGNMENT_V0) + NO_TAGS),

    # -- DescribeGroups (15) ------------------------------------------------------------------
    Case(15, 5, "request",
         {"groups": ["g"], "include_authorized_operations": True},
         uvarint(2) + cstr("g") + boolean(True) + NO_TAGS),
    Case(15, 5, "response",
         {"throttle_time_ms": 0, "groups": [
             {"error_code": 0, "group_id": "g", "group_state": "Stable", "protocol_type": "consumer",
              "protocol_data": "range", "authorized_operations": MIN_I32,
              "members": [{"member_id": "m-1", "group_instance_id": None, "client_id": "c",
                           "client_host": "/127.0.0.1", "member_metadata": b"M", "member_assignment": b"A"}]}]},
         i32(0) + uvarint(2)
         + i16(0) + cstr("g") + cstr("Stable") + cstr("consumer") + cstr("range")
         + uvarint(2) + cstr("m-1") + NULL + cstr("c") + cstr("/127.0.0.1") + cbytes(b"M") + cbytes(b"A") + NO_TAGS
         + i32(MIN_I32) + NO_TAGS + NO_TAGS),

    # -- ListGroups (16) ----------------------------------------------------------------------
    Case(16, 5, "request",
         {"states_filter": ["Stable", "Empty"], "types_filter": ["classic"]},
         uvarint(3) + cstr("Stable") + cstr("Empty") + uvarint(2) + cstr("classic") + NO_TAGS),
    Case(16, 5, "response",
         {"throttle_time_ms": 0, "error_code": 0, "groups": [
             {"group_id": "g", "protocol_type": "consumer", "group_state": "Stable", "group_type": "classic"}]},
         i32(0) + i16(0) + uvarint(2) + cstr("g") + cstr("consumer") + cstr("Stable") + cstr("classic")
         + NO_TAGS + NO_TAGS),

    # -- SaslHandshake (17), never flexible -------------------------------------------------------
    Case(17, 1, "request", {"mechanism": "PLAIN"}, b"\x00\x05PLAIN"),
    Case(17, 1, "response",
         {"error_code": 33, "mechanisms": ["PLAIN", "SCRAM-SHA-256"]},
         i16(33) + i32(2) + str16("PLAIN") + str16("SCRAM-SHA-256")),

    # -- ApiVersions (18) ---------------------------------------------------------------------
    Case(18, 3, "request",
         {"client_software_name": "broker-emu", "client_software_version": "0.1.0"},
         b"\x0bbroker-emu" + b"\x060.1.0" + NO_TAGS),
    Case(18, 0, "response",
         {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}],
          "throttle_time_ms": 0, "supported_features": [], "finalized_features_epoch": -1,
          "finalized_features": [], "zk_migration_ready": False},
         i16(35) + i32(1) + i16(18) + i16(0) + i16(4)),
    Case(18, 3, "response",
         {"error_code": 0, "api_keys": [{"api_key": 0, "min_version": 0, "max_version": 11},
                                        {"api_key": 18, "min_version": 0, "max_version": 4}],
          "throttle_time_ms": 0,
          "supported_features": [{"name": "metadata.version", "min_version": 1, "max_version": 21}],
          "finalized_features_epoch": 3,
          "finalized_features": [{"name": "metadata.version", "max_version_level": 21, "min_version_level": 21}],
          "zk_migration_ready": False},
         i16(0) + uvarint(3) + i16(0) + i16(0) + i16(11) + NO_TAGS + i16(18) + i16(0) + i16(4) + NO_TAGS + i32(0)
         + b"\x03"  # three tagged fields; zk_migration_ready is at its default and not written
         + b"\x00\x17" + uvarint(2) + cstr("metadata.version") + i16(1) + i16(21) + NO_TAGS  # tag 0, 23 bytes
         + b"\x01\x08" + i64(3)  # tag 1, 8 bytes
         + b"\x02\x17" + uvarint(2) + cstr("metadata.version") + i16(21) + i16(21) + NO_TAGS),  # tag 2

    # -- CreateTopics (19) --------------------------------------------------------------------
    Case(19, 7, "request",
         {"topics": [{"name": "events", "num_partitions": 3, "replication_factor": 1, "assignments": [],
                      "configs": [{"name": "cleanup.policy", "value": "compact"},
                                  {"name": "retention.ms", "value": None}]},
                     {"name": "manual", "num_partitions": -1, "replication_factor": -1,
                      "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}], "configs": []}],
          "timeout_ms": 30000, "validate_only": False},
         uvarint(3)
         + cstr("events") + i32(3) + i16(1) + uvarint(1)
         + uvarint(3) + cstr("cleanup.policy") + cstr("compact") + NO_TAGS + cstr("retention.ms") + NULL + NO_TAGS
         + NO_TAGS
         + cstr("manual") + i32(-1) + i16(-1) + uvarint(2) + i32(0) + uvarint(3) + i32(1) + i32(2) + NO_TAGS
         + uvarint(1) + NO_TAGS
         + i32(30000) + boolean(False) + NO_TAGS),
    Case(19, 7, "response",
         {"throttle_time_ms": 0, "topics": [
             {"name": "events", "topic_id": U(0xABC), "error_code": 0, "error_message": None,
              "topic_config_error_code": 0, "num_partitions": 3, "replication_factor": 1,
              "configs": [{"name": "cleanup.policy", "value": "compact", "read_only": False, "config_source": 1,
                           "is_sensitive": False}]},
             {"name": "bad", "topic_id": ZERO, "error_code": 40, "error_message": "Invalid config",
              "topic_config_error_code": 40, "num_partitions": -1, "replication_factor": -1, "configs": None}]},
         i32(0) + uvarint(3)
         + cstr("events") + uuid_(0xABC) + i16(0) + NULL + i32(3) + i16(1)
         + uvarint(2) + cstr("cleanup.policy") + cstr("compact") + boolean(False) + i8(1) + boolean(False) + NO_TAGS
         + NO_TAGS
         + cstr("bad") + bytes(16) + i16(40) + cstr("Invalid config") + i32(-1) + i16(-1) + NULL
         + tags({0: i16(40)})  # topic_config_error_code
         + NO_TAGS),

    # -- DeleteTopics (20) --------------------------------------------------------------------
    Case(20, 6, "request",
         {"topics": [{"name": "events", "topic_id": ZERO}, {"name": None, "topic_id": U(5)}],
          "topic_names": [], "timeout_ms": 30000},
         uvarint(3) + cstr("events") + bytes(16) + NO_TAGS + NULL + uuid_(5) + NO_TAGS + i32(30000) + NO_TAGS),
    Case(20, 6, "response",
         {"throttle_time_ms": 0, "responses": [
             {"name": "events", "topic_id": U(9), "error_code": 0, "error_message": None},
             {"name": None, "topic_id": U(5), "error_code": 100, "error_message": "unknown topic id"}]},
         i32(0) + uvarint(3)
         + cstr("events") + uuid_(9) + i16(0) + NULL + NO_TAGS
         + NULL + uuid_(5) + i16(100) + cstr("unknown topic id") + NO_TAGS
         + NO_TAGS),

    # -- InitProducerId (22) ------------------------------------------------------------------
    Case(22, 0, "request",  # classic nullable string, null
         {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1},
         b"\xff\xff" + i32(60000)),
    Case(22, 4, "request",  # compact nullable string, null
         {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": 1000, "producer_epoch": 5},
         NULL + i32(60000) + i64(1000) + i16(5) + NO_TAGS),
    Case(22, 4, "response",
         {"throttle_time_ms": 0, "error_code": 0, "producer_id": 1000, "producer_epoch": 6},
         i32(0) + i16(0) + i64(1000) + i16(6) + NO_TAGS),

    # -- OffsetForLeaderEpoch (23) ------------------------------------------------------------
    Case(23, 4, "request",
         {"replica_id": -1, "topics": [{"topic": "events", "partitions": [
             {"partition": 0, "current_leader_epoch": 5, "leader_epoch": 3}]}]},
         i32(-1) + uvarint(2) + cstr("events") + uvarint(2) + i32(0) + i32(5) + i32(3) + NO_TAGS + NO_TAGS + NO_TAGS),
    Case(23, 4, "response",
         {"throttle_time_ms": 0, "topics": [{"topic": "events", "partitions": [
             {"error_code": 0, "partition": 0, "leader_epoch": 3, "end_offset": 120}]}]},
         i32(0) + uvarint(2) + cstr("events") + uvarint(2) + i16(0) + i32(0) + i32(3) + i64(120)
         + NO_TAGS + NO_TAGS + NO_TAGS),

    # -- DescribeConfigs (32) -----------------------------------------------------------------
    Case(32, 4, "request",
         {"resources": [{"resource_type": 2, "resource_name": "events", "configuration_keys": None},
                        {"resource_type": 4, "resource_name": "1", "configuration_keys": ["log.retention.ms"]}],
          "include_synonyms": False, "include_documentation": True},
         uvarint(3)
         + i8(2) + cstr("events") + NULL + NO_TAGS
         + i8(4) + cstr("1") + uvarint(2) + cstr("log.retention.ms") + NO_TAGS
         + boolean(False) + boolean(True) + NO_TAGS),
    Case(32, 4, "response",
         {"throttle_time_ms": 0, "results": [
             {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "events", "configs": [
                 {"name": "cleanup.policy", "value": "delete", "read_only": False, "is_default": False,
                  "config_source": 5, "is_sensitive": False,
                  "synonyms": [{"name": "log.cleanup.policy", "value": "delete", "source": 5}],
                  "config_type": 2, "documentation": None}]}]},
         i32(0) + uvarint(2)
         + i16(0) + NULL + i8(2) + cstr("events")
         + uvarint(2) + cstr("cleanup.policy") + cstr("delete") + boolean(False) + i8(5) + boolean(False)
         + uvarint(2) + cstr("log.cleanup.policy") + cstr("delete") + i8(5) + NO_TAGS
         + i8(2) + NULL + NO_TAGS
         + NO_TAGS + NO_TAGS),

    # -- SaslAuthenticate (36) ----------------------------------------------------------------
    Case(36, 2, "request", {"auth_bytes": b"\x00user\x00pass"}, b"\x0b\x00user\x00pass" + NO_TAGS),
    Case(36, 2, "response",
         {"error_code": 0, "error_message": None, "auth_bytes": b"", "session_lifetime_ms": 3600000},
         i16(0) + NULL + b"\x01" + i64(3600000) + NO_TAGS),
    Case(36, 0, "response",
         {"error_code": 58, "error_message": "bad", "auth_bytes": b"", "session_lifetime_ms": 0},
         i16(58) + str16("bad") + i32(0)),

    # -- DescribeCluster (60) -----------------------------------------------------------------
    Case(60, 1, "request",
         {"include_cluster_authorized_operations": False, "endpoint_type": 1},
         b"\x00\x01" + NO_TAGS),
    Case(60, 1, "response",
         {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "endpoint_type": 1,
          "cluster_id": "emu-cluster", "controller_id": 1,
          "brokers": [{"broker_id": 1, "host": "127.0.0.1", "port": 9092, "rack": "r1"}],
          "cluster_authorized_operations": MIN_I32},
         i32(0) + i16(0) + NULL + i8(1) + cstr("emu-cluster") + i32(1)
         + uvarint(2) + i32(1) + cstr("127.0.0.1") + i32(9092) + cstr("r1") + NO_TAGS
         + i32(MIN_I32) + NO_TAGS),

    # -- ConsumerGroupHeartbeat (68) ----------------------------------------------------------
    Case(68, 0, "request",
         {"group_id": "g", "member_id": "m", "member_epoch": 0, "instance_id": None, "rack_id": None,
          "rebalance_timeout_ms": 300000, "subscribed_topic_names": ["events"], "subscribed_topic_regex": None,
          "server_assignor": None, "topic_partitions": []},
         cstr("g") + cstr("m") + i32(0) + NULL + NULL + i32(300000) + uvarint(2) + cstr("events") + NULL
         + uvarint(1) + NO_TAGS),
    Case(68, 0, "response",  # a nullable struct, present: marker 1
         {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m", "member_epoch": 1,
          "heartbeat_interval_ms": 5000,
          "assignment": {"topic_partitions": [{"topic_id": U(0x11), "partitions": [0, 2]}]}},
         i32(0) + i16(0) + NULL + cstr("m") + i32(1) + i32(5000)
         + b"\x01" + uvarint(2) + uuid_(0x11) + uvarint(3) + i32(0) + i32(2) + NO_TAGS + NO_TAGS
         + NO_TAGS),
    Case(68, 1, "response",  # a nullable struct, null: marker -1
         {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m", "member_epoch": 2,
          "heartbeat_interval_ms": 5000, "assignment": None},
         i32(0) + i16(0) + NULL + cstr("m") + i32(2) + i32(5000) + b"\xff" + NO_TAGS),

    # -- GetTelemetrySubscriptions (71) -------------------------------------------------------
    Case(71, 0, "request", {"client_instance_id": ZERO}, bytes(16) + NO_TAGS),
    Case(71, 0, "response",
         {"throttle_time_ms": 0, "error_code": 0, "client_instance_id": U(0x42), "subscription_id": 7,
          "accepted_compression_types": [4, 3, 1, 0], "push_interval_ms": 30000, "telemetry_max_bytes": 1048576,
          "delta_temporality": True, "requested_metrics": ["org.apache.kafka.producer."]},
         i32(0) + i16(0) + uuid_(0x42) + i32(7) + uvarint(5) + b"\x04\x03\x01\x00" + i32(30000) + i32(1048576)
         + boolean(True) + uvarint(2) + cstr("org.apache.kafka.producer.") + NO_TAGS),
]

CASES += txn_cases(Case) + share_cases(Case)
FLEXIBLE_FROM |= FLEXIBLE_FROM_TXN | FLEXIBLE_FROM_SHARE
REQUESTS = [c for c in CASES if c.direction == "request"]
RESPONSES = [c for c in CASES if c.direction == "response"]
CORRELATION_ID = 0x01020304
CLIENT_ID = "golden"


def flexible(key: int, version: int) -> bool:
    first = FLEXIBLE_FROM[key]
    return first is not None and version >= first


def request_frame(case: Case) -> bytes:
    """Size, request header (v2 in flexible versions, else v1; client_id int16-length in both),
    body."""
    header = i16(case.key) + i16(case.version) + i32(CORRELATION_ID) + i16(len(CLIENT_ID)) + CLIENT_ID.encode()
    if flexible(case.key, case.version):
        header += NO_TAGS
    return i32(len(header) + len(case.body)) + header + case.body


def response_frame(case: Case) -> bytes:
    """Size, response header (v1 in flexible versions, else v0; ApiVersions always v0), body."""
    header = i32(CORRELATION_ID)
    if flexible(case.key, case.version) and case.key != 18:
        header += NO_TAGS
    return i32(len(header) + len(case.body)) + header + case.body


def test_every_api_has_a_golden_request_and_response():
    """Every API the emulator serves has hand-made golden bytes; the APIs the codec reads only for
    the proxy and for clients of other brokers are checked against kio's independent schemas
    (test_kio_differential.py) and by round trips."""
    from broker_emu.handler_catalog import register_all
    from broker_emu.registry import REGISTRY
    from tests.client.protocol.test_kio_differential import kio_class

    register_all()
    served = {int(k) for k in REGISTRY}
    golden = {c.key for c in REQUESTS}
    assert golden == {c.key for c in RESPONSES} and served <= golden
    for key in set(ALL_APIS) - golden:
        lo, hi = ALL_APIS[key].version_range
        assert any(kio_class(key, v, "request") for v in range(lo, hi + 1)), ALL_APIS[key].name
    # and the hand-built flexible table agrees with the schemas' flexibleVersions
    for key, api in ALL_APIS.items():
        lo, hi = api.version_range
        assert [flexible(key, v) for v in range(lo, hi + 1)] == [api.is_flexible(v) for v in range(lo, hi + 1)], key


def test_every_golden_value_names_every_schema_field():
    """The expected values are complete: every field of the schema at every level (so decode
    == value checks the defaults of absent fields too)."""
    def check(fields, value, where):
        assert set(value) == {f.name for f in fields}, where
        for f in fields:
            v = value[f.name]
            if f.element_type == "struct" and v is not None:
                for i, item in enumerate(v if f.is_array else [v]):
                    check(f.fields, item, f"{where}.{f.name}[{i}]")
    for case in CASES:
        check(message_fields(case.key, case.direction), case.value, case.id)


@pytest.mark.parametrize("case", REQUESTS, ids=[c.id for c in REQUESTS])
def test_request_encodes_to_golden_bytes(case):
    assert encode_request(case.key, case.version, CORRELATION_ID, CLIENT_ID, case.value) == request_frame(case)


@pytest.mark.parametrize("case", REQUESTS, ids=[c.id for c in REQUESTS])
def test_request_decodes_from_golden_bytes(case):
    header, body = decode_request(request_frame(case)[4:])
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        case.key, case.version, CORRELATION_ID, CLIENT_ID)
    assert header.size == 10 + len(CLIENT_ID) + flexible(case.key, case.version)
    assert body == case.value


@pytest.mark.parametrize("case", RESPONSES, ids=[c.id for c in RESPONSES])
def test_response_encodes_to_golden_bytes(case):
    assert encode_response(case.key, case.version, CORRELATION_ID, case.value) == response_frame(case)


@pytest.mark.parametrize("case", RESPONSES, ids=[c.id for c in RESPONSES])
def test_response_decodes_from_golden_bytes(case):
    correlation_id, body = decode_response(case.key, case.version, response_frame(case)[4:])
    assert correlation_id == CORRELATION_ID
    assert body == case.value


def _strip_defaults(fields, value: dict, version: int, flex: bool) -> dict:
    out = {}
    for f in fields:
        v = value[f.name]
        if not on_wire(f, version, flex) or v == default(f):
            continue
        if f.element_type == "struct" and v is not None:
            v = ([_strip_defaults(f.fields, item, version, flex) for item in v] if f.is_array
                 else _strip_defaults(f.fields, v, version, flex))
        out[f.name] = v
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_left_out_fields_take_their_defaults(case):
    """A mapping that leaves out every field at its default encodes to the same golden bytes."""
    sparse = _strip_defaults(message_fields(case.key, case.direction), case.value, case.version,
                             flexible(case.key, case.version))
    if case.direction == "request":
        assert encode_request(case.key, case.version, CORRELATION_ID, CLIENT_ID, sparse) == request_frame(case)
    else:
        assert encode_response(case.key, case.version, CORRELATION_ID, sparse) == response_frame(case)


def test_decoded_values_have_attribute_access():
    _, body = decode_response(1, 12, response_frame(next(c for c in CASES if c.id == "Fetch-v12-response"))[4:])
    part = body.responses[0].partitions[0]
    assert part.diverging_epoch.epoch == 2 and part.diverging_epoch.end_offset == 50
    assert body.responses[0].partitions[1].aborted_transactions[0].producer_id == 9


# -- headers -------------------------------------------------------------------------------------

def test_request_header_v1_with_a_null_client_id():
    frame = encode_request(12, 0, 7, None, {"group_id": "g", "generation_id": 1, "member_id": "m"})
    assert frame == i32(20) + i16(12) + i16(0) + i32(7) + b"\xff\xff" + str16("g") + i32(1) + str16("m")
    header = decode_request_header(frame[4:])
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id, header.size) == (
        12, 0, 7, None, 10)


def test_request_header_v2_keeps_an_int16_client_id_and_reads_its_tagged_section():
    body = cstr("broker-emu") + cstr("1") + NO_TAGS
    head = i16(18) + i16(3) + i32(-1) + str16("cli") + tags({3: b"xy", 9: b""})
    header = decode_request_header(head + body)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (18, 3, -1, "cli")
    assert header.size == len(head)
    assert header.tagged == {"_unknown_tags": [(3, b"xy"), (9, b"")]}
    _, decoded = decode_request(head + body)
    assert decoded == {"client_software_name": "broker-emu", "client_software_version": "1"}
    # an empty client id is length 0, not null
    assert encode_request(18, 3, 1, "", {})[4:15] == i16(18) + i16(3) + i32(1) + i16(0) + NO_TAGS


def test_request_headers_do_not_share_their_tagged_mapping():
    frame = i16(18) + i16(3) + i32(1) + str16("c") + NO_TAGS + cstr("a") + cstr("b") + NO_TAGS
    first = decode_request_header(frame).tagged
    assert first == {}
    try:
        first["mutated"] = True  # a caller may; a read-only mapping refusing it is fine too
    except TypeError:
        pass
    assert decode_request_header(frame).tagged == {}


def test_response_header_v1_tagged_section_is_read_and_skipped():
    frame = i32(5) + tags({0: b"\x01\x02"}) + i32(0) + i16(27) + NO_TAGS
    assert decode_response(12, 4, frame) == (5, {"throttle_time_ms": 0, "error_code": 27})


def test_api_versions_response_header_is_v0_in_every_version():
    for version in range(5):
        frame = encode_response(18, version, 9, {"error_code": 35, "api_keys": []})
        assert frame[4:8] == i32(9)
        assert frame[8:10] == i16(35)  # the body starts right after the correlation id: no tag byte


# -- consumer-protocol blobs -------------------------------------------------------------------------

BLOB_CASES = [
    ("subscription", 0,
     {"topics": ["events", "logs"], "user_data": None, "owned_partitions": [], "generation_id": -1, "rack_id": None},
     i16(0) + i32(2) + str16("events") + str16("logs") + b"\xff\xff\xff\xff"),
    ("subscription", 1,
     {"topics": ["events"], "user_data": b"ud", "owned_partitions": [{"topic": "events", "partitions": [0, 1]}],
      "generation_id": -1, "rack_id": None},
     i16(1) + arr32([str16("events")]) + bytes32(b"ud") + arr32([str16("events") + arr32([i32(0), i32(1)])])),
    ("subscription", 3,
     {"topics": ["events"], "user_data": None, "owned_partitions": [], "generation_id": 5, "rack_id": "r1"},
     i16(3) + arr32([str16("events")]) + bytes32(None) + arr32([]) + i32(5) + str16("r1")),
    ("subscription", 2,
     {"topics": [], "user_data": b"", "owned_partitions": [], "generation_id": 2, "rack_id": None},
     i16(2) + arr32([]) + bytes32(b"") + arr32([]) + i32(2)),
    ("assignment", 0,
     {"assigned_partitions": [{"topic": "events", "partitions": [0, 1]}], "user_data": None},
     ASSIGNMENT_V0),
    ("assignment", 3,
     {"assigned_partitions": [{"topic": "a", "partitions": []}, {"topic": "b", "partitions": [7]}],
      "user_data": b"x"},
     i16(3) + arr32([str16("a") + arr32([]), str16("b") + arr32([i32(7)])]) + bytes32(b"x")),
]


@pytest.mark.parametrize("kind, version, value, blob", BLOB_CASES, ids=[f"{k}-v{v}" for k, v, _, _ in BLOB_CASES])
def test_consumer_blob_golden(kind, version, value, blob):
    name = "CONSUMER_PROTOCOL_" + kind.upper()
    assert set(value) == {f.name for f in BLOBS[kind].fields}
    assert encode_consumer_blob(name, version, value) == blob
    assert decode_consumer_blob(name, blob) == (version, value)
