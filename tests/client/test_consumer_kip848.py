"""Our consumer with group.protocol=consumer (KIP-848) against the emulator's coordinator, in
virtual time: the broker's heartbeat interval, reconciliation with the callbacks, commits with
the member epoch, leaving, max.poll.interval.ms, fencing, and the settings the broker owns."""

import pytest
import trio

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from client.config import ConfigException, consumer_config
from client.consumer.async_consumer import open_consumer
from client.consumer.records import TopicPartition
from tests.client.test_consumer_groups import connect_to, events, fill, poll_until

BROKER = {"group.consumer.heartbeat.interval.ms": 2000, "group.consumer.session.timeout.ms": 10000,
          "group.consumer.min.session.timeout.ms": 1000, "group.consumer.min.heartbeat.interval.ms": 1000}
K848 = {"bootstrap.servers": "127.0.0.1:0", "group.id": "g", "group.protocol": "consumer",
        "auto.offset.reset": "earliest", "max.poll.interval.ms": 20000}


def test_settings_the_broker_owns_are_refused():
    for name, value in (("session.timeout.ms", 10000), ("heartbeat.interval.ms", 1000),
                        ("partition.assignment.strategy", "range")):
        with pytest.raises(ConfigException, match=f"{name} is not supported when group.protocol=consumer"):
            consumer_config({**K848, name: value})
    with pytest.raises(ConfigException, match="group.protocol must be classic or consumer"):
        consumer_config({**K848, "group.protocol": "eager"})
    assert consumer_config({**K848, "group.remote.assignor": "range"})["group.remote.assignor"] == "range"


async def test_two_members_split_hand_over_and_commit_with_their_epoch(autojump_clock):
    async with open_cluster(3, topics=[("t", 4, 3)], listen=False, config=BROKER) as cluster:
        await fill(cluster, "t", 4)
        seen = []
        async with open_consumer({**K848, "client.id": "c1"}, connect=connect_to(cluster)) as c1:
            c1.subscribe(["t"], on_assign=lambda tps: seen.append(("assign", sorted(tps))),
                         on_revoke=lambda tps: seen.append(("revoke", sorted(tps))))
            await poll_until([c1], lambda: len(c1.assignment()) == 4)
            async with open_consumer({**K848, "client.id": "c2"}, connect=connect_to(cluster)) as c2:
                c2.subscribe(["t"])
                await poll_until([c1, c2], lambda: len(c1.assignment()) == 2 and len(c2.assignment()) == 2)
                assert sorted(c1.assignment() + c2.assignment()) == [TopicPartition("t", p) for p in range(4)]
                await c2.commit_sync()
                commits = [e for e in events(cluster, Kind.SEND, "OffsetCommit", "c2")]
                assert commits and not commits[-1].details.get("errors")
            await poll_until([c1], lambda: len(c1.assignment()) == 4)
        # heartbeats at the broker's interval, not a client setting, on the coordinator's own
        # connection (never behind a long-polling Fetch: Java's node Integer.MAX_VALUE - id)
        beats = [e.details.get("arrived_ms", e.t_ms) for e in events(cluster, Kind.RECV, "ConsumerGroupHeartbeat", "c1")]
        gaps = [round(b - a) for a, b in zip(beats, beats[1:])]
        assert gaps.count(2000) >= 2 and max(gaps) <= 2000, gaps
        assert seen[0] == ("assign", [TopicPartition("t", p) for p in range(4)])
        assert seen[1][0] == "revoke" and len(seen[1][1]) == 2        # gave two up for c2
        assert seen[-1][0] == "revoke"                                  # close
        fenced = events(cluster, Kind.GROUP_MEMBER_FENCED)
        assert [e.details["reason"] for e in fenced] == ["left", "left"]   # both left; none expired


async def test_a_member_that_stops_polling_leaves_and_rejoins_on_its_next_poll(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=BROKER) as cluster:
        async with open_consumer({**K848, "client.id": "slow"}, connect=connect_to(cluster)) as slow, \
                open_consumer({**K848, "client.id": "busy"}, connect=connect_to(cluster)) as busy:
            slow.subscribe(["t"])
            busy.subscribe(["t"])
            await poll_until([slow, busy], lambda: len(slow.assignment()) == 1 and len(busy.assignment()) == 1)
            await poll_until([busy], lambda: len(busy.assignment()) == 2, rounds=80)
            left = [e for e in events(cluster, Kind.GROUP_MEMBER_FENCED) if e.details["reason"] == "left"]
            assert len(left) == 1                                      # slow left by itself at max.poll.interval.ms
            await poll_until([slow, busy], lambda: len(slow.assignment()) == 1 and len(busy.assignment()) == 1)


