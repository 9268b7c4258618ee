"""Golden cases of the share-group APIs (KIP-932; KIP-1222's renew and acquisition lock in v2;
KIP-1226's lag in DescribeShareGroupOffsets v1), worked out by hand from Kafka 4.4.0's message
JSON, as test_golden.py's: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge,
and the admin calls Describe-, Alter- and DeleteShareGroupOffsets. Each value names every field;
fields absent from the version hold their defaults. All seven are flexible in every version."""

from __future__ import annotations

import uuid

from tests.client.protocol.strategies import NO_TAGS, boolean, carr, cbytes, cstr, i8, i16, i32, i64, uuid_

NULL = b"\x00"
FLEXIBLE_FROM_SHARE = {76: 0, 77: 0, 78: 0, 79: 0, 90: 0, 91: 0, 92: 0}
RECORDS = bytes(range(10))


def U(n: int) -> uuid.UUID:
    return uuid.UUID(int=n)


def share_cases(Case):
    """``Case`` is test_golden's (key, version, direction, value, body)."""
    ack_batch = {"first_offset": 3, "last_offset": 5, "acknowledge_types": [1, 0, 4]}
    ack_batch_bytes = i64(3) + i64(5) + carr([i8(1), i8(0), i8(4)]) + NO_TAGS
    leader = {"leader_id": 1, "leader_epoch": 7}
    return [
        # -- ShareGroupHeartbeat (76): v1 only ------------------------------------------------------
        Case(76, 1, "request",
             {"group_id": "sg", "member_id": "m1", "member_epoch": 0, "rack_id": None,
              "subscribed_topic_names": ["events"]},
             cstr("sg") + cstr("m1") + i32(0) + NULL + carr([cstr("events")]) + NO_TAGS),
        Case(76, 1, "response",
             {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m1", "member_epoch": 2,
              "heartbeat_interval_ms": 5000,
              "assignment": {"topic_partitions": [{"topic_id": U(0x11), "partitions": [0, 1]}]}},
             i32(0) + i16(0) + NULL + cstr("m1") + i32(2) + i32(5000)
             + b"\x01" + carr([uuid_(0x11) + carr([i32(0), i32(1)]) + NO_TAGS]) + NO_TAGS + NO_TAGS),

        # -- ShareGroupDescribe (77): v1 only -------------------------------------------------------
        Case(77, 1, "request", {"group_ids": ["sg"], "include_authorized_operations": False},
             carr([cstr("sg")]) + boolean(False) + NO_TAGS),
        Case(77, 1, "response",
             {"throttle_time_ms": 0, "groups": [{
                 "error_code": 0, "error_message": None, "group_id": "sg", "group_state": "Stable",
                 "group_epoch": 3, "assignment_epoch": 3, "assignor_name": "simple",
                 "members": [{"member_id": "m1", "rack_id": None, "member_epoch": 3, "client_id": "c",
                              "client_host": "/127.0.0.1", "subscribed_topic_names": ["events"],
                              "assignment": {"topic_partitions": [
                                  {"topic_id": U(0x11), "topic_name": "events", "partitions": [0]}]}}],
                 "authorized_operations": -(2**31)}]},
             i32(0) + carr([i16(0) + NULL + cstr("sg") + cstr("Stable") + i32(3) + i32(3) + cstr("simple")
                            + carr([cstr("m1") + NULL + i32(3) + cstr("c") + cstr("/127.0.0.1")
                                    + carr([cstr("events")])
                                    + carr([uuid_(0x11) + cstr("events") + carr([i32(0)]) + NO_TAGS]) + NO_TAGS
                                    + NO_TAGS])
                            + i32(-(2**31)) + NO_TAGS]) + NO_TAGS),

        # -- ShareFetch (78): v1 (no acquire mode, no renew flag), v2 -------------------------------
        Case(78, 1, "request",
             {"group_id": "sg", "member_id": "m1", "share_session_epoch": 0, "max_wait_ms": 500, "min_bytes": 1,
              "max_bytes": 52428800, "max_records": 500, "batch_size": 500, "share_acquire_mode": 0,
              "is_renew_ack": False,
              "topics": [{"topic_id": U(0x11), "partitions": [
                  {"partition_index": 0, "partition_max_bytes": 0, "acknowledgement_batches": []}]}],
              "forgotten_topics_data": []},
             cstr("sg") + cstr("m1") + i32(0) + i32(500) + i32(1) + i32(52428800) + i32(500) + i32(500)
             + carr([uuid_(0x11) + carr([i32(0) + carr([]) + NO_TAGS]) + NO_TAGS]) + carr([]) + NO_TAGS),
        Case(78, 2, "request",
             {"group_id": "sg", "member_id": "m1", "share_session_epoch": 2, "max_wait_ms": 500, "min_bytes": 1,
              "max_bytes": 52428800, "max_records": 500, "batch_size": 500, "share_acquire_mode": 1,
              "is_renew_ack": True,
              "topics": [{"topic_id": U(0x11), "partitions": [
                  {"partition_index": 0, "partition_max_bytes": 0, "acknowledgement_batches": [ack_batch]}]}],
              "forgotten_topics_data": [{"topic_id": U(0x12), "partitions": [3]}]},
             cstr("sg") + cstr("m1") + i32(2) + i32(500) + i32(1) + i32(52428800) + i32(500) + i32(500)
             + i8(1) + boolean(True)
             + carr([uuid_(0x11) + carr([i32(0) + carr([ack_batch_bytes]) + NO_TAGS]) + NO_TAGS])
             + carr([uuid_(0x12) + carr([i32(3)]) + NO_TAGS]) + NO_TAGS),
        Case(78, 2, "response",
             {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "acquisition_lock_timeout_ms": 30000,
              "responses": [{"topic_id": U(0x11), "partitions": [
                  {"partition_index": 0, "error_code": 0, "error_message": None, "acknowledge_error_code": 121,
                   "acknowledge_error_message": None, "current_leader": leader, "records": RECORDS,
                   "acquired_records": [{"first_offset": 0, "last_offset": 2, "delivery_count": 2}]}]}],
              "node_endpoints": []},
             i32(0) + i16(0) + NULL + i32(30000)
             + carr([uuid_(0x11) + carr([i32(0) + i16(0) + NULL + i16(121) + NULL + i32(1) + i32(7) + NO_TAGS
                                        + cbytes(RECORDS) + carr([i64(0) + i64(2) + i16(2) + NO_TAGS]) + NO_TAGS])
                     + NO_TAGS])
             + carr([]) + NO_TAGS),

        # -- ShareAcknowledge (79): v1, v2 (renew flag; acquisition lock in the answer) -------------
        Case(79, 2, "request",
             {"group_id": "sg", "member_id": "m1", "share_session_epoch": 3, "is_renew_ack": True,
              "topics": [{"topic_id": U(0x11), "partitions": [
                  {"partition_index": 0, "acknowledgement_batches": [ack_batch]}]}]},
             cstr("sg") + cstr("m1") + i32(3) + boolean(True)
             + carr([uuid_(0x11) + carr([i32(0) + carr([ack_batch_bytes]) + NO_TAGS]) + NO_TAGS]) + NO_TAGS),
        Case(79, 1, "response",
             {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "acquisition_lock_timeout_ms": 0,
              "responses": [{"topic_id": U(0x11), "partitions": [
                  {"partition_index": 0, "error_code": 121, "error_message": None, "current_leader": leader}]}],
              "node_endpoints": [{"node_id": 1, "host": "localhost", "port": 9092, "rack": None}]},
             i32(0) + i16(0) + NULL
             + carr([uuid_(0x11) + carr([i32(0) + i16(121) + NULL + i32(1) + i32(7) + NO_TAGS + NO_TAGS]) + NO_TAGS])
             + carr([i32(1) + cstr("localhost") + i32(9092) + NULL + NO_TAGS]) + NO_TAGS),
        Case(79, 2, "response",
             {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "acquisition_lock_timeout_ms": 30000,
              "responses": [], "node_endpoints": []},
             i32(0) + i16(0) + NULL + i32(30000) + carr([]) + carr([]) + NO_TAGS),

        # -- DescribeShareGroupOffsets (90): v0, v1 (lag) ---------------------------------------------
        Case(90, 0, "request",
             {"groups": [{"group_id": "sg", "topics": [{"topic_name": "events", "partitions": [0, 2]}]},
                         {"group_id": "all", "topics": None}]},
             carr([cstr("sg") + carr([cstr("events") + carr([i32(0), i32(2)]) + NO_TAGS]) + NO_TAGS,
                   cstr("all") + NULL + NO_TAGS]) + NO_TAGS),
        Case(90, 1, "request", {"groups": [{"group_id": "sg", "topics": None}]},
             carr([cstr("sg") + NULL + NO_TAGS]) + NO_TAGS),
        Case(90, 0, "response",
             {"throttle_time_ms": 0, "groups": [{
                 "group_id": "sg", "error_code": 0, "error_message": None, "topics": [{
                     "topic_name": "events", "topic_id": U(0x11), "partitions": [
                         {"partition_index": 0, "start_offset": 7, "leader_epoch": 3, "lag": -1, "error_code": 0,
                          "error_message": None}]}]}]},
             i32(0) + carr([cstr("sg") + carr([cstr("events") + uuid_(0x11)
                                              + carr([i32(0) + i64(7) + i32(3) + i16(0) + NULL + NO_TAGS])
                                              + NO_TAGS])
                            + i16(0) + NULL + NO_TAGS]) + NO_TAGS),
        Case(90, 1, "response",
             {"throttle_time_ms": 0, "groups": [
                 {"group_id": "sg", "error_code": 0, "error_message": None, "topics": [{
                     "topic_name": "events", "topic_id": U(0x11), "partitions": [
                         {"partition_index": 1, "start_offset": 7, "leader_epoch": 0, "lag": 5, "error_code": 0,
                          "error_message": None}]}]},
                 {"group_id": "gone", "error_code": 69, "error_message": "Group gone not found.", "topics": []}]},
             i32(0) + carr([cstr("sg") + carr([cstr("events") + uuid_(0x11)
                                              + carr([i32(1) + i64(7) + i32(0) + i64(5) + i16(0) + NULL + NO_TAGS])
                                              + NO_TAGS])
                            + i16(0) + NULL + NO_TAGS,
                            cstr("gone") + carr([]) + i16(69) + cstr("Group gone not found.") + NO_TAGS]) + NO_TAGS),

        # -- AlterShareGroupOffsets (91): v0 only -----------------------------------------------------
        Case(91, 0, "request",
             {"group_id": "sg", "topics": [{"topic_name": "events", "partitions": [
                 {"partition_index": 0, "start_offset": 42}, {"partition_index": 1, "start_offset": -1}]}]},
             cstr("sg") + carr([cstr("events") + carr([i32(0) + i64(42) + NO_TAGS, i32(1) + i64(-1) + NO_TAGS])
                                + NO_TAGS]) + NO_TAGS),
        Case(91, 0, "response",
             {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": [{
                 "topic_name": "events", "topic_id": U(0x11), "partitions": [
                     {"partition_index": 0, "error_code": 0, "error_message": None},
                     {"partition_index": 9, "error_code": 3, "error_message": "gone"}]}]},
             i32(0) + i16(0) + NULL
             + carr([cstr("events") + uuid_(0x11) + carr([i32(0) + i16(0) + NULL + NO_TAGS,
                                                          i32(9) + i16(3) + cstr("gone") + NO_TAGS]) + NO_TAGS])
             + NO_TAGS),

        # -- DeleteShareGroupOffsets (92): v0 only ----------------------------------------------------
        Case(92, 0, "request", {"group_id": "sg", "topics": [{"topic_name": "events"}, {"topic_name": "more"}]},
             cstr("sg") + carr([cstr("events") + NO_TAGS, cstr("more") + NO_TAGS]) + NO_TAGS),
        Case(92, 0, "response",
             {"throttle_time_ms": 0, "error_code": 68, "error_message": "busy", "responses": [
                 {"topic_name": "events", "topic_id": U(0x11), "error_code": 0, "error_message": None}]},
             i32(0) + i16(68) + cstr("busy") + carr([cstr("events") + uuid_(0x11) + i16(0) + NULL + NO_TAGS]) + NO_TAGS),
    ]
