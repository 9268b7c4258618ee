"""KIP-848 consumer groups over the wire, in virtual time: joins and epochs, the server-side
assignors, reconciliation (a partition moves only once revoked), the broker's session and
rebalance timeouts fencing members, static members, regex subscriptions, epochs on offsets, and
an empty consumer group taken over by a classic join (Kafka 4.x GroupMetadataManager); mixed groups
are in test_groups_migration.py."""

import uuid

import trio

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from client.protocol import ApiKey
from tests.broker_emu.groups_fake import COMMIT, FETCH, JOIN, commit_body, join_body
from tests.broker_emu.wire import WireClient

HB = ApiKey.CONSUMER_GROUP_HEARTBEAT
FAST = {"group.consumer.session.timeout.ms": 3000, "group.consumer.min.session.timeout.ms": 1000,
        "group.consumer.heartbeat.interval.ms": 500, "group.consumer.min.heartbeat.interval.ms": 100,
        "group.consumer.assignment.interval.ms": 0}   # targets at once (test_the_assignment_interval: Kafka 4.3's 1 s)


class Member:
    """A hand-driven member: sends exactly what a KIP-848 consumer would, owning what it was given."""

    def __init__(self, cluster, group="g", topics=("t",), member_id=None, instance_id=None, rebalance_timeout_ms=5000,
                 assignor=None, regex=None):
        self.w = WireClient(cluster.connect(cluster.coordinator_for(group)), client_id="c")
        self.group, self.topics, self.instance_id, self.regex = group, list(topics), instance_id, regex
        self.member_id = member_id or str(uuid.uuid4())
        self.epoch, self.owned, self.rebalance_timeout_ms, self.assignor = 0, {}, rebalance_timeout_ms, assignor
        self.names = {t.topic_id: t.name for t in cluster.topics.values()}
        self.ids = {t.name: t.topic_id for t in cluster.topics.values()}

    async def beat(self, *, epoch=None, keep=True, full=False, **extra):
        joining = self.epoch == 0 if epoch is None else epoch == 0
        body = {"group_id": self.group, "member_id": self.member_id,
                "member_epoch": self.epoch if epoch is None else epoch, "instance_id": self.instance_id,
                "rack_id": None, "rebalance_timeout_ms": self.rebalance_timeout_ms if joining or full else -1,
                "subscribed_topic_names": (None if self.regex else self.topics) if joining or full else None,
                "subscribed_topic_regex": self.regex if joining or full else None,
                "server_assignor": self.assignor,
                "topic_partitions": [] if joining else [
                    {"topic_id": self.ids[t], "partitions": sorted(ps)} for t, ps in self.owned.items()]} | extra
        r = await self.w.call(HB, 1, body)
        if r.error_code == 0:
            self.epoch = r.member_epoch
            if r.assignment is not None and keep:
                self.owned = {self.names[tp.topic_id]: set(tp.partitions) for tp in r.assignment.topic_partitions}
        return r

    def partitions(self):
        return sorted((t, p) for t, ps in self.owned.items() for p in ps)


async def test_two_members_split_the_topic_and_a_partition_moves_only_once_revoked(autojump_clock):
    async with open_cluster(1, topics=[("t", 6, 1)], listen=False, config=FAST) as cluster:
        a, b = Member(cluster), Member(cluster)
        r = await a.beat()
        assert (r.error_code, r.member_epoch, r.heartbeat_interval_ms) == (0, 1, 500)
        assert a.partitions() == [("t", p) for p in range(6)]
        r = await b.beat()
        assert (r.member_epoch, b.partitions()) == (2, [])    # its target is held by a: unreleased
        r = await a.beat()                                      # a is asked to revoke 3, keeps its epoch
        assert r.member_epoch == 1 and len(a.owned["t"]) == 3
        revoking = cluster.groups.describe("g")["members"][0]["revoking"]
        assert len(revoking["t"]) == 3
        assert (await b.beat()).member_epoch == 2 and b.partitions() == []   # still held by a
        r = await a.beat()                                      # a reports them gone: next epoch
        assert r.member_epoch == 2
        await b.beat()
        assert sorted(a.partitions() + b.partitions()) == [("t", p) for p in range(6)]
        assert len(b.partitions()) == 3
        assert cluster.groups.describe("g")["state"] == "Stable"


