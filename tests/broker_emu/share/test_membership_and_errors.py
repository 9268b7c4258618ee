"""Share group membership and bad input, in virtual time: the broker assigns by heartbeat, a member
that stops heartbeating is fenced at share.session.timeout.ms and its records go back at once,
and every malformed or stale request gets Kafka's error code (GroupMetadataManager,
SharePartitionManager, SharePartition), never a handler exception (the suite fails on one)."""

import uuid

import trio

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from client.errors import ErrorCode as E
from tests.broker_emu.share.member import ACCEPT, DESCRIBE, ShareMember, acquired, partition_of, produce, values


async def test_the_broker_assigns_the_partitions_and_describe_shows_the_members(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        a, b = ShareMember(cluster), ShareMember(cluster)
        r = await a.beat()
        assert (r.error_code, r.member_epoch, r.heartbeat_interval_ms) == (0, 1, 5000)
        assert a.assignment == {a.topic_id(): [0, 1]}
        assert (await b.beat()).member_epoch == 2
        await a.beat()
        assert sorted([a.assignment[a.topic_id()], b.assignment[b.topic_id()]]) == [[0], [1]]
        r = await a.coordinator.call(DESCRIBE, 1, {"group_ids": ["sg", "nope"], "include_authorized_operations": False})
        sg, nope = r.groups
        assert (sg.error_code, sg.group_state, sg.group_epoch, sg.assignor_name) == (0, "Stable", 2, "simple")
        assert sorted(m.member_id for m in sg.members) == sorted([a.member_id, b.member_id])
        assert {m.assignment.topic_partitions[0].topic_name for m in sg.members} == {"t"}
        assert nope.error_code == E.GROUP_ID_NOT_FOUND
        r = await a.beat(epoch=-1)
        assert (r.error_code, r.member_epoch) == (0, -1)
        assert (await b.beat()).member_epoch == 3 and b.assignment == {b.topic_id(): [0, 1]}


async def test_a_member_that_stops_heartbeating_is_fenced_and_its_records_go_back_at_their_lock(autojump_clock):
    """Fenced at the coordinator at share.session.timeout.ms (45 s); the partition leader does not
    hear of it (Kafka 4.4), so the record goes to the other member when its lock runs out (60 s)."""
    locks_outlive_sessions = {"group.share.record.lock.duration.ms": 60000}
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=locks_outlive_sessions) as cluster:
        a, b = ShareMember(cluster), ShareMember(cluster)
        await a.beat()
        await b.beat()
        await a.fetch(max_wait_ms=0)
        await produce(cluster, [b"x"])
        assert acquired(await a.fetch()) == [(0, 0, 1)]
        t0 = trio.current_time()
        with trio.move_on_after(44.9):
            while True:                      # b keeps its membership, a goes quiet
                await b.beat()
                await trio.sleep(5)
        await trio.sleep(1)                  # a's session (45 s) is over: fenced at the coordinator
        fenced = cluster.trace.query(kind=Kind.GROUP_MEMBER_FENCED)
        assert [(e.details["member"], e.details["reason"]) for e in fenced] == [(a.member_id, "session")]
        r = await b.fetch(max_wait_ms=30000)
        assert acquired(r) == [(0, 0, 2)] and trio.current_time() - t0 == 60.0
        assert cluster.trace.query(kind=Kind.SHARE_RELEASE) == []
        assert (await a.beat()).error_code == E.UNKNOWN_MEMBER_ID


