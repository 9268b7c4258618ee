"""OffsetCommit / OffsetFetch through the handlers: simple (assign-mode) commits, member commits
with generation checks, per-partition errors, fetch of everything, batched groups."""

import pytest
import trio

from tests.broker_emu.groups_fake import (
    COMMIT,
    FETCH,
    FakeCluster,
    Member,
    call,
    commit_body,
)


@pytest.fixture
async def c(nursery):
    cluster = FakeCluster()
    await nursery.start(cluster.groups.run)
    return cluster


def errors(r):
    return {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}


def fetched(topics):
    return {(t.name, p.partition_index): (p.committed_offset, p.metadata, p.error_code) for t in topics for p in t.partitions}


async def test_simple_commit_creates_an_empty_group_and_fetch_reads_it_back(c):
    r = await call(c, COMMIT, 8, commit_body({("t", 0): 10, ("t", 1): 20}, group="assign-mode"))
    assert errors(r) == {("t", 0): 0, ("t", 1): 0}
    g = c.groups.groups["assign-mode"]
    assert (g.state, g.protocol_type, g.generation_id) == ("Empty", None, 0)
    got = await call(c, FETCH, 7, {"group_id": "assign-mode", "topics": [{"name": "t", "partition_indexes": [0, 1, 2]}]})
    assert got.error_code == 0
    assert fetched(got.topics) == {("t", 0): (10, "m", 0), ("t", 1): (20, "m", 0), ("t", 2): (-1, "", 0)}
    assert got.topics[0].partitions[0].committed_leader_epoch == 5


async def test_fetch_with_null_topics_returns_every_committed_partition(c):
    await call(c, COMMIT, 2, commit_body({("t", 3): 7, ("t", 1): 4}, metadata=None))
    got = await call(c, FETCH, 2, {"group_id": "g", "topics": None})
    assert fetched(got.topics) == {("t", 1): (4, "", 0), ("t", 3): (7, "", 0)}


async def test_fetch_of_an_unknown_group_is_no_offsets_not_an_error(c):
    got = await call(c, FETCH, 5, {"group_id": "nobody", "topics": [{"name": "t", "partition_indexes": [0]}]})
    assert (got.error_code, fetched(got.topics)) == (0, {("t", 0): (-1, "", 0)})


async def test_batched_fetch_v8_answers_each_group_with_its_own_error(c):
    c.owner["elsewhere"] = 1
    await call(c, COMMIT, 9, commit_body({("t", 0): 3}, group="a"))
    got = await call(c, FETCH, 8, {"groups": [{"group_id": "a", "topics": None},
                                              {"group_id": "elsewhere", "topics": None}], "require_stable": True})
    by_group = {g.group_id: g for g in got.groups}
    assert by_group["a"].error_code == 0 and fetched(by_group["a"].topics) == {("t", 0): (3, "m", 0)}
    assert (by_group["elsewhere"].error_code, by_group["elsewhere"].topics) == (16, [])   # NOT_COORDINATOR


async def test_offset_fetch_v1_reports_a_group_error_in_every_partition(c):
    got = await call(c, FETCH, 1, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}]}, broker=2)
    assert fetched(got.topics) == {("t", 0): (-1, "", 16), ("t", 1): (-1, "", 16)}


async def test_per_partition_errors_unknown_partition_and_metadata_too_large(c):
    body = commit_body({("t", 0): 1, ("t", 9): 1, ("nope", 0): 1})
    body["topics"][0]["partitions"].append({"partition_index": 1, "committed_offset": 2, "committed_metadata": "x" * 4097})
    r = await call(c, COMMIT, 6, body)
    assert errors(r) == {("t", 0): 0, ("t", 9): 3, ("nope", 0): 3, ("t", 1): 12}


async def test_member_commits_are_checked_against_generation_and_membership(c):
    a = Member(c, "a")
    await a.join()
    # CompletingRebalance: the member knows the generation but the assignment is not out yet.
    assert errors(await call(c, COMMIT, 8, commit_body({("t", 0): 1}, generation=1, member_id=a.member_id))) == {("t", 0): 27}
    await a.sync({a.member_id: b""})
    good = commit_body({("t", 0): 5}, generation=1, member_id=a.member_id)
    assert errors(await call(c, COMMIT, 8, good)) == {("t", 0): 0}
    stale = commit_body({("t", 0): 6}, generation=0, member_id=a.member_id)
    assert errors(await call(c, COMMIT, 8, stale)) == {("t", 0): 22}                 # ILLEGAL_GENERATION
    stranger = commit_body({("t", 0): 6}, generation=1, member_id="stranger")
    assert errors(await call(c, COMMIT, 8, stranger)) == {("t", 0): 25}              # UNKNOWN_MEMBER_ID
    simple = commit_body({("t", 0): 6})
    assert errors(await call(c, COMMIT, 8, simple)) == {("t", 0): 25}                # group not empty
    assert c.groups.groups["g"].offsets[("t", 0)].offset == 5


async def test_commit_during_preparing_rebalance_is_accepted_and_keeps_the_session(c, autojump_clock):
    a = Member(c, "a")
    await a.join(session_ms=6000, rebalance_ms=20000)
    await a.sync({})
    async with trio.open_nursery() as n:
        n.start_soon(lambda: Member(c, "b").join(session_ms=6000, rebalance_ms=20000))   # parks: a must rejoin
        await trio.sleep(5)
        r = await call(c, COMMIT, 8, commit_body({("t", 0): 9}, generation=1, member_id=a.member_id))
        assert errors(r) == {("t", 0): 0}
        await trio.sleep(4)                  # 9 s since a's last heartbeat, 4 s since its commit
        assert a.member_id in c.groups.groups["g"].members   # without the commit it expired at 6 s
        await a.join(session_ms=6000, rebalance_ms=20000)


async def test_commit_with_a_generation_to_an_unknown_group(c):
    body = commit_body({("t", 0): 1}, group="gone", generation=3, member_id="m")
    assert errors(await call(c, COMMIT, 8, body)) == {("t", 0): 22}    # ILLEGAL_GENERATION before v9
    assert errors(await call(c, COMMIT, 9, body)) == {("t", 0): 69}    # GROUP_ID_NOT_FOUND from v9
    assert "gone" not in c.groups.groups


async def test_commit_to_the_wrong_broker_and_with_an_empty_group_id(c):
    assert errors(await call(c, COMMIT, 8, commit_body({("t", 0): 1}), broker=1)) == {("t", 0): 16}
    c.owner[""] = 0
    assert errors(await call(c, COMMIT, 8, commit_body({("t", 0): 1}, group=""))) == {("t", 0): 0}  # allowed, as Kafka
