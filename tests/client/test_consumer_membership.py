"""The consumer's group membership state machine alone: no trio, no network. Answers and times
are fed in by hand; the tests assert its decisions and its next deadline."""

import math
import re
from types import SimpleNamespace

import pytest

from client.config import consumer_config
from client.consumer import requests
from client.consumer.membership import (
    CLOSED,
    HEARTBEAT,
    JOIN,
    JOINING,
    LEAVE,
    LEFT,
    REDISCOVER,
    STABLE,
    UNJOINED,
    Membership,
    plan_assignments,
)
from client.consumer.records import TopicPartition
from client.errors import ErrorCode, KafkaError, MemberIdRequiredError, NotCoordinatorError
from client.exceptions import CommitFailedException

CONFIG = consumer_config({"bootstrap.servers": "127.0.0.1:0", "group.id": "g", "session.timeout.ms": 10000,
                          "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 20000, "retry.backoff.ms": 100,
                          "retry.backoff.max.ms": 1000})
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def join_answer(member_id="m-1", generation=1, leader="m-1", error=0):
    return SimpleNamespace(error_code=error, member_id=member_id, generation_id=generation, protocol_name="range",
                           leader=leader, members=[])


def sync_answer(tps=(T0, T1), error=0):
    plan = {"m-1": {}}
    for tp in tps:
        plan["m-1"].setdefault(tp.topic, []).append(tp.partition)
    return SimpleNamespace(error_code=error, assignment=requests.member_assignments(plan)[0]["assignment"])


def joined(at=0.0, generation=1, tps=(T0, T1)) -> Membership:
    """A member that polled at 0 and completed its join at ``at``."""
    m = Membership(CONFIG, ["t"], None, now=0.0)
    assert m.handle_timeouts(at).kind == JOIN
    m.on_join_response(join_answer(generation=generation))
    m.on_sync_response(sync_answer(tps))
    m.join_completed(at)
    return m


def test_a_new_member_joins_at_once_and_retries_member_id_required_after_the_backoff():
    m = Membership(CONFIG, ["t"], None, now=0.0)
    assert (m.state, m.next_deadline()) == (UNJOINED, -math.inf)
    action = m.handle_timeouts(0.0)
    assert action.kind == JOIN and action.revoked == [] and m.state == JOINING
    assert m.next_deadline() == math.inf and m.handle_timeouts(5.0) is None   # the driver is joining
    body = m.join_request()
    assert body["member_id"] == "" and body["rebalance_timeout_ms"] == 20000 and body["session_timeout_ms"] == 10000
    assert [p["name"] for p in body["protocols"]] == ["range", "roundrobin"]
    with pytest.raises(MemberIdRequiredError):      # KIP-394: the coordinator hands out an id first
        m.on_join_response(join_answer(member_id="m-1", error=ErrorCode.MEMBER_ID_REQUIRED))
    m.failed(0.5)
    assert m.state == UNJOINED and m.next_deadline() == 0.5 + 0.1
    assert m.handle_timeouts(0.55) is None
    assert m.handle_timeouts(m.next_deadline()).kind == JOIN
    assert m.join_request()["member_id"] == "m-1"


def test_the_leader_assigns_then_syncs_and_heartbeats_an_interval_after_each_answer():
    m = Membership(CONFIG, ["t"], None, now=0.0)
    m.handle_timeouts(0.0)
    assert m.on_join_response(join_answer(generation=4)) is True      # leader: it must assign
    plan = plan_assignments("range", {"m-1": ["t"], "m-2": ["t"]}, {"t": 2})
    assert m.sync_request(plan)["generation_id"] == 4 and len(m.sync_request(plan)["assignments"]) == 2
    assert requests.assigned_partitions(plan[1]["assignment"]) == [T1]
    assert m.on_sync_response(sync_answer([T0])) == [T0] and m.assignment == [T0]
    m.join_completed(2.0)
    assert m.state == STABLE and m.next_deadline() == 3.0
    assert m.handle_timeouts(2.9) is None
    beat = m.handle_timeouts(3.0)
    assert beat.kind == HEARTBEAT and beat.body == {"group_id": "g", "generation_id": 4, "member_id": "m-1",
                                                    "group_instance_id": None}
    assert m.handle_timeouts(3.5) is None and m.next_deadline() == 12.0   # in flight: only the session runs
    m.on_heartbeat_response(0, 3.25)
    assert m.next_deadline() == 4.25


