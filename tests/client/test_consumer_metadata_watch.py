"""What a classic member makes of the metadata between rebalances (Java's ConsumerCoordinator:
MetadataSnapshot, maybeUpdateSubscriptionMetadata, rejoinNeededOrPending), sans-io: the
metadata is fed in by hand as (version, topic -> partition count)."""

import re
from types import SimpleNamespace

from client.consumer.membership import JOIN, JOINING, STABLE, Membership
from client.consumer.metadata_watch import MetadataSnapshot
from client.consumer.requests import member_subscriptions
from tests.client.test_consumer_membership import CONFIG, T0, join_answer, sync_answer


def member(topics=("t",), pattern=None, leader=True, metadata=None, group=None) -> Membership:
    """A member that joined at 1.0 with ``metadata`` (version 1), as leader or follower; a
    leader assigned for ``group`` (every member's topics)."""
    m = Membership(CONFIG, None if pattern else list(topics), re.compile(pattern) if pattern else None, now=0.0)
    m.on_metadata(1, metadata or {"t": 2, "x": 3})
    assert m.handle_timeouts(0.0).kind == JOIN
    m.join_request()
    m.on_join_response(join_answer(leader="m-1" if leader else "m-0"))
    if leader:
        m.group_subscribe(sorted(group or m.subscribed_topics()))
        m.on_metadata(2, metadata or {"t": 2, "x": 3})
        m.assigned_with_snapshot()
    m.on_sync_response(sync_answer([T0]))
    m.join_completed(1.0)
    assert m.state == STABLE and not m.needs_join
    return m


def test_a_snapshot_matches_at_the_same_version_or_with_the_same_partitions():
    assert MetadataSnapshot(3, {"t": 2}).matches(MetadataSnapshot(3, {"t": 4}))
    assert MetadataSnapshot(3, {"t": 2}).matches(MetadataSnapshot(4, {"t": 2}))
    assert not MetadataSnapshot(3, {"t": 2}).matches(MetadataSnapshot(4, {"t": 4}))


def test_the_leader_rejoins_when_a_watched_topic_gains_partitions_and_says_why():
    m = member(group=["t", "u"], metadata={"t": 2, "u": 1, "x": 3})
    m.on_metadata(3, {"t": 2, "u": 1, "x": 3})           # a refresh, nothing changed
    assert m.poll_called(2.0) is False
    m.on_metadata(4, {"t": 2, "u": 1, "x": 9})           # x is no member's topic
    assert m.poll_called(3.0) is False
    m.on_metadata(5, {"t": 2, "u": 3, "x": 9})           # u: another member's topic
    assert m.poll_called(4.0) is True and m.needs_join
    action = m.handle_timeouts(4.0)
    assert action.kind == JOIN and action.revoked == [T0]
    body = m.join_request()
    assert body["reason"] == "cached metadata has changed"
    assert requests_topics(body) == ["t"]                # its own subscription, not the group's


def test_the_leader_rejoins_when_a_watched_topic_goes_away():
    m = member()
    m.on_metadata(3, {"x": 3})
    assert m.poll_called(2.0) is True


def test_a_follower_does_not_watch_partition_counts():
    m = member(leader=False)
    m.on_metadata(3, {"t": 5, "x": 3})
    assert m.poll_called(2.0) is False and not m.needs_join


def test_a_pattern_member_rejoins_when_its_match_changes_leader_or_not():
    for leader in (True, False):
        m = member(pattern=r"orders-.*", leader=leader, metadata={"orders-eu": 1, "audit": 1})
        assert m.subscribed_topics() == ["orders-eu"]
        m.on_metadata(3, {"orders-eu": 1, "audit": 1, "orders-us": 2})
        assert m.poll_called(2.0) is True
        m.handle_timeouts(2.0)
        body = m.join_request()
        assert body["reason"] == ("cached metadata has changed" if leader else "subscription has changed")
        assert requests_topics(body) == ["orders-eu", "orders-us"]


def test_a_change_seen_while_joining_is_acted_on_once_the_join_completes():
    m = Membership(CONFIG, None, re.compile(r"orders-.*"), now=0.0)
    m.on_metadata(1, {"orders-eu": 1})
    m.handle_timeouts(0.0)
    m.join_request()
    m.on_metadata(2, {"orders-eu": 1, "orders-us": 1})   # a refresh while the JoinGroup is out
    assert m.poll_called(0.5) is False and m.state == JOINING
    m.on_join_response(join_answer(leader="m-0"))
    m.on_sync_response(sync_answer([T0]))
    m.join_completed(1.0)
    assert m.poll_called(1.5) is True and m.rejoin_reason == "subscription has changed"


def requests_topics(body):
    """The topics a JoinGroup body subscribes to."""
    subs = member_subscriptions([SimpleNamespace(member_id="m", metadata=body["protocols"][0]["metadata"])])
    return sorted(subs["m"])
