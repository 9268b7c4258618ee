"""Our network client against the emulator over in-memory connections, in virtual time."""

import pytest
import trio
import trio.lowlevel
import trio.testing

from broker_emu.runtime import open_cluster
from client.config import COMMON, parse_config
from client.exceptions import RequestTimeoutException
from client.network import NetworkClient
from client.protocol import ApiKey
from tests.broker_emu.wire import produce_body


def in_memory(cluster):
    async def connect(node, host, port):
        return cluster.connect(max(node, 0))
    return connect


async def bootstrap(net):
    md = await net.request(-1, ApiKey.METADATA, {"topics": [{"name": "t"}]})
    net.nodes.update({b.node_id: (b.host, b.port) for b in md.brokers})
    return md.topics[0].partitions[0].leader_id


async def test_black_holed_request_times_out_at_exactly_request_timeout_and_disconnects(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        async with trio.open_nursery() as nursery:
            disconnected = []
            net = NetworkClient(parse_config({"bootstrap.servers": "127.0.0.1:0"}, COMMON), nursery,
                                connect=in_memory(cluster), on_disconnect=disconnected.append)
            leader = await bootstrap(net)
            cluster.faults.add({"match": {"api": "Produce"}, "action": "black_hole", "times": 1}, cluster.now_ms())
            start = trio.current_time()
            with pytest.raises(RequestTimeoutException) as info:
                await net.request(leader, ApiKey.PRODUCE, produce_body("t", 0, [b"a"], acks=1))
            assert trio.current_time() - start == 30.0
            err = info.value
            assert (err.side, err.api, err.broker, err.setting) == ("client", "Produce", leader, "request.timeout.ms")
            assert "request.timeout.ms=30000 ms" in str(err) and "client-side request timeout" in str(err)
            assert disconnected == [leader]
            await trio.testing.wait_all_tasks_blocked()  # let the broker see the close (same instant)
            recv = [e for e in cluster.trace.events if e.kind == "recv" and e.api == "Produce"][0]
            close = [e for e in cluster.trace.events if e.kind == "conn_close" and e.conn == recv.conn][0]
            assert close.details["closed_by"] == "client" and close.t_ms - recv.t_ms == 30000.0
            # the retry goes out on a new connection and succeeds
            answer = await net.request(leader, ApiKey.PRODUCE, produce_body("t", 0, [b"a"], acks=1))
            assert answer.responses[0].partition_responses[0].error_code == 0
            second = [e for e in cluster.trace.events if e.kind == "recv" and e.api == "Produce"][1]
            assert second.conn != recv.conn
            nursery.cancel_scope.cancel()


async def test_other_requests_on_the_connection_fail_with_a_clear_disconnect(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with trio.open_nursery() as nursery:
            net = NetworkClient(parse_config({"bootstrap.servers": "127.0.0.1:0", "request.timeout.ms": 1000}, COMMON),
                                nursery, connect=in_memory(cluster))
            await bootstrap(net)
            cluster.faults.add({"match": {"api": "Produce"}, "action": "black_hole"}, cluster.now_ms())
            outcomes = {}

            async def later_metadata():
                await trio.sleep(0.5)
                try:
                    await net.request(0, ApiKey.METADATA, {"topics": None}, timeout=10)
                except RequestTimeoutException as exc:
                    outcomes["metadata"] = (trio.current_time(), str(exc))

            nursery.start_soon(later_metadata)
            start = trio.current_time()
            with pytest.raises(RequestTimeoutException):
                await net.request(0, ApiKey.PRODUCE, produce_body("t", 0, [b"a"], acks=1))
            await trio.lowlevel.checkpoint()
            at, message = outcomes["metadata"]
            # queued behind the parked Produce on the same connection, failed when it timed out
            assert at - start == 1.0 and "because Produce (correlation id" in message and "request.timeout.ms=1000 ms" in message
            nursery.cancel_scope.cancel()
