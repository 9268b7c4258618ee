"""The broker's fast paths change nothing a client can see: cached Metadata answers follow the
cluster, batches stored without a copy read back stamped and intact, requests answered by the
reader keep their order, and the in-memory logs are bounded by default."""

import pytest
import trio

from broker_emu import cluster_shape
from broker_emu.config import broker_config
from broker_emu.repeated_requests import decoded_before, encode_with_errors, remember_decoded, repeat_key
from broker_emu.runtime import open_cluster
from client.protocol.codec import decode_request, encode_request, encode_response
from client.protocol.records import decode_batch, verify_crc
from tests.broker_emu.wire import WireClient, fetch_body, leader_of, produce_body

PRODUCE, FETCH, METADATA, API_VERSIONS = 0, 1, 3, 18


def metadata_body(topic: str) -> dict:
    return {"topics": [{"name": topic, "topic_id": None}], "allow_auto_topic_creation": False}


def test_a_cached_answer_is_byte_identical_to_a_fresh_encoding():
    body = {"throttle_time_ms": 0, "brokers": [{"node_id": 1, "host": "h", "port": 9, "rack": None}],
            "cluster_id": "c", "controller_id": 1, "topics": [{"error_code": 3, "name": "gone", "partitions": []}]}
    for version in (0, 9, 12):  # classic and flexible response headers
        request = repeat_key(encode_request(METADATA, version, 5, "c", metadata_body("gone"))[4:])
        for corr in (1, 77, 2**31 - 1):
            frame, errors = encode_with_errors(METADATA, version, corr, body, request)
            assert frame == encode_response(METADATA, version, corr, body)
            assert errors == [3]
        # an answer that differs from the kept one is encoded afresh, never the kept bytes
        moved = {**body, "controller_id": 2}
        assert encode_with_errors(METADATA, version, 9, moved, request)[0] == encode_response(METADATA, version, 9, moved)


def test_a_repeated_request_is_decoded_once_with_its_own_correlation_id():
    first = encode_request(METADATA, 12, 1, "c", metadata_body("t"))[4:]
    again = encode_request(METADATA, 12, 2, "c", metadata_body("t"))[4:]
    key = repeat_key(first)
    assert key is not None and key == repeat_key(again)
    header, body = decode_request(first)
    remember_decoded(key, header, body, ["an anomaly"])
    hit = decoded_before(repeat_key(again), again)
    assert hit is not None
    assert (hit[0].correlation_id, hit[0].client_id, hit[1], hit[2]) == (2, "c", body, ["an anomaly"])
    other_client = encode_request(METADATA, 12, 3, "d", metadata_body("t"))[4:]
    assert decoded_before(repeat_key(other_client), other_client) is None
    produce = encode_request(PRODUCE, 9, 1, "c", produce_body("t", 0, [b"x"]))[4:]
    assert repeat_key(produce) is None   # only the APIs clients repeat are kept


