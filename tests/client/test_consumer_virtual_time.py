"""Our consumer against the emulator in virtual time: KIP-266 deadlines, exact."""

import pytest
import trio
import trio.testing

from broker_emu.runtime import open_cluster
from client.config import ConfigException, consumer_config
from client.consumer.async_consumer import open_consumer
from client.consumer.records import TopicPartition
from client.errors import TimeoutException
from tests.broker_emu.wire import WireClient, produce_body

BOOT = {"bootstrap.servers": "127.0.0.1:0"}
TP = TopicPartition("t", 0)


def connect_to(cluster):
    async def connect(node, host, port):
        return cluster.connect(node if node >= 0 else 0)
    return connect


def recvs(cluster, api):
    return [e for e in cluster.trace.events if e.kind == "recv" and e.api == api]


async def test_poll_returns_empty_at_its_deadline_and_long_polls_are_not_disconnects(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_consumer({**BOOT, "auto.offset.reset": "earliest"}, connect=connect_to(cluster)) as c:
            c.assign([TP])
            start = trio.current_time()
            assert await c.poll(2.0) == []
            assert trio.current_time() - start == 2.0
            start = trio.current_time()
            assert await c.poll(0) == [] and trio.current_time() == start  # poll(0) returns at once
        assert len(recvs(cluster, "Fetch")) >= 4  # the broker held each Fetch for fetch.max.wait.ms
        assert not [e for e in cluster.trace.events if e.kind == "conn_close" and e.details["closed_by"] == "client"
                    and e.t_ms < 2000]


async def test_poll_returns_records_and_advances_the_position(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        await WireClient(cluster.connect(0)).call(0, 9, produce_body("t", 0, [b"a", b"b", b"c"], acks=1))
        async with open_consumer({**BOOT, "auto.offset.reset": "earliest", "max.poll.records": 2}, connect=connect_to(cluster)) as c:
            c.assign([TP])
            first = await c.poll(1.0)
            second = await c.poll(1.0)
            assert [r.value for r in first] == [b"a", b"b"] and [r.value for r in second] == [b"c"]
            assert await c.position(TP) == 3
            assert await c.end_offsets([TP]) == {TP: 3} and await c.beginning_offsets([TP]) == {TP: 0}


async def test_committed_with_a_black_holed_coordinator_times_out_at_its_deadline(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.faults.add({"match": {"api": "OffsetFetch"}, "action": "black_hole"}, 0)
        async with open_consumer({**BOOT, "group.id": "g1"}, connect=connect_to(cluster)) as c:
            start = trio.current_time()
            with pytest.raises(TimeoutException) as info:
                await c.committed([TP], timeout=5.0)
            assert trio.current_time() - start == 5.0
        coordinator = cluster.coordinator_for("g1")
        assert f"committed() gave up after 5000 ms: the group coordinator for 'g1' (broker {coordinator}) did not answer" in str(info.value)
        await trio.testing.wait_all_tasks_blocked()
        fetch = recvs(cluster, "OffsetFetch")[0]
        close = next(e for e in cluster.trace.events if e.kind == "conn_close" and e.conn == fetch.conn)
        # the request timeout was min(5 s left, request.timeout.ms 30 s): nothing outlives the call
        assert close.details["closed_by"] == "client" and close.t_ms - fetch.t_ms == pytest.approx(5000, abs=1)


async def test_default_api_timeout_applies_without_a_timeout(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.faults.add({"match": {"api": "OffsetFetch"}, "action": "black_hole"}, 0)
        async with open_consumer({**BOOT, "group.id": "g", "default.api.timeout.ms": 7000}, connect=connect_to(cluster)) as c:
            start = trio.current_time()
            with pytest.raises(TimeoutException, match="committed\\(\\) gave up after 7000 ms"):
                await c.committed([TP])
            assert trio.current_time() - start == 7.0


async def test_timeout_zero_still_attempts_once(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_consumer({**BOOT, "group.id": "g"}, connect=connect_to(cluster)) as c:
            assert await c.committed([TP], timeout=0) == {TP: None}   # attempt-then-check: it went out and succeeded
        assert len(recvs(cluster, "OffsetFetch")) == 1


async def test_retries_shrink_to_the_time_left(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.faults.add({"match": {"api": "OffsetFetch"}, "action": "black_hole"}, 0)
        async with open_consumer({**BOOT, "group.id": "g", "request.timeout.ms": 3000}, connect=connect_to(cluster)) as c:
            with pytest.raises(TimeoutException):
                await c.committed([TP], timeout=5.0)
        await trio.testing.wait_all_tasks_blocked()
        attempts = recvs(cluster, "OffsetFetch")
        closes = {e.conn: e.t_ms for e in cluster.trace.events if e.kind == "conn_close" and e.details["closed_by"] == "client"}
        windows = [closes[a.conn] - a.t_ms for a in attempts]
        assert windows[0] == pytest.approx(3000, abs=1)                      # request.timeout.ms
        assert windows[-1] < 3000 and closes[attempts[-1].conn] == pytest.approx(5000 + attempts[0].t_ms, abs=2)  # what was left


async def test_commit_then_committed(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_consumer({**BOOT, "group.id": "g"}, connect=connect_to(cluster)) as c:
            await c.commit_sync({TP: 42}, timeout=5)
            assert await c.committed([TP], timeout=5) == {TP: 42}


def test_request_timeout_must_exceed_fetch_max_wait():
    with pytest.raises(ConfigException, match="long poll"):
        consumer_config({**BOOT, "request.timeout.ms": 400, "fetch.max.wait.ms": 500})


async def test_close_lets_the_long_poll_finish_but_never_waits_past_its_timeout(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_consumer({**BOOT, "auto.offset.reset": "earliest"}, connect=connect_to(cluster)) as c:
            c.assign([TP])
            await c.poll(1.2)                     # a Fetch is held by the broker until 1.5 s
            start = trio.current_time()
            await c.aclose(timeout=10)
            assert trio.current_time() - start == pytest.approx(0.3, abs=0.11)
        await trio.testing.wait_all_tasks_blocked()
        fetches = {e.correlation_id for e in recvs(cluster, "Fetch")}
        answered = {e.correlation_id for e in cluster.trace.events if e.kind == "send" and e.api == "Fetch"}
        assert fetches == answered  # nothing abandoned
        cluster.faults.add({"match": {"api": "Fetch"}, "action": "black_hole"}, cluster.now_ms())
        async with open_consumer({**BOOT, "auto.offset.reset": "earliest"}, connect=connect_to(cluster)) as c:
            c.assign([TP])
            await c.poll(0.5)
            start = trio.current_time()
            await c.aclose(timeout=2)             # the Fetch never comes back: forced closed at 2 s
            assert trio.current_time() - start == 2.0


# every deadline-taking call, the API it waits on, and how it is called
DEADLINE_CALLS = {
    "position()": ("ListOffsets", lambda c, t: c.position(TP, timeout=t)),
    "committed()": ("OffsetFetch", lambda c, t: c.committed([TP], timeout=t)),
    "commit_sync()": ("OffsetCommit", lambda c, t: c.commit_sync({TP: 1}, timeout=t)),
    "beginning_offsets()": ("ListOffsets", lambda c, t: c.beginning_offsets([TP], timeout=t)),
    "end_offsets()": ("ListOffsets", lambda c, t: c.end_offsets([TP], timeout=t)),
    "offsets_for_times()": ("ListOffsets", lambda c, t: c.offsets_for_times({TP: 0}, timeout=t)),
    "list_topics()": ("Metadata", lambda c, t: c.list_topics(timeout=t)),
    "partitions_for()": ("Metadata", lambda c, t: c.partitions_for("t", timeout=t)),
    "client_instance_id()": ("GetTelemetrySubscriptions", lambda c, t: c.client_instance_id(timeout=t)),
}


@pytest.mark.parametrize("call", list(DEADLINE_CALLS))
@pytest.mark.parametrize("timeout", [4.0, None], ids=["explicit", "default.api.timeout.ms"])
async def test_every_deadline_call_gives_up_exactly_at_its_deadline(autojump_clock, call, timeout):
    api, invoke = DEADLINE_CALLS[call]
    config = {**BOOT, "group.id": "g", "auto.offset.reset": "earliest", "default.api.timeout.ms": 9000}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.telemetry": True}) as cluster:
        async with open_consumer(config, connect=connect_to(cluster)) as c:
            c.assign([TP])
            await c.list_topics(timeout=5)  # connections and metadata in place before the fault
            cluster.faults.add({"match": {"api": api}, "action": "black_hole"}, cluster.now_ms())
            start = trio.current_time()
            with pytest.raises(TimeoutException, match=call.replace("(", "\\(").replace(")", "\\)") + " gave up after"):
                await invoke(c, timeout)
            assert trio.current_time() - start == (timeout or 9.0)


@pytest.mark.parametrize("call", list(DEADLINE_CALLS))
async def test_every_deadline_call_attempts_once_with_timeout_zero(autojump_clock, call):
    api, invoke = DEADLINE_CALLS[call]
    config = {**BOOT, "group.id": "g", "auto.offset.reset": "earliest"}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.telemetry": True}) as cluster:
        async with open_consumer(config, connect=connect_to(cluster)) as c:
            c.assign([TP])
            await c.list_topics(timeout=5)
            before = len(recvs(cluster, api))
            await invoke(c, 0)   # succeeds: the attempt went out although no time was left
            assert len(recvs(cluster, api)) - before == 1


async def test_a_fetch_whose_partition_was_revoked_before_it_started_asks_for_nothing(autojump_clock):
    """The fetcher starts a fetch task for what a node leads; a rebalance that revokes those
    partitions before the task runs (a callback handed to the blocking face's application
    thread leaves that gap) must not take the consumer down: the task asked for a position that
    was gone (KeyError) and crashed the consumer's nursery."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_consumer({**BOOT, "auto.offset.reset": "earliest"}, connect=connect_to(cluster)) as c:
            c.assign([TP])
            await c.poll(0.2)                                   # a position, and the leader known
            fetches = len(recvs(cluster, "Fetch"))
            c.fetcher.nursery.start_soon(c.fetcher._fetch, 0, [TP])
            c.fetcher.unassign([TP])                            # before the task has run
            await trio.sleep(1)
            assert c.assignment() == []
            c.assign([TP])
            assert await c.poll(1) == [] and len(recvs(cluster, "Fetch")) > fetches   # still alive and fetching


@pytest.mark.parametrize("group", [False, True], ids=["assign", "subscribe"])
async def test_a_polling_consumer_refreshes_metadata_every_metadata_max_age(autojump_clock, group):
    """Java's NetworkClient.poll asks DefaultMetadataUpdater.maybeUpdate on every poll, and
    Metadata.timeToNextUpdate is due metadata.max.age.ms after the last refresh whatever the
    consumer's mode: with assign() the assigned topics are the subscription
    (SubscriptionState.assignFromUser -> changeSubscription), so a consumer that meets no error
    still hears of the cluster's changes at that age."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        config = {**BOOT, "auto.offset.reset": "earliest", "metadata.max.age.ms": 5000}
        if group:
            config["group.id"] = "g1"
        async with open_consumer(config, connect=connect_to(cluster)) as c:
            if group:
                c.subscribe(["t"])
            else:
                c.assign([TP])
            while not c.assignment():   # a group's join reads the topic's metadata too
                await c.poll(0.5)
            assert await c.poll(0.5) == []
            first = recvs(cluster, "Metadata")[-1].t_ms
            end = trio.current_time() + 11.0
            while trio.current_time() < end:
                await c.poll(0.5)
            later = [e.t_ms for e in recvs(cluster, "Metadata") if e.t_ms > first]
            assert len(later) == 2, later   # at 5 s and 10 s after the first, within a fetch's hold
            assert later[0] - first == pytest.approx(5000, abs=600)
            assert later[1] - later[0] == pytest.approx(5000, abs=600)
