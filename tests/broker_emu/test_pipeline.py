"""The connection pipeline: ordering, muting, ApiVersions fallback, and bad input contained."""

import tracemalloc

import trio
import trio.testing

from broker_emu.runtime import open_cluster
from broker_emu.server import READ_AHEAD_BYTES
from client.protocol.codec import encode_request
from tests.broker_emu.helpers import (
    API_VERSIONS,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    WireClient,
    fetch_body,
    leader_of,
    produce_body,
)


def with_version(frame: bytes, version: int) -> bytes:
    return frame[:6] + version.to_bytes(2, "big") + frame[8:]


async def test_pipelined_requests_are_answered_in_order(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        stream = cluster.connect(0)
        w = WireClient(stream)
        sent = [(METADATA, 12, {"topics": None}), (API_VERSIONS, 3, {"client_software_name": "x", "client_software_version": "1"}),
                (FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=300)), (LIST_OFFSETS, 7, {"replica_id": -1, "topics": []}),
                (PRODUCE, 9, produce_body("t", 0, [b"a"], acks=1))]
        frames = []
        for corr, (api, version, body) in enumerate(sent, start=1):
            w.sent[corr] = (api, version)
            frames.append(encode_request(api, version, corr, "test", body))
        await stream.send_all(b"".join(frames))  # one write, no waiting between requests
        answers = [await w.recv() for _ in sent]
        assert [corr for corr, _ in answers] == [1, 2, 3, 4, 5]
        assert trio.current_time() == 0.3  # everything behind the long poll waited for it
        assert cluster.partition("t", 0).log_end_offset == 1


async def test_a_parked_produce_blocks_its_connection_but_not_others(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.replication.stall("t")
        leader = leader_of(cluster, "t")
        parked, other = WireClient(cluster.connect(leader)), WireClient(cluster.connect(leader))
        await parked.send(PRODUCE, 9, produce_body("t", 0, [b"a"], timeout_ms=4000))
        await parked.send(METADATA, 12, {"topics": None})
        await trio.sleep(1)
        await other.call(METADATA, 12, {"topics": None})
        assert trio.current_time() == 1.0  # answered at once on its own connection
        corr, r = await parked.recv()
        assert (corr, r.responses[0].partition_responses[0].error_code) == (1, 7)
        corr, _ = await parked.recv()
        assert corr == 2 and trio.current_time() == 4.0  # the Metadata waited out the whole park


async def test_client_disconnect_during_a_park_is_traced_when_it_happens(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.replication.stall("t")
        stream = cluster.connect(leader_of(cluster, "t"))
        await WireClient(stream).send(PRODUCE, 9, produce_body("t", 0, [b"a"], timeout_ms=20_000))
        await trio.sleep(5)
        await stream.aclose()
        await trio.sleep(20)
        close = cluster.trace.query(kind="conn_close")[0]
        assert (close.t_ms, close.details["closed_by"]) == (5000, "client")
        assert cluster.trace.query(kind="purgatory_expire")[0].t_ms == 20_000  # the operation still expires
        assert cluster.partition("t", 0).log_end_offset == 1


async def test_api_versions_too_new_gets_error_35_in_the_v0_layout_then_works(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        stream = cluster.connect(0)
        # ApiVersions v5, which we do not know: api 18, version 5, correlation id 9, client id "ab"
        await stream.send_all(b"\x00\x00\x00\x0c" + b"\x00\x12\x00\x05\x00\x00\x00\x09\x00\x02ab")
        data = await stream.receive_some(1000)
        body = data[4:4 + int.from_bytes(data[:4], "big")]
        # correlation id; error 35; int32 array of one: (18, 0, 4); no throttle_time_ms in v0
        assert body == bytes.fromhex("00000009" "0023" "00000001" "0012" "0000" "0004")
        w = WireClient(stream)
        r = await w.call(API_VERSIONS, 4, {"client_software_name": "new-client", "client_software_version": "1.0"})
        assert r.error_code == 0 and len(r.api_keys) > 10  # the retry on the same connection is served


async def test_bad_input_closes_only_that_connection(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        good = WireClient(cluster.connect(0))
        await good.call(METADATA, 12, {"topics": None})
        tracemalloc.start()
        bad_inputs = {
            "huge length prefix": (2**31 - 1).to_bytes(4, "big"),
            "negative length": (-5).to_bytes(4, "big", signed=True),
            "unknown API key": b"\x00\x00\x00\x0a" + b"\x03\xe7\x00\x00\x00\x00\x00\x01\xff\xff",
            "unsupported Produce version": with_version(encode_request(PRODUCE, 9, 1, "x", produce_body("t", 0, [b"a"])), 13),
            "truncated header": b"\x00\x00\x00\x03\x00\x03\x00",
            "garbage body": b"\x00\x00\x00\x10" + b"\x00\x03\x00\x0c\x00\x00\x00\x01\x00\x00" + b"\xff" * 6,
        }
        for name, data in bad_inputs.items():
            s = cluster.connect(0)
            await s.send_all(data)
            assert await WireClient(s).closed(), name
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 4 << 20  # nothing was allocated for the claimed 2 GiB
        r = await good.call(PRODUCE, 9, produce_body("t", 0, [b"still fine"], acks=1))
        assert r.responses[0].partition_responses[0].error_code == 0
        closes = cluster.trace.query(kind="conn_close")
        assert len(closes) == len(bad_inputs) and {c.details["closed_by"] for c in closes} == {"broker"}


async def test_read_ahead_behind_a_parked_request_is_bounded(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.replication.stall("t")
        leader = leader_of(cluster, "t")
        stream = cluster.connect(leader)
        w = WireClient(stream)
        await w.send(PRODUCE, 9, produce_body("t", 0, [b"a"], timeout_ms=10_000))
        big = produce_body("t", 0, [b"x" * 1_000_000], acks=1)
        for _ in range(30):  # 30 MB pipelined behind the park
            await w.send(PRODUCE, 9, big)
        await trio.sleep(1)
        conn = next(iter(cluster.brokers[leader].connections))
        assert READ_AHEAD_BYTES <= conn._queued_bytes <= READ_AHEAD_BYTES + 2_000_000
        answers = [await w.recv() for _ in range(31)]
        assert [corr for corr, _ in answers] == list(range(1, 32)) and trio.current_time() == 10.0
        assert cluster.partition("t", 0).log_end_offset == 31


async def test_requests_received_before_the_client_closes_are_still_processed(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        cluster.replication.stall("t")
        stream = cluster.connect(leader_of(cluster, "t"))
        frames = [encode_request(PRODUCE, 9, 1, "c", produce_body("t", 0, [b"parked"], timeout_ms=20_000)),
                  encode_request(PRODUCE, 9, 2, "c", produce_body("t", 0, [b"fire and forget"], acks=0)),
                  encode_request(PRODUCE, 9, 3, "c", produce_body("t", 0, [b"acks=1"], acks=1))]
        await stream.send_all(b"".join(frames))
        await trio.sleep(1)
        assert cluster.partition("t", 0).log_end_offset == 1  # the later ones wait behind the park
        await stream.aclose()
        await trio.testing.wait_all_tasks_blocked()
        assert trio.current_time() == 1.0 and cluster.partition("t", 0).log_end_offset == 3  # whole requests are not lost at the close
        assert [e.kind for e in cluster.trace.events if e.kind in ("recv", "send", "conn_close")] == \
            ["recv", "conn_close", "recv", "recv"]  # no responses to a closed connection
        await trio.sleep(30)
        assert not cluster.brokers[leader_of(cluster, "t")].connections