def test_an_unknown_assignor_is_refused():
    with pytest.raises(KafkaError, match="sticky"):
        plan_assignments("sticky", {"m-1": ["t"]}, {"t": 1})


def test_the_member_leaves_once_max_poll_interval_has_passed_at_a_heartbeat_and_rejoins_when_polled():
    m = joined(at=0.5)
    now = 1.5
    while True:                                      # heartbeats at 1.5, 2.5, ... answered at once
        action = m.handle_timeouts(now)
        if action.kind != HEARTBEAT:
            break
        m.on_heartbeat_response(0, now)
        now += 1.0
    assert now == 20.5 and action.kind == LEAVE      # 20.5 s since the last poll at 0: over 20000 ms
    assert action.revoked == [T0, T1] and "max.poll.interval.ms=20000" in action.reason
    assert m.state == LEFT and m.assignment == [] and m.next_deadline() == math.inf
    assert m.leave_request(action.reason)["members"][0]["member_id"] == "m-1"
    m.left()
    assert (m.member_id, m.generation) == ("", -1)
    assert m.handle_timeouts(100.0) is None          # waits for the application
    assert m.poll_called(100.0) is True and m.state == UNJOINED
    assert m.handle_timeouts(100.0).kind == JOIN


def test_max_poll_interval_is_exceeded_only_strictly_after_it_and_a_poll_restarts_it():
    for polled in (False, True):
        m = joined(at=19.0)
        assert m.handle_timeouts(20.0).kind == HEARTBEAT   # exactly 20000 ms since the poll at 0: still a member
        m.on_heartbeat_response(0, 20.0)
        if polled:
            assert m.poll_called(20.5) is False            # a member in the group: nothing to wake
        assert m.handle_timeouts(21.0).kind == (HEARTBEAT if polled else LEAVE)


def test_session_expiry_sends_the_member_to_rediscover_the_coordinator_then_unknown_member_rejoins():
    m = joined(at=0.0)
    assert m.handle_timeouts(1.0).kind == HEARTBEAT    # black-holed; request.timeout.ms 12 s
    m.failed(13.0)
    assert m.next_deadline() == 10.0                   # the session ran out while the heartbeat hung
    action = m.handle_timeouts(13.0)
    assert action.kind == REDISCOVER and "session.timeout.ms=10000" in action.reason
    assert m.next_deadline() == 13.0 + 0.1 + 1.0       # the next heartbeat: backoff, then an interval
    assert m.handle_timeouts(13.5) is None
    assert m.handle_timeouts(m.next_deadline()).kind == HEARTBEAT
    m.on_heartbeat_response(ErrorCode.UNKNOWN_MEMBER_ID, 14.2)   # expelled meanwhile: no raise, rejoin
    assert (m.member_id, m.generation, m.needs_join) == ("", -1, True)
    action = m.handle_timeouts(14.2)
    assert action.kind == JOIN and action.revoked == [T0, T1]


@pytest.mark.parametrize("code, member_id, generation", [
    (ErrorCode.REBALANCE_IN_PROGRESS, "m-1", 1),
    (ErrorCode.ILLEGAL_GENERATION, "m-1", -1),
    (ErrorCode.UNKNOWN_MEMBER_ID, "", -1),
    (ErrorCode.FENCED_INSTANCE_ID, "", -1),
])
def test_fencing_heartbeat_errors_rejoin_at_once(code, member_id, generation):
    m = joined(at=0.0)
    m.handle_timeouts(1.0)
    m.on_heartbeat_response(code, 1.1)
    assert (m.member_id, m.generation) == (member_id, generation)
    assert m.next_deadline() == -math.inf and m.handle_timeouts(1.1).kind == JOIN


