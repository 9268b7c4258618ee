"""Partition reassignments (KIP-455, ReplicationControlManager): added replicas copy the log at the
replication's pace, the reassignment completes when they are all in the ISR (the removed leader
hands over), it can be cancelled, and Kafka's errors otherwise — in virtual time."""

import trio

from broker_emu.runtime import open_cluster
from client.protocol import ApiKey
from tests.broker_emu.wire import WireClient, produce_body

ALTER, LIST = ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS


async def _alter(w, parts, version=1, allow_rf=True):
    body = {"timeout_ms": 10000, "allow_replication_factor_change": allow_rf, "topics": [
        {"name": t, "partitions": [{"partition_index": i, "replicas": r}]} for t, i, r in parts]}
    r = await w.call(ALTER, version, body)
    return [(p.error_code, p.error_message) for t in r.responses for p in t.partitions]


async def _listed(w):
    r = await w.call(LIST, 0, {"timeout_ms": 10000, "topics": None})
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in r.topics for p in t.partitions}


async def test_added_replicas_catch_up_then_the_old_leader_leaves(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 1)], listen=False) as cluster:
        p = cluster.partition("t", 0)
        old = p.leader
        new = [b for b in (0, 1, 2) if b != old]
        w = WireClient(cluster.connect(old))
        r = await w.call(ApiKey.PRODUCE, 9, produce_body("t", 0, [b"a", b"b"], acks=-1))
        assert r.responses[0].partition_responses[0].error_code == 0
        for b in new:
            cluster.set_replication("t", 0, b, "lag", 500)
        assert await _alter(w, [("t", 0, new)]) == [(0, None)]
        assert await _listed(w) == {("t", 0): (new + [old], new, [old])}
        await trio.sleep(0.6)                                  # the new replicas copied the log: done
        assert await _listed(w) == {}
        p = cluster.partition("t", 0)
        assert (p.replicas, sorted(p.isr), p.leader) == (new, sorted(new), new[0])   # the old leader is gone
        assert p.high_watermark == 2


async def test_cancel_and_kafkas_errors(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 1)], listen=False) as cluster:
        p = cluster.partition("t", 0)
        other = next(b for b in (0, 1, 2) if b != p.leader)
        original = list(p.replicas)
        w = WireClient(cluster.connect(0))
        cluster.set_replication("t", 0, other, "stall")
        assert await _alter(w, [("t", 0, original + [other])]) == [(0, None)]
        assert await _listed(w) == {("t", 0): (original + [other], [other], [])}
        assert await _alter(w, [("t", 0, None)]) == [(0, None)]                      # cancelled
        assert (cluster.partition("t", 0).replicas, await _listed(w)) == (original, {})
        assert await _alter(w, [("t", 0, None)]) == [(85, None)]                     # Kafka 4.4 sends no message
        got = await _alter(w, [("t", 0, []), ("t", 0, [0, 9]), ("t", 0, [1, 1]), ("nope", 0, [0]), ("t", 5, [0])])
        assert got == [(39, "The manual partition assignment includes an empty replica list."),
                       (39, "The manual partition assignment includes broker 9, but no such broker is registered."),
                       (39, "The manual partition assignment includes the broker 1 more than once."),
                       (3, "Unable to find a topic named nope."), (3, "Unable to find partition t:5.")]
        assert await _alter(w, [("t", 0, [0, 1])], allow_rf=False) == [(38, "The replication factor is changed from 1 to 2")]


async def test_moving_a_single_replica_leaves_only_the_target(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 1)], listen=False) as cluster:
        old = cluster.partition("t", 0).leader
        target = [next(b for b in (0, 1, 2) if b != old)]
        assert await _alter(WireClient(cluster.connect(0)), [("t", 0, target)]) == [(0, None)]
        await trio.sleep(1)
        p = cluster.partition("t", 0)
        assert (p.replicas, p.isr, p.leader) == (target, target, target[0])
