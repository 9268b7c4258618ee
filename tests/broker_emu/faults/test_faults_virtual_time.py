"""Every fault action, applied by the real pipeline, in virtual time."""

import trio

from broker_emu.runtime import open_cluster
from tests.broker_emu.wire import WireClient, produce_body

PRODUCE, METADATA = 0, 3
META = {"topics": None}



async def test_black_hole_keeps_the_connection_open_and_never_answers(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.faults.add({"match": {"api": "Metadata"}, "action": "black_hole", "times": 1}, cluster.now_ms())
        w = WireClient(cluster.connect(0))
        await w.send(METADATA, 12, META)
        with trio.move_on_after(120) as scope:
            await w.recv()
        assert scope.cancelled_caught
        assert [e.kind for e in cluster.trace.events if e.kind in ("fault_applied", "conn_close")] == ["fault_applied"]
        other = WireClient(cluster.connect(0))
        assert (await other.call(METADATA, 12, META)).cluster_id  # times=1: the next request is served


async def test_delays_add_to_the_round_trip(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        cluster.faults.add({"action": {"type": "delay_request", "ms": 300}}, 0)
        cluster.faults.add({"action": {"type": "delay_response", "ms": 200}}, 0)
        w = WireClient(cluster.connect(0))
        start = trio.current_time()
        await w.call(METADATA, 12, META)
        assert trio.current_time() - start == 0.5


async def test_close_before_does_not_handle_close_after_does(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        rule = cluster.faults.add({"match": {"api": "Produce"}, "action": "close_before", "times": 1}, 0)
        w = WireClient(cluster.connect(0))
        await w.send(PRODUCE, 9, produce_body("t", 0, [b"a"], acks=1))
        assert await w.closed() and cluster.partition("t", 0).log_end_offset == 0
        cluster.faults.remove(rule.id)
        cluster.faults.add({"match": {"api": "Produce"}, "action": "close_after", "times": 1}, 0)
        w = WireClient(cluster.connect(0))
        await w.send(PRODUCE, 9, produce_body("t", 0, [b"a"], acks=1))
        assert await w.closed() and cluster.partition("t", 0).log_end_offset == 1  # handled, unanswered
        closes = [e.details["closed_by"] for e in cluster.trace.events if e.kind == "conn_close"]
        assert closes[:2] == ["broker", "broker"]


async def test_error_injection_per_partition_without_side_effects(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.faults.add({"match": {"api": "Produce", "topic": "t"}, "action": {"type": "error", "error": "NOT_LEADER_OR_FOLLOWER"}, "times": 2}, 0)
        w = WireClient(cluster.connect(0))
        codes = [(await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"], acks=1))).responses[0].partition_responses[0].error_code
                 for _ in range(3)]
        assert codes == [6, 6, 0] and cluster.partition("t", 0).log_end_offset == 1


async def test_throttle_sets_throttle_time_and_mutes_the_connection(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        cluster.faults.add({"match": {"api": "Metadata"}, "action": {"type": "throttle", "ms": 800}, "times": 1}, 0)
        w = WireClient(cluster.connect(0))
        start = trio.current_time()
        first = await w.call(METADATA, 12, META)
        assert first.throttle_time_ms == 800 and trio.current_time() == start
        await w.call(METADATA, 12, META)
        assert trio.current_time() - start == 0.8  # KIP-219: muted for the throttle time


async def test_partial_response_then_stall(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        cluster.faults.add({"action": "partial_response"}, 0)
        stream = cluster.connect(0)
        w = WireClient(stream)
        await w.send(METADATA, 12, META)
        data = await stream.receive_some(1 << 16)
        size = int.from_bytes(data[:4], "big")
        assert 0 < len(data) < size + 4
        with trio.move_on_after(60) as scope:
            await stream.receive_some(1 << 16)
        assert scope.cancelled_caught


async def test_connection_level_faults(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        cluster.faults.add({"action": "refuse_connections", "times": 1}, 0)
        assert await WireClient(cluster.connect(0)).closed()
        cluster.faults.add({"action": {"type": "slow_accept", "ms": 250}, "times": 1}, 0)
        start = trio.current_time()
        await WireClient(cluster.connect(0)).call(METADATA, 12, META)
        assert trio.current_time() - start == 0.25


async def test_stop_broker_moves_leadership_and_drops_connections(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        p = cluster.partition("t", 0)
        old = p.leader
        w = WireClient(cluster.connect(old))
        await w.call(METADATA, 12, META)
        await cluster.stop_broker(old)
        assert await w.closed()
        assert p.leader != old and p.leader_epoch == 1 and old not in p.isr
        md = await WireClient(cluster.connect(p.leader)).call(METADATA, 12, META)
        assert old not in [b.node_id for b in md.brokers]
        await cluster.start_broker(old)
        assert cluster.is_alive(old)


async def test_accept_never_read(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        cluster.faults.add({"action": "accept_never_read", "times": 1}, 0)
        w = WireClient(cluster.connect(0))
        await w.send(METADATA, 12, META)
        with trio.move_on_after(300) as scope:
            await w.recv()
        assert scope.cancelled_caught
        assert not [e for e in cluster.trace.events if e.kind == "recv"]  # never read a byte


async def test_cut_link_stalls_only_that_follower(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config={"replica.lag.time.max.ms": 5000}) as cluster:
        p = cluster.partition("t", 0)
        cut_off = next(b for b in p.replicas if b != p.leader)
        cluster.replication.cut(p.leader, cut_off)
        w = WireClient(cluster.connect(p.leader))
        start = trio.current_time()
        r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"], timeout_ms=60000))
        assert r.responses[0].partition_responses[0].error_code == 0
        assert trio.current_time() - start == 5.0 and cut_off not in p.isr
        cluster.replication.heal(p.leader, cut_off)
        cluster.replication.resync(p)
        assert cut_off in p.isr  # caught up again: back in the ISR


async def test_same_seed_same_decisions_through_the_pipeline(autojump_clock):
    async def errors_seen(seed):
        async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.seed": seed}) as cluster:
            cluster.faults.add({"match": {"api": "Produce"}, "action": {"type": "error", "error": 6}, "probability": 0.5}, 0)
            w = WireClient(cluster.connect(0))
            return [(await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"], acks=1))).responses[0].partition_responses[0].error_code
                    for _ in range(40)]

    first = await errors_seen(11)
    assert first == await errors_seen(11)
    assert first != await errors_seen(12)
    assert 8 <= first.count(6) <= 32


async def test_stopping_a_broker_moves_only_the_groups_it_coordinated(autojump_clock):
    async with open_cluster(3, listen=False) as cluster:
        groups = [f"g{i}" for i in range(60)]
        before = {g: cluster.coordinator_for(g) for g in groups}
        await cluster.stop_broker(1)
        after = {g: cluster.coordinator_for(g) for g in groups}
        moved = {g for g in groups if before[g] != after[g]}
        assert moved == {g for g in groups if before[g] == 1} and moved
        assert all(after[g] != 1 for g in groups)
