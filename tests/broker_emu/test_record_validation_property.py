"""Property: whatever CRC-valid batch a client sends — arbitrary record bytes, arbitrary attribute
bits, counts and timestamps, compressed or not — the emulator either refuses it for that
partition or stores something every read path serves: Fetch, ListOffsets (earliest, latest, by
timestamp, max timestamp), OffsetForLeaderEpoch and DeleteRecords once it exists. No handler
raises (tests/conftest.py fails the test on a ``handler_error``; checked here explicitly too),
every answer decodes, and what Fetch returns is a CRC-valid batch whose records read back.

And: the record walker's fast path (runs of one shape, checked with strided slices) accepts and
refuses exactly what its slow paths do, and reports the same timestamps, keys and offsets."""

from __future__ import annotations

import trio
import trio.testing
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from broker_emu.record_scan import BadRecords, scan
from broker_emu.registry import REGISTRY
from broker_emu.runtime import open_cluster
from broker_emu.trace import HANDLER_ERRORS
from broker_emu.validation import record_times
from client.protocol import ApiKey
from client.protocol import compression as codecs
from client.protocol.records import CorruptRecordBatchError, decode_batch, iter_batches, verify_crc
from tests.broker_emu.crafted import crafted_batch, record
from tests.broker_emu.helpers import FETCH, LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH, PRODUCE, WireClient, fetch_body

INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
SMALL_TS = st.integers(-100, 100) | st.sampled_from([0, -1, 1_700_000_000_000]) | INT64


@st.composite
def records_sections(draw) -> tuple[bytes, int]:
    """(records section, the number of records it holds or pretends to)."""
    kind = draw(st.sampled_from(["bytes", "records", "records", "mutated"]))
    if kind == "bytes":
        body = draw(st.binary(max_size=200))
        return body, draw(st.integers(-2, 40))
    n = draw(st.integers(1, 80))
    key = draw(st.none() | st.binary(max_size=6))
    value = draw(st.none() | st.binary(max_size=60))
    headers = draw(st.lists(st.tuples(st.binary(max_size=6), st.none() | st.binary(max_size=6)), max_size=2))
    ts = draw(st.lists(SMALL_TS.filter(lambda t: -(1 << 62) < t < (1 << 62)), min_size=1, max_size=4))
    odd = draw(st.sets(st.integers(0, n - 1), max_size=3))
    body = bytearray(b"".join(record(value if i not in odd else None, key, ts_delta=ts[i % len(ts)],
                                     offset_delta=i if i not in odd else 3 * i, headers=headers) for i in range(n)))
    if kind == "mutated":
        for pos, byte in draw(st.lists(st.tuples(st.integers(0, len(body) - 1), st.integers(0, 255)), max_size=3)):
            body[pos] = byte
    return bytes(body), n + draw(st.sampled_from([0] * 6 + [-1, 1]))


@st.composite
def batches(draw) -> bytes:
    body, count = draw(records_sections())
    plausible = st.builds(lambda codec, flags: codec | flags, st.integers(0, 4), st.sampled_from([0, 0, 0x08, 0x10]))
    attributes = draw(plausible | st.integers(-(1 << 15), (1 << 15) - 1))   # a client's bits, or any 16 bits
    codec = attributes & 7
    if codec in (1, 2, 3, 4) and draw(st.integers(0, 3)):
        body = codecs.compress(codec, body)   # otherwise the codec bits lie about raw bytes
    return crafted_batch(body, count=count, attributes=attributes,
                         last_offset_delta=count - 1 if draw(st.integers(0, 3)) else draw(st.integers(-2, 50)),
                         base_timestamp=draw(SMALL_TS), max_timestamp=draw(SMALL_TS),
                         producer_id=draw(st.sampled_from([-1, -1, 7])), producer_epoch=0,
                         base_sequence=draw(st.sampled_from([0, 0, 5, -1])))


TOPIC_CONFIGS = st.sampled_from([{}, {"message.timestamp.type": "LogAppendTime"}, {"cleanup.policy": "compact"},
                                 {"compression.type": "gzip"}, {"message.timestamp.after.max.ms": "1000"}])


async def read_everything(w: WireClient, timestamps: list[int]) -> list:
    """Every read path on t-0; each answer must decode (WireClient.call decodes the frame)."""
    answers = [await w.call(FETCH, 12, fetch_body("t", 0, 0, max_wait_ms=0)),
               await w.call(FETCH, 4, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                                       "isolation_level": 0, "topics": [{"topic": "t", "partitions": [
                                           {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})]
    answers.append(await w.call(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": ts} for ts in [-2, -1, -3, *timestamps]]}]}))
    answers.append(await w.call(OFFSET_FOR_LEADER_EPOCH, 4, {"replica_id": -1, "topics": [{"topic": "t", "partitions": [
        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": e} for e in (0, -1, 5)]}]}))
    delete_records = getattr(ApiKey, "DELETE_RECORDS", None)
    if delete_records is not None and delete_records in REGISTRY:
        answers.append(await w.call(delete_records, REGISTRY[delete_records].max_version, {"timeout_ms": 100, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "offset": 1}]}]}))
        answers.append(await w.call(LIST_OFFSETS, 7, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": ts} for ts in (-2, -3, *timestamps)]}]}))
    return answers


def check_fetched(records: bytes) -> None:
    """What Fetch returns is whole CRC-valid batches whose records our reader walks."""
    for pos, header in iter_batches(records):
        one = records[pos:pos + header.size]
        assert verify_crc(one)
        times = record_times(one)
        assert len(times) == header.records_count
        try:
            decode_batch(one)
        except CorruptRecordBatchError as exc:   # client.protocol refuses header keys that are not UTF-8
            assert "utf-8" in str(exc)          # (Kafka, and so the emulator, store them)


def run_one(batch: bytes, configs: dict, timestamps: list[int]) -> int:
    async def main() -> int:
        async with open_cluster(1, listen=False) as cluster:
            cluster.create_topic("t", 1, 1, configs=configs)
            w = WireClient(cluster.connect(0))
            before = HANDLER_ERRORS.count
            r = await w.call(PRODUCE, 9, {"acks": 1, "timeout_ms": 1000, "topic_data": [
                {"name": "t", "partition_data": [{"index": 0, "records": batch}]}]})
            error = r.responses[0].partition_responses[0].error_code
            stored = cluster.partition("t", 0).log_end_offset
            assert (error == 0) == (stored > 0)
            answers = await read_everything(w, timestamps)
            assert HANDLER_ERRORS.count == before, HANDLER_ERRORS.since(before)
            check_fetched(answers[0].responses[0].partitions[0].records)
            return error
    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(batches(), TOPIC_CONFIGS, st.lists(SMALL_TS, max_size=3))
@example(crafted_batch(b"\xff\x00garbage!", count=1, max_timestamp=5000), {}, [2000])      # the cases
@example(crafted_batch(record(), count=1, max_timestamp=5000), {}, [2000])
@example(crafted_batch(b"junk", attributes=6), {}, [0])
def test_any_crc_valid_batch_is_refused_or_served_by_every_read_path(batch, configs, timestamps):
    run_one(batch, configs, timestamps)


def outcome(body: bytes, count: int, **how) -> object:
    try:
        found = scan(body, count, want_consecutive=True, want_keyless=True, **how)
    except BadRecords:
        return "refused"
    return found.min_delta, found.max_delta, found.consecutive, tuple(found.keyless or ())


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(records_sections())
def test_the_fast_record_walk_agrees_with_the_slow_ones(section):
    body, count = section
    fast = outcome(body, count)
    assert fast == outcome(body, count, per_record=True) == outcome(body, count, collect=True)