async def test_a_kept_metadata_answer_serves_repeats_until_the_shape_changes(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        w = WireClient(cluster.connect(min(cluster.brokers)))
        await w.call(METADATA, 12, metadata_body("t"))
        kept = next(iter(cluster.kept_metadata.values()))
        await w.call(METADATA, 12, metadata_body("t"))
        assert next(iter(cluster.kept_metadata.values())) is kept    # answered again, not rebuilt
        cluster.create_topic("u", 1, 1)
        await w.call(METADATA, 12, metadata_body("t"))
        assert next(iter(cluster.kept_metadata.values())) is not kept   # another topic: rebuilt


@pytest.mark.handler_errors_expected
async def test_a_shape_change_nobody_announced_fails_the_check_the_suite_runs_with(autojump_clock, monkeypatch):
    # the safety net of the kept answers: a change made without cluster_shape.changed() would
    # answer with an old shape; under VERIFY (the suite's setting) it is a handler error instead
    assert cluster_shape.VERIFY
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        w = WireClient(cluster.connect(min(cluster.brokers)))
        await w.call(METADATA, 12, metadata_body("t"))
        monkeypatch.setattr(cluster_shape, "changed", lambda: None)
        old = leader_of(cluster, "t")
        cluster.move_leader("t", 0, next(b for b in cluster.partition("t", 0).replicas if b != old))
        await w.call(METADATA, 12, metadata_body("t"))
        errors = cluster.trace.query(kind="handler_error")
        assert len(errors) == 1 and "a kept Metadata answer is stale" in errors[0].details["error"]


async def test_cached_metadata_follows_leader_moves_and_broker_stops(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        ids = sorted(cluster.brokers)
        w = WireClient(cluster.connect(ids[0]))
        first = await w.call(METADATA, 12, metadata_body("t"))
        again = await w.call(METADATA, 12, metadata_body("t"))
        assert first == again
        old = leader_of(cluster, "t")
        new = next(b for b in cluster.partition("t", 0).replicas if b != old)
        cluster.move_leader("t", 0, new)
        moved = await w.call(METADATA, 12, metadata_body("t"))
        part = moved.topics[0].partitions[0]
        assert (part.leader_id, part.leader_epoch) == (new, first.topics[0].partitions[0].leader_epoch + 1)
        stopped = next(b for b in ids if b not in (ids[0], new))
        await cluster.stop_broker(stopped)
        after = await w.call(METADATA, 12, metadata_body("t"))
        assert sorted(b.node_id for b in after.brokers) == [b for b in ids if b != stopped]
        assert after.topics[0].partitions[0].offline_replicas == [stopped]


async def test_requests_answered_by_the_reader_keep_their_order_behind_a_parked_produce(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.set_replication("t", None, None, "stall")
        w = WireClient(cluster.connect(leader_of(cluster, "t")))
        await w.send(PRODUCE, 9, produce_body("t", 0, [b"a"], timeout_ms=1000))
        await w.send(METADATA, 12, metadata_body("t"))  # pipelined behind the parked produce
        await w.send(API_VERSIONS, 3, {"client_software_name": "t", "client_software_version": "1"})
        start = trio.current_time()
        answers = [await w.recv() for _ in range(3)]
        assert [corr for corr, _ in answers] == [1, 2, 3]
        assert answers[0][1].responses[0].partition_responses[0].error_code == 7
        assert trio.current_time() - start == 1.0  # Metadata waited for the produce ahead of it


async def test_batches_stored_without_a_copy_read_back_stamped_and_intact(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(min(cluster.brokers)))
        for values in ([b"a" * 10_000, b"b"], [b"c"]):
            r = await w.call(PRODUCE, 9, produce_body("t", 0, values, acks=1))
            assert r.responses[0].partition_responses[0].error_code == 0
        stored = cluster.partition("t", 0).log.batches
        assert [b.base_offset for b in stored] == [0, 2]
        f = await w.call(FETCH, 12, fetch_body("t", 0, 0))
        records = f.responses[0].partitions[0].records
        first, rest = decode_batch(records)
        assert first.base_offset == 0 and verify_crc(records)
        assert [r.value for r in rest] == [b"a" * 10_000, b"b"]
        second, more = decode_batch(records[first.size:])
        assert (second.base_offset, [r.value for r in more]) == (2, [b"c"])
        assert stored[1].data == records[first.size:]


def test_records_views_are_read_only_and_equal_the_copied_bytes():
    frame = encode_request(PRODUCE, 9, 1, "c", produce_body("t", 0, [b"x" * 100]))[4:]
    _, copied = decode_request(frame)
    _, viewed = decode_request(frame, records_as_views=True)
    a = copied.topic_data[0].partition_data[0].records
    b = viewed.topic_data[0].partition_data[0].records
    assert type(a) is bytes and type(b) is memoryview and b.readonly and bytes(b) == a


def test_the_in_memory_log_is_bounded_by_default_cluster_wide_not_per_partition():
    # Kafka's per-partition default (unlimited); one budget for every log (tests/broker_emu/test_log_memory.py)
    assert broker_config()["log.retention.bytes"] == -1
    assert broker_config()["emu.log.memory.bytes"] == 0   # 0: half the memory available at start