async def test_heartbeat_errors(autojump_clock):
    async with open_cluster(2, topics=[("t", 1, 1)], listen=False) as cluster:
        a = ShareMember(cluster)
        r = await a.beat(epoch=5)
        assert (r.error_code, r.error_message) == (E.GROUP_ID_NOT_FOUND, "Share group sg not found.")
        assert (await a.beat(member_id="")).error_code == E.INVALID_REQUEST
        assert (await a.beat(subscribed_topic_names=None)).error_code == E.INVALID_REQUEST
        assert (await a.beat(epoch=-2)).error_code == E.INVALID_REQUEST
        await a.beat()
        assert (await ShareMember(cluster).beat(epoch=1)).error_code == E.UNKNOWN_MEMBER_ID   # the group is there now
        r = await a.beat(epoch=a.epoch + 1)
        assert (r.error_code, r.member_id) == (E.FENCED_MEMBER_EPOCH, None)
        assert r.error_message == ("The share group member has a greater member epoch (2) than the one known by the "
                                   "group coordinator (1). The member must abandon all its partitions and rejoin.")
        other = cluster.connect(1 - cluster.coordinator_for("sg"))
        a.coordinator = type(a.coordinator)(other)
        assert (await a.beat()).error_code == E.NOT_COORDINATOR


