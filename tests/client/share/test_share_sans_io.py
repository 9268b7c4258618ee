"""The share consumer's sans-io parts: acknowledgement batches as Java builds them, the records of
a poll in flight, and a share session's epochs and partitions as Java's ShareSessionHandler keeps
them."""

import uuid

import pytest

from client.config import ConfigException
from client.consumer.records import TopicPartition
from client.errors import ErrorCode
from client.share.acknowledgements import AcknowledgeType, IllegalStateError, InFlight, ShareRecord, batches
from client.share.config import share_consumer_config
from client.share.sessions import ShareSession

CONFIG = share_consumer_config({"bootstrap.servers": "x:1", "group.id": "sg"})
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
TID = uuid.uuid4()


def test_batches_are_runs_with_one_type_when_they_agree():
    assert batches({0: 1, 1: 1, 2: 1}) == [{"first_offset": 0, "last_offset": 2, "acknowledge_types": [1]}]
    assert batches({0: 1, 1: 2, 2: 1, 5: 3, 6: 0}) == [
        {"first_offset": 0, "last_offset": 2, "acknowledge_types": [1, 2, 1]},
        {"first_offset": 5, "last_offset": 6, "acknowledge_types": [3, 0]}]


def record(offset, partition=0):
    return ShareRecord("t", partition, offset, 0, None, b"v", (), 1)


def test_in_flight_takes_final_acknowledgements_and_keeps_renewed_records():
    f = InFlight([record(0), record(1), record(2)])
    f.acknowledge("t", 0, 0, AcknowledgeType.ACCEPT)
    f.acknowledge("t", 0, 1, AcknowledgeType.RENEW)
    assert f.unacknowledged() == [("t", 0, 2)]
    final, renew = f.take(renewals=False)           # a commit: the renewal waits for the poll
    assert (final, renew) == ({T0: {0: 1}}, {})
    final, renew = f.take()
    assert (final, renew) == ({}, {T0: {1: 4}})
    assert [r.offset for r in f.renewed(renew)] == [1] and f.unacknowledged() == [("t", 0, 1), ("t", 0, 2)]
    with pytest.raises(IllegalStateError, match="The record cannot be acknowledged. t-0 offset 0 is not in flight"):
        f.acknowledge("t", 0, 0, AcknowledgeType.ACCEPT)


def test_a_session_opens_at_epoch_0_then_names_only_changes_and_acknowledgements():
    s = ShareSession(0)
    ids = {"t": TID}
    body, carried = s.fetch_body("sg", "m", {T0: TID, T1: TID}, {T0: {0: 1}}, CONFIG, ids)
    assert body["share_session_epoch"] == 0 and carried == {}     # an opening fetch carries none
    assert [p["partition_index"] for p in body["topics"][0]["partitions"]] == [0, 1]
    s.answered(ErrorCode.NONE)
    body, carried = s.fetch_body("sg", "m", {T1: TID}, {T1: {3: 1}}, CONFIG, ids)
    assert body["share_session_epoch"] == 1 and carried == {T1: {3: 1}}
    assert body["forgotten_topics_data"] == [{"topic_id": TID, "partitions": [0]}]
    assert body["topics"] == [{"topic_id": TID, "partitions": [{"partition_index": 1, "partition_max_bytes": 0,
                               "acknowledgement_batches": [{"first_offset": 3, "last_offset": 3, "acknowledge_types": [1]}]}]}]
    s.answered(ErrorCode.NONE)
    # acknowledgements for a partition given up: named with them, and forgotten in the same request
    body, carried = s.fetch_body("sg", "m", {T1: TID}, {T0: {1: 1}}, CONFIG, ids)
    assert carried == {T0: {1: 1}} and body["forgotten_topics_data"] == [{"topic_id": TID, "partitions": [0]}]
    assert [p["partition_index"] for p in body["topics"][0]["partitions"]] == [0]
    assert s.partitions == {T1: TID}
    s.answered(ErrorCode.UNKNOWN_SERVER_ERROR)         # another error: the broker moved the epoch on
    assert s.epoch == 3
    assert s.acknowledge_body("sg", "m", {T1: {4: 2}}, ids, final=True)["share_session_epoch"] == -1
    s.answered(ErrorCode.INVALID_SHARE_SESSION_EPOCH)   # start over, as after a disconnect
    assert (s.epoch, s.partitions) == (0, {})
    assert s.acknowledge_body("sg", "m", {T1: {4: 2}}, ids) is None   # a ShareAcknowledge cannot open one


def test_share_consumer_config_refuses_what_the_broker_owns():
    for name, value in (("auto.offset.reset", "earliest"), ("group.protocol", "consumer"), ("isolation.level", "read_committed")):
        with pytest.raises(ConfigException, match=f"not supported for share consumer: {name}"):
            share_consumer_config({"bootstrap.servers": "x:1", "group.id": "sg", name: value})
    assert CONFIG["share.acknowledgement.mode"] == "implicit"
