"""Golden bytes for one version of every API (request and response), the headers and the
consumer-protocol blobs. Expected bytes are spelled out field by field from the schema with the
small helpers below, never produced by our encoder."""

import struct
import uuid
from io import BytesIO

import pytest

from client.protocol import decode_request, decode_response, encode_request, encode_response
from client.protocol.build import message_construct
from client.protocol.codec import decode_consumer_blob, encode_consumer_blob
from tests.protocol.schema_strategies import contains


def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)


def uv(n):  # unsigned varint
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cs(s): return uv(len(s.encode()) + 1) + s.encode()            # compact string
def cb(b): return uv(len(b) + 1) + b                              # compact bytes
def carr(n): return uv(n + 1)                                     # compact array count
def s16(s): return i16(len(s.encode())) + s.encode()              # classic string
def uid(n): return uuid.UUID(int=n).bytes


NUL = b"\x00"   # compact null (string, bytes, array)
T = b"\x00"     # an empty tagged-field section
MIN = -2147483648

GOLDEN = [
    (0, 9, "request", {"transactional_id": None, "acks": -1, "timeout_ms": 1500,
                       "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"RB"}]}]},
     NUL + i16(-1) + i32(1500) + carr(1) + cs("t") + carr(1) + i32(0) + cb(b"RB") + T + T + T),
    (0, 9, "response", {"responses": [{"name": "t", "partition_responses": [{"index": 0, "error_code": 7, "base_offset": 5,
                        "log_append_time_ms": -1, "log_start_offset": 0, "record_errors": [], "error_message": None}]}],
                        "throttle_time_ms": 0},
     carr(1) + cs("t") + carr(1) + i32(0) + i16(7) + i64(5) + i64(-1) + i64(0) + carr(0) + NUL + T + T + i32(0) + T),
    (1, 12, "request", {"cluster_id": "c", "replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1000,
                        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                        "topics": [{"topic": "t", "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 7,
                                    "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 100}]}],
                        "forgotten_topics_data": [], "rack_id": ""},
     i32(-1) + i32(500) + i32(1) + i32(1000) + i8(0) + i32(0) + i32(-1) + carr(1) + cs("t") + carr(1) + i32(0) + i32(-1)
     + i64(7) + i32(-1) + i64(-1) + i32(100) + T + T + carr(0) + cs("") + uv(1) + uv(0) + uv(2) + cs("c")),
    (1, 12, "response", {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [{"topic": "t", "partitions": [
                        {"partition_index": 0, "error_code": 0, "high_watermark": 10, "last_stable_offset": 10, "log_start_offset": 0,
                         "diverging_epoch": {"epoch": 3, "end_offset": 8}, "aborted_transactions": None,
                         "preferred_read_replica": -1, "records": b""}]}]},
     i32(0) + i16(0) + i32(0) + carr(1) + cs("t") + carr(1) + i32(0) + i16(0) + i64(10) + i64(10) + i64(0) + NUL + i32(-1)
     + cb(b"") + uv(1) + uv(0) + uv(13) + i32(3) + i64(8) + T + T + T),
    (2, 7, "request", {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "t", "partitions": [
                       {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -3}]}]},
     i32(-1) + i8(0) + carr(1) + cs("t") + carr(1) + i32(0) + i32(-1) + i64(-3) + T + T + T),
    (2, 7, "response", {"throttle_time_ms": 0, "topics": [{"name": "t", "partitions": [
                        {"partition_index": 0, "error_code": 0, "timestamp": 99, "offset": 4, "leader_epoch": 2}]}]},
     i32(0) + carr(1) + cs("t") + carr(1) + i32(0) + i16(0) + i64(99) + i64(4) + i32(2) + T + T + T),
    (3, 12, "request", {"topics": [{"topic_id": uuid.UUID(int=1), "name": "t"}], "allow_auto_topic_creation": True,
                        "include_topic_authorized_operations": False},
     carr(1) + uid(1) + cs("t") + T + i8(1) + i8(0) + T),
    (3, 12, "request", {"topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False},
     NUL + i8(0) + i8(0) + T),
    (3, 4, "request", {"topics": None, "allow_auto_topic_creation": True}, i32(-1) + i8(1)),  # classic null array
    (3, 12, "response", {"throttle_time_ms": 0, "brokers": [{"node_id": 0, "host": "h", "port": 9092, "rack": None}],
                         "cluster_id": "c", "controller_id": 0, "topics": [{"error_code": 0, "name": "t", "topic_id": uuid.UUID(int=2),
                         "is_internal": False, "partitions": [{"error_code": 0, "partition_index": 0, "leader_id": 0, "leader_epoch": 1,
                         "replica_nodes": [0, 1], "isr_nodes": [0], "offline_replicas": []}], "topic_authorized_operations": MIN}]},
     i32(0) + carr(1) + i32(0) + cs("h") + i32(9092) + NUL + T + cs("c") + i32(0) + carr(1) + i16(0) + cs("t") + uid(2) + i8(0)
     + carr(1) + i16(0) + i32(0) + i32(0) + i32(1) + carr(2) + i32(0) + i32(1) + carr(1) + i32(0) + carr(0) + T + i32(MIN) + T + T),
    (3, 1, "response", {"brokers": [{"node_id": 0, "host": "h", "port": 1, "rack": None}], "controller_id": 0, "topics": []},
     i32(1) + i32(0) + s16("h") + i32(1) + i16(-1) + i32(0) + i32(0)),  # classic null string (rack)
    (8, 8, "request", {"group_id": "g", "generation_id_or_member_epoch": 1, "member_id": "m", "group_instance_id": None,
                       "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5,
                                   "committed_leader_epoch": -1, "committed_metadata": None}]}]},
     cs("g") + i32(1) + cs("m") + NUL + carr(1) + cs("t") + carr(1) + i32(0) + i64(5) + i32(-1) + NUL + T + T + T),
    (8, 8, "response", {"throttle_time_ms": 0, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "error_code": 22}]}]},
     i32(0) + carr(1) + cs("t") + carr(1) + i32(0) + i16(22) + T + T + T),
    (9, 8, "request", {"groups": [{"group_id": "g", "topics": None}], "require_stable": False},
     carr(1) + cs("g") + NUL + T + i8(0) + T),
    (9, 8, "response", {"throttle_time_ms": 0, "groups": [{"group_id": "g", "topics": [{"name": "t", "partitions": [
                        {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1, "metadata": "", "error_code": 0}]}],
                        "error_code": 0}]},
     i32(0) + carr(1) + cs("g") + carr(1) + cs("t") + carr(1) + i32(0) + i64(5) + i32(-1) + cs("") + i16(0) + T + T + i16(0) + T + T),
    (10, 4, "request", {"key_type": 0, "coordinator_keys": ["g"]}, i8(0) + carr(1) + cs("g") + T),
    (10, 4, "response", {"throttle_time_ms": 0, "coordinators": [{"key": "g", "node_id": 1, "host": "h", "port": 9093,
                         "error_code": 0, "error_message": None}]},
     i32(0) + carr(1) + cs("g") + i32(1) + cs("h") + i32(9093) + i16(0) + NUL + T + T),
    (11, 6, "request", {"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 20000, "member_id": "",
                        "group_instance_id": None, "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"\x00\x01"}]},
     cs("g") + i32(10000) + i32(20000) + cs("") + NUL + cs("consumer") + carr(1) + cs("range") + cb(b"\x00\x01") + T + T),
    (11, 6, "response", {"throttle_time_ms": 0, "error_code": 79, "generation_id": -1, "protocol_name": "", "leader": "",
                         "member_id": "m-1", "members": []},
     i32(0) + i16(79) + i32(-1) + cs("") + cs("") + cs("m-1") + carr(0) + T),
    (12, 4, "request", {"group_id": "g", "generation_id": 2, "member_id": "m", "group_instance_id": None},
     cs("g") + i32(2) + cs("m") + NUL + T),
    (12, 4, "response", {"throttle_time_ms": 0, "error_code": 27}, i32(0) + i16(27) + T),
    (13, 4, "request", {"group_id": "g", "members": [{"member_id": "m", "group_instance_id": None}]},
     cs("g") + carr(1) + cs("m") + NUL + T + T),
    (13, 4, "response", {"throttle_time_ms": 0, "error_code": 0, "members": [{"member_id": "m", "group_instance_id": None, "error_code": 0}]},
     i32(0) + i16(0) + carr(1) + cs("m") + NUL + i16(0) + T + T),
    (14, 4, "request", {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None,
                        "assignments": [{"member_id": "m", "assignment": b"A"}]},
     cs("g") + i32(1) + cs("m") + NUL + carr(1) + cs("m") + cb(b"A") + T + T),
    (14, 4, "response", {"throttle_time_ms": 0, "error_code": 0, "assignment": b"A"}, i32(0) + i16(0) + cb(b"A") + T),
    (15, 5, "request", {"groups": ["g"], "include_authorized_operations": False}, carr(1) + cs("g") + i8(0) + T),
    (15, 5, "response", {"throttle_time_ms": 0, "groups": [{"error_code": 0, "group_id": "g", "group_state": "Stable",
                         "protocol_type": "consumer", "protocol_data": "range", "members": [], "authorized_operations": MIN}]},
     i32(0) + carr(1) + i16(0) + cs("g") + cs("Stable") + cs("consumer") + cs("range") + carr(0) + i32(MIN) + T + T),
    (16, 4, "request", {"states_filter": ["Stable"]}, carr(1) + cs("Stable") + T),
    (16, 4, "response", {"throttle_time_ms": 0, "error_code": 0, "groups": [{"group_id": "g", "protocol_type": "consumer",
                         "group_state": "Stable"}]},
     i32(0) + i16(0) + carr(1) + cs("g") + cs("consumer") + cs("Stable") + T + T),
    (17, 1, "request", {"mechanism": "PLAIN"}, s16("PLAIN")),
    (17, 1, "response", {"error_code": 33, "mechanisms": []}, i16(33) + i32(0)),
    (18, 3, "request", {"client_software_name": "x", "client_software_version": "1.0"}, cs("x") + cs("1.0") + T),
    (18, 3, "response", {"error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}], "throttle_time_ms": 0},
     i16(0) + carr(1) + i16(18) + i16(0) + i16(4) + T + i32(0) + T),
    (18, 0, "response", {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]},
     i16(35) + i32(1) + i16(18) + i16(0) + i16(4)),
    (19, 5, "request", {"topics": [{"name": "t", "num_partitions": 3, "replication_factor": 2, "assignments": [],
                        "configs": [{"name": "k", "value": None}]}], "timeout_ms": 1000, "validate_only": False},
     carr(1) + cs("t") + i32(3) + i16(2) + carr(0) + carr(1) + cs("k") + NUL + T + T + i32(1000) + i8(0) + T),
    (19, 5, "response", {"throttle_time_ms": 0, "topics": [{"name": "t", "error_code": 36, "error_message": "exists",
                         "num_partitions": -1, "replication_factor": -1, "configs": None}]},
     i32(0) + carr(1) + cs("t") + i16(36) + cs("exists") + i32(-1) + i16(-1) + NUL + T + T),
    (20, 6, "request", {"topics": [{"name": "t", "topic_id": uuid.UUID(int=0)}], "timeout_ms": 500},
     carr(1) + cs("t") + uid(0) + T + i32(500) + T),
    (20, 6, "response", {"throttle_time_ms": 0, "responses": [{"name": "t", "topic_id": uuid.UUID(int=3), "error_code": 0,
                         "error_message": None}]},
     i32(0) + carr(1) + cs("t") + uid(3) + i16(0) + NUL + T + T),
    (22, 4, "request", {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1},
     NUL + i32(60000) + i64(-1) + i16(-1) + T),
    (22, 4, "response", {"throttle_time_ms": 0, "error_code": 0, "producer_id": 1000, "producer_epoch": 0},
     i32(0) + i16(0) + i64(1000) + i16(0) + T),
    (23, 4, "request", {"replica_id": -1, "topics": [{"topic": "t", "partitions": [{"partition": 0, "current_leader_epoch": 1,
                        "leader_epoch": 0}]}]},
     i32(-1) + carr(1) + cs("t") + carr(1) + i32(0) + i32(1) + i32(0) + T + T + T),
    (23, 4, "response", {"throttle_time_ms": 0, "topics": [{"topic": "t", "partitions": [{"error_code": 0, "partition": 0,
                         "leader_epoch": 0, "end_offset": 12}]}]},
     i32(0) + carr(1) + cs("t") + carr(1) + i16(0) + i32(0) + i32(0) + i64(12) + T + T + T),
    (32, 4, "request", {"resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": None}],
                        "include_synonyms": False, "include_documentation": False},
     carr(1) + i8(2) + cs("t") + NUL + T + i8(0) + i8(0) + T),
    (32, 4, "response", {"throttle_time_ms": 0, "results": [{"error_code": 0, "error_message": None, "resource_type": 2,
                         "resource_name": "t", "configs": [{"name": "k", "value": "v", "read_only": False, "config_source": 5,
                         "is_sensitive": False, "synonyms": [], "config_type": 2, "documentation": None}]}]},
     i32(0) + carr(1) + i16(0) + NUL + i8(2) + cs("t") + carr(1) + cs("k") + cs("v") + i8(0) + i8(5) + i8(0) + carr(0) + i8(2)
     + NUL + T + T + T),
    (36, 2, "request", {"auth_bytes": b"\x00u\x00p"}, cb(b"\x00u\x00p") + T),
    (36, 2, "response", {"error_code": 34, "error_message": "no", "auth_bytes": b"", "session_lifetime_ms": 0},
     i16(34) + cs("no") + cb(b"") + i64(0) + T),
    (60, 1, "request", {"include_cluster_authorized_operations": False, "endpoint_type": 1}, i8(0) + i8(1) + T),
    (60, 1, "response", {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "endpoint_type": 1, "cluster_id": "c",
                         "controller_id": 0, "brokers": [{"broker_id": 0, "host": "h", "port": 1, "rack": None}],
                         "cluster_authorized_operations": MIN},
     i32(0) + i16(0) + NUL + i8(1) + cs("c") + i32(0) + carr(1) + i32(0) + cs("h") + i32(1) + NUL + T + i32(MIN) + T),
    (68, 0, "request", {"group_id": "g", "member_id": "m", "member_epoch": 0, "instance_id": None, "rack_id": None,
                        "rebalance_timeout_ms": 300000, "subscribed_topic_names": ["t"], "server_assignor": None, "topic_partitions": None},
     cs("g") + cs("m") + i32(0) + NUL + NUL + i32(300000) + carr(1) + cs("t") + NUL + NUL + T),
    (68, 0, "response", {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m", "member_epoch": 1,
                         "heartbeat_interval_ms": 5000, "assignment": None},
     i32(0) + i16(0) + NUL + cs("m") + i32(1) + i32(5000) + b"\xff" + T),  # nullable struct: -1 marker
    (71, 0, "request", {"client_instance_id": uuid.UUID(int=0)}, uid(0) + T),
    (71, 0, "response", {"throttle_time_ms": 0, "error_code": 0, "client_instance_id": uuid.UUID(int=5), "subscription_id": 7,
                         "accepted_compression_types": [0, 4], "push_interval_ms": 300000, "telemetry_max_bytes": 1048576,
                         "delta_temporality": True, "requested_metrics": []},
     i32(0) + i16(0) + uid(5) + i32(7) + carr(2) + i8(0) + i8(4) + i32(300000) + i32(1048576) + i8(1) + carr(0) + T),
]


