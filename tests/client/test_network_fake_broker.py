"""The network client against a scripted fake broker, in virtual time (exact instants)."""

import random

import pytest
import trio
import trio.lowlevel
import trio.testing

from client.config import COMMON, parse_config
from client.errors import TimeoutException
from client.exceptions import (
    ConnectionClosedError,
    ConnectionFailedError,
    ConnectionSetupTimeoutException,
    RequestTimeoutException,
)
from client.network import NetworkClient
from client.protocol import ApiKey
from tests.client.fake_broker import open_fake_cluster

HB = {"group_id": "g", "generation_id": 1, "member_id": "m"}


def config(**over):
    return parse_config({"bootstrap.servers": "fake:9000", **over}, COMMON)


async def test_request_timeout_closes_the_connection_and_fails_everything_in_flight(autojump_clock):
    async with open_fake_cluster() as fake, trio.open_nursery() as nursery:
        told = []
        net = NetworkClient(config(), nursery, fake.connect, on_disconnect=told.append)
        await net.request(-1, ApiKey.HEARTBEAT, HB)         # connected, versions known
        fake.on(ApiKey.HEARTBEAT, "black_hole")
        outcome = {}

        async def second():
            await trio.sleep(10)
            with pytest.raises(RequestTimeoutException) as info:
                await net.request(-1, ApiKey.HEARTBEAT, HB)
            outcome["second"] = (trio.current_time(), info.value)

        nursery.start_soon(second)
        start = trio.current_time()
        with pytest.raises(RequestTimeoutException) as info:
            await net.request(-1, ApiKey.HEARTBEAT, HB)
        assert trio.current_time() - start == 30.0
        err = info.value
        assert (err.side, err.api, err.broker, err.address, err.setting, err.timeout_ms) == \
            ("client", "Heartbeat", -1, "fake:9000", "request.timeout.ms", 30000)
        assert err.retriable and "failed the 1 other request(s)" in str(err) and "KIP-19" in str(err)
        await trio.lowlevel.checkpoint()
        at, other = outcome["second"]
        assert at - start == 30.0 and other.timed_out == f"Heartbeat (correlation id {err.correlation_id})"
        assert "was failed after 20000 ms" in str(other)
        assert told == [-1] and not net.is_ready(-1)
        await trio.testing.wait_all_tasks_blocked()   # the broker sees the close at the same instant
        closes = fake.of("close")
        assert [(c.by, c.t - start) for c in closes] == [("client", 30.0)]
        # the next attempt waits the reconnect backoff (50 ms ±20 %), then uses a new connection
        await net.request(-1, ApiKey.HEARTBEAT, HB)
        opens = fake.of("open")
        assert len(opens) == 2 and 30.040 <= opens[1].t - start <= 30.060
        nursery.cancel_scope.cancel()


async def test_a_late_answer_to_a_cancelled_call_is_dropped_and_the_connection_kept(autojump_clock):
    async with open_fake_cluster() as fake, trio.open_nursery() as nursery:
        net = NetworkClient(config(), nursery, fake.connect)
        await net.request(-1, ApiKey.HEARTBEAT, HB)
        fake.on(ApiKey.HEARTBEAT, ("delay", 5), ("error", 27))
        start = trio.current_time()
        with trio.move_on_after(1):
            await net.request(-1, ApiKey.HEARTBEAT, HB)   # answered (error 0) at 5 s: nobody is told
        answer = await net.request(-1, ApiKey.HEARTBEAT, HB)   # queued behind the abandoned one
        assert answer.error_code == 27 and trio.current_time() - start == 5.0
        assert len(fake.of("open")) == 1 and net.is_ready(-1)
        nursery.cancel_scope.cancel()


async def test_broker_close_explains_itself(autojump_clock):
    async with open_fake_cluster() as fake, trio.open_nursery() as nursery:
        net = NetworkClient(config(), nursery, fake.connect)
        await net.request(-1, ApiKey.HEARTBEAT, HB)
        fake.on(ApiKey.HEARTBEAT, "close")
        with pytest.raises(ConnectionClosedError, match=r"Heartbeat \(correlation id 2\) to broker -1 at fake:9000 "
                                                        r"failed after 0 ms: the broker closed the connection"):
            await net.request(-1, ApiKey.HEARTBEAT, HB)
        nursery.cancel_scope.cancel()


