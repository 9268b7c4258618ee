"""Our producer against the emulator in virtual time: KIP-19 and KIP-91 with
exact instants, read from both sides (the client's outcome and the broker's trace)."""

import pytest
import trio
import trio.testing

from broker_emu.runtime import open_cluster
from client.config import ConfigException, producer_config
from client.errors import NotLeaderOrFollowerError, TimeoutException
from client.exceptions import (
    DeliveryTimeoutException,
    MaxBlockTimeoutException,
    RequestTimeoutException,
)
from client.producer.async_producer import open_producer
from client.producer.partitioner import murmur2, partition_for_key
from kafka_common.wallclock import virtual_ms

BOOT = {"bootstrap.servers": "127.0.0.1:0"}
EPOCH_MS = 1_700_000_000_000


def connect_to(cluster):
    async def connect(node, host, port):
        return cluster.connect(max(node, 0))
    return connect


def producer(cluster, **config):
    return open_producer({**BOOT, **config}, connect=connect_to(cluster), wall_clock=virtual_ms(EPOCH_MS))


def events(cluster, kind, api=None):
    return [e for e in cluster.trace.events if e.kind == kind and (api is None or e.api == api)]


async def test_delivery_assigns_offsets_and_timestamps(autojump_clock):
    async with open_cluster(3, topics=[("t", 2, 3)], listen=False) as cluster:
        async with producer(cluster, **{"linger.ms": 5}) as p:
            await trio.sleep(1)
            futures = [await p.send("t", b"v%d" % i, partition=i % 2) for i in range(6)]
            futures.append(await p.send("t", b"old", partition=0, timestamp=123))
            got = [await f.get() for f in futures]
        assert sorted((m.partition, m.offset) for m in got) == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2)]
        assert {m.timestamp for m in got[:6]} == {EPOCH_MS + 1000} and got[6].timestamp == 123
        assert cluster.partition("t", 0).log_end_offset == 4
        produces = events(cluster, "recv", "Produce")
        assert len(produces) == 2 and all(e.t_ms == 1005 for e in produces)   # one batch per partition after linger.ms


