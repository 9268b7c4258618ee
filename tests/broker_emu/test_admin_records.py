"""DeleteRecords and its purgatory (ReplicaManager.deleteRecords, DelayedDeleteRecords), in
virtual time: the answer waits for every in-sync replica's log start; a stalled follower makes it
REQUEST_TIMED_OUT at timeout_ms, though the leader's log already starts at the new offset."""

import trio

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from client.protocol import ApiKey
from tests.broker_emu.helpers import LIST_OFFSETS, PRODUCE, batch, produce_many
from tests.broker_emu.wire import WireClient


async def _setup(cluster) -> WireClient:
    leader = cluster.partition("t", 0).leader
    w = WireClient(cluster.connect(leader))
    await w.call(PRODUCE, 9, produce_many([("t", 0, batch([b"a", b"b", b"c", b"d", b"e"]))]))
    return w


async def _delete(w: WireClient, offset: int, timeout_ms: int = 5000):
    r = await w.call(ApiKey.DELETE_RECORDS, 2, {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": offset}]}],
                                                "timeout_ms": timeout_ms})
    p = r.topics[0].partitions[0]
    return p.error_code, p.low_watermark


async def _earliest(w: WireClient) -> int:
    r = await w.call(LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -2}]}]})
    return r.topics[0].partitions[0].offset


async def test_records_before_the_offset_are_gone_once_every_replica_moved(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config={"emu.replication.delay.ms": 40}) as cluster:
        w = await _setup(cluster)
        start = trio.current_time()
        assert await _delete(w, 3) == (0, 3)
        assert trio.current_time() - start == 0.04   # the followers' next fetch
        assert await _earliest(w) == 3
        assert await _delete(w, -1) == (0, 5)          # -1: up to the high watermark
        assert await _delete(w, 9) == (1, -1)          # past the high watermark: OFFSET_OUT_OF_RANGE


async def test_a_stalled_follower_times_the_answer_out_but_not_the_deletion(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config={"replica.lag.time.max.ms": 1_000_000}) as cluster:
        w = await _setup(cluster)
        cluster.set_replication("t", 0, None, "stall")
        start = trio.current_time()
        assert await _delete(w, 2, timeout_ms=1500) == (7, -1)   # REQUEST_TIMED_OUT, from the purgatory
        assert trio.current_time() - start == 1.5
        assert await _earliest(w) == 2
        expired = [e for e in cluster.trace.query(kind=Kind.PURGATORY_EXPIRE) if e.details.get("purgatory") == "delete_records"]
        assert len(expired) == 1
