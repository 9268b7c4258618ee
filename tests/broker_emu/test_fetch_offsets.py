"""Fetch long polls, visibility and limits; ListOffsets; OffsetForLeaderEpoch (virtual time)."""

import trio

from broker_emu.runtime import open_cluster
from client.protocol.records import decode_batch, iter_batches
from tests.broker_emu.helpers import (
    FETCH,
    LIST_OFFSETS,
    OFFSET_FOR_LEADER_EPOCH,
    PRODUCE,
    WireClient,
    batch,
    fetch_body,
    follower_of,
    leader_of,
    produce_body,
    produce_many,
)


def part0(r):
    return r.responses[0].partitions[0]


async def test_long_poll_waits_max_wait_then_answers_empty(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        r = await w.call(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=750))
        assert trio.current_time() == 0.75 and part0(r).error_code == 0 and not part0(r).records
        assert r.session_id == 0 and r.error_code == 0
        kinds = [e.kind for e in cluster.trace.events if e.kind.startswith("purgatory")]
        assert kinds == ["purgatory_enter", "purgatory_expire"]


async def test_long_poll_wakes_when_min_bytes_become_visible(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w, producer = WireClient(cluster.connect(0)), WireClient(cluster.connect(0))
        one = len(batch([b"x" * 100]))
        await w.send(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=10_000, min_bytes=one + 1))
        await trio.sleep(1)
        await producer.call(PRODUCE, 9, produce_body("t", 0, [b"x" * 100], acks=1))
        await trio.sleep(1)  # one batch is not enough
        await producer.call(PRODUCE, 9, produce_body("t", 0, [b"x" * 100], acks=1))
        _, r = await w.recv()
        assert trio.current_time() == 2.0
        assert [h.base_offset for _, h in iter_batches(part0(r).records)] == [0, 1]


async def test_consumers_see_only_below_the_high_watermark(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.replication.stall("t")
        leader = leader_of(cluster, "t")
        w = WireClient(cluster.connect(leader))
        await w.call(PRODUCE, 9, produce_body("t", 0, [b"acks=1 only"], acks=1))
        await w.send(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=5000))
        await trio.sleep(2)
        cluster.replication.normal("t")  # HW moves: the parked fetch wakes
        _, r = await w.recv()
        assert trio.current_time() == 2.0 and part0(r).high_watermark == 1
        assert decode_batch(part0(r).records)[1][0].value == b"acks=1 only"


