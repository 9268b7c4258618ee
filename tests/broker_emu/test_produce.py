"""Produce over the in-memory transport in virtual time: acks, the purgatory, idempotence."""

import trio

from broker_emu.runtime import open_cluster
from tests.broker_emu.helpers import (
    INIT_PRODUCER_ID,
    METADATA,
    PRODUCE,
    WireClient,
    batch,
    follower_of,
    leader_of,
    partition_results,
    produce_body,
    produce_many,
)


async def test_acks_all_times_out_exactly_timeout_ms_after_the_append(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.replication.stall("t")
        # the request waits 250 ms before the handler appends: the purgatory clock starts after that
        cluster.faults.add({"match": {"api": "Produce"}, "action": {"type": "delay_request", "ms": 250}}, 0)
        w = WireClient(cluster.connect(leader_of(cluster, "t")))
        r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a", b"b"], timeout_ms=1500))
        assert trio.current_time() == 0.25 + 1.5
        part = r.responses[0].partition_responses[0]
        assert (part.error_code, part.base_offset, part.log_start_offset) == (7, 0, 0)
        p = cluster.partition("t", 0)
        assert (p.log_end_offset, p.high_watermark) == (2, 0)  # in the leader's log, not committed
        enter, expire = (e for e in cluster.trace.events if e.kind.startswith("purgatory"))
        assert (enter.kind, enter.t_ms, expire.kind, expire.t_ms) == ("purgatory_enter", 250, "purgatory_expire", 1750)
        cluster.replication.normal("t")
        assert p.high_watermark == 2  # the followers catch up: the timed-out write becomes committed


async def test_mixed_outcomes_in_one_response(autojump_clock):
    async with open_cluster(3, topics=[("t", 3, 3)], listen=False) as cluster:
        leader = leader_of(cluster, "t", 0)
        cluster.move_leader("t", 1, leader)
        cluster.move_leader("t", 2, next(b for b in cluster.partition("t", 2).replicas if b != leader))
        cluster.replication.stall("t", 1)
        w = WireClient(cluster.connect(leader))
        body = produce_many([("t", 0, batch([b"ok"])), ("t", 1, batch([b"late"])), ("t", 2, batch([b"wrong broker"])),
                             ("nope", 0, batch([b"?"]))], timeout_ms=2000)
        r = partition_results(await w.call(PRODUCE, 9, body))
        assert trio.current_time() == 2.0
        assert {k: v.error_code for k, v in r.items()} == {("t", 0): 0, ("t", 1): 7, ("t", 2): 6, ("nope", 0): 3}
        assert (r["t", 0].base_offset, r["t", 1].base_offset, r["t", 2].base_offset) == (0, 0, -1)


async def test_partitions_completing_at_different_times_answer_together(autojump_clock):
    async with open_cluster(3, topics=[("t", 2, 3)], listen=False) as cluster:
        leader = leader_of(cluster, "t", 0)
        cluster.move_leader("t", 1, leader)
        cluster.replication.lag("t", 0, ms=100)
        cluster.replication.lag("t", 1, ms=700)
        w = WireClient(cluster.connect(leader))
        r = await w.call(PRODUCE, 9, produce_many([("t", 0, batch([b"a"])), ("t", 1, batch([b"b"]))], timeout_ms=5000))
        assert trio.current_time() == 0.7 and {p.error_code for p in partition_results(r).values()} == {0}


async def test_leader_change_completes_a_parked_produce_with_not_leader(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.replication.stall("t")
        leader = leader_of(cluster, "t")
        w = WireClient(cluster.connect(leader))
        await w.send(PRODUCE, 11, produce_body("t", 0, [b"a"], timeout_ms=30000))
        await trio.sleep(2)
        new = follower_of(cluster, "t")
        cluster.move_leader("t", 0, new)
        _, r = await w.recv()
        part = r.responses[0].partition_responses[0]
        assert trio.current_time() == 2.0 and part.error_code == 6
        assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (new, 1)
        assert part.log_start_offset == 0  # failed after its append: the append's log info stays
        assert [n.node_id for n in r.node_endpoints] == [new]  # KIP-951: the new leader, no Metadata round trip


async def test_deleting_the_topic_completes_a_parked_produce(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.replication.stall("t")
        w = WireClient(cluster.connect(leader_of(cluster, "t")))
        await w.send(PRODUCE, 9, produce_body("t", 0, [b"a"], timeout_ms=30000))
        await trio.sleep(1)
        cluster.delete_topic("t")
        _, r = await w.recv()
        assert trio.current_time() == 1.0 and r.responses[0].partition_responses[0].error_code == 3


async def test_min_insync_replicas_before_and_after_the_append(autojump_clock):
    config = {"min.insync.replicas": 2, "replica.lag.time.max.ms": 10_000}
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config=config) as cluster:
        cluster.replication.stall("t")
        p = cluster.partition("t", 0)
        w = WireClient(cluster.connect(p.leader))
        r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"], timeout_ms=60_000))
        # both followers leave the ISR at 10 s; HW then covers the write, but the ISR is too small
        assert trio.current_time() == 10.0 and r.responses[0].partition_responses[0].error_code == 20
        assert p.isr == [p.leader] and p.high_watermark == 1
        r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"b"]))
        assert r.responses[0].partition_responses[0].error_code == 19 and p.log_end_offset == 1  # nothing appended
        r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"c"], acks=1))
        assert r.responses[0].partition_responses[0].error_code == 0  # acks=1 does not care


