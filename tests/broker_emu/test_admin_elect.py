"""ElectLeaders (ReplicationControlManager.electLeaders): preferred elections move leadership
back to the first replica when it is alive and in the ISR; unclean ones bring an offline
partition back on a live replica outside the ISR; Kafka's errors and messages otherwise."""

from broker_emu.runtime import open_cluster
from client.protocol import ApiKey
from tests.broker_emu.wire import WireClient

ELECT = ApiKey.ELECT_LEADERS


async def _elect(w, kind, parts):
    body = {"election_type": kind, "timeout_ms": 5000,
            "topic_partitions": None if parts is None else [{"topic": t, "partitions": ps} for t, ps in parts]}
    r = await w.call(ELECT, 2, body)
    return {(t.topic, p.partition_id): (p.error_code, p.error_message) for t in r.replica_election_results
            for p in t.partition_result}


async def test_preferred_election_moves_leadership_back(autojump_clock):
    async with open_cluster(3, topics=[("t", 2, 3)], listen=False) as cluster:
        w = WireClient(cluster.connect(0))
        p0 = cluster.partition("t", 0)
        preferred = p0.replicas[0]
        cluster.move_leader("t", 0, p0.replicas[1])
        got = await _elect(w, 0, [("t", [0, 1, 9]), ("nope", [0])])
        assert got == {("t", 0): (0, None), ("t", 1): (84, "Leader election not needed for topic partition."),
                       ("t", 9): (3, "No such partition as t-9"), ("nope", 0): (3, "No such topic as nope")}
        assert cluster.partition("t", 0).leader == preferred
        assert await _elect(w, 0, None) == {}                     # all partitions: the not-needed are left out


async def test_unclean_election_brings_an_offline_partition_back(autojump_clock):
    config = {"replica.lag.time.max.ms": 1_000_000}
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False, config=config) as cluster:
        p = cluster.partition("t", 0)
        leader, others = p.leader, [r for r in p.replicas if r != p.leader]
        p.isr = [leader]                                          # the followers fell out of the ISR
        await cluster.stop_broker(leader)
        assert not cluster.is_alive(cluster.partition("t", 0).leader)   # offline: clean elections only
        w = WireClient(cluster.connect(others[0]))
        assert await _elect(w, 0, [("t", [0])]) == {("t", 0): (80, "The preferred leader was not available.")}
        assert await _elect(w, 1, [("t", [0])]) == {("t", 0): (0, None)}
        p = cluster.partition("t", 0)
        first_live = next(r for r in p.replicas if cluster.is_alive(r))
        assert p.leader == first_live and p.leader in p.isr and leader not in p.isr   # the followers catch up again
        assert await _elect(w, 1, [("t", [0])]) == {("t", 0): (84, "Leader election not needed for topic partition.")}
