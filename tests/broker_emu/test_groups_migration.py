"""Classic members inside KIP-848 consumer groups and groups changing kind, over the wire in
virtual time (Kafka 4.x GroupMetadataManager: classicGroupJoinToConsumerGroup and friends,
convertToConsumerGroup, convertToClassicGroup; group.consumer.migration.policy)."""

import trio

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from client.protocol import ApiKey
from client.protocol.codec import decode_consumer_blob, encode_consumer_blob
from tests.broker_emu.groups_fake import JOIN, LEAVE, SYNC, heartbeat_body, join_body
from tests.broker_emu.test_kip848 import FAST, Member
from tests.broker_emu.wire import WireClient

HEARTBEAT, DESCRIBE = ApiKey.HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE
CONFIG = FAST | {"group.initial.rebalance.delay.ms": 0}


class Classic:
    """A hand-driven classic member (JoinGroup v9, SyncGroup v5, Heartbeat v4) with a real
    ConsumerProtocolSubscription: it reports what it owns, as a cooperative consumer does."""

    def __init__(self, cluster, group="g", topics=("t",), session_ms=10000, rebalance_ms=4000):
        self.w = WireClient(cluster.connect(cluster.coordinator_for(group)), client_id="classic")
        self.group, self.topics, self.session_ms, self.rebalance_ms = group, list(topics), session_ms, rebalance_ms
        self.member_id, self.generation, self.owned = "", -1, set()

    def metadata(self) -> bytes:
        owned: dict[str, list[int]] = {}
        for t, p in sorted(self.owned):
            owned.setdefault(t, []).append(p)
        return encode_consumer_blob("CONSUMER_PROTOCOL_SUBSCRIPTION", 1, {
            "topics": self.topics, "user_data": None,
            "owned_partitions": [{"topic": t, "partitions": ps} for t, ps in owned.items()]})

    async def join(self):
        body = join_body(self.group, self.member_id, session_ms=self.session_ms, rebalance_ms=self.rebalance_ms,
                         protocols=[("cooperative-sticky", self.metadata()), ("range", self.metadata())])
        r = await self.w.call(JOIN, 9, body)
        if r.error_code == 79:                                     # MEMBER_ID_REQUIRED: again with the id
            self.member_id = r.member_id
            r = await self.w.call(JOIN, 9, body | {"member_id": r.member_id})
        if r.error_code == 0:
            self.member_id, self.generation = r.member_id, r.generation_id
        return r

    async def sync(self, protocol="cooperative-sticky"):
        r = await self.w.call(SYNC, 5, {"group_id": self.group, "generation_id": self.generation,
                                        "member_id": self.member_id, "group_instance_id": None,
                                        "protocol_type": "consumer", "protocol_name": protocol, "assignments": []})
        if r.error_code == 0:
            _, a = decode_consumer_blob("CONSUMER_PROTOCOL_ASSIGNMENT", r.assignment)
            self.owned = {(tp.topic, p) for tp in a.assigned_partitions for p in tp.partitions}
        return r

    async def heartbeat(self) -> int:
        return (await self.w.call(HEARTBEAT, 4, heartbeat_body(self.member_id, self.generation, group=self.group))).error_code


async def test_a_classic_member_joins_a_consumer_group_and_gets_partitions_only_once_released(autojump_clock):
    async with open_cluster(1, topics=[("t", 6, 1)], listen=False, config=CONFIG) as cluster:
        a = Member(cluster)
        await a.beat()
        assert len(a.partitions()) == 6
        b = Classic(cluster)
        r = await b.join()
        # answered at once: generation = member epoch, no leader, no members (the broker assigns)
        assert (r.error_code, r.generation_id, r.protocol_type, r.protocol_name, r.leader, r.members) == \
            (0, 2, "consumer", "cooperative-sticky", "", [])
        assert (await b.sync()).error_code == 0 and b.owned == set()    # a still holds its target
        assert await b.heartbeat() == 0                                  # waiting on a: nothing to do yet
        await a.beat()                                                   # a is asked to revoke 3
        await a.beat()                                                   # ... and says it did
        assert len(a.partitions()) == 3 and a.epoch == 2
        assert await b.heartbeat() == 27                                 # REBALANCE_IN_PROGRESS: come and get them
        r = await b.join()
        assert (r.error_code, r.generation_id) == (0, 2)
        assert (await b.sync()).error_code == 0
        assert b.owned == {("t", p) for p in range(6)} - set(a.partitions())
        assert await b.heartbeat() == 0
        d = await a.w.call(DESCRIBE, 1, {"group_ids": ["g"], "include_authorized_operations": False})
        types = {m.member_id: m.member_type for m in d.groups[0].members}
        assert types == {a.member_id: 1, b.member_id: 0}                  # consumer, classic


async def beat_for(member, seconds):
    """The consumer member heartbeats at the broker's interval (0.5 s here) for ``seconds``."""
    for _ in range(int(seconds / 0.5)):
        await trio.sleep(0.5)
        await member.beat()


def fenced(cluster, member_id):
    return [e for e in cluster.trace.query(kind=Kind.GROUP_MEMBER_FENCED) if e.details["member"] == member_id]


