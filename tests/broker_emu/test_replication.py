"""Simulated replication in virtual time: ISR shrink and expand, high watermark, chaos hooks."""

import trio

from broker_emu.runtime import open_cluster
from tests.broker_emu.helpers import PRODUCE, WireClient, follower_of, produce_body

LAG_MAX = {"replica.lag.time.max.ms": 10_000}


async def test_stalled_follower_leaves_the_isr_lag_max_after_it_stopped(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config=LAG_MAX) as cluster:
        p = cluster.partition("t", 0)
        stalled = follower_of(cluster, "t")
        await trio.sleep(1)
        cluster.replication.stall("t", 0, stalled)  # caught up (nothing to copy) until now, t=1
        await trio.sleep(3)
        assert stalled in p.isr  # a stalled follower lacking nothing stays in sync
        w = WireClient(cluster.connect(p.leader))
        r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"], timeout_ms=60_000))
        assert r.responses[0].partition_responses[0].error_code == 0
        assert trio.current_time() == 1 + 10  # not 4 + 10: Kafka counts from its last caught-up fetch
        assert stalled not in p.isr and p.high_watermark == 1
        shrink = cluster.trace.query(kind="isr_change")[0]
        assert (shrink.t_ms, shrink.details["shrink"]) == (11_000, [stalled])


async def test_follower_stalled_for_longer_than_lag_max_leaves_at_the_next_append(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config=LAG_MAX) as cluster:
        p = cluster.partition("t", 0)
        cluster.replication.stall("t", 0, follower_of(cluster, "t"))
        await trio.sleep(60)
        w = WireClient(cluster.connect(p.leader))
        r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"], timeout_ms=30_000))
        assert trio.current_time() == 60 and r.responses[0].partition_responses[0].error_code == 0
        assert len(p.isr) == 2


async def test_a_follower_lagging_less_than_lag_max_stays_in_sync_under_load(autojump_clock):
    async with open_cluster(2, topics=[("t", 1, 2)], listen=False, config={"replica.lag.time.max.ms": 1000}) as cluster:
        p = cluster.partition("t", 0)
        cluster.replication.lag("t", ms=375)
        w = WireClient(cluster.connect(p.leader))
        for i in range(80):  # a write every 125 ms for 10 s: the follower is never fully caught up
            await w.call(PRODUCE, 9, produce_body("t", 0, [b"v"], acks=1))
            assert p.high_watermark == max(0, i - 2)  # HW trails the leader by the 375 ms lag
            await trio.sleep(0.125)
        assert p.isr == sorted(p.replicas)
        assert cluster.trace.query(kind="isr_change") == []


async def test_a_follower_lagging_more_than_lag_max_leaves_and_rejoins_when_it_catches_up(autojump_clock):
    async with open_cluster(2, topics=[("t", 1, 2)], listen=False, config={"replica.lag.time.max.ms": 1000}) as cluster:
        p = cluster.partition("t", 0)
        follower = follower_of(cluster, "t")
        cluster.replication.lag("t", ms=1500)
        w = WireClient(cluster.connect(p.leader))
        r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"v"], timeout_ms=5000))
        assert trio.current_time() == 1.0 and p.isr == [p.leader]  # out at 1 s; HW moves without it
        assert r.responses[0].partition_responses[0].error_code == 0
        await trio.sleep(0.6)
        assert follower in p.isr  # its copy landed at 1.5 s: caught up, back in sync
        kinds = [(e.details.get("shrink"), e.details.get("expand")) for e in cluster.trace.query(kind="isr_change")]
        assert kinds == [([follower], None), (None, [follower])]


async def test_high_watermark_is_the_smallest_log_end_over_the_isr(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        p = cluster.partition("t", 0)
        slow, fast = [b for b in p.replicas if b != p.leader]
        cluster.replication.lag("t", 0, slow, ms=400)
        w = WireClient(cluster.connect(p.leader))
        await w.call(PRODUCE, 9, produce_body("t", 0, [b"a", b"b"], acks=1))
        assert (p.leo_of(p.leader), p.leo_of(fast), p.leo_of(slow), p.high_watermark) == (2, 2, 0, 0)
        await trio.sleep(0.5)
        assert p.high_watermark == 2


async def test_hooks_take_effect_at_once(autojump_clock):
    async with open_cluster(3, topics=[("t", 2, 3)], listen=False) as cluster:
        cluster.replication.stall("t")
        w = WireClient(cluster.connect(cluster.partition("t", 0).leader))
        await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"], acks=1))
        p = cluster.partition("t", 0)
        assert p.high_watermark == 0
        cluster.replication.normal("t")  # no new append needed: followers resume and catch up
        assert p.high_watermark == 1
        modes = [e.details["mode"] for e in cluster.trace.query(kind="replication_mode")]
        assert modes == ["stall", "normal"]


async def test_stopping_a_broker_moves_leadership_and_restarting_it_restores_the_isr(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        p = cluster.partition("t", 0)
        old = p.leader
        await cluster.stop_broker(old)
        assert p.leader != old and p.leader_epoch == 1 and old not in p.isr
        w = WireClient(cluster.connect(p.leader))
        await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"]))
        await cluster.start_broker(old)
        assert old in p.isr and p.leo_of(old) == 1


async def test_a_new_leader_without_the_uncommitted_tail_truncates_it(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        p = cluster.partition("t", 0)
        old = p.leader
        w = WireClient(cluster.connect(old))
        await w.call(PRODUCE, 9, produce_body("t", 0, [b"committed"]))
        cluster.replication.stall("t")
        await w.call(PRODUCE, 9, produce_body("t", 0, [b"only on the leader"], acks=1))
        assert (p.log_end_offset, p.high_watermark) == (2, 1)
        cluster.move_leader("t", 0, follower_of(cluster, "t"))
        assert (p.log_end_offset, p.high_watermark, p.leader_epoch) == (1, 1, 1)  # the acks=1 write is gone
        assert p.epoch_starts == {0: 0, 1: 1}
        cluster.replication.normal("t")
        assert sorted(p.isr) == [0, 1, 2] and p.leo_of(old) == 1
