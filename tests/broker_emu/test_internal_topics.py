"""__consumer_offsets appears as Kafka's does: created by the first group FindCoordinator, listed
as internal, led by the group coordinators, closed to client appends (docs/differences.md, 9)."""

from broker_emu.runtime import open_cluster
from tests.broker_emu.groups_fake import FIND
from tests.broker_emu.helpers import METADATA, PRODUCE, batch, partition_results, produce_many
from tests.broker_emu.wire import WireClient


async def _all_topics(w: WireClient) -> dict:
    return {t.name: t for t in (await w.call(METADATA, 12, {"topics": None})).topics}


async def test_the_first_group_lookup_creates_the_internal_topic_led_by_the_coordinators(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        assert set(await _all_topics(w)) == {"t"}
        # a transactional id's lookup is not a group's: no offsets topic yet
        assert (await w.call(FIND, 3, {"key": "tx", "key_type": 1})).error_code == 0
        assert "__consumer_offsets" not in await _all_topics(w)
        found = await w.call(FIND, 3, {"key": "hello", "key_type": 0})
        topics = await _all_topics(w)
        offsets = topics["__consumer_offsets"]
        assert (offsets.error_code, offsets.is_internal, topics["t"].is_internal) == (0, True, False)
        assert len(offsets.partitions) == 50
        # group "hello" hashes to partition 22, whose leader is the coordinator the lookup named
        leaders = {p.partition_index: p.leader_id for p in offsets.partitions}
        assert leaders[22] == found.node_id == cluster.coordinator_for("hello") == 1
        assert all(leaders[i] == i % 3 for i in range(50))
        assert all(len(p.replica_nodes) == 3 for p in offsets.partitions)


async def test_a_client_cannot_append_to_it(autojump_clock):
    async with open_cluster(1, listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        await w.call(FIND, 3, {"key": "g", "key_type": 0})
        r = partition_results(await w.call(PRODUCE, 9, produce_many([("__consumer_offsets", 0, batch([b"x"]))], acks=1)))
        got = r[("__consumer_offsets", 0)]
        assert (got.error_code, got.error_message, got.base_offset, got.log_start_offset) == \
            (17, "Cannot append to internal topic __consumer_offsets", -1, -1)
        assert cluster.partition("__consumer_offsets", 0).log_end_offset == 0


async def test_its_leaders_follow_the_coordinator_through_a_stop_and_a_restart(autojump_clock):
    async with open_cluster(3, listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        await w.call(FIND, 3, {"key": "hello", "key_type": 0})
        p22 = cluster.partition("__consumer_offsets", 22)
        await cluster.stop_broker(1)
        # replicas 1, 2, 0: the first live ISR member in assignment order leads, and coordinates
        assert p22.leader == cluster.coordinator_for("hello") == 2
        assert (await w.call(FIND, 3, {"key": "hello", "key_type": 0})).node_id == 2
        await cluster.start_broker(1)
        assert p22.leader == cluster.coordinator_for("hello") == 1
        led = {p.index: p.leader for p in cluster.topics["__consumer_offsets"].partitions}
        assert led == {i: i % 3 for i in range(50)}


async def test_an_election_takes_the_first_live_isr_replica_in_assignment_order(autojump_clock):
    async with open_cluster(3, listen=False) as cluster:
        cluster.create_topic("t", assignments=[[0, 2, 1]])
        await cluster.stop_broker(0)
        assert cluster.partition("t", 0).leader == 2  # not 1, the lowest id in the ISR
