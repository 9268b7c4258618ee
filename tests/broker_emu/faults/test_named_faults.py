"""Named faults (latency, jitter, bandwidth, timeout, reset, slow-close, error, black-hole): the
rules they make, and what those rules do to real requests through the pipeline, in virtual time."""

import pytest
import trio

from broker_emu.faults import named
from broker_emu.faults.rules import FaultConfigError
from broker_emu.runtime import open_cluster
from tests.broker_emu.wire import WireClient, produce_body

PRODUCE, METADATA = 0, 3
META = {"topics": None}


async def produce_took(w: WireClient, value: bytes = b"a") -> tuple[float, int]:
    start = trio.current_time()
    r = await w.call(PRODUCE, 9, produce_body("t", 0, [value], acks=1))
    return trio.current_time() - start, r.responses[0].partition_responses[0].error_code


def test_each_name_makes_the_rule_one_would_write_by_hand():
    assert named.latency(500, jitter_ms=100, api="Produce", count=2) == {
        "action": {"type": "delay_request", "ms": 500, "jitter_ms": 100}, "name": "latency",
        "match": {"api": "Produce"}, "times": 2}
    assert named.jitter(80)["action"] == {"type": "delay_request", "ms": 0.0, "jitter_ms": 80}
    assert named.bandwidth(1000)["action"] == {"type": "bandwidth", "bytes_per_s": 1000}
    assert named.timeout(300)["action"] == {"type": "black_hole", "close_ms": 300}
    assert named.timeout()["action"] == {"type": "black_hole"}
    assert named.reset(topic="t")["action"] == {"type": "reset"}
    assert named.slow_close(200, broker=1) == {"action": {"type": "slow_close", "ms": 200}, "name": "slow-close",
                                                "match": {"broker": 1}}
    assert named.error("NOT_LEADER_OR_FOLLOWER", client_id="app", probability=0.5) == {
        "action": {"type": "error", "error": "NOT_LEADER_OR_FOLLOWER"}, "name": "error",
        "match": {"client_id": "app"}, "probability": 0.5}
    assert named.black_hole(api="Fetch")["action"] == {"type": "black_hole"}


def test_unknown_names_and_arguments_say_what_was_meant():
    with pytest.raises(FaultConfigError, match="unknown fault 'latncy' \\(did you mean 'latency'\\?\\)"):
        named.rule("latncy", ms=1)
    with pytest.raises(FaultConfigError, match="jiter_ms: not an argument of latency \\(did you mean 'jitter_ms'\\?\\)"):
        named.rule("latency", ms=1, jiter_ms=3)
    with pytest.raises(FaultConfigError, match="slow-close acts on connections"):
        named.rule("slow-close", ms=1, api="Produce")
    with pytest.raises(FaultConfigError, match="latency needs ms"):
        named.rule("latency")