async def test_acks_zero_sends_nothing_and_a_failure_closes_the_connection(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        await w.send(PRODUCE, 9, produce_body("t", 0, [b"fire"], acks=0))
        await w.send(METADATA, 12, {"topics": None})
        corr, _ = await w.recv()
        assert corr == 2 and cluster.partition("t", 0).log_end_offset == 1  # the first got no response
        await w.send(PRODUCE, 9, produce_body("missing", 0, [b"lost"], acks=0))
        assert await w.closed()
        close = cluster.trace.query(kind="conn_close")[-1]
        assert close.details["closed_by"] == "broker" and "acks=0" in close.details["reason"]


async def test_bad_acks_size_crc_and_follower(autojump_clock):
    async with open_cluster(2, topics=[("t", 1, 2)], listen=False) as cluster:
        cluster.create_topic("small", 1, 2, configs={"max.message.bytes": "200"})
        cluster.move_leader("small", 0, leader_of(cluster, "t"))
        w = WireClient(cluster.connect(leader_of(cluster, "t")))
        r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"], acks=2))
        assert r.responses[0].partition_responses[0].error_code == 21  # INVALID_REQUIRED_ACKS
        r = await w.call(PRODUCE, 9, produce_body("small", 0, [b"x" * 300]))
        assert r.responses[0].partition_responses[0].error_code == 10  # MESSAGE_TOO_LARGE
        body = produce_body("t", 0, [b"a"])
        raw = bytearray(body["topic_data"][0]["partition_data"][0]["records"])
        raw[-1] ^= 0xFF
        body["topic_data"][0]["partition_data"][0]["records"] = bytes(raw)
        r = await w.call(PRODUCE, 9, body)
        assert r.responses[0].partition_responses[0].error_code == 2  # CORRUPT_MESSAGE
        f = WireClient(cluster.connect(follower_of(cluster, "t")))
        r = await f.call(PRODUCE, 10, produce_body("t", 0, [b"a"]))
        part = r.responses[0].partition_responses[0]
        assert part.error_code == 6 and part.current_leader.leader_id == leader_of(cluster, "t")
        assert cluster.partition("t", 0).log_end_offset == 0


async def test_idempotent_retry_after_a_purgatory_timeout_is_not_duplicated(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config={"replica.lag.time.max.ms": 600_000}) as cluster:
        cluster.replication.stall("t")
        w = WireClient(cluster.connect(leader_of(cluster, "t")))
        init = await w.call(INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
        ids = dict(producer_id=init.producer_id, producer_epoch=init.producer_epoch)
        first = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a", b"b"], timeout_ms=1000, base_sequence=0, **ids))
        assert first.responses[0].partition_responses[0].error_code == 7
        cluster.replication.normal("t")
        retry = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a", b"b"], timeout_ms=1000, base_sequence=0, **ids))
        part = retry.responses[0].partition_responses[0]
        assert (part.error_code, part.base_offset) == (0, 0) and cluster.partition("t", 0).log_end_offset == 2


async def test_sequence_checks_remember_the_last_five_batches(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        init = await w.call(INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
        ids = dict(producer_id=init.producer_id, producer_epoch=init.producer_epoch)

        async def send(seq, n=1, **extra):
            r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"v"] * n, acks=1, base_sequence=seq, **{**ids, **extra}))
            p = r.responses[0].partition_responses[0]
            return p.error_code, p.base_offset

        assert [await send(2 * i, 2) for i in range(6)] == [(0, 2 * i) for i in range(6)]
        assert await send(2, 2) == (0, 2)  # the 2nd of 6 batches is still remembered: original offset
        assert (await send(0, 2))[0] == 46  # the 1st fell out of the window: DUPLICATE_SEQUENCE_NUMBER
        assert (await send(20))[0] == 45  # a gap: OUT_OF_ORDER_SEQUENCE_NUMBER
        bumped = await w.call(INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 60000, **ids})
        assert (bumped.producer_id, bumped.producer_epoch) == (ids["producer_id"], ids["producer_epoch"] + 1)
        assert (await send(12))[0] == 47  # the old epoch is fenced: INVALID_PRODUCER_EPOCH
        assert (await send(5, producer_epoch=bumped.producer_epoch))[0] == 45  # a new epoch starts at 0
        assert await send(0, producer_epoch=bumped.producer_epoch) == (0, 12)
        assert cluster.partition("t", 0).log_end_offset == 13


async def test_log_append_time_topics_stamp_broker_time(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        cluster.create_topic("t", 1, 1, configs={"message.timestamp.type": "LogAppendTime"})
        await trio.sleep(5)
        w = WireClient(cluster.connect(0))
        r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"], acks=1))
        part = r.responses[0].partition_responses[0]
        assert part.log_append_time_ms == cluster.wall_ms() == 1_700_000_005_000


async def test_a_thousand_parked_produces_expire_together_exactly(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.replication.stall("t")
        leader = leader_of(cluster, "t")
        clients = [WireClient(cluster.connect(leader)) for _ in range(1000)]
        for w in clients:  # one connection each: a connection holds one request at a time
            await w.send(PRODUCE, 9, produce_body("t", 0, [b"v"], timeout_ms=5000))
        await trio.sleep(1)
        assert len(cluster.produce_purgatory) == 1000 and cluster.partition("t", 0).log_end_offset == 1000
        answers = [await w.recv() for w in clients]
        assert trio.current_time() == 5.0
        assert sorted(r.responses[0].partition_responses[0].base_offset for _, r in answers) == list(range(1000))
        assert {r.responses[0].partition_responses[0].error_code for _, r in answers} == {7}
        assert cluster.produce_purgatory.statistics()["expired"] == 1000