def test_every_api_has_a_golden_request_and_response():
    from client.protocol.messages import ALL_APIS

    covered = {(k, d) for k, _, d, _, _ in GOLDEN}
    assert covered == {(k, d) for k in ALL_APIS for d in ("request", "response")}


@pytest.mark.parametrize("key, version, direction, body, expected", GOLDEN,
                         ids=[f"{k}-v{v}-{d}" for k, v, d, _, _ in GOLDEN])
def test_golden(key, version, direction, body, expected):
    out = BytesIO()
    con = message_construct(key, version, direction)
    con.buildfunc(body, out, None)
    assert out.getvalue().hex() == expected.hex()
    decoded = con.parsefunc(BytesIO(expected), {"_end": len(expected)})
    assert contains(body, decoded)  # decoded structs also carry defaults of fields absent in this version


def test_request_headers_v1_and_v2_and_response_headers():
    v1 = encode_request(0, 3, 9, "c", {"transactional_id": None, "acks": 1, "timeout_ms": 0, "topic_data": []})
    assert v1 == i32(len(v1) - 4) + i16(0) + i16(3) + i32(9) + s16("c") + i16(-1) + i16(1) + i32(0) + i32(0)
    v2 = encode_request(3, 12, 9, "c", {"topics": None})
    assert v2[4:] == i16(3) + i16(12) + i32(9) + s16("c") + T + NUL + i8(1) + i8(0) + T  # client id keeps int16 length
    header, _ = decode_request(v2[4:])
    assert header.size == 2 + 2 + 4 + 3 + 1
    assert encode_response(12, 3, 5, {"error_code": 0})[4:] == i32(5) + i32(0) + i16(0)        # header v0
    assert encode_response(12, 4, 5, {"error_code": 0})[4:] == i32(5) + T + i32(0) + i16(0) + T  # header v1
    # ApiVersions answers always use response header v0, even in flexible versions
    assert encode_response(18, 3, 5, {"error_code": 0, "api_keys": []})[4:] == i32(5) + i16(0) + carr(0) + i32(0) + T
    assert decode_response(18, 3, i32(5) + i16(0) + carr(0) + i32(0) + T)[0] == 5
    null_client = encode_request(18, 0, 1, None, {})
    assert null_client[4:] == i16(18) + i16(0) + i32(1) + i16(-1)


def test_consumer_protocol_blobs():
    sub = i16(0) + i32(1) + s16("t") + i32(-1)
    assert encode_consumer_blob("CONSUMER_PROTOCOL_SUBSCRIPTION", 0, {"topics": ["t"], "user_data": None}) == sub
    assert decode_consumer_blob("CONSUMER_PROTOCOL_SUBSCRIPTION", sub)[1].topics == ["t"]
    assign = i16(0) + i32(1) + s16("t") + i32(2) + i32(0) + i32(1) + i32(-1)
    body = {"assigned_partitions": [{"topic": "t", "partitions": [0, 1]}], "user_data": None}
    assert encode_consumer_blob("CONSUMER_PROTOCOL_ASSIGNMENT", 0, body) == assign
    # a newer version than we know is read as our newest, trailing fields ignored
    future = i16(9) + i32(0) + i32(-1) + b"extra"
    version, decoded = decode_consumer_blob("CONSUMER_PROTOCOL_ASSIGNMENT", future)
    assert version == 9 and decoded.assigned_partitions == []