async def test_latency_delays_a_produce_by_exactly_its_ms_and_nothing_else(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        handle = cluster.faults.latency(api="Produce", ms=500)
        w = WireClient(cluster.connect(0))
        start = trio.current_time()
        await w.call(METADATA, 12, META)
        assert trio.current_time() == start                 # Metadata is not matched
        assert await produce_took(w) == (0.5, 0)
        assert handle.hits == 1 and handle.id in cluster.faults.rules
        applied = [e for e in cluster.trace.events if e.kind == "fault_applied"]
        assert [(e.api, e.details["rule"], e.details["action"]) for e in applied] == [
            ("Produce", handle.id, {"type": "delay_request", "ms": 500.0})]
        assert handle.clear() and not handle.active
        assert await produce_took(w) == (0.0, 0)


async def test_jitter_is_bounded_and_the_same_seed_gives_the_same_delays(autojump_clock):
    async def delays(seed: int) -> list[float]:
        async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.seed": seed}) as cluster:
            cluster.faults.latency(api="Produce", ms=500, jitter_ms=100)
            w = WireClient(cluster.connect(0))
            took = [round((await produce_took(w))[0], 6) for _ in range(20)]
            drawn = [e.details["delay_ms"] for e in cluster.trace.events if e.kind == "fault_applied"]
            assert [round(d / 1000, 6) for d in drawn] == took   # the trace says what the jitter drew
            return took

    first = await delays(7)
    assert all(0.4 <= d <= 0.6 for d in first) and len(set(first)) > 10
    assert first == await delays(7)
    assert first != await delays(8)


async def test_jitter_alone_stays_between_zero_and_its_bound(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.faults.jitter(api="Produce", jitter_ms=50)
        w = WireClient(cluster.connect(0))
        seen = [(await produce_took(w))[0] for _ in range(20)]
        assert all(0 <= d <= 0.05 for d in seen) and max(seen) > 0.025


async def test_count_fires_that_many_times_then_stops(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        handle = cluster.faults.error("NOT_LEADER_OR_FOLLOWER", api="Produce", topic="t", count=2)
        w = WireClient(cluster.connect(0))
        codes = [(await produce_took(w))[1] for _ in range(4)]
        assert codes == [6, 6, 0, 0] and handle.hits == 2 and handle.matched == 2
        assert cluster.partition("t", 0).log_end_offset == 2   # the errors had no side effect


async def test_probability_is_reproducible_with_a_seed(autojump_clock):
    async def codes(seed: int) -> list[int]:
        async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.seed": seed}) as cluster:
            cluster.faults.error(6, api="Produce", probability=0.5)
            w = WireClient(cluster.connect(0))
            return [(await produce_took(w))[1] for _ in range(30)]

    first = await codes(3)
    assert first == await codes(3) and first != await codes(4)
    assert 5 <= first.count(6) <= 25


async def test_timeout_swallows_then_closes_after_its_ms(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.faults.timeout(api="Produce", ms=300, count=1)
        w = WireClient(cluster.connect(0))
        start = trio.current_time()
        await w.send(PRODUCE, 9, produce_body("t", 0, [b"a"], acks=1))
        assert await w.closed() and trio.current_time() - start == 0.3
        assert cluster.partition("t", 0).log_end_offset == 0
        close = [e for e in cluster.trace.events if e.kind == "conn_close"][0]
        assert close.details["closed_by"] == "broker" and "black_hole" in close.details["reason"]


async def test_timeout_zero_holds_forever(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.faults.timeout(api="Produce")
        w = WireClient(cluster.connect(0))
        await w.send(PRODUCE, 9, produce_body("t", 0, [b"a"], acks=1))
        with trio.move_on_after(3600) as scope:
            await w.recv()
        assert scope.cancelled_caught and not [e for e in cluster.trace.events if e.kind == "conn_close"]


async def test_reset_closes_at_once_without_handling(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.faults.reset(api="Produce")
        w = WireClient(cluster.connect(0))
        start = trio.current_time()
        await w.send(PRODUCE, 9, produce_body("t", 0, [b"a"], acks=1))
        assert await w.closed() and trio.current_time() == start
        assert cluster.partition("t", 0).log_end_offset == 0


async def test_slow_close_holds_the_close_of_a_reset(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        cluster.faults.slow_close(ms=700)
        cluster.faults.reset(api="Produce")
        w = WireClient(cluster.connect(0))
        start = trio.current_time()
        await w.send(PRODUCE, 9, produce_body("t", 0, [b"a"], acks=1))
        assert await w.closed() and trio.current_time() - start == 0.7


async def test_bandwidth_holds_a_response_for_its_size(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        sizes: list[int] = []
        original = w.stream.receive_some

        async def counting(n=None):
            data = await original(n)
            sizes.append(len(data))
            return data
        w.stream.receive_some = counting   # type: ignore[method-assign]
        await w.call(METADATA, 12, META)
        size = sum(sizes)
        cluster.faults.bandwidth(api="Metadata", bytes_per_s=size * 4)   # a quarter of a second per answer
        start = trio.current_time()
        await w.call(METADATA, 12, META)
        assert trio.current_time() - start == pytest.approx(0.25)
