"""Produce v0-2 and their magic 0/1 message sets: served, and converted to a magic-2 batch, under
the 2.8-3.9 version profiles (LogValidator's up-conversion); closed on, as Kafka 4.4 does, without
one (measured: Kafka 4.4 advertises Produce v0-2 and closes the connection on each)."""

import gzip
import struct
import zlib

import pytest

from broker_emu.runtime import open_cluster
from client.protocol.legacy_records import LegacyRecordError, read_message_set
from client.protocol.records import decode_batch
from tests.broker_emu.wire import WireClient, fetch_body

PRODUCE, FETCH = 0, 1


def message(magic: int, key, value, timestamp: int = 0, codec: int = 0, offset: int = 0) -> bytes:
    def nullable(b):
        return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b
    body = struct.pack(">bb", magic, codec) + (struct.pack(">q", timestamp) if magic == 1 else b"") + nullable(key) + nullable(value)
    m = struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF) + body
    return struct.pack(">qi", offset, len(m)) + m


def produce(records: bytes, acks: int = 1) -> dict:
    return {"acks": acks, "timeout_ms": 5000, "transactional_id": None,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": records}]}]}


async def read_back(w: WireClient):
    f = await w.call(FETCH, 4, fetch_body("t", 0, 0))
    data = bytes(f.responses[0].partitions[0].records)
    out, pos = [], 0
    while pos < len(data):
        header, records = decode_batch(data, pos)
        out += [(r.offset, r.key, r.value, r.timestamp) for r in records]
        pos += header.size
    return out


@pytest.mark.parametrize("profile", ["2.8", "3.6", "3.9"])
async def test_old_profiles_convert_magic_0_and_1_message_sets(autojump_clock, profile):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.kafka.version": profile}) as cluster:
        w = WireClient(cluster.connect(0))
        v1 = message(1, b"k1", b"one", 1_700_000_000_123) + message(1, None, b"two", 1_700_000_000_456, offset=1)
        r = await w.call(PRODUCE, 2, produce(v1))
        assert (r.responses[0].partition_responses[0].error_code, r.responses[0].partition_responses[0].base_offset) == (0, 0)
        r = await w.call(PRODUCE, 0, produce(message(0, b"k0", b"zero")))
        assert r.responses[0].partition_responses[0].base_offset == 2
        inner = message(1, None, b"g1", 1_700_000_000_789) + message(1, None, b"g2", 1_700_000_000_790, offset=1)
        wrapper = message(1, None, gzip.compress(inner), 1_700_000_000_790, codec=1)
        r = await w.call(PRODUCE, 1, produce(wrapper))
        assert r.responses[0].partition_responses[0].base_offset == 3
        assert await read_back(w) == [(0, b"k1", b"one", 1_700_000_000_123), (1, None, b"two", 1_700_000_000_456),
                                      (2, b"k0", b"zero", -1),   # magic 0 has no timestamp: NO_TIMESTAMP
                                      (3, None, b"g1", 1_700_000_000_789), (4, None, b"g2", 1_700_000_000_790)]


async def test_a_corrupt_message_is_refused_and_nothing_stored(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.kafka.version": "3.9"}) as cluster:
        w = WireClient(cluster.connect(0))
        bad = bytearray(message(1, None, b"x", 5))
        bad[-1] ^= 0xFF
        r = await w.call(PRODUCE, 2, produce(bytes(bad)))
        assert r.responses[0].partition_responses[0].error_code == 2   # CORRUPT_MESSAGE
        assert cluster.partition("t", 0).log_end_offset == 0


@pytest.mark.parametrize("profile", ["", "4.1"])
async def test_kafka_4_closes_the_connection_on_produce_v0_to_v2(autojump_clock, profile):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config={"emu.kafka.version": profile}) as cluster:
        w = WireClient(cluster.connect(0))
        await w.send(PRODUCE, 2, produce(message(1, None, b"x", 5)))
        assert await w.closed()
        assert cluster.partition("t", 0).log_end_offset == 0


def test_message_set_reader_refuses_what_it_cannot_read():
    with pytest.raises(LegacyRecordError, match="magic 2"):
        read_message_set(message(2, None, b"x"))
    with pytest.raises(LegacyRecordError, match="claims"):
        read_message_set(message(1, None, b"x")[:-3])
    with pytest.raises(LegacyRecordError, match="inside a compressed"):
        nested = message(1, None, gzip.compress(message(1, None, gzip.compress(message(1, None, b"x")), codec=1)), codec=1)
        read_message_set(nested)
