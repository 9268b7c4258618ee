"""A classic group reacts to what a metadata refresh shows, in virtual time, as Java's
ConsumerCoordinator: the leader rejoins when a subscribed topic's partitions change (its
assignment snapshot no longer matches), and every member of a pattern subscription rejoins when
the refresh shows a new matching topic."""

import trio

from broker_emu.runtime import open_cluster
from client.admin import open_admin
from client.consumer.async_consumer import open_consumer
from client.consumer.records import TopicPartition

BOOT = {"bootstrap.servers": "127.0.0.1:0"}
GROUP = {**BOOT, "group.id": "g", "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
         "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 20000}
MAX_AGE_MS = 5000


def connect_to(cluster):
    async def connect(node, host, port):
        return cluster.connect(max(node, 0))
    return connect


def events(cluster, kind, api, client_id):
    return [e for e in cluster.trace.events if e.kind == kind and e.api == api and e.client_id == client_id]


async def poll_until(consumers, done, seconds):
    """Poll each consumer in turn (0.5 s each) until ``done()``, at most ``seconds`` of virtual time."""
    end = trio.current_time() + seconds
    while trio.current_time() < end:
        for c in consumers:
            await c.poll(0.5)
        if done():
            return
    raise AssertionError("not reached within %.1f s: %s" % (seconds, [c.assignment() for c in consumers]))


async def poll_for(consumers, seconds):
    """Poll each consumer in turn (0.5 s each) for ``seconds`` of virtual time."""
    end = trio.current_time() + seconds
    while trio.current_time() < end:
        for c in consumers:
            await c.poll(0.5)


async def test_the_leader_rejoins_when_a_subscribed_topic_gains_partitions(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        config = {**GROUP, "metadata.max.age.ms": MAX_AGE_MS}
        async with open_consumer({**config, "client.id": "c1"}, connect=connect_to(cluster)) as c1, \
                open_consumer({**config, "client.id": "c2"}, connect=connect_to(cluster)) as c2:
            c1.subscribe(["t"])
            c2.subscribe(["t"])
            await poll_until([c1, c2], lambda: len(c1.assignment()) == 1 and len(c2.assignment()) == 1, 30)
            joins = len(events(cluster, "recv", "JoinGroup", "c1")) + len(events(cluster, "recv", "JoinGroup", "c2"))
            async with open_admin(BOOT, connect_to(cluster)) as admin:   # CreatePartitions on the wire
                assert (await admin.create_partitions({"t": 4}))["t"] is None
            grown = trio.current_time()
            # the leader's next refresh (metadata.max.age.ms at the latest) shows 4 partitions; its
            # next poll rejoins, the other member follows at its next heartbeat, the leader assigns 4
            await poll_until([c1, c2], lambda: sorted(c1.assignment() + c2.assignment()) ==
                             [TopicPartition("t", p) for p in range(4)], MAX_AGE_MS / 1000 + 5)
            assert trio.current_time() - grown <= MAX_AGE_MS / 1000 + 5
            assert len(c1.assignment()) == 2 and len(c2.assignment()) == 2
            later = len(events(cluster, "recv", "JoinGroup", "c1")) + len(events(cluster, "recv", "JoinGroup", "c2"))
            assert later == joins + 2   # one rebalance, not a loop of them
            # and it settles: no more rebalances while the metadata stays as it is
            await poll_for([c1, c2], 12)
            settled = len(events(cluster, "recv", "JoinGroup", "c1")) + len(events(cluster, "recv", "JoinGroup", "c2"))
            assert settled == later


async def test_only_the_leader_watches_partition_counts(autojump_clock):
    """Java's onJoinComplete drops the assignment snapshot of a member that did not assign: a
    follower whose refreshes show the new partitions does not rejoin; the leader, refreshing
    rarely, has not seen them yet."""
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        async with open_consumer({**GROUP, "client.id": "leader", "metadata.max.age.ms": 300000},
                                 connect=connect_to(cluster)) as leader:
            leader.subscribe(["t"])
            await poll_until([leader], lambda: len(leader.assignment()) == 2, 30)
            async with open_consumer({**GROUP, "client.id": "follower", "metadata.max.age.ms": MAX_AGE_MS},
                                     connect=connect_to(cluster)) as follower:
                follower.subscribe(["t"])
                await poll_until([leader, follower], lambda: len(follower.assignment()) == 1
                                 and len(leader.assignment()) == 1, 30)
                joins = len(events(cluster, "recv", "JoinGroup", "follower"))
                cluster.add_partitions("t", 4)
                grown_ms = cluster.now_ms()
                await poll_for([leader, follower], 3 * MAX_AGE_MS / 1000)
                assert [e for e in events(cluster, "send", "Metadata", "follower") if e.t_ms > grown_ms]   # it saw them
                assert len(events(cluster, "recv", "JoinGroup", "follower")) == joins
                assert len(leader.assignment() + follower.assignment()) == 2


async def test_a_pattern_subscription_picks_up_a_topic_created_later(autojump_clock):
    """The follower's refresh shows the new topic: its subscription changes, it rejoins (Java's
    updatePatternSubscription, then rejoinNeededOrPending on every member); the leader, whose own
    refreshes are rare, matches the pattern again when it rejoins, and assigns the new topic."""
    async with open_cluster(1, topics=[("orders-eu", 2, 1), ("audit", 1, 1)], listen=False) as cluster:
        async with open_consumer({**GROUP, "client.id": "leader", "metadata.max.age.ms": 300000},
                                 connect=connect_to(cluster)) as leader:
            leader.subscribe(pattern=r"orders-.*")
            await poll_until([leader], lambda: len(leader.assignment()) == 2, 30)
            async with open_consumer({**GROUP, "client.id": "follower", "metadata.max.age.ms": MAX_AGE_MS},
                                     connect=connect_to(cluster)) as follower:
                follower.subscribe(pattern=r"orders-.*")
                await poll_until([leader, follower], lambda: len(follower.assignment()) == 1
                                 and len(leader.assignment()) == 1, 30)
                cluster.create_topic("orders-us", 2, 1)
                created = trio.current_time()
                want = [TopicPartition(t, p) for t in ("orders-eu", "orders-us") for p in range(2)]
                await poll_until([leader, follower], lambda: sorted(leader.assignment() + follower.assignment()) == want,
                                 MAX_AGE_MS / 1000 + 5)
                assert trio.current_time() - created <= MAX_AGE_MS / 1000 + 5
                assert len(leader.assignment()) == 2 and len(follower.assignment()) == 2


async def test_a_lone_pattern_member_picks_up_a_new_topic_and_drops_a_deleted_one(autojump_clock):
    async with open_cluster(1, topics=[("orders-eu", 1, 1)], listen=False) as cluster:
        async with open_consumer({**GROUP, "client.id": "p", "metadata.max.age.ms": MAX_AGE_MS},
                                 connect=connect_to(cluster)) as c:
            c.subscribe(pattern=r"orders-.*")
            await poll_until([c], lambda: len(c.assignment()) == 1, 30)
            cluster.create_topic("orders-us", 1, 1)
            await poll_until([c], lambda: sorted(c.assignment()) == [TopicPartition("orders-eu", 0),
                                                                     TopicPartition("orders-us", 0)],
                             MAX_AGE_MS / 1000 + 5)
            cluster.delete_topic("orders-eu")
            await poll_until([c], lambda: c.assignment() == [TopicPartition("orders-us", 0)], MAX_AGE_MS / 1000 + 5)


async def test_the_leader_drops_a_deleted_topic_from_the_assignment(autojump_clock):
    """The leader's refresh no longer shows a subscribed topic: its snapshot changed, it rejoins
    and assigns what is left (Java's rejoinNeededOrPending: "owned-but-no-longer-existed
    partitions" go with the rebalance)."""
    async with open_cluster(1, topics=[("a", 1, 1), ("b", 1, 1)], listen=False) as cluster:
        config = {**GROUP, "client.id": "c", "metadata.max.age.ms": MAX_AGE_MS, "allow.auto.create.topics": False}
        async with open_consumer(config, connect=connect_to(cluster)) as c:
            c.subscribe(["a", "b"])
            await poll_until([c], lambda: len(c.assignment()) == 2, 30)
            cluster.delete_topic("b")
            await poll_until([c], lambda: c.assignment() == [TopicPartition("a", 0)], MAX_AGE_MS / 1000 + 5)


async def test_a_refresh_during_a_long_poll_is_acted_on_within_that_poll(autojump_clock):
    """Java's classic poll loop runs the coordinator's poll again after each response it waited
    for, so a leader waiting in one long poll rejoins soon after its refresh, not at its next poll."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        config = {**GROUP, "client.id": "c", "metadata.max.age.ms": MAX_AGE_MS}
        async with open_consumer(config, connect=connect_to(cluster)) as c:
            c.subscribe(["t"])
            await poll_until([c], lambda: len(c.assignment()) == 1, 30)
            joins = len(events(cluster, "recv", "JoinGroup", "c"))
            cluster.add_partitions("t", 2)
            grown = trio.current_time()
            await c.poll(15)   # below max.poll.interval.ms
            assert trio.current_time() - grown >= 15   # one poll, no records: it waited it all
            rejoin = events(cluster, "recv", "JoinGroup", "c")[joins:]
            assert len(rejoin) == 1
            assert rejoin[0].t_ms / 1000 - (grown - cluster.trace._start) <= MAX_AGE_MS / 1000 + 1
            assert sorted(c.assignment()) == [TopicPartition("t", 0), TopicPartition("t", 1)]


async def test_a_pattern_does_not_match_internal_topics(autojump_clock):
    """Java's ConsumerMetadata.retainTopic keeps an internal topic for a pattern only with
    exclude.internal.topics=false (the default is true), so `.*` does not take
    __consumer_offsets, which the group's own commits create."""
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        async with open_consumer({**GROUP, "client.id": "p", "metadata.max.age.ms": MAX_AGE_MS},
                                 connect=connect_to(cluster)) as c:
            c.subscribe(pattern=r".*")
            await poll_until([c], lambda: len(c.assignment()) == 1, 30)
            await c.commit_sync({TopicPartition("t", 0): 0})
            await poll_for([c], 3 * MAX_AGE_MS / 1000)
            assert "__consumer_offsets" in c.metadata.topics   # the refreshes see it
            assert c.assignment() == [TopicPartition("t", 0)]