async def test_offset_out_of_range_and_log_start_after_retention(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        cluster.create_topic("t", 1, 1, configs={"retention.bytes": "1"})
        w = WireClient(cluster.connect(0))
        for _ in range(3):
            await w.call(PRODUCE, 9, produce_body("t", 0, [b"v"], acks=1))
        for offset in (0, 4):  # below the log start, past the end: Kafka reads nothing and knows no offsets
            p = part0(await w.call(FETCH, 12, fetch_body("t", 0, offset, max_wait_ms=0)))
            assert (p.error_code, p.log_start_offset, p.high_watermark, p.records) == (1, -1, -1, b"")
        p = part0(await w.call(FETCH, 12, fetch_body("t", 0, 2, max_wait_ms=0)))
        assert (p.error_code, p.log_start_offset, p.high_watermark) == (0, 2, 3)
        p = part0(await w.call(FETCH, 12, fetch_body("t", 0, 3, max_wait_ms=0)))
        assert p.error_code == 0 and not p.records  # at the end: nothing yet, no error


async def test_fetch_by_topic_id_from_v13(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        await w.call(PRODUCE, 9, produce_body("t", 0, [b"v"], acks=1))
        tid = cluster.topics["t"].topic_id
        body = fetch_body("t", 0, 0, max_wait_ms=0)
        body["topics"][0]["topic_id"] = tid
        r = await w.call(FETCH, 16, body)
        assert r.responses[0].topic_id == tid and part0(r).high_watermark == 1 and part0(r).records
        body["topics"][0]["topic_id"] = cluster.new_uuid()
        assert part0(await w.call(FETCH, 16, body)).error_code == 100  # UNKNOWN_TOPIC_ID


async def test_kip74_first_batch_whole_then_limits_apply(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        await w.call(PRODUCE, 9, produce_many([("t", 0, batch([b"a" * 5000])), ("t", 1, batch([b"b" * 5000]))], acks=1))
        body = fetch_body("t", 0, 0, max_wait_ms=0)
        body["max_bytes"] = 100
        body["topics"][0]["partitions"].append({"partition": 1, "fetch_offset": 0, "partition_max_bytes": 1 << 20})
        r = await w.call(FETCH, 12, body)
        first, second = r.responses[0].partitions
        assert len(first.records) > 5000 and not second.records  # the consumer still progresses
        assert second.high_watermark == 1


async def test_errors_answer_at_once_and_leader_moves_wake_parked_fetches(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        leader = leader_of(cluster, "t")
        f = WireClient(cluster.connect(follower_of(cluster, "t")))
        body = fetch_body("t", 0, 0, max_wait_ms=5000)
        body["topics"][0]["topic_id"] = cluster.topics["t"].topic_id
        r = await f.call(FETCH, 16, body)
        assert trio.current_time() == 0 and part0(r).error_code == 6 and part0(r).current_leader.leader_id == leader
        assert [n.node_id for n in r.node_endpoints] == [leader]  # KIP-951, v16+
        body = fetch_body("t", 0, 0)
        body.update(session_id=5, session_epoch=1)
        w = WireClient(cluster.connect(leader))
        assert (await w.call(FETCH, 12, body)).error_code == 70  # FETCH_SESSION_ID_NOT_FOUND: no sessions here
        await w.send(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=5000))
        await trio.sleep(1)
        cluster.move_leader("t", 0, follower_of(cluster, "t"))
        _, r = await w.recv()
        assert trio.current_time() == 1.0 and part0(r).error_code == 6


async def test_list_offsets_earliest_latest_by_timestamp_and_max(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        w = WireClient(cluster.connect(leader_of(cluster, "t")))
        await w.call(PRODUCE, 9, produce_many([("t", 0, batch([b"a", b"b", b"c"], [100, 500, 300]))], acks=-1))
        cluster.replication.stall("t")
        await w.call(PRODUCE, 9, produce_many([("t", 0, batch([b"d"], [900]))], acks=1))  # not committed

        async def lookup(ts, version=7):
            r = await w.call(LIST_OFFSETS, version, {"replica_id": -1, "topics": [
                {"name": "t", "partitions": [{"partition_index": 0, "timestamp": ts}]}]})
            p = r.topics[0].partitions[0]
            return p.error_code, p.offset, p.timestamp

        assert await lookup(-2) == (0, 0, -1)
        assert await lookup(-1) == (0, 3, -1)  # the high watermark, not the log end (4)
        assert await lookup(200) == (0, 1, 500)  # the first record at or after, inside the batch
        assert await lookup(600) == (0, -1, -1)  # only the uncommitted record has it
        assert await lookup(-3) == (0, -1, -1)  # the max timestamp is uncommitted: filtered like Kafka
        cluster.replication.normal("t")
        assert await lookup(-3) == (0, 3, 900)
        assert await lookup(-4, 8) == (0, 0, -1) and await lookup(-5, 9) == (0, -1, -1)


async def test_offset_for_leader_epoch_follows_the_epoch_history(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        p = cluster.partition("t", 0)
        w = WireClient(cluster.connect(p.leader))
        await w.call(PRODUCE, 9, produce_body("t", 0, [b"a", b"b"]))
        cluster.move_leader("t", 0, follower_of(cluster, "t"))
        w = WireClient(cluster.connect(p.leader))
        await w.call(PRODUCE, 9, produce_body("t", 0, [b"c"]))

        async def end_of(epoch, current=-1):
            r = await w.call(OFFSET_FOR_LEADER_EPOCH, 4, {"replica_id": -1, "topics": [{"topic": "t", "partitions": [
                {"partition": 0, "leader_epoch": epoch, "current_leader_epoch": current}]}]})
            x = r.topics[0].partitions[0]
            return x.error_code, x.leader_epoch, x.end_offset

        assert await end_of(0) == (0, 0, 2)  # epoch 0 ended where epoch 1 began
        assert await end_of(1) == (0, 1, 3)  # the current epoch ends at the log end
        assert await end_of(5) == (0, -1, -1)
        assert (await end_of(1, current=0))[0] == 74 and (await end_of(1, current=2))[0] == 75
