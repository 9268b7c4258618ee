"""One memory budget for every partition's log (emu.log.memory.bytes): nothing is dropped until
all logs together pass it; then the cluster's oldest batches go first, down to 90% of it, as
size retention drops them, and the trace and stderr say so."""

import logging

import trio

from broker_emu.log import LogMemory, PartitionLog, log_memory_budget
from broker_emu.runtime import open_cluster
from client.protocol.records import parse_batch_header
from tests.broker_emu.helpers import batch
from tests.broker_emu.wire import WireClient, fetch_body, produce_body


def appended(log: PartitionLog, value: bytes) -> None:
    raw = batch([value])
    log.append(raw, parse_batch_header(raw), 0)


def test_the_oldest_batches_of_the_whole_cluster_go_first_down_to_ninety_percent():
    size = len(batch([b"v" * 1000]))
    evicted = []
    memory = LogMemory(10 * size, lambda log, freed, start: evicted.append((log.name, freed, start)))
    a, b = PartitionLog(memory=memory, name="a-0"), PartitionLog(memory=memory, name="b-0")
    for _ in range(3):
        appended(a, b"v" * 1000)        # a holds the 3 oldest batches
    for _ in range(7):
        appended(b, b"v" * 1000)
    assert evicted == [] and memory.used == 10 * size    # at the budget: nothing dropped
    appended(b, b"v" * 1000)                             # over it: down to 9 batches
    assert evicted == [("a-0", 2 * size, 2)]             # a's two oldest, not b's newer ones
    assert memory.used == a.size_bytes + b.size_bytes == 9 * size
    assert (a.log_start_offset, a.log_end_offset, b.log_start_offset) == (2, 3, 0)


def test_a_log_keeps_its_active_batch_and_the_accounting_follows_every_removal():
    size = len(batch([b"v" * 1000]))
    memory = LogMemory(size // 2)
    log = PartitionLog(memory=memory, name="t-0")
    appended(log, b"v" * 1000)
    appended(log, b"v" * 1000)
    assert len(log.batches) == 1 and memory.used == size   # the active batch stays, even over budget
    log.truncate_to(log.log_start_offset)
    assert memory.used == 0 == log.size_bytes
    appended(log, b"v" * 1000)
    log.close()
    assert memory.used == 0 and log not in memory.logs


def test_no_budget_keeps_everything_and_auto_is_half_the_available_memory():
    memory = LogMemory(-1)
    log = PartitionLog(memory=memory)
    for _ in range(100):
        appended(log, b"v" * 1000)
    assert log.log_start_offset == 0 and len(log.batches) == 100
    assert log_memory_budget(-1) == -1 and log_memory_budget(123) == 123
    assert log_memory_budget(0) >= 256 << 20


async def test_over_the_wire_a_fetch_below_the_evicted_head_is_out_of_range_and_it_is_said(autojump_clock, caplog):
    size = len(batch([b"v" * 10_000]))
    config = {"emu.log.memory.bytes": 20 * size}
    caplog.set_level(logging.WARNING, logger="broker_emu")
    async with open_cluster(1, topics=[("old", 1, 1), ("new", 1, 1)], config=config, listen=False) as cluster:
        wire = WireClient(cluster.connect(0))
        for topic in ("old", "new"):
            for _ in range(12):
                answer = await wire.call(0, 9, produce_body(topic, 0, [b"v" * 10_000], acks=1))
                assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0
                await trio.sleep(0.01)
        old = cluster.partition("old", 0).log
        assert old.log_start_offset > 0 and cluster.partition("new", 0).log.log_start_offset == 0
        fetched = await wire.call(1, 12, fetch_body("old", 0, 0))
        assert fetched["responses"][0]["partitions"][0]["error_code"] == 1   # OFFSET_OUT_OF_RANGE
        events = [e for e in cluster.trace.events if e.kind == "log_evicted"]
        assert events and events[0].details["topic"] == "old" and events[0].details["budget"] == 20 * size
        assert "emu.log.memory.bytes" in caplog.text and "old-0" in caplog.text
