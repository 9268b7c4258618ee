"""Wire calls of a transactional producer, for the coordinator's virtual-time tests."""

from __future__ import annotations

from client.protocol import ApiKey
from client.protocol.records import Record, encode_batch
from tests.broker_emu.wire import WireClient

FIND, INIT, ADD, ADD_OFFSETS, END, TXN_COMMIT = (ApiKey.FIND_COORDINATOR, ApiKey.INIT_PRODUCER_ID, ApiKey.ADD_PARTITIONS_TO_TXN,
                                                  ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN, ApiKey.TXN_OFFSET_COMMIT)
PRODUCE, FETCH, LIST_OFFSETS, OFFSET_FETCH = ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.OFFSET_FETCH
DESCRIBE_TXNS, LIST_TXNS, DESCRIBE_PRODUCERS = ApiKey.DESCRIBE_TRANSACTIONS, ApiKey.LIST_TRANSACTIONS, ApiKey.DESCRIBE_PRODUCERS


async def coordinator(cluster, tid: str) -> WireClient:
    found = await WireClient(cluster.connect(0)).call(FIND, 3, {"key": tid, "key_type": 1})
    assert found.error_code == 0
    return WireClient(cluster.connect(found.node_id))


async def init(w: WireClient, tid: str, timeout_ms: int = 60000, pid: int = -1, epoch: int = -1):
    return await w.call(INIT, 4, {"transactional_id": tid, "transaction_timeout_ms": timeout_ms,
                                  "producer_id": pid, "producer_epoch": epoch})


async def add(w: WireClient, tid: str, pid: int, epoch: int, parts: list[tuple[str, int]], version: int = 3) -> list[int]:
    topics: dict[str, list[int]] = {}
    for t, p in parts:
        topics.setdefault(t, []).append(p)
    r = await w.call(ADD, version, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                                    "v3_and_below_producer_epoch": epoch,
                                    "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
    return [p.partition_error_code for t in r.results_by_topic_v3_and_below for p in t.results_by_partition]


async def end(w: WireClient, tid: str, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
    return (await w.call(END, version, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                                        "committed": commit})).error_code


def txn_batch(pid: int, epoch: int, seq: int, values: list[bytes]) -> bytes:
    return encode_batch([Record(v, timestamp=1000) for v in values], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, transactional=True)


async def produce(w: WireClient, topic: str, partition: int, batch: bytes, acks: int = -1):
    r = await w.call(PRODUCE, 9, {"transactional_id": None, "acks": acks, "timeout_ms": 30000,
                                  "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
    return r.responses[0].partition_responses[0]


async def fetch(w: WireClient, topic: str, partition: int, isolation: int, offset: int = 0):
    r = await w.call(FETCH, 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                                 "isolation_level": isolation, "session_id": 0, "session_epoch": -1,
                                 "topics": [{"topic": topic, "partitions": [
                                     {"partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
                                      "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
                                 "forgotten_topics_data": [], "rack_id": ""})
    return r.responses[0].partitions[0]