async def test_a_classic_member_is_fenced_at_its_own_session_timeout_and_at_its_rebalance_timeout(autojump_clock):
    async with open_cluster(1, topics=[("t", 4, 1)], listen=False, config=CONFIG) as cluster:
        a = Member(cluster)
        await a.beat()
        b = Classic(cluster, session_ms=7000)
        await b.join()
        await b.sync()
        synced = cluster.trace.now_ms()
        await beat_for(a, 10)                        # a beats on, b falls silent: its own session.timeout.ms
        assert [(e.details["reason"], e.details["timeout_ms"], e.t_ms - synced) for e in fenced(cluster, b.member_id)] \
            == [("session", 7000, 7000)]
        assert await b.heartbeat() == 25                                  # UNKNOWN_MEMBER_ID

        c = Classic(cluster, session_ms=60000, rebalance_ms=4000)
        await c.join()
        await c.sync()
        await beat_for(a, 1)                         # a revokes what c gets; c's target is newer than its epoch
        assert await c.heartbeat() == 27                                  # told to rejoin ...
        told = cluster.trace.now_ms()
        await beat_for(a, 6)                                              # ... and never does
        assert [(e.details["reason"], e.details["timeout_ms"], e.t_ms - told) for e in fenced(cluster, c.member_id)] \
            == [("join", 4000, 4000)]


async def test_the_last_consumer_member_leaving_turns_the_group_classic(autojump_clock):
    async with open_cluster(1, topics=[("t", 4, 1)], listen=False, config=CONFIG) as cluster:
        a = Member(cluster)
        await a.beat()
        b = Classic(cluster)
        await b.join()
        await b.sync()
        await a.beat(epoch=-1)                                            # the consumer member leaves
        converted = cluster.trace.query(kind=Kind.GROUP_CONVERTED)
        assert [(e.details["to"], e.details["members"]) for e in converted] == [("classic", [b.member_id])]
        assert await b.heartbeat() == 27                                  # the classic group rebalances
        r = await b.join()
        assert (r.error_code, r.leader, [m.member_id for m in r.members]) == (0, b.member_id, [b.member_id])
        assert r.generation_id == b.generation and r.protocol_name == "cooperative-sticky"


async def test_a_consumer_member_upgrades_a_classic_group(autojump_clock):
    async with open_cluster(1, topics=[("t", 4, 1)], listen=False, config=CONFIG) as cluster:
        b = Classic(cluster)
        r = await b.join()
        assert r.leader == b.member_id                                    # a plain classic group
        mine = encode_consumer_blob("CONSUMER_PROTOCOL_ASSIGNMENT", 0, {
            "assigned_partitions": [{"topic": "t", "partitions": [0, 1, 2, 3]}], "user_data": None})
        r = await b.w.call(SYNC, 5, {"group_id": "g", "generation_id": b.generation, "member_id": b.member_id,
                                     "group_instance_id": None, "protocol_type": "consumer",
                                     "protocol_name": "cooperative-sticky",
                                     "assignments": [{"member_id": b.member_id, "assignment": mine}]})
        assert r.error_code == 0
        b.owned = {("t", p) for p in range(4)}
        generation = b.generation
        a = Member(cluster)
        r = await a.beat()
        assert r.error_code == 0 and a.partitions() == []                 # b holds them all for now
        [converted] = cluster.trace.query(kind=Kind.GROUP_CONVERTED)
        assert (converted.details["to"], converted.details["group_epoch"]) == ("consumer", generation)
        assert await b.heartbeat() == 27
        r = await b.join()                                                # still owning all four: revoke two
        assert (r.error_code, r.generation_id) == (0, generation)
        await b.sync()
        assert len(b.owned) == 2
        r = await b.join()                                                # reports the two gone
        assert (r.error_code, r.generation_id) == (0, generation + 1)
        await a.beat()
        assert len(a.partitions()) == 2 and not set(a.partitions()) & b.owned
        r = await b.w.call(LEAVE, 4, {"group_id": "g", "members": [{"member_id": b.member_id, "group_instance_id": None}]})
        assert (r.error_code, r.members[0].error_code) == (0, 0)
        await a.beat()
        assert len(a.partitions()) == 4


async def test_without_migration_the_kinds_refuse_each_other(autojump_clock):
    config = CONFIG | {"group.consumer.migration.policy": "disabled"}
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=config) as cluster:
        a = Member(cluster)
        await a.beat()
        assert (await Classic(cluster).join()).error_code == 23            # INCONSISTENT_GROUP_PROTOCOL
        b = Classic(cluster, group="classic")
        await b.join()
        r = await Member(cluster, group="classic").beat()
        assert (r.error_code, r.error_message) == \
            (69, "Cannot upgrade classic group classic to consumer group because online upgrade is disabled.")


async def test_a_group_of_another_protocol_type_is_never_upgraded(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=CONFIG) as cluster:
        connect = WireClient(cluster.connect(cluster.coordinator_for("workers")))
        body = join_body("workers", protocol_type="connect", protocols=[("sessioned", b"x")])
        r = await connect.call(JOIN, 9, body)
        assert (await connect.call(JOIN, 9, body | {"member_id": r.member_id})).error_code == 0
        r = await Member(cluster, group="workers").beat()
        assert (r.error_code, r.error_message) == (69, "Cannot upgrade classic group workers to consumer group "
                                                       "because the group does not use the consumer embedded protocol.")
