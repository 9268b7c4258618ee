"""Our consumer in a group, against the emulator's coordinator, in virtual time: assignment,
rebalances, heartbeats and session expiry, max.poll.interval.ms, fencing, coordinator moves."""

import pytest

from broker_emu.runtime import open_cluster
from client.assignors import roundrobin_assign
from client.config import ConfigException, consumer_config
from client.consumer.async_consumer import open_consumer
from client.consumer.records import TopicPartition
from client.exceptions import CommitFailedException
from tests.broker_emu.wire import WireClient, produce_body

BOOT = {"bootstrap.servers": "127.0.0.1:0"}
GROUP = {**BOOT, "group.id": "g", "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
         "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 20000}


def connect_to(cluster):
    async def connect(node, host, port):
        return cluster.connect(max(node, 0))
    return connect


def events(cluster, kind, api=None, client_id=None):
    return [e for e in cluster.trace.events if e.kind == kind and (api is None or e.api == api)
            and (client_id is None or e.client_id == client_id)]


async def fill(cluster, topic, partitions):
    for p in range(partitions):
        leader = cluster.partition(topic, p).leader
        await WireClient(cluster.connect(leader)).call(0, 9, produce_body(topic, p, [b"%s-%d" % (topic.encode(), p)], acks=1))


async def poll_until(consumers, done, rounds=60, each=0.5):
    got = {id(c): [] for c in consumers}
    for _ in range(rounds):
        for c in consumers:
            got[id(c)] += await c.poll(each)
        if done():
            return got
    raise AssertionError("condition not reached: " + ", ".join(str(c.assignment()) for c in consumers))


def test_roundrobin_assigns_like_kafka():
    subs = {"m1": ["a", "b"], "m2": ["a"], "m3": ["a", "b"]}
    counts = {"a": 5, "b": 2}
    # one circular deal over (topic, partition) in order, skipping members not subscribed: after
    # a-4 went to m2 the deal goes on at m3 for b-0, then m1 for b-1
    assert roundrobin_assign(subs, counts) == {"m1": {"a": [0, 3], "b": [1]}, "m2": {"a": [1, 4]}, "m3": {"a": [2], "b": [0]}}


def test_group_configs_are_checked():
    with pytest.raises(ConfigException, match="heartbeat.interval.ms"):
        consumer_config({**GROUP, "heartbeat.interval.ms": 10000})
    with pytest.raises(ConfigException, match="sticky"):
        consumer_config({**GROUP, "partition.assignment.strategy": "range,sticky"})


async def test_two_members_split_the_partitions_then_one_leaves_and_the_other_takes_all(autojump_clock):
    async with open_cluster(3, topics=[("t", 4, 3)], listen=False) as cluster:
        await fill(cluster, "t", 4)
        seen = []
        async with open_consumer({**GROUP, "client.id": "c1"}, connect=connect_to(cluster)) as c1:
            c1.subscribe(["t"], on_assign=lambda tps: seen.append(("assign", tps)), on_revoke=lambda tps: seen.append(("revoke", tps)))
            async with open_consumer({**GROUP, "client.id": "c2"}, connect=connect_to(cluster)) as c2:
                c2.subscribe(["t"])
                got = await poll_until([c1, c2], lambda: len(c1.assignment()) == 2 and len(c2.assignment()) == 2)
                assert sorted(c1.assignment() + c2.assignment()) == [TopicPartition("t", p) for p in range(4)]
                got = await poll_until([c1, c2], lambda: sum(len(v) for v in got.values()) >= 4 or True, rounds=4)
                await c1.commit_sync()
                await c2.commit_sync()
            left = events(cluster, "recv", "LeaveGroup", "c2")
            assert len(left) == 1  # close() left the group instead of waiting for the session to expire
            await poll_until([c1], lambda: len(c1.assignment()) == 4)
        assert [kind for kind, _ in seen][:1] == ["assign"] and ("revoke", sorted(seen[0][1])) in [(k, sorted(v)) for k, v in seen]
        assert seen[-2][0] == "assign" and len(seen[-2][1]) == 4 and seen[-1][0] == "revoke"


async def test_records_of_the_assigned_partitions_are_read_from_the_committed_offsets(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        await fill(cluster, "t", 2)
        async with open_consumer({**GROUP, "client.id": "a"}, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            got = await poll_until([c], lambda: False or len(c.assignment()) == 2)
            records = got[id(c)]
            while len(records) < 2:
                records += await c.poll(1)
            assert sorted(r.value for r in records) == [b"t-0", b"t-1"]
            await c.commit_sync()
        await fill(cluster, "t", 2)
        async with open_consumer({**GROUP, "client.id": "b"}, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            records = []
            while len(records) < 2:
                records += await c.poll(1)
            assert sorted((r.partition, r.offset) for r in records) == [(0, 1), (1, 1)]  # after the commit


async def test_a_member_that_does_not_poll_leaves_at_max_poll_interval(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        async with open_consumer({**GROUP, "client.id": "slow"}, connect=connect_to(cluster)) as slow, \
                open_consumer({**GROUP, "client.id": "busy"}, connect=connect_to(cluster)) as busy:
            slow.subscribe(["t"])
            busy.subscribe(["t"])
            await poll_until([slow, busy], lambda: len(slow.assignment()) == 1 and len(busy.assignment()) == 1)
            last_poll = slow.last_poll
            await poll_until([busy], lambda: len(busy.assignment()) == 2, rounds=80)
            leave = events(cluster, "recv", "LeaveGroup", "slow")
            assert len(leave) == 1
            waited = leave[0].t_ms / 1000 - (last_poll - cluster_start(cluster))
            assert 20.0 < waited <= 21.0   # max.poll.interval.ms, checked at each heartbeat interval
            assert slow.assignment() == []
            await poll_until([slow, busy], lambda: len(slow.assignment()) == 1 and len(busy.assignment()) == 1)


def cluster_start(cluster):
    """trio time at trace t=0 (the trace counts milliseconds from the cluster's start)."""
    return cluster.trace._start


async def test_expelled_after_session_timeout_commits_fail_with_commit_failed(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        # request.timeout.ms above session.timeout.ms: the member is expelled while its heartbeat hangs
        async with open_consumer({**GROUP, "client.id": "mute", "request.timeout.ms": 12000}, connect=connect_to(cluster)) as mute, \
                open_consumer({**GROUP, "client.id": "ok"}, connect=connect_to(cluster)) as ok:
            mute.subscribe(["t"])
            ok.subscribe(["t"])
            await poll_until([mute, ok], lambda: len(mute.assignment()) == 1 and len(ok.assignment()) == 1)
            cluster.faults.add({"match": {"api": "Heartbeat", "client_id": "mute"}, "action": "black_hole"}, cluster.now_ms())
            mine = mute.assignment()[0]
            await poll_until([ok], lambda: len(ok.assignment()) == 2, rounds=80)
            cluster.faults.clear()
            # the commit waits behind the hung heartbeat (answers come in order), which times out
            # at request.timeout.ms; on the new connection the coordinator no longer knows the member
            with pytest.raises(CommitFailedException, match="generation"):
                await mute.commit_sync({mine: 0}, timeout=30)
        expelled = [e for e in events(cluster, "send", "JoinGroup", "ok")]
        assert expelled  # the survivor rejoined after the coordinator expelled the silent member


async def test_joingroup_held_by_the_coordinator_is_not_a_dead_broker(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        config = {**GROUP, "request.timeout.ms": 5000, "fetch.max.wait.ms": 500}
        async with open_consumer({**config, "client.id": "first"}, connect=connect_to(cluster)) as first:
            first.subscribe(["t"])
            await poll_until([first], lambda: len(first.assignment()) == 2)
            # the first member stops hearing the coordinator: the second's JoinGroup waits for it
            cluster.faults.add({"match": {"api": "Heartbeat", "client_id": "first"}, "action": "black_hole"}, cluster.now_ms())
            async with open_consumer({**config, "client.id": "second"}, connect=connect_to(cluster)) as second:
                second.subscribe(["t"])
                await poll_until([second], lambda: len(second.assignment()) == 2, rounds=80)
        joins = events(cluster, "recv", "JoinGroup", "second")
        answers = events(cluster, "send", "JoinGroup", "second")
        held = max(a.t_ms - j.t_ms for j, a in zip(joins, answers))
        assert held > 5000  # longer than request.timeout.ms: the client waited (rebalance timeout + 5 s)
        closes = [e for e in events(cluster, "conn_close") if e.client_id == "second" and e.details["closed_by"] == "client"]
        assert [e for e in closes if e.t_ms < answers[-1].t_ms] == []


async def test_not_coordinator_sends_the_member_to_find_the_coordinator_again(autojump_clock):
    async with open_cluster(3, topics=[("t", 2, 3)], listen=False) as cluster:
        async with open_consumer({**GROUP, "client.id": "c"}, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            await poll_until([c], lambda: len(c.assignment()) == 2)
            before = len(events(cluster, "recv", "FindCoordinator", "c"))
            cluster.faults.add({"match": {"api": "Heartbeat"}, "action": {"type": "error", "error": 16}, "times": 1},
                               cluster.now_ms())
            await poll_until([c], lambda: len(events(cluster, "recv", "FindCoordinator", "c")) > before, rounds=10)
            await poll_until([c], lambda: len(c.assignment()) == 2)


async def test_pattern_subscription_takes_matching_topics_only(autojump_clock):
    async with open_cluster(1, topics=[("orders-eu", 1, 1), ("orders-us", 1, 1), ("audit", 1, 1)], listen=False) as cluster:
        async with open_consumer({**GROUP, "client.id": "p"}, connect=connect_to(cluster)) as c:
            c.subscribe(pattern=r"orders-.*")
            await poll_until([c], lambda: len(c.assignment()) == 2)
            assert sorted(c.assignment()) == [TopicPartition("orders-eu", 0), TopicPartition("orders-us", 0)]
