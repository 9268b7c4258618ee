"""Share-group offsets for the admin (DescribeShareGroupOffsets v0-1, AlterShareGroupOffsets,
DeleteShareGroupOffsets) on the wire, in virtual time, as Kafka 4.4's group coordinator answers
them (broker_emu/share/offsets.py): the start offset and lag a member's fetches and
acknowledgements leave, a new start offset a later member reads from, state deleted so the next
fetch starts again from share.auto.offset.reset, and every refusal Kafka gives."""

import uuid

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from client.errors import ErrorCode as E
from client.protocol import ApiKey
from tests.broker_emu.share.member import ACCEPT, ShareMember, acquired, produce
from tests.broker_emu.wire import WireClient

DESCRIBE, ALTER, DELETE = (ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, ApiKey.ALTER_SHARE_GROUP_OFFSETS,
                           ApiKey.DELETE_SHARE_GROUP_OFFSETS)
ZERO = uuid.UUID(int=0)


def earliest(cluster, group: str = "sg") -> None:
    cluster.group_configs.overrides[group] = {"share.auto.offset.reset": "earliest"}


def admin(cluster, group: str = "sg") -> WireClient:
    return WireClient(cluster.connect(cluster.coordinator_for(group)), client_id="admin")


def rows(group) -> dict:
    """(topic, partition) -> (start offset, leader epoch, lag, error) of one described group."""
    return {(t.topic_name, p.partition_index): (p.start_offset, p.leader_epoch, p.lag, p.error_code)
            for t in group.topics for p in t.partitions}


async def describe(w, group="sg", topics=None, version=1):
    body = {"groups": [{"group_id": group, "topics": topics}]}
    return (await w.call(DESCRIBE, version, body)).groups[0]


async def test_describe_shows_the_start_offset_and_the_lag_a_member_leaves(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        earliest(cluster)
        w = admin(cluster)
        # an unknown group: nothing initialized, and asked partitions have no state
        assert (await describe(w, "nope")).topics == []
        assert rows(await describe(w, "nope", [{"topic_name": "t", "partitions": [0]}])) == {("t", 0): (-1, 0, -1, 0)}
        m = ShareMember(cluster)
        await m.beat()
        await produce(cluster, [b"a", b"b", b"c", b"d", b"e"])
        assert acquired(await m.fetch(partitions=(0, 1), max_records=3, max_wait_ms=0)) == [(0, 2, 1)]
        # every partition of the subscribed topic is initialized; an acquisition writes no state
        # (Kafka's SharePartition writes on acknowledgements and expiries), so no start offset yet
        assert rows(await describe(w)) == {("t", 0): (-1, 0, -1, 0), ("t", 1): (-1, 0, -1, 0)}
        await m.acknowledge({0: [(0, 0, [ACCEPT]), (2, 2, [ACCEPT])]})
        # written with the start offset from before the acknowledgement moved it, offsets 0 and 2
        # counted as delivered (KIP-1226): lag 5 - 0 - 2
        only0 = [{"topic_name": "t", "partitions": [0]}]
        assert rows(await describe(w, topics=only0)) == {("t", 0): (0, 0, 3, 0)}
        assert rows(await describe(w, topics=only0, version=0)) == {("t", 0): (0, 0, -1, 0)}   # no lag before v1
        await m.acknowledge({0: [(1, 1, [ACCEPT])]})
        assert rows(await describe(w, topics=only0)) == {("t", 0): (1, 0, 2, 0)}   # the next write carries start 1
        unknown = await describe(w, topics=[{"topic_name": "gone", "partitions": [0, 1]}, {"topic_name": "t",
                                                                                           "partitions": [7]}])
        assert [(t.topic_name, t.topic_id) for t in unknown.topics] == [("gone", ZERO), ("t", m.topic_id())]
        assert rows(unknown) == {("gone", 0): (-1, 0, -1, 0), ("gone", 1): (-1, 0, -1, 0), ("t", 7): (-1, 0, -1, 0)}


async def test_alter_sets_the_start_offset_a_later_member_reads_from(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        earliest(cluster)
        w = admin(cluster)
        await produce(cluster, [bytes([i]) for i in range(6)])
        r = await w.call(ALTER, 0, {"group_id": "sg", "topics": [
            {"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": 4},
                                               {"partition_index": 3, "start_offset": 0}]},
            {"topic_name": "gone", "partitions": [{"partition_index": 0, "start_offset": 1}]}]})
        assert (r.error_code, r.error_message) == (0, None)
        # an unknown topic is refused before the coordinator, so it comes first
        assert [(t.topic_name, t.topic_id == ZERO, [(p.partition_index, p.error_code) for p in t.partitions])
                for t in r.responses] == [("gone", True, [(0, E.UNKNOWN_TOPIC_OR_PARTITION)]),
                                          ("t", False, [(0, 0), (3, E.UNKNOWN_TOPIC_OR_PARTITION)])]
        assert r.responses[0].partitions[0].error_message == "This server does not host this topic-partition."
        # the group was made by the alter, empty
        assert "sg" in cluster.share.groups and not cluster.share.groups["sg"].members
        assert rows(await describe(w)) == {("t", 0): (4, 0, 2, 0)}
        m = ShareMember(cluster)
        await m.beat()
        assert acquired(await m.fetch(max_wait_ms=0)) == [(4, 5, 1)]
        altered = cluster.trace.query(kind=Kind.SHARE_OFFSETS_ALTERED)
        assert [(e.details["partition"], e.details["start_offset"]) for e in altered] == [(0, 4)]
        # with a member the group is not empty: the whole request is refused, top level only
        r = await w.call(ALTER, 0, {"group_id": "sg", "topics": [
            {"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": 0}]}]})
        assert (r.error_code, r.error_message, r.responses) == (E.NON_EMPTY_GROUP, "The group is not empty.", [])
        assert rows(await describe(w)) == {("t", 0): (4, 0, 2, 0)}


