"""Leader election when a broker stops: only in-sync replicas may lead (Kafka's default
unclean.leader.election.enable=false), so committed data is never truncated. Found by
``broker-emu chaos`` (seed 36): the only in-sync replica stopped, an out-of-sync one was elected,
records below the high watermark that a consumer had already read vanished and acknowledged
records changed offsets."""

import trio

from broker_emu.runtime import open_cluster
from tests.broker_emu.helpers import METADATA, PRODUCE, WireClient, leader_of, produce_body

LAG = {"replica.lag.time.max.ms": 1000}


async def _alone_in_the_isr_with_a_committed_record(cluster):
    """Followers stall and leave the ISR; the leader alone commits offset 0 (HW 1)."""
    p = cluster.partition("t", 0)
    cluster.replication.stall("t")
    w = WireClient(cluster.connect(p.leader))
    r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"], timeout_ms=5000))
    assert r.responses[0].partition_responses[0].error_code == 0   # min.insync.replicas=1
    assert p.isr == [p.leader] and p.high_watermark == 1
    return p


async def test_stopping_the_only_in_sync_leader_leaves_the_partition_offline_not_truncated(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config=LAG) as cluster:
        p = await _alone_in_the_isr_with_a_committed_record(cluster)
        old = p.leader
        await cluster.stop_broker(old)
        assert (p.leader, p.log_end_offset, p.high_watermark) == (old, 1, 1)   # nobody in sync to elect
        other = next(b for b in p.replicas if b != old)
        meta = await WireClient(cluster.connect(other)).call(METADATA, 12, {"topics": [{"name": "t"}]})
        part = meta.topics[0].partitions[0]
        assert (part.error_code, part.leader_id) == (5, -1)                    # LEADER_NOT_AVAILABLE
        await trio.sleep(10)
        await cluster.start_broker(old)
        cluster.replication.normal("t")
        assert leader_of(cluster, "t") == old and p.high_watermark == 1 and p.log_end_offset == 1


async def test_unclean_election_when_enabled_truncates_what_the_new_leader_lacks(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False,
                            config={**LAG, "unclean.leader.election.enable": True}) as cluster:
        p = await _alone_in_the_isr_with_a_committed_record(cluster)
        old = p.leader
        await cluster.stop_broker(old)
        assert p.leader != old and p.log_end_offset == 0 and p.high_watermark == 0   # the committed record is gone