async def test_the_broker_session_timeout_fences_a_silent_member_and_its_partitions_move(autojump_clock):
    async with open_cluster(1, topics=[("t", 4, 1)], listen=False, config=FAST) as cluster:
        a, b = Member(cluster), Member(cluster)
        await a.beat()
        await b.beat()
        await a.beat()
        await a.beat()
        await b.beat()
        assert len(a.partitions()) == len(b.partitions()) == 2
        start = cluster.trace.now_ms()
        for _ in range(8):                     # b keeps heartbeating at the interval; a says nothing
            await trio.sleep(0.5)
            await b.beat()
        fenced = cluster.trace.query(kind=Kind.GROUP_MEMBER_FENCED)
        assert [(e.details["member"], e.details["reason"], e.details["timeout_ms"]) for e in fenced] == [
            (a.member_id, "session", 3000)]
        assert fenced[0].t_ms - start == 3000     # exactly group.consumer.session.timeout.ms after a's last heartbeat
        assert b.partitions() == [("t", p) for p in range(4)]
        r = await a.beat()
        assert r.error_code == 25              # UNKNOWN_MEMBER_ID: it must rejoin with epoch 0


async def test_a_member_that_does_not_revoke_is_fenced_at_its_rebalance_timeout(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=FAST) as cluster:
        slow, b = Member(cluster, rebalance_timeout_ms=2000), Member(cluster)
        await slow.beat()
        await b.beat()
        await slow.beat(keep=False)            # told to revoke one partition ... and never does
        asked = cluster.trace.now_ms()
        for _ in range(6):                     # heartbeats keep its session alive, not its revocation
            await trio.sleep(0.5)
            r = await slow.beat(keep=False)
            if r.error_code:
                break
            await b.beat()
        assert r.error_code == 25
        fenced = cluster.trace.query(kind=Kind.GROUP_MEMBER_FENCED)
        assert [(e.details["reason"], e.details["timeout_ms"]) for e in fenced] == [("rebalance", 2000)]
        assert fenced[0].t_ms - asked == 2000
        await b.beat()
        assert b.partitions() == [("t", 0), ("t", 1)]


async def test_epoch_errors_and_the_lost_answer_rule(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=FAST) as cluster:
        a = Member(cluster)
        await a.beat()
        assert (await a.beat(epoch=5)).error_code == 110          # FENCED_MEMBER_EPOCH: ahead of the broker
        b = Member(cluster)
        await b.beat()
        await a.beat()
        await a.beat()                                             # a revoked one: epoch 2
        assert a.epoch == 2
        r = await a.beat(epoch=1)                                  # the answer was lost: epoch 1 with a subset
        assert (r.error_code, r.member_epoch) == (0, 2)
        assert (await a.beat(epoch=0, full=True)).error_code == 110   # 0 is not the previous epoch (1)
        r = await a.w.call(HB, 1, {"group_id": "g", "member_id": "", "member_epoch": 0, "rebalance_timeout_ms": 1,
                                   "subscribed_topic_names": ["t"], "topic_partitions": []})
        assert (r.error_code, r.error_message) == (42, "MemberId can't be empty.")   # v1: KIP-1082
        r = await a.w.call(HB, 0, {"group_id": "g", "member_id": "", "member_epoch": 0, "rebalance_timeout_ms": 1,
                                   "subscribed_topic_names": ["t"], "topic_partitions": []})
        assert r.error_code == 0 and len(r.member_id) == 36         # v0: the broker names it
        r = await a.beat(server_assignor="sticky")
        assert r.error_code == 112 and r.error_message.endswith("Supported assignors: uniform, range.")


async def test_offsets_need_the_current_member_epoch(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=FAST) as cluster:
        a = Member(cluster)
        await a.beat()
        commit = commit_body({("t", 0): 7}, generation=a.epoch, member_id=a.member_id)
        r = await a.w.call(COMMIT, 9, commit)
        assert r.topics[0].partitions[0].error_code == 0
        r = await a.w.call(COMMIT, 9, commit | {"generation_id_or_member_epoch": a.epoch + 1})
        assert r.topics[0].partitions[0].error_code == 113           # STALE_MEMBER_EPOCH
        r = await a.w.call(COMMIT, 8, commit_body({("t", 0): 7}, generation=a.epoch, member_id=a.member_id))
        assert r.topics[0].partitions[0].error_code == 35            # members must use v9+
        fetch = {"groups": [{"group_id": "g", "member_id": a.member_id, "member_epoch": a.epoch,
                             "topics": [{"name": "t", "partition_indexes": [0]}]}], "require_stable": False}
        r = await a.w.call(FETCH, 9, fetch)
        assert (r.groups[0].error_code, r.groups[0].topics[0].partitions[0].committed_offset) == (0, 7)
        fetch["groups"][0]["member_epoch"] = 0
        assert (await a.w.call(FETCH, 9, fetch)).groups[0].error_code == 113