async def test_alter_to_minus_one_and_delete_start_again_from_the_reset_policy(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1), ("u", 1, 1)], listen=False) as cluster:
        earliest(cluster)
        w = admin(cluster)
        await produce(cluster, [b"a", b"b"])
        m = ShareMember(cluster)
        await m.beat()
        got = await m.fetch(max_wait_ms=0)
        await m.fetch(acks={0: [(0, 1, [ACCEPT])]}, max_wait_ms=0)
        assert acquired(got) == [(0, 1, 1)]
        r = await w.call(DELETE, 0, {"group_id": "sg", "topics": [{"topic_name": "t"}]})
        assert (r.error_code, r.error_message, r.responses) == (E.NON_EMPTY_GROUP, "The group is not empty.", [])
        await m.beat(epoch=-1)
        r = await w.call(DELETE, 0, {"group_id": "sg", "topics": [
            {"topic_name": "gone"}, {"topic_name": "u"}, {"topic_name": "t"}]})
        assert r.error_code == 0
        assert [(t.topic_name, t.topic_id == ZERO, t.error_code, t.error_message) for t in r.responses] == [
            ("t", False, 0, None),
            ("gone", True, E.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."),
            ("u", True, E.UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete.")]
        assert (await describe(w)).topics == []
        deleted = cluster.trace.query(kind=Kind.SHARE_OFFSETS_DELETED)
        assert [(e.details["topic"], e.details["partitions"]) for e in deleted] == [("t", [0])]
        # a deleted state starts again from share.auto.offset.reset (earliest): the records come back
        again = ShareMember(cluster)
        await again.beat()
        assert acquired(await again.fetch(max_wait_ms=0)) == [(0, 1, 1)]
        await again.beat(epoch=-1)
        r = await w.call(ALTER, 0, {"group_id": "sg", "topics": [
            {"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": -1}]}]})
        assert r.error_code == 0 and rows(await describe(w)) == {("t", 0): (-1, 0, -1, 0)}


async def test_group_level_refusals(autojump_clock):
    async with open_cluster(2, topics=[("t", 1, 1)], listen=False) as cluster:
        w = admin(cluster)
        r = await w.call(DELETE, 0, {"group_id": "sg", "topics": [{"topic_name": "t"}]})
        assert (r.error_code, r.error_message) == (E.GROUP_ID_NOT_FOUND, "Group sg not found.")
        for api, body in ((DELETE, {"group_id": "", "topics": []}), (ALTER, {"group_id": "", "topics": []})):
            r = await w.call(api, 0, body)
            assert (r.error_code, r.error_message) == (E.INVALID_GROUP_ID, "The group id is invalid.")
        # a consumer group by that id
        from tests.broker_emu.test_kip848 import Member
        assert (await Member(cluster, group="taken").beat()).error_code == 0
        c = admin(cluster, "taken")
        for api, body in ((DELETE, {"group_id": "taken", "topics": []}), (ALTER, {"group_id": "taken", "topics": []})):
            r = await c.call(api, 0, body)
            assert (r.error_code, r.error_message) == (E.GROUP_ID_NOT_FOUND, "Group taken is not a share group.")
        # the other broker is not the coordinator
        other = WireClient(cluster.connect(1 - cluster.coordinator_for("sg")))
        r = await other.call(ALTER, 0, {"group_id": "sg", "topics": []})
        assert (r.error_code, r.error_message) == (E.NOT_COORDINATOR, "This is not the correct coordinator.")
        assert (await describe(other)).error_code == E.NOT_COORDINATOR
        # asked partitions do not need the coordinator (GroupCoordinatorService reads the persister)
        g = await describe(other, topics=[{"topic_name": "t", "partitions": [0]}])
        assert g.error_code == 0 and rows(g) == {("t", 0): (-1, 0, -1, 0)}


async def test_the_authorizer_checks_group_and_topics_as_kafka_apis(autojump_clock):
    from tests.broker_emu.test_acls import CREATE_ACLS, GROUP, READ, SECURED, TOPIC, acl, login
    DESCRIBE_OP = 8
    async with open_cluster(1, topics=[("t", 1, 1), ("secret", 1, 1)], listen=False, config=SECURED) as cluster:
        su = await login(cluster, "admin", "a")
        made = await su.call(CREATE_ACLS, 3, {"creations": [
            acl(GROUP, "sg", READ), acl(GROUP, "sg", DESCRIBE_OP), acl(TOPIC, "t", READ), acl(TOPIC, "t", DESCRIBE_OP)]})
        assert [r.error_code for r in made.results] == [0, 0, 0, 0]
        alice = await login(cluster, "alice", "b")
        # alter: READ on the group, then each topic; a topic refused comes first, then the rest
        r = await alice.call(ALTER, 0, {"group_id": "sg", "topics": [
            {"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": 0}]},
            {"topic_name": "secret", "partitions": [{"partition_index": 0, "start_offset": 0}]}]})
        assert r.error_code == 0
        assert [(t.topic_name, [(p.error_code, p.error_message) for p in t.partitions]) for t in r.responses] == [
            ("secret", [(E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")]), ("t", [(0, None)])]
        r = await alice.call(ALTER, 0, {"group_id": "other", "topics": []})
        assert (r.error_code, r.error_message) == (E.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
        # delete needs DELETE on the group, which alice lacks
        r = await alice.call(DELETE, 0, {"group_id": "sg", "topics": [{"topic_name": "t"}]})
        assert r.error_code == E.GROUP_AUTHORIZATION_FAILED
        # describe: a group refused alone; a topic refused answered with the error, after the others
        r = await alice.call(DESCRIBE, 1, {"groups": [
            {"group_id": "sg", "topics": [{"topic_name": "secret", "partitions": [0]}, {"topic_name": "t", "partitions": [0]}]},
            {"group_id": "other", "topics": None}]})
        sg, other = r.groups
        assert other.error_code == E.GROUP_AUTHORIZATION_FAILED
        assert [(t.topic_name, t.partitions[0].start_offset, t.partitions[0].error_code) for t in sg.topics] == [
            ("t", 0, 0), ("secret", -1, E.TOPIC_AUTHORIZATION_FAILED)]
        # all the group's partitions: those of topics it may not describe are left out
        r = await su.call(ALTER, 0, {"group_id": "sg", "topics": [
            {"topic_name": "secret", "partitions": [{"partition_index": 0, "start_offset": 0}]}]})
        assert r.responses[0].partitions[0].error_code == 0
        su_view = await describe(su)
        alice_view = await describe(alice)
        assert sorted(t.topic_name for t in su_view.topics) == ["secret", "t"]
        assert [t.topic_name for t in alice_view.topics] == ["t"]
