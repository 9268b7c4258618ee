"""Our consumer outlives any broker: stop each broker in turn under a consumer, in
assign and in subscribe mode, and every call answers from the survivors within one request
timeout plus backoff (KIP-19: disconnect, refresh metadata, go to the new leader). Virtual time,
in-memory connections; the bootstrap address is broker 0, so victim 0 is "the bootstrap broker
dies"."""

import pytest
import trio

from broker_emu.runtime import open_cluster
from client.consumer.async_consumer import open_consumer
from client.consumer.records import TopicPartition
from client.errors import ErrorCode
from tests.broker_emu.wire import WireClient, produce_body

REQUEST_TIMEOUT_S = 5.0
CONFIG = {"bootstrap.servers": "127.0.0.1:0", "group.id": "g", "auto.offset.reset": "earliest",
          "request.timeout.ms": int(REQUEST_TIMEOUT_S * 1000), "default.api.timeout.ms": 60000,
          "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000}
# one request timeout plus the longest retry/reconnect backoff (retry.backoff.max.ms = 1 s)
BOUND_S = REQUEST_TIMEOUT_S + 1.0
TPS = [TopicPartition("t", p) for p in range(3)]


def connect_to(cluster):
    async def connect(node, host, port):
        return cluster.connect(max(node, 0))
    return connect


async def produce_round(cluster, tag: bytes) -> None:
    for p in range(3):
        leader = cluster.partition("t", p).leader
        answer = await WireClient(cluster.connect(leader)).call(0, 9, produce_body("t", p, [tag + b"-%d" % p], acks=1))
        assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0


async def poll_values(c, want: set[bytes], limit_s: float) -> set[bytes]:
    got: set[bytes] = set()
    with trio.move_on_after(limit_s):
        while not want <= got:
            got |= {r.value for r in await c.poll(0.2)}
    return got


async def timed(call):
    start = trio.current_time()
    result = await call
    return result, trio.current_time() - start


@pytest.mark.parametrize("mode", ["assign", "subscribe"])
@pytest.mark.parametrize("victim", [0, 1, 2])
async def test_every_call_answers_from_the_survivors(autojump_clock, victim, mode):
    async with open_cluster(3, topics=[("t", 3, 3)], listen=False, config={"group.initial.rebalance.delay.ms": 0, "emu.telemetry": True}) as cluster:
        await produce_round(cluster, b"before")
        async with open_consumer(CONFIG, connect=connect_to(cluster)) as c:
            if mode == "assign":
                c.assign(TPS)
            else:
                c.subscribe(["t"])
            assert await poll_values(c, {b"before-%d" % p for p in range(3)}, 30) >= {b"before-%d" % p for p in range(3)}
            await c.commit_sync()
            led = [p for p in range(3) if cluster.partition("t", p).leader == victim]
            assert led, "every broker leads a partition of t"

            await cluster.stop_broker(victim)
            assert all(cluster.partition("t", p).leader != victim for p in range(3))
            await produce_round(cluster, b"after")

            want = {b"after-%d" % p for p in range(3)}
            got, took = await timed(poll_values(c, want, 30))
            assert got >= want, f"poll after broker {victim} stopped read {sorted(got)}"
            assert took <= BOUND_S, f"poll took {took:.2f} s to read from the new leaders"

            topics, took = await timed(c.list_topics())
            assert topics["t"] == [0, 1, 2] and took <= BOUND_S
            ends, took = await timed(c.end_offsets(TPS))
            assert ends == {tp: 2 for tp in TPS} and took <= BOUND_S
            parts, took = await timed(c.partitions_for("t"))
            assert parts == [0, 1, 2] and took <= BOUND_S
            _, took = await timed(c.commit_sync())
            assert took <= BOUND_S
            committed, took = await timed(c.committed(TPS))
            assert committed == {tp: 2 for tp in TPS} and took <= BOUND_S
            _, took = await timed(c.client_instance_id())
            assert took <= BOUND_S


async def fetching_then_moved(cluster, c, before_move=lambda old: None) -> int:
    """The consumer fetches t-0 from its leader; then the leadership moves to the next broker
    (after ``before_move(old)``), which gets b"moved". Returns the old leader."""
    c.assign([TPS[0]])
    assert await c.poll(1.0) == []
    old = cluster.partition("t", 0).leader
    new = (old + 1) % 3
    before_move(old)
    cluster.move_leader("t", 0, new)
    await WireClient(cluster.connect(new)).call(0, 9, produce_body("t", 0, [b"moved"], acks=1))
    return old


async def test_a_leader_move_is_followed_after_not_leader_or_follower(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        async with open_consumer(CONFIG, connect=connect_to(cluster)) as c:
            old = await fetching_then_moved(cluster, c)
            got, took = await timed(poll_values(c, {b"moved"}, 30))
            assert got == {b"moved"} and took <= BOUND_S
            answers = [e for e in cluster.trace.events if e.kind == "send" and e.api == "Fetch" and e.broker == old]
            assert any(ErrorCode.NOT_LEADER_OR_FOLLOWER in (e.details or {}).get("errors", ()) for e in answers)


async def test_a_request_timeout_marks_metadata_stale_and_the_next_fetch_goes_to_the_new_leader(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        async with open_consumer(CONFIG, connect=connect_to(cluster)) as c:
            # the old leader goes silent (every request black-holed), then loses the leadership
            def silence(old: int) -> None:
                cluster.faults.add({"match": {"broker": old}, "action": "black_hole"}, cluster.now_ms())

            old = await fetching_then_moved(cluster, c, silence)
            got, took = await timed(poll_values(c, {b"moved"}, 60))
            assert got == {b"moved"}
            assert took <= BOUND_S + 0.5, f"{took:.2f} s: a silent leader costs one request timeout, then the new one"
            closes = [e for e in cluster.trace.events if e.kind == "conn_close" and e.broker == old
                      and e.details["closed_by"] == "client"]
            assert closes, "the client closed the silent connection at request.timeout.ms"