async def test_black_holed_produce_disconnects_at_request_timeout_then_metadata_then_retry_on_a_new_connection(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        async with producer(cluster) as p:
            await p.refresh_metadata(["t"])
            cluster.faults.add({"match": {"api": "Produce"}, "action": "black_hole", "times": 1}, cluster.now_ms())
            start = trio.current_time()
            meta = await (await p.send("t", b"x", partition=0)).get()
        assert meta.offset == 0 and cluster.partition("t", 0).log_end_offset == 1
        first, retry = events(cluster, "recv", "Produce")
        close = next(e for e in events(cluster, "conn_close") if e.conn == first.conn)
        assert close.details["closed_by"] == "client" and close.t_ms - first.t_ms == 30000.0 == first.t_ms + 30000 - start * 1000
        after = [e for e in events(cluster, "recv") if e.t_ms >= close.t_ms and e.api != "ApiVersions"]
        assert after[0].api == "Metadata" and after[0].t_ms == close.t_ms          # refresh asked at once
        assert after[1] is retry and retry.conn != first.conn                      # retried on a new connection
        assert 80 <= retry.t_ms - close.t_ms <= 120                                # after retry.backoff.ms ±20 %
        opens = [e for e in events(cluster, "conn_open") if e.conn == retry.conn]
        assert opens and opens[0].t_ms - close.t_ms >= 40                          # reconnect.backoff.ms ±20 %


async def test_stalled_followers_purgatory_timeouts_then_delivery_timeout(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config={"replica.lag.time.max.ms": 1_000_000}) as cluster:
        cluster.set_replication("t", None, None, "stall")
        async with producer(cluster) as p:
            await p.refresh_metadata(["t"])
            start = trio.current_time()
            future = await p.send("t", b"a", partition=0)
            with pytest.raises(DeliveryTimeoutException) as info:
                await future.get()
            assert trio.current_time() - start == 120.0
        err = info.value
        assert (err.side, err.setting, err.delivery_timeout_ms, err.attempts) == ("client", "delivery.timeout.ms", 120000, 4)
        assert "in flight to broker" in err.where and "REQUEST_TIMED_OUT" in err.last and "purgatory" in err.last
        assert "120000 ms has passed since batch creation" in str(err) and "server-side timeout" in str(err)
        sends = [e.t_ms for e in events(cluster, "recv", "Produce")]
        expiries = [e.t_ms for e in events(cluster, "purgatory_expire")]
        assert len(sends) == 4 and expiries == [s + 30000 for s in sends[:3]]   # the broker's timeout_ms, from the append
        gaps = [b - (a + 30000) for a, b in zip(sends, sends[1:])]
        for n, gap in enumerate(gaps):                                         # retry backoff 100, 200, 400 ms ±20 %
            assert 0.8 * 100 * 2 ** n <= gap <= 1.2 * 100 * 2 ** n
        assert not [e for e in events(cluster, "conn_close") if e.t_ms < 120000]   # the broker answered: no client timeout
        assert cluster.partition("t", 0).log_end_offset == 1                    # retries were de-duplicated


async def test_broker_down_batches_expire_in_the_accumulator_at_delivery_timeout(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with producer(cluster, **{"delivery.timeout.ms": 60000, "request.timeout.ms": 10000}) as p:
            await p.refresh_metadata(["t"])
            await cluster.stop_broker(0)
            start = trio.current_time()
            future = await p.send("t", b"x", partition=0)
            with pytest.raises(DeliveryTimeoutException) as info:
                await future.get()
            assert trio.current_time() - start == 60.0
        assert info.value.attempts == 0 and "still in the accumulator (never sent)" in str(info.value)


async def test_unknown_topic_with_auto_create_off_fails_send_at_max_block_ms(autojump_clock):
    async with open_cluster(1, listen=False, config={"auto.create.topics.enable": False}) as cluster:
        async with producer(cluster, **{"max.block.ms": 5000}) as p:
            start = trio.current_time()
            delivered = []
            future = await p.send("nope", b"x", on_delivery=lambda e, m: delivered.append(e))
            assert trio.current_time() - start == 5.0 and future.done()
            with pytest.raises(MaxBlockTimeoutException, match="max.block.ms=5000 ms waiting for metadata of topic 'nope'"):
                await future.get()
            assert delivered == [future.error] and "UNKNOWN_TOPIC_OR_PARTITION" in str(future.error)
        asks = [e.t_ms for e in events(cluster, "recv", "Metadata")]
        assert 10 <= len(asks) <= 60 and asks[-1] <= 5000   # asked again at the refresh backoff, up to 1 s apart


async def test_leader_move_while_the_answer_is_held_retries_on_the_new_leader_without_duplicate(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        old = cluster.partition("t", 0).leader
        new = next(b for b in cluster.partition("t", 0).replicas if b != old)
        async with producer(cluster) as p:
            await p.refresh_metadata(["t"])
            # the old leader appends (and replicates) but its answer never comes in time
            cluster.faults.add({"match": {"api": "Produce", "broker": old}, "action": {"type": "delay_response", "ms": 600_000}},
                               cluster.now_ms())
            future = await p.send("t", b"once", partition=0)
            await trio.sleep(10)
            cluster.move_leader("t", 0, new)
            meta = await future.get()
        first, retry = events(cluster, "recv", "Produce")
        assert (first.broker, retry.broker) == (old, new) and meta.offset == 0
        close = next(e for e in events(cluster, "conn_close") if e.conn == first.conn)
        assert close.t_ms - first.t_ms == 30000.0
        assert cluster.partition("t", 0).log_end_offset == 1   # the retry was recognised as a duplicate


async def test_without_idempotence_the_same_retry_duplicates(autojump_clock):
    """The control for the test above: it would catch a producer that lost idempotence."""
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        old = cluster.partition("t", 0).leader
        new = next(b for b in cluster.partition("t", 0).replicas if b != old)
        async with producer(cluster, **{"enable.idempotence": False}) as p:
            await p.refresh_metadata(["t"])
            cluster.faults.add({"match": {"api": "Produce", "broker": old}, "action": {"type": "delay_response", "ms": 600_000}},
                               cluster.now_ms())
            future = await p.send("t", b"twice", partition=0)
            await trio.sleep(10)
            cluster.move_leader("t", 0, new)
            meta = await future.get()
        assert meta.offset == 1 and cluster.partition("t", 0).log_end_offset == 2


async def test_not_leader_with_the_new_leader_in_the_answer_retries_at_once(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        old = cluster.partition("t", 0).leader
        new = next(b for b in cluster.partition("t", 0).replicas if b != old)
        async with producer(cluster) as p:
            await p.refresh_metadata(["t"])
            await trio.testing.wait_all_tasks_blocked()
            cluster.move_leader("t", 0, new)        # our metadata is now stale
            start = trio.current_time()
            meta = await (await p.send("t", b"x", partition=0)).get()
        first, retry = events(cluster, "recv", "Produce")
        assert (first.broker, retry.broker, meta.offset) == (old, new, 0)
        assert retry.t_ms - first.t_ms == 0.0 and trio.current_time() - start == 0.0   # KIP-951: no backoff, no round trip


async def test_retries_zero_fails_with_the_request_timeout_itself(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with producer(cluster, **{"retries": 0, "request.timeout.ms": 5000}) as p:
            await p.refresh_metadata(["t"])
            cluster.faults.add({"match": {"api": "Produce"}, "action": "black_hole"}, cluster.now_ms())
            start = trio.current_time()
            with pytest.raises(RequestTimeoutException, match="request.timeout.ms=5000 ms") as info:
                await (await p.send("t", b"x", partition=0)).get()
            assert trio.current_time() - start == 5.0 and info.value.api == "Produce"


async def test_acks_zero_completes_without_offsets(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with producer(cluster, acks=0) as p:
            meta = await (await p.send("t", b"x", partition=0)).get()
            assert meta.offset == -1
            await trio.sleep(0.1)
        assert cluster.partition("t", 0).log_end_offset == 1 and p.sender.idempotent is False


async def test_flush_ignores_linger_and_close_fails_what_is_left(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with producer(cluster, **{"linger.ms": 60000}) as p:
            await p.refresh_metadata(["t"])
            f = await p.send("t", b"a", partition=0)
            await p.flush()
            assert trio.current_time() < 0.01 and (await f.get()).offset == 0
            cluster.faults.add({"match": {"api": "Produce"}, "action": "black_hole"}, cluster.now_ms())
            g = await p.send("t", b"b", partition=0)
            start = trio.current_time()
            await p.close(timeout=2)
            assert trio.current_time() - start == 2.0
            with pytest.raises(Exception, match=r"closed \(close\(timeout=2\)\) before these were delivered"):
                await g.get()


async def test_full_buffer_blocks_send_for_max_block_ms(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with producer(cluster, **{"buffer.memory": 1000, "max.block.ms": 3000, "linger.ms": 100000,
                                        "delivery.timeout.ms": 200000}) as p:
            await p.refresh_metadata(["t"])
            await p.send("t", b"x" * 900, partition=0)
            start = trio.current_time()
            f = await p.send("t", b"y" * 500, partition=0)
            assert trio.current_time() - start == 3.0
            with pytest.raises(MaxBlockTimeoutException, match="buffer.memory=1000"):
                await f.get()
            p.accumulator.closing = True


def test_config_validation_names_the_three_values():
    with pytest.raises(ConfigException, match=r"delivery.timeout.ms \(1000\).*linger.ms \(5\).*request.timeout.ms \(30000\)"):
        producer_config({**BOOT, "delivery.timeout.ms": 1000, "linger.ms": 5})
    assert producer_config({**BOOT, "request.timeout.ms": 200000})["delivery.timeout.ms"] == 200000  # unset: raised to fit
    with pytest.raises(ConfigException, match="unknown configuration"):
        producer_config({**BOOT, "lingr.ms": 5})
    assert producer_config({**BOOT, "acks": 1})["enable.idempotence"] is False           # quietly off
    with pytest.raises(ConfigException, match="acks=1"):
        producer_config({**BOOT, "acks": 1, "enable.idempotence": True})                    # asked for: an error
    with pytest.raises(ConfigException, match="max.in.flight.requests.per.connection=6"):
        producer_config({**BOOT, "max.in.flight.requests.per.connection": 6, "enable.idempotence": "true"})


def test_murmur2_matches_kafka():
    assert murmur2(b"21") == -973932308 and murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536 and murmur2(b"abc") == 479470107
    assert partition_for_key(b"foobar", 7) == (-790332482 & 0x7FFFFFFF) % 7


async def test_metadata_is_refreshed_after_metadata_max_age(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with producer(cluster, **{"metadata.max.age.ms": 60000}) as p:
            await (await p.send("t", b"a", partition=0)).get()
            first = events(cluster, "recv", "Metadata")[-1].t_ms
            await trio.sleep(59.9)
            assert events(cluster, "recv", "Metadata")[-1].t_ms == first
            await trio.sleep(0.2)
            assert events(cluster, "recv", "Metadata")[-1].t_ms == first + 60000   # exactly at the age


async def test_keyed_records_follow_murmur2(autojump_clock):
    async with open_cluster(1, topics=[("t", 5, 1)], listen=False) as cluster:
        async with producer(cluster) as p:
            metas = [await (await p.send("t", b"v", key=k)).get() for k in (b"a", b"b", b"foobar", b"a")]
        assert [m.partition for m in metas] == [partition_for_key(k, 5) for k in (b"a", b"b", b"foobar", b"a")]


def test_timeout_errors_are_kafka_timeouts():
    assert issubclass(DeliveryTimeoutException, TimeoutException) and issubclass(RequestTimeoutException, TimeoutException)
    assert NotLeaderOrFollowerError().retriable


async def test_a_due_metadata_refresh_goes_out_before_the_next_produce(autojump_clock):
    """Java's NetworkClient.isReady is false for every node while a metadata update is due and not
    yet sent (DefaultMetadataUpdater.isUpdateDue): a ready batch waits for the Metadata request to
    be queued, so a retry can never overtake the refresh it asked for (docs/differences.md, 5)."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with producer(cluster, **{"linger.ms": 0}) as p:
            await (await p.send("t", b"warm", partition=0)).get()
            await trio.sleep(1)   # past the refresh backoff
            mark = len(cluster.trace.events)
            p.metadata.request_update()   # due now; the updater's task is not woken yet (a slow scheduler)
            sent = await p.send("t", b"v", partition=0)
            await trio.sleep(0.5)
            assert not [e for e in list(cluster.trace.events)[mark:] if e.kind == "recv"]   # held back
            p.updater.request_update()
            await sent.get()
            order = [e.api for e in list(cluster.trace.events)[mark:] if e.kind == "recv"]
            assert order == ["Metadata", "Produce"]