async def test_api_versions_falls_back_to_the_brokers_max_on_the_same_connection(autojump_clock):
    async with open_fake_cluster() as fake, trio.open_nursery() as nursery:
        fake.api_versions_max = 2
        net = NetworkClient(config(), nursery, fake.connect)
        await net.request(-1, ApiKey.HEARTBEAT, HB)
        asked = [(e.api, e.version, e.conn) for e in fake.of("recv")]
        assert asked[:2] == [("ApiVersions", 4, 1), ("ApiVersions", 2, 1)] and asked[2][0] == "Heartbeat"
        assert len(fake.of("open")) == 1
        nursery.cancel_scope.cancel()


async def test_join_group_waits_rebalance_timeout_plus_5s_and_callers_may_ask_less(autojump_clock):
    async with open_fake_cluster() as fake, trio.open_nursery() as nursery:
        net = NetworkClient(config(), nursery, fake.connect)
        await net.request(-1, ApiKey.HEARTBEAT, HB)
        fake.on(ApiKey.JOIN_GROUP, "black_hole")
        start = trio.current_time()
        with pytest.raises(RequestTimeoutException) as info:
            await net.request(-1, ApiKey.JOIN_GROUP, {"group_id": "g", "rebalance_timeout_ms": 300000, "session_timeout_ms": 45000,
                                                      "protocol_type": "consumer", "protocols": []})
        assert trio.current_time() - start == 305.0 and info.value.setting == "rebalance_timeout_ms + 5000 (JoinGroup)"
        fake.on(ApiKey.HEARTBEAT, "black_hole")
        start = trio.current_time()
        with pytest.raises(RequestTimeoutException, match="within the caller's timeout"):
            await net.request(-1, ApiKey.HEARTBEAT, HB, timeout=1.25)   # e.g. min(time left, request.timeout.ms)
        assert trio.current_time() - start == pytest.approx(1.25 + 0.05, abs=0.011)   # + reconnect backoff
        nursery.cancel_scope.cancel()


async def test_connection_setup_timeout_grows_per_failure_up_to_its_max(autojump_clock):
    async def hang(node, host, port):
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        net = NetworkClient(config(), nursery, hang, rng=random.Random(3))
        took = []
        for _ in range(4):
            start = trio.current_time()
            with pytest.raises(ConnectionSetupTimeoutException) as info:
                await net.request(-1, ApiKey.HEARTBEAT, HB)
            took.append(trio.current_time() - start)
        assert isinstance(info.value, TimeoutException) and "socket.connection.setup.timeout.ms" in str(info.value)
        # 10 s ±20 %, then 20 s ±20 % (plus the reconnect backoff before it), then the max 30 s
        # with its jitter applied below the cap (Java's ExponentialBackoff: never above the max)
        assert 8 <= took[0] <= 12 and 16 + 0.04 <= took[1] <= 24 + 0.06
        for i in (2, 3):   # after the reconnect backoff of 50 ms * 2**(i-1) ±20 %
            assert 24 + 0.8 * 0.05 * 2 ** (i - 1) <= took[i] <= 30 + 1.2 * 0.05 * 2 ** (i - 1)
        nursery.cancel_scope.cancel()


async def test_refused_connections_back_off_exponentially_with_jitter(autojump_clock):
    async with open_fake_cluster() as fake, trio.open_nursery() as nursery:
        fake.alive.clear()
        told = []
        net = NetworkClient(config(), nursery, fake.connect, on_disconnect=told.append)
        gaps, last = [], trio.current_time()
        for _ in range(7):
            with pytest.raises(ConnectionFailedError, match="reconnect.backoff.ms"):
                await net.request(-1, ApiKey.HEARTBEAT, HB)
            gaps.append(trio.current_time() - last)
            last = trio.current_time()
        assert gaps[0] == 0
        for n, gap in enumerate(gaps[1:]):
            assert 0.8 * min(0.05 * 2 ** n, 1.0) <= gap <= min(1.2 * 0.05 * 2 ** n, 1.0)
        assert len(told) == 7   # each failure asks for a metadata refresh
        nursery.cancel_scope.cancel()
