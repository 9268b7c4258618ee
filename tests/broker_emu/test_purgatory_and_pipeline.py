"""The emulated broker in virtual time: purgatory expiry, pipelining, bad input, idempotence."""

import trio

from broker_emu.runtime import open_cluster
from client.protocol import ApiKey
from tests.broker_emu.wire import WireClient, fetch_body, leader_of, produce_body

PRODUCE, FETCH, METADATA, API_VERSIONS, LIST_OFFSETS = 0, 1, 3, 18, 2


async def test_acks_all_times_out_in_purgatory_at_timeout_ms_and_keeps_the_data(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.set_replication("t", None, None, "stall")
        w = WireClient(cluster.connect(leader_of(cluster, "t")))
        start = trio.current_time()
        r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"], timeout_ms=1500))
        part = r.responses[0].partition_responses[0]
        assert trio.current_time() - start == 1.5
        assert (part.error_code, part.base_offset) == (7, 0)
        p = cluster.partition("t", 0)
        assert p.log_end_offset == 1 and p.high_watermark == 0  # written, not committed
        kinds = [e.kind for e in cluster.trace.events if e.kind.startswith("purgatory")]
        assert kinds == ["purgatory_enter", "purgatory_expire"]
        cluster.set_replication("t", None, None, "normal")
        assert p.high_watermark == 1  # followers catch up: the timed-out write becomes committed


async def test_acks_all_completes_when_followers_catch_up(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.set_replication("t", None, None, "lag", 200)
        w = WireClient(cluster.connect(leader_of(cluster, "t")))
        start = trio.current_time()
        r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"], timeout_ms=5000))
        assert r.responses[0].partition_responses[0].error_code == 0
        assert trio.current_time() - start == 0.2


async def test_mixed_outcomes_in_one_response(autojump_clock):
    async with open_cluster(2, topics=[("t", 2, 2)], listen=False) as cluster:
        leader = leader_of(cluster, "t", 0)
        cluster.move_leader("t", 1, leader)
        cluster.set_replication("t", 1, None, "stall")
        w = WireClient(cluster.connect(leader))
        body = produce_body("t", 0, [b"x"], timeout_ms=1000)
        body["topic_data"][0]["partition_data"].append(produce_body("t", 1, [b"y"])["topic_data"][0]["partition_data"][0] | {"index": 1})
        r = await w.call(PRODUCE, 9, body)
        errors = {p.index: p.error_code for p in r.responses[0].partition_responses}
        assert errors == {0: 0, 1: 7}


async def test_leader_change_while_parked_answers_not_leader(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.set_replication("t", None, None, "stall")
        leader = leader_of(cluster, "t")
        w = WireClient(cluster.connect(leader))
        async with trio.open_nursery() as n:
            result = {}

            async def produce():
                result["r"] = await w.call(PRODUCE, 10, produce_body("t", 0, [b"a"], timeout_ms=30000))
                result["t"] = trio.current_time()

            n.start_soon(produce)
            await trio.sleep(2)
            other = next(b for b in cluster.partition("t", 0).replicas if b != leader)
            cluster.move_leader("t", 0, other)
        part = result["r"].responses[0].partition_responses[0]
        assert part.error_code == 6 and result["t"] == 2.0
        assert part.current_leader.leader_id == other


async def test_parked_produce_blocks_its_connection_only(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.set_replication("t", None, None, "stall")
        leader = leader_of(cluster, "t")
        w = WireClient(cluster.connect(leader))
        other = WireClient(cluster.connect(leader))
        await w.send(PRODUCE, 9, produce_body("t", 0, [b"a"], timeout_ms=3000))
        await w.send(METADATA, 12, {"topics": None})
        await other.call(METADATA, 12, {"topics": None})
        assert trio.current_time() == 0  # another connection is answered at once
        first, _ = await w.recv()
        second, _ = await w.recv()
        assert (first, second) == (1, 2) and trio.current_time() == 3.0  # in order, after the park


async def test_fetch_long_poll_waits_then_wakes_early_on_data(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        start = trio.current_time()
        r = await w.call(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=500))
        assert trio.current_time() - start == 0.5 and r.responses[0].partitions[0].records in (b"", None)
        producer = WireClient(cluster.connect(0))
        async with trio.open_nursery() as n:
            got = {}

            async def fetch():
                got["r"] = await w.call(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=10_000))
                got["t"] = trio.current_time()

            n.start_soon(fetch)
            await trio.sleep(1)
            await producer.call(PRODUCE, 9, produce_body("t", 0, [b"hello"], acks=1))
        assert got["t"] == start + 1.5 and got["r"].responses[0].partitions[0].high_watermark == 1


async def test_api_versions_too_new_gets_error_35_in_v0_layout(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        stream = cluster.connect(0)
        # ApiVersions v99: header v1 layout (api 18, version 99, corr 7, client id "x"), empty body
        await stream.send_all(b"\x00\x00\x00\x0b" + b"\x00\x12\x00\x63\x00\x00\x00\x07\x00\x01x")
        data = await stream.receive_some(1000)
        size = int.from_bytes(data[:4], "big")
        body = data[4:4 + size]
        assert body[:4] == b"\x00\x00\x00\x07"           # correlation id, response header v0
        assert body[4:6] == b"\x00\x23"                  # error 35
        assert body[6:10] == b"\x00\x00\x00\x01"         # classic int32 array of one
        assert body[10:12] == b"\x00\x12" and int.from_bytes(body[14:16], "big") == 4  # ApiVersions max 4
        assert len(body) == 16                            # v0 has no throttle_time_ms


async def test_unsupported_version_and_oversized_frame_close_only_that_connection(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"socket.request.max.bytes": 1000}) as cluster:
        good = WireClient(cluster.connect(0))
        bad = cluster.connect(0)
        await bad.send_all((5000).to_bytes(4, "big") + b"x" * 10)  # claims 5000 > 1000
        assert await WireClient(bad).closed()
        bad2 = cluster.connect(0)
        await bad2.send_all(b"\x00\x00\x00\x0a" + b"\x00\x01\x00\x01\x00\x00\x00\x01\xff\xff")  # Fetch v1: not served
        assert await WireClient(bad2).closed()
        garbage = cluster.connect(0)
        await garbage.send_all(b"\x00\x00\x00\x03abc")
        assert await WireClient(garbage).closed()
        r = await good.call(PRODUCE, 9, produce_body("t", 0, [b"still fine"], acks=1))
        assert r.responses[0].partition_responses[0].error_code == 0
        reasons = [e.details["reason"] for e in cluster.trace.events if e.kind == "conn_close" and e.details.get("closed_by") == "broker"]
        assert any("socket.request.max.bytes" in r for r in reasons) and any("unsupported API key 1 version 1" in r for r in reasons)


async def test_idempotent_retry_is_not_duplicated(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        init = await w.call(ApiKey.INIT_PRODUCER_ID, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
        batch = dict(producer_id=init.producer_id, producer_epoch=init.producer_epoch, base_sequence=0)
        first = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a", b"b"], **batch))
        again = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a", b"b"], **batch))
        assert first.responses[0].partition_responses[0].base_offset == again.responses[0].partition_responses[0].base_offset == 0
        assert cluster.partition("t", 0).log_end_offset == 2
        gap = await w.call(PRODUCE, 9, produce_body("t", 0, [b"c"], **{**batch, "base_sequence": 5}))
        assert gap.responses[0].partition_responses[0].error_code == 45


async def test_stalled_follower_leaves_isr_after_replica_lag_time(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config={"replica.lag.time.max.ms": 10000}) as cluster:
        p = cluster.partition("t", 0)
        stalled = next(b for b in p.replicas if b != p.leader)
        cluster.set_replication("t", 0, stalled, "stall")
        w = WireClient(cluster.connect(p.leader))
        start = trio.current_time()
        r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"], timeout_ms=60000))
        assert r.responses[0].partition_responses[0].error_code == 0
        assert trio.current_time() - start == 10.0  # HW moved when the stalled follower left the ISR
        assert stalled not in p.isr


async def test_not_enough_replicas_before_append(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config={"min.insync.replicas": 3}) as cluster:
        p = cluster.partition("t", 0)
        await cluster.stop_broker(next(b for b in p.replicas if b != p.leader))
        w = WireClient(cluster.connect(p.leader))
        r = await w.call(PRODUCE, 9, produce_body("t", 0, [b"a"]))
        assert r.responses[0].partition_responses[0].error_code == 19 and p.log_end_offset == 0


async def test_list_offsets_and_corrupt_crc(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        await w.call(PRODUCE, 9, produce_body("t", 0, [b"a", b"b"], acks=1))
        bad = produce_body("t", 0, [b"c"], acks=1)
        rec = bytearray(bad["topic_data"][0]["partition_data"][0]["records"])
        rec[-1] ^= 1
        bad["topic_data"][0]["partition_data"][0]["records"] = bytes(rec)
        r = await w.call(PRODUCE, 9, bad)
        assert r.responses[0].partition_responses[0].error_code == 2
        offs = await w.call(LIST_OFFSETS, 7, {"replica_id": -1, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "timestamp": t} for t in (-2, -1, -3)]}]})
        assert [(x.offset) for x in offs.topics[0].partitions] == [0, 2, 0]