async def test_share_fetch_session_errors(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        a = ShareMember(cluster)
        await a.beat()
        assert (await a.fetch(epoch=3, max_wait_ms=0)).error_code == E.SHARE_SESSION_NOT_FOUND
        assert (await a.fetch(epoch=-1, max_wait_ms=0)).error_code == E.SHARE_SESSION_NOT_FOUND   # none to close
        r = await a.fetch(acks={0: [(0, 0, [ACCEPT])]}, max_wait_ms=0)     # acknowledgements in the opening fetch
        assert r.error_code == E.INVALID_REQUEST
        assert (await a.fetch(max_wait_ms=0)).error_code == 0               # opens: epoch 1 next
        assert (await a.fetch(epoch=5, max_wait_ms=0)).error_code == E.INVALID_SHARE_SESSION_EPOCH
        assert (await a.acknowledge({0: [(0, 0, [ACCEPT])]}, epoch=0)).error_code == E.INVALID_SHARE_SESSION_EPOCH
        assert (await a.acknowledge({0: [(0, 0, [ACCEPT])]}, epoch=7)).error_code == E.INVALID_SHARE_SESSION_EPOCH
        assert (await a.fetch(max_wait_ms=0)).error_code == 0               # the right epoch still works
        # KafkaApis.isMemberIdValid: at most 36 characters, any of them; the answer carries the code alone
        assert (await ShareMember(cluster, member_id="m" * 36).fetch(max_wait_ms=0)).error_code == 0
        r = await ShareMember(cluster, member_id="m" * 37).fetch(max_wait_ms=0)
        assert (r.error_code, r.error_message) == (E.INVALID_REQUEST, None)
        r = await a.fetch(renew=True, max_wait_ms=500, keep_epoch=True)        # a renewing fetch must fetch nothing
        assert (r.error_code, r.error_message) == (E.INVALID_REQUEST, None)
        closing = await a.fetch(epoch=-1, max_wait_ms=0, keep_epoch=True)
        assert closing.error_code == 0
        assert (await a.fetch(max_wait_ms=0)).error_code == E.SHARE_SESSION_NOT_FOUND


async def test_acknowledging_what_is_not_acquired(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        a, b = ShareMember(cluster), ShareMember(cluster)
        await a.beat()
        await b.beat()
        await a.fetch(max_wait_ms=0)
        await b.fetch(max_wait_ms=0)
        await produce(cluster, [b"x", b"y"])
        assert acquired(await a.fetch(max_records=1)) == [(0, 0, 1)]
        assert acquired(await b.fetch(max_records=1)) == [(1, 1, 1)]

        async def ack(member, batches):
            r = await member.acknowledge({0: batches})
            assert r.error_code == 0
            p = r.responses[0].partitions[0]
            return p.error_code, p.error_message

        assert (await ack(a, [(1, 1, [ACCEPT])]))[0] == E.INVALID_RECORD_STATE      # b's record
        assert await ack(a, [(0, 0, [ACCEPT])]) == (0, None)
        # wholly behind the start offset: Kafka 4.4's SharePartition.acknowledge skips it ("All offsets in the
        # acknowledgement batch are already archived"), no error, as Kafka answered through the differential
        assert await ack(a, [(0, 0, [ACCEPT])]) == (0, None)
        assert (await ack(a, [(1, 1, [ACCEPT])]))[0] == E.INVALID_RECORD_STATE      # still b's
        assert await ack(a, [(5, 9, [ACCEPT])]) == (
            E.INVALID_REQUEST, "Batch record not found. The first offset in request is past acquired records.")
        assert await ack(b, [(1, 0, [ACCEPT])]) == (E.INVALID_REQUEST, None)       # first after last
        assert (await ack(b, [(1, 1, [9])]))[0] == E.INVALID_REQUEST                # no such type
        assert (await ack(b, [(1, 1, [ACCEPT, ACCEPT])]))[0] == E.INVALID_REQUEST   # types do not match the range
        assert await ack(b, [(1, 1, [ACCEPT])]) == (0, None)                       # b's own, refused nothing above
        unknown = uuid.uuid4()
        r = await a.fetch(acks={0: [(0, 0, [ACCEPT])]}, topic_id=unknown, max_wait_ms=0)
        assert r.error_code == 0 and partition_of(r).acknowledge_error_code == E.UNKNOWN_TOPIC_ID


async def test_a_share_fetch_for_an_unknown_topic_or_another_leader(autojump_clock):
    async with open_cluster(2, topics=[("t", 2, 1)], listen=False) as cluster:
        a = ShareMember(cluster)
        await a.beat()
        r = await a.fetch(topic_id=uuid.uuid4(), max_wait_ms=5000)
        assert r.error_code == 0 and partition_of(r).error_code == E.UNKNOWN_TOPIC_ID
        b = ShareMember(cluster, member_id=str(uuid.uuid4()))
        other = next(i for i in range(2) if cluster.partition("t", i).leader != cluster.partition("t", 0).leader)
        r = await b.fetch(partitions=(other,), max_wait_ms=5000)
        p = partition_of(r, other)
        assert p.error_code == E.NOT_LEADER_OR_FOLLOWER and p.current_leader.leader_id == cluster.partition("t", other).leader
        assert [n.node_id for n in r.node_endpoints] == [p.current_leader.leader_id]


async def test_a_share_group_id_taken_by_a_consumer_group(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        from tests.broker_emu.test_kip848 import Member
        assert (await Member(cluster, group="taken").beat()).error_code == 0
        r = await ShareMember(cluster, group="taken").beat()
        assert r.error_code == E.GROUP_ID_NOT_FOUND and "not a share group" in r.error_message


async def test_a_member_runs_one_share_session_with_each_leader(autojump_clock):
    async with open_cluster(2, topics=[("t", 2, 1)], listen=False) as cluster:
        leaders = [cluster.partition("t", i).leader for i in range(2)]
        assert sorted(leaders) == [0, 1]
        a = ShareMember(cluster)
        await a.beat()
        other = ShareMember(cluster, member_id=a.member_id)     # the same member, its connection to the other leader
        other.leader = type(a.leader)(cluster.connect(leaders[1]))
        for member, index in ((a, 0), (other, 1)):
            assert (await member.fetch(partitions=(index,), max_wait_ms=0)).error_code == 0
        await produce(cluster, [b"p0"], partition=0)
        await produce(cluster, [b"p1"], partition=1)
        for expected in ([(0, 0, 1)], []):    # each session keeps its own epoch
            assert acquired(await a.fetch(partitions=(0,), max_wait_ms=100)) == expected
            r = await other.fetch(partitions=(1,), max_wait_ms=100)
            assert r.error_code == 0 and acquired(r, 1) == expected
        assert {(s["broker"], s["epoch"]) for s in cluster.share.describe_state()["sessions"]} == {(0, 3), (1, 3)}


async def test_records_lost_from_the_log_head_are_skipped(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        a = ShareMember(cluster)
        await a.beat()
        await a.fetch(max_wait_ms=0)
        for value in (b"a", b"b", b"c"):
            await produce(cluster, [value])
        cluster.partition("t", 0).log.delete_before(2)
        r = await a.fetch()
        assert acquired(r) == [(2, 2, 1)] and values(r) == {2: b"c"}
        assert cluster.share.partitions[("sg", "t", 0)].start_offset == 2


async def test_under_an_authorizer_a_principal_needs_read_on_the_share_group(autojump_clock):
    from tests.broker_emu.test_acls import CREATE_ACLS, GROUP, READ, SECURED, acl, login

    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=SECURED) as cluster:
        admin = await login(cluster, "admin", "a")
        assert (await admin.call(CREATE_ACLS, 3, {"creations": [acl(GROUP, "mine", READ)]})).results[0].error_code == 0
        for group, code in (("mine", 0), ("theirs", E.GROUP_AUTHORIZATION_FAILED)):
            m = ShareMember(cluster, group=group)
            m.coordinator = m.leader = await login(cluster, "alice", "b")
            assert (await m.beat()).error_code == code
            assert (await m.fetch(max_wait_ms=0)).error_code == code
            assert (await m.acknowledge({0: [(0, 0, [ACCEPT])]}, epoch=1)).error_code == code


async def test_a_waiting_share_fetch_answers_when_its_topic_is_deleted(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        a = ShareMember(cluster)
        await a.beat()
        t0 = trio.current_time()
        async with trio.open_nursery() as nursery:
            async def delete_later():
                await trio.sleep(2)
                cluster.delete_topic("t")
            nursery.start_soon(delete_later)
            r = await a.fetch(max_wait_ms=30000)
        assert trio.current_time() - t0 == 2.0
        assert r.error_code == 0 and partition_of(r).error_code == E.UNKNOWN_TOPIC_ID


async def test_a_waiting_share_fetch_answers_when_the_leader_moves(autojump_clock):
    async with open_cluster(2, topics=[("t", 1, 2)], listen=False) as cluster:
        a = ShareMember(cluster)
        await a.beat()
        was = cluster.partition("t", 0).leader
        t0 = trio.current_time()
        async with trio.open_nursery() as nursery:
            async def move_later():
                await trio.sleep(3)
                cluster.move_leader("t", 0, 1 - was)
            nursery.start_soon(move_later)
            r = await a.fetch(max_wait_ms=30000)
        p = partition_of(r)
        assert trio.current_time() - t0 == 3.0
        assert (p.error_code, p.current_leader.leader_id) == (E.NOT_LEADER_OR_FOLLOWER, 1 - was)
        assert [n.node_id for n in r.node_endpoints] == [1 - was]


async def test_an_acknowledgement_behind_the_start_offset_passes_while_its_batch_is_cached(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False) as cluster:
        a = ShareMember(cluster)
        await a.beat()
        await a.fetch(max_wait_ms=0)
        await produce(cluster, [b"x", b"y"])
        assert acquired(await a.fetch()) == [(0, 1, 1)]        # one batch, 0-1

        async def ack(batches):
            p = (await a.acknowledge({0: batches})).responses[0].partitions[0]
            return p.error_code, p.error_message

        assert await ack([(0, 0, [ACCEPT])]) == (0, None)
        assert await ack([(0, 0, [ACCEPT])]) == (0, None)      # behind the start offset (1), batch 0-1 still cached
        assert await ack([(1, 1, [ACCEPT])]) == (0, None)      # the start offset passes the batch: it leaves the cache
        assert await ack([(0, 1, [ACCEPT])]) == (0, None)       # wholly behind the start offset: skipped, as Kafka does


async def test_a_heartbeat_at_the_previous_epoch_is_accepted_an_older_one_fenced(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False) as cluster:
        a, b = ShareMember(cluster), ShareMember(cluster)
        await a.beat()
        await b.beat()
        assert (await a.beat()).member_epoch == 2
        assert (await a.beat(epoch=1)).error_code == 0          # its answer may have been lost: still fine
        await b.beat(epoch=-1)
        assert (await a.beat(epoch=2)).member_epoch == 3
        r = await a.beat(epoch=1)
        assert (r.error_code, r.error_message) == (E.FENCED_MEMBER_EPOCH, (
            "The share group member has a smaller member epoch (1) than the one known by the group coordinator (3), "
            "and it does not match the previous member epoch (2). The member must abandon all its partitions and "
            "rejoin."))
