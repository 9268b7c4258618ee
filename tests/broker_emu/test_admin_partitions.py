"""CreatePartitions on the emulator, answered as Kafka's controller answers it
(ReplicationControlManager.createPartitions)."""

from broker_emu.runtime import open_cluster
from client.protocol import ApiKey
from tests.broker_emu.helpers import METADATA, PRODUCE, batch, partition_results, produce_many
from tests.broker_emu.wire import WireClient


async def grow(w: WireClient, *topics: dict, validate_only: bool = False) -> list[tuple]:
    r = await w.call(ApiKey.CREATE_PARTITIONS, 3, {"topics": list(topics), "timeout_ms": 30000, "validate_only": validate_only})
    return [(x.name, x.error_code, x.error_message) for x in r.results]


async def test_a_topic_grows_and_its_new_partitions_take_writes(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        assert await grow(w, {"name": "t", "count": 3, "assignments": None}, validate_only=True) == [("t", 0, None)]
        assert len(cluster.topics["t"].partitions) == 1   # validate_only changes nothing
        assert await grow(w, {"name": "t", "count": 3, "assignments": None}) == [("t", 0, None)]
        md = (await w.call(METADATA, 12, {"topics": [{"name": "t"}]})).topics[0]
        assert sorted(p.partition_index for p in md.partitions) == [0, 1, 2]
        assert all(len(p.replica_nodes) == 3 for p in md.partitions)   # the topic's replication factor
        leader = next(p.leader_id for p in md.partitions if p.partition_index == 2)
        r = partition_results(await WireClient(cluster.connect(leader)).call(PRODUCE, 9, produce_many([("t", 2, batch([b"x"]))])))
        assert r[("t", 2)].error_code == 0 and cluster.partition("t", 2).log_end_offset == 1


async def test_refusals_carry_kafkas_errors_and_messages(autojump_clock):
    async with open_cluster(3, topics=[("t", 2, 2)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        assert await grow(w, {"name": "t", "count": 2, "assignments": None}) == [("t", 37, "Topic already has 2 partition(s).")]
        assert await grow(w, {"name": "t", "count": 1, "assignments": None}) == [
            ("t", 37, "The topic t currently has 2 partition(s); 1 would not be an increase.")]
        assert (await grow(w, {"name": "nope", "count": 3, "assignments": None}))[0][1] == 3
        assert await grow(w, {"name": "t", "count": 4, "assignments": [{"broker_ids": [0, 1]}]}) == [
            ("t", 39, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.")]
        assert (await grow(w, {"name": "t", "count": 3, "assignments": [{"broker_ids": [0]}]}))[0][1] == 39
        dup = {"name": "t", "count": 5, "assignments": None}
        assert await grow(w, dup, dup) == [("t", 42, "Duplicate topic name.")] * 2
        assert await grow(w, {"name": "t", "count": 3, "assignments": [{"broker_ids": [2, 1]}]}) == [("t", 0, None)]
        assert cluster.partition("t", 2).replicas == [2, 1] and len(cluster.topics["t"].partitions) == 3