async def test_a_lost_heartbeat_answer_is_followed_by_a_full_heartbeat_that_gets_the_assignment_again(autojump_clock):
    """The answer asking c1 to revoke is lost (the broker handles the heartbeat, then the
    connection closes). Kafka sends an assignment only to a full heartbeat or when it changes, so
    c1's retry must be full (Java resets its HeartbeatState after a failure) or c1 never learns
    what to give up, and would be fenced at its rebalance timeout instead."""
    async with open_cluster(1, topics=[("t", 4, 1)], listen=False, config=BROKER) as cluster:
        async with open_consumer({**K848, "client.id": "c1"}, connect=connect_to(cluster)) as c1, \
                open_consumer({**K848, "client.id": "c2"}, connect=connect_to(cluster)) as c2:
            c1.subscribe(["t"])
            await poll_until([c1], lambda: len(c1.assignment()) == 4)
            c2.subscribe(["t"])
            await poll_until([c2], lambda: any(e.details.get("member_epoch") == 0
                                               for e in events(cluster, Kind.RECV, "ConsumerGroupHeartbeat", "c2")))
            cluster.faults.add({"match": {"api": "ConsumerGroupHeartbeat", "client_id": "c1"}, "action": "close_after",
                                "times": 1}, cluster.now_ms())
            start = cluster.now_ms()
            await poll_until([c1, c2], lambda: len(c1.assignment()) == 2 and len(c2.assignment()) == 2)
            took = cluster.now_ms() - start
        revoking = [e for e in events(cluster, Kind.GROUP_MEMBER_EPOCH) if e.details["state"] == "unrevoked_partitions"]
        closed = [e for e in cluster.trace.query(kind=Kind.FAULT_APPLIED)]
        assert len(closed) == 1 and revoking and revoking[0].t_ms == closed[0].t_ms   # that very answer was lost
        assert took < 5000, took                                        # not the 20 s rebalance timeout
        assert [e.details["reason"] for e in events(cluster, Kind.GROUP_MEMBER_FENCED)] == ["left", "left"]


async def test_heartbeats_go_on_while_an_async_callback_revokes_slowly(autojump_clock):
    """Reconciliation runs beside the heartbeats (Java's background thread keeps heartbeating while
    the application runs its listener): c1's on_revoke takes 8 s, its heartbeats keep the broker's
    interval meanwhile, and c2 gets the partitions once the callback is done — no fence (the
    rebalance timeout, max.poll.interval.ms, is 20 s)."""
    async with open_cluster(1, topics=[("t", 4, 1)], listen=False, config=BROKER) as cluster:
        done = []

        async def slow(tps):
            if tps:
                await trio.sleep(8)
                done.append(cluster.now_ms())

        async with open_consumer({**K848, "client.id": "c1"}, connect=connect_to(cluster)) as c1, \
                open_consumer({**K848, "client.id": "c2"}, connect=connect_to(cluster)) as c2:
            c1.subscribe(["t"], on_revoke=slow)
            await poll_until([c1], lambda: len(c1.assignment()) == 4)
            c2.subscribe(["t"])
            start = cluster.now_ms()
            await poll_until([c1, c2], lambda: len(c2.assignment()) == 2, rounds=200)
            beats = [e.t_ms for e in events(cluster, Kind.RECV, "ConsumerGroupHeartbeat", "c1") if start < e.t_ms < done[0]]
        assert done[0] - start >= 8000                     # (done[1]: the revocation at close)
        assert len(beats) >= 3 and max(b - a for a, b in zip(beats, beats[1:])) <= 2000, beats
        fenced = [e.details["reason"] for e in events(cluster, Kind.GROUP_MEMBER_FENCED)]
        assert "rebalance" not in fenced and "session" not in fenced, fenced


def test_a_heartbeat_answer_that_arrives_after_close_is_ignored():
    """The answer to a heartbeat in flight when the consumer closed must not bring the member
    back: taken, it made the member STABLE again, and its next heartbeat joined the group afresh
    (epoch 0) after it had left — a member nobody runs, holding partitions until the broker's
    session timeout (seen on the blocking face)."""
    from types import SimpleNamespace

    from client.consumer.membership import CLOSED, HEARTBEAT
    from client.consumer.membership848 import Membership848

    answer = SimpleNamespace(error_code=0, error_message=None, heartbeat_interval_ms=2000, member_epoch=3,
                             assignment=None)
    m = Membership848(consumer_config(K848), ["t"], None, 0.0)
    assert m.handle_timeouts(0.0).kind == HEARTBEAT
    m.close()
    assert m.on_heartbeat_response(answer, [TopicPartition("t", 0)], 0.1) is None
    assert m.state == CLOSED and m.handle_timeouts(100.0) is None and m.next_deadline() == float("inf")