async def test_an_empty_consumer_group_is_taken_over_by_a_classic_join(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=FAST) as cluster:
        a = Member(cluster)
        await a.beat()
        await a.beat(epoch=-1)                                          # g is empty now: a classic join takes it over
        r = await a.w.call(JOIN, 9, join_body(group="g"))
        assert r.error_code == 79
        assert type(cluster.groups.groups["g"]).__name__ == "Group"


async def test_static_member_leaves_for_a_while_and_comes_back_with_its_partitions(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=FAST) as cluster:
        a, b = Member(cluster, instance_id="i-a"), Member(cluster, instance_id="i-b")
        for m in (a, b, a, a, b):
            await m.beat()
        before = a.partitions()
        assert len(before) == 1
        r = await a.beat(epoch=-2)
        assert (r.error_code, r.member_epoch) == (0, -2)
        again = Member(cluster, instance_id="i-a")
        r = await again.beat()
        assert r.error_code == 0 and again.partitions() == before       # the same partition, no rebalance
        r = await Member(cluster, instance_id="i-b").beat()
        assert r.error_code == 111                                       # UNRELEASED_INSTANCE_ID


async def test_regex_subscription_and_the_range_assignor(autojump_clock):
    async with open_cluster(1, topics=[("orders-eu", 3, 1), ("orders-us", 3, 1), ("other", 1, 1)], listen=False,
                            config=FAST) as cluster:
        a = Member(cluster, regex="orders-.*", assignor="range", member_id="a")
        b = Member(cluster, regex="orders-.*", assignor="range", member_id="b")
        await a.beat()
        await b.beat()
        await a.beat()
        await a.beat()
        await b.beat()
        assert a.partitions() == [("orders-eu", 0), ("orders-eu", 1), ("orders-us", 0), ("orders-us", 1)]
        assert b.partitions() == [("orders-eu", 2), ("orders-us", 2)]
        d = await a.w.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": ["g", "nope"], "include_authorized_operations": False})
        g, nope = d.groups
        assert (g.error_code, g.group_state, g.assignor_name, len(g.members)) == (0, "Stable", "range", 2)
        assert (nope.error_code, nope.error_message) == (69, "Group nope not found.")


async def test_the_assignment_interval_batches_target_assignments(autojump_clock):
    """Kafka 4.3+: one target assignment per group.consumer.assignment.interval.ms (1 s by default);
    a member joining sooner waits in an Assigning group until the coordinator's timer computes it."""
    config = {k: v for k, v in FAST.items() if k != "group.consumer.assignment.interval.ms"}
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=config) as cluster:
        a, b = Member(cluster), Member(cluster)
        start = cluster.trace.now_ms()
        await a.beat()
        await trio.sleep(0.2)
        r = await b.beat()
        assert (r.member_epoch, b.partitions()) == (1, [])          # the target of epoch 1 has no room for it
        assert cluster.groups.describe("g")["state"] == "Assigning"
        await trio.sleep(1.0)
        targets = cluster.trace.query(kind=Kind.GROUP_TARGET_ASSIGNMENT)
        assert [(e.t_ms - start, e.details["assignment_epoch"]) for e in targets] == [(0, 1), (1000, 2)]
        for m in (a, a, b):
            await m.beat()
        assert len(a.partitions()) == len(b.partitions()) == 1


async def test_kip1251_an_older_epoch_commits_for_partitions_held_since(autojump_clock):
    """Kafka 4.3+ (KIP-1251): a commit whose epoch lags the member's is good for the partitions it
    has held since that epoch, and STALE_MEMBER_EPOCH for any it got later or no longer has."""
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=FAST) as cluster:
        a, b = Member(cluster, member_id="a"), Member(cluster, member_id="b")
        await a.beat()                                   # epoch 1: t-0, t-1
        for m in (b, a, a, b):
            await m.beat()
        assert (a.epoch, a.partitions(), b.epoch, b.partitions()) == (2, [("t", 0)], 2, [("t", 1)])

        async def commit(m, epoch, partitions):
            r = await m.w.call(COMMIT, 9, commit_body({("t", p): 3 for p in partitions}, generation=epoch,
                                                      member_id=m.member_id))
            return {p.partition_index: p.error_code for p in r.topics[0].partitions}

        assert await commit(a, 1, [0, 1]) == {0: 0, 1: 113}   # t-0 held since epoch 1; t-1 is b's now
        assert await commit(b, 1, [1]) == {1: 113}            # b got t-1 at epoch 2
        assert await commit(b, 2, [1]) == {1: 0}
        assert await commit(a, 3, [0]) == {0: 113}            # an epoch ahead of the member's
