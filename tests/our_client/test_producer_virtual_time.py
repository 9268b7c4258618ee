"""Our producer against the emulator in virtual time: KIP-91 and KIP-19 with exact times."""

import pytest
import trio
import trio.testing

from broker_emu import open_cluster
from client.config import ConfigException, producer_config
from client.errors import TimeoutException
from client.partitioner import murmur2
from client.producer import open_producer


def connect_to(cluster):
    async def connect(node, host, port):
        return cluster.connect(node if node >= 0 else 0)
    return connect


BOOT = {"bootstrap.servers": "127.0.0.1:0"}


async def test_delivery_succeeds_and_offsets_are_assigned(autojump_clock):
    async with open_cluster(3, topics=[("t", 2, 3)], listen=False) as cluster:
        async with open_producer({**BOOT, "linger.ms": 5}, connect=connect_to(cluster)) as p:
            futures = [await p.send("t", b"v%d" % i, partition=i % 2) for i in range(6)]
            got = [await f.get() for f in futures]
        assert sorted((m.partition, m.offset) for m in got) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
        assert cluster.partition("t", 0).log_end_offset == 3


async def test_stalled_followers_purgatory_timeouts_then_delivery_timeout(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config={"replica.lag.time.max.ms": 1_000_000}) as cluster:
        cluster.set_replication("t", None, None, "stall")
        async with open_producer({**BOOT, "request.timeout.ms": 30000, "delivery.timeout.ms": 120000},
                                 connect=connect_to(cluster)) as p:
            start = trio.current_time()
            future = await p.send("t", b"a", partition=0)
            with pytest.raises(TimeoutException) as info:
                await future.get()
            assert trio.current_time() - start == 120.0
        message = str(info.value)
        assert "delivery.timeout.ms=120000 ms" in message and "4 attempt(s)" in message
        # Produce carries timeout_ms = request.timeout.ms (as Java's producer), so the broker's
        # purgatory and the client's request timeout race at 30 s (SEMANTICS.md §2.3): both fire,
        # and the message names whichever ended the last attempt.
        assert "REQUEST_TIMED_OUT from the purgatory" in message or "request.timeout.ms=30000 ms" in message
        expiries = [e.t_ms for e in cluster.trace.events if e.kind == "purgatory_expire"]
        assert expiries[:3] == [pytest.approx(30000, abs=1), pytest.approx(60100, abs=1), pytest.approx(90300, abs=1)]  # backoff 100 ms, then 200 ms
        # idempotence: every retry was the same batch, so the broker kept one copy
        assert cluster.partition("t", 0).log_end_offset == 1


async def test_unanswered_produce_disconnects_retries_and_is_not_duplicated(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        async with open_producer({**BOOT, "request.timeout.ms": 30000}, connect=connect_to(cluster)) as p:
            await p.refresh_metadata(["t"])
            cluster.faults.add({"match": {"api": "Produce"}, "action": "close_after", "times": 1}, cluster.now_ms())
            start = trio.current_time()
            meta = await (await p.send("t", b"once", partition=0)).get()
        assert meta.offset == 0 and cluster.partition("t", 0).log_end_offset == 1  # appended once
        assert trio.current_time() - start < 1.0  # close_after: the broker dropped the connection at once


async def test_black_hole_then_retry_on_a_new_connection_after_request_timeout(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        async with open_producer({**BOOT, "request.timeout.ms": 30000}, connect=connect_to(cluster)) as p:
            await p.refresh_metadata(["t"])
            cluster.faults.add({"match": {"api": "Produce"}, "action": "black_hole", "times": 1}, cluster.now_ms())
            start = trio.current_time()
            meta = await (await p.send("t", b"x", partition=0)).get()
            elapsed = trio.current_time() - start
        assert meta.offset == 0 and 30.0 <= elapsed < 30.5
        recvs = [e for e in cluster.trace.events if e.kind == "recv" and e.t_ms >= 29_999]
        assert [e.api for e in recvs][:2] == ["Metadata", "Produce"] or "Metadata" in [e.api for e in recvs]
        closes = [e for e in cluster.trace.events if e.kind == "conn_close" and e.details["closed_by"] == "client"]
        assert closes and closes[0].t_ms == pytest.approx(30000, abs=1)


async def test_missing_topic_blocks_send_for_max_block_ms(autojump_clock):
    async with open_cluster(1, listen=False, config={"auto.create.topics.enable": False}) as cluster:
        async with open_producer({**BOOT, "max.block.ms": 5000}, connect=connect_to(cluster)) as p:
            start = trio.current_time()
            with pytest.raises(TimeoutException, match="max.block.ms=5000 ms waiting for metadata of topic 'nope'"):
                await p.send("nope", b"x")
            assert trio.current_time() - start == pytest.approx(5.0, abs=0.11)


async def test_broker_down_batches_expire_at_delivery_timeout(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_producer({**BOOT, "delivery.timeout.ms": 60000, "request.timeout.ms": 10000},
                                 connect=connect_to(cluster)) as p:
            await p.refresh_metadata(["t"])
            await cluster.stop_broker(0)
            start = trio.current_time()
            future = await p.send("t", b"x", partition=0)
            with pytest.raises(TimeoutException, match="delivery.timeout.ms=60000 ms"):
                await future.get()
            assert trio.current_time() - start == 60.0


def test_config_validation_names_the_three_values():
    with pytest.raises(ConfigException, match=r"delivery.timeout.ms \(1000\).*linger.ms \(5\).*request.timeout.ms \(30000\)"):
        producer_config({**BOOT, "delivery.timeout.ms": 1000, "linger.ms": 5})
    assert producer_config({**BOOT, "request.timeout.ms": 200000})["delivery.timeout.ms"] == 200000  # unset: raised to fit
    with pytest.raises(ConfigException, match="unknown configuration"):
        producer_config({**BOOT, "lingr.ms": 5})


def test_murmur2_matches_kafka():
    assert murmur2(b"21") == -973932308 and murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536 and murmur2(b"abc") == 479470107


async def test_metadata_is_refreshed_after_metadata_max_age(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_producer({**BOOT, "metadata.max.age.ms": 60000}, connect=connect_to(cluster)) as p:
            await (await p.send("t", b"a", partition=0)).get()
            await trio.sleep(30)
            await (await p.send("t", b"b", partition=0)).get()
            young = len([e for e in cluster.trace.events if e.kind == "recv" and e.api == "Metadata"])
            await trio.sleep(31)
            await (await p.send("t", b"c", partition=0)).get()
            old = len([e for e in cluster.trace.events if e.kind == "recv" and e.api == "Metadata"])
        assert old == young + 1  # only the batch sent after 60 s triggered a refresh


async def test_stale_leader_epochs_are_ignored(autojump_clock):
    from client.protocol.wire import Message as M

    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_producer(BOOT, connect=connect_to(cluster)) as p:
            def md(leader, epoch):
                return M(brokers=[], topics=[M(error_code=0, name="t", partitions=[M(partition_index=0, leader_id=leader, leader_epoch=epoch)])])

            p.apply_metadata(md(2, 5))
            p.apply_metadata(md(1, 4))   # an older view: ignored
            assert p.partitions["t"] == [(2, 5)]
            p.apply_metadata(md(1, 6))
            assert p.partitions["t"] == [(1, 6)]