def test_other_heartbeat_errors_are_raised_and_the_rejoin_waits_for_the_backoff():
    m = joined(at=0.0)
    m.handle_timeouts(1.0)
    with pytest.raises(NotCoordinatorError):
        m.on_heartbeat_response(ErrorCode.NOT_COORDINATOR, 1.1)
    m.failed(1.1)
    assert m.needs_join and m.next_deadline() == 1.1 + 0.1
    assert m.handle_timeouts(1.15) is None and m.handle_timeouts(m.next_deadline()).kind == JOIN


def test_the_retry_backoff_doubles_up_to_its_maximum_and_restarts_after_a_join():
    m = Membership(CONFIG, ["t"], None, now=0.0)
    waits = []
    for _ in range(6):
        m.handle_timeouts(100.0)
        m.failed(100.0)
        waits.append(round(m.next_deadline() - 100.0, 6))
    assert waits == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    m.handle_timeouts(200.0)
    m.on_join_response(join_answer())
    m.on_sync_response(sync_answer())
    m.join_completed(200.0)
    m.poll_called(200.0)
    assert m.handle_timeouts(201.0).kind == HEARTBEAT
    m.failed(201.0)
    assert m.next_deadline() == 201.0 + 0.1 + 1.0


def test_commits_outside_a_generation_or_fenced_fail_with_commit_failed():
    m = Membership(CONFIG, ["t"], None, now=0.0)
    with pytest.raises(CommitFailedException, match="not in an active generation"):
        m.commit_identity(2)
    m = joined(at=0.0, generation=3)
    assert m.commit_identity(2) == (3, "m-1")
    assert m.on_commit_response(0, 2, 3) is None
    retriable = m.on_commit_response(ErrorCode.NOT_COORDINATOR, 2, 3)
    assert isinstance(retriable, NotCoordinatorError) and not m.needs_join
    fenced = m.on_commit_response(ErrorCode.ILLEGAL_GENERATION, 2, 3)
    assert isinstance(fenced, CommitFailedException) and "generation 3" in str(fenced)
    assert m.needs_join and m.generation == -1
    with pytest.raises(CommitFailedException):
        m.commit_identity(2)


def test_join_and_sync_errors_ask_for_a_rejoin():
    m = Membership(CONFIG, ["t"], None, now=0.0)
    m.handle_timeouts(0.0)
    m.on_join_response(join_answer())
    with pytest.raises(KafkaError):
        m.on_sync_response(sync_answer(error=ErrorCode.REBALANCE_IN_PROGRESS))
    m.failed(1.0)
    assert m.state == UNJOINED and m.generation == 1 and m.next_deadline() == 1.0 + 0.1
    assert m.handle_timeouts(m.next_deadline()).kind == JOIN


def test_a_new_subscription_rejoins_and_revokes_the_assignment_first():
    m = joined(at=0.0)
    m.subscribe(None, re.compile(r"orders-.*"), now=0.5)
    m.on_metadata(7, {"orders-eu": 1, "audit": 1, "orders-us": 2})
    assert m.last_poll == 0.5 and m.subscribed_topics() == ["orders-eu", "orders-us"]
    action = m.handle_timeouts(0.5)
    assert action.kind == JOIN and action.revoked == [T0, T1] and m.assignment == []


def test_close_stops_every_timer_and_hands_back_the_assignment():
    m = joined(at=0.0)
    assert m.close() == [T0, T1]
    assert m.state == CLOSED and m.next_deadline() == math.inf and m.handle_timeouts(50.0) is None
    body = m.leave_request("the consumer is closing")
    assert body["members"] == [{"member_id": "m-1", "group_instance_id": None, "reason": "the consumer is closing"}]
    m.left()
    assert m.leave_request("again") is None           # no member id: nothing to leave
    m.on_join_response(join_answer())                   # a join still under way when it closed
    m.on_sync_response(sync_answer())
    m.join_completed(1.0)
    assert m.state == CLOSED and m.handle_timeouts(2.0) is None
