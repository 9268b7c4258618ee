"""The group model and the coordinator's timer heap, with no I/O and no clock (tier 1)."""

import math

import pytest

from broker_emu.groups.state import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    Group,
    Member,
)
from broker_emu.groups.timers import Timers, fire_due
from broker_emu.scheduler import TimerHeap


def member(mid: str, protocols=(("range", b"r"),), *, instance=None, rebalance_ms=1000) -> Member:
    return Member(mid, instance, "client", "/127.0.0.1", rebalance_ms, 10000, "consumer", list(protocols))


def test_timers_fire_in_deadline_order_and_a_key_is_replaced_not_duplicated():
    fired = []
    t = Timers()
    t.schedule("a", 2.0, lambda now: fired.append(("a", now)))
    t.schedule("b", 1.0, lambda now: fired.append(("b", now)))
    t.schedule("a", 3.0, lambda now: fired.append(("a2", now)))   # replaces the first "a"
    assert t.next_deadline() == 1.0 and len(t) == 2
    assert t.fire_due(2.5) == 1
    assert fired == [("b", 2.5)]
    t.cancel("a")
    assert t.fire_due(10.0) == 0 and t.next_deadline() == math.inf


def test_timers_report_an_earlier_deadline_and_run_tasks_scheduled_while_firing():
    woken = []
    t = Timers(on_earlier=lambda: woken.append(True))
    t.schedule("x", 5.0, lambda now: t.schedule("y", now, lambda _: woken.append("y ran")))
    t.schedule("z", 6.0, lambda now: None)       # later: no wake-up needed
    assert woken == [True]
    t.fire_due(5.0)
    assert woken == [True, True, "y ran"]        # y was due at once, so it ran in the same pass


def test_timers_sharing_a_heap_fire_in_one_deadline_order_and_each_cancels_only_its_own_keys():
    fired = []
    heap = TimerHeap()
    classic, consumer = Timers(heap=heap), Timers(heap=heap)
    classic.schedule(("hb", "g", "m1"), 3.0, lambda now: fired.append("hb"))
    consumer.schedule(("cg-session", "g", "m2"), 1.0, lambda now: fired.append("cg-session"))
    consumer.schedule(("cg-session", "h", "m3"), 2.0, lambda now: fired.append("other group"))
    classic.schedule(("join", "g"), 2.0, lambda now: fired.append("join"))
    assert (len(classic), len(consumer), heap.next_deadline()) == (2, 2, 1.0)
    consumer.cancel_group("g")                       # the classic timers of "g" stay armed
    assert (len(classic), len(consumer)) == (2, 1)
    assert fire_due(heap, 10.0) == 3
    assert fired == ["other group", "join", "hb"]    # deadline order across both


def test_illegal_transition_fails_loudly():
    g = Group("g")
    with pytest.raises(AssertionError, match="Empty -> Stable"):
        g.transition(STABLE, 0.0)
    g.transition(PREPARING_REBALANCE, 1.0)
    assert (g.state, g.previous_state, g.state_since) == (PREPARING_REBALANCE, EMPTY, 1.0)


def test_protocol_vote_picks_the_most_preferred_common_protocol():
    g = Group("g")
    g.add(member("a", [("range", b"1"), ("roundrobin", b"1")]), None)
    g.add(member("b", [("roundrobin", b"2"), ("range", b"2"), ("sticky", b"2")]), None)
    g.add(member("c", [("roundrobin", b"3"), ("range", b"3")]), None)
    assert g.candidate_protocols() == {"range", "roundrobin"}
    assert g.select_protocol() == "roundrobin"          # votes: range 1, roundrobin 2
    g.transition(PREPARING_REBALANCE, 0.0)
    assert g.supports_protocols("consumer", ["roundrobin"])
    assert not g.supports_protocols("consumer", ["sticky"])   # not supported by every member
    assert not g.supports_protocols("connect", ["range"])     # other protocol type


def test_an_empty_group_accepts_any_non_empty_protocol_list():
    g = Group("g")
    assert g.supports_protocols("consumer", ["x"])
    assert not g.supports_protocols("", ["x"]) and not g.supports_protocols("consumer", [])


def test_leader_is_first_member_and_moves_on_removal_and_to_a_rejoined_member():
    g = Group("g")
    g.add(member("a"), None)
    g.add(member("b"), lambda r: None)
    assert g.leader_id == "a"
    assert g.maybe_elect_new_joined_leader() and g.leader_id == "b"   # a did not rejoin, b did
    g.remove("b")
    assert g.leader_id == "a"
    g.remove("a")
    assert g.leader_id is None and not g.maybe_elect_new_joined_leader()


def test_next_generation_selects_protocol_and_leader_view_has_every_member():
    g = Group("g")
    g.add(member("a", rebalance_ms=300), lambda r: None)
    g.add(member("b", rebalance_ms=900), lambda r: None)
    assert g.rebalance_timeout_ms() == 900 and g.has_all_members_joined()
    g.transition(PREPARING_REBALANCE, 0.0)
    g.init_next_generation(1.0)
    assert (g.state, g.generation_id, g.protocol_name) == (COMPLETING_REBALANCE, 1, "range")
    assert [m["member_id"] for m in g.join_result("a", leader_view=True)["members"]] == ["a", "b"]
    assert g.join_result("b", leader_view=False)["members"] == []


def test_pending_member_ids_block_the_join_phase():
    g = Group("g")
    g.add(member("a"), lambda r: None)
    g.pending_join.add("x")
    assert not g.has_all_members_joined()
    g.pending_join.discard("x")
    assert g.has_all_members_joined()


def test_member_matches_only_identical_protocols_in_order():
    m = member("a", [("range", b"1"), ("rr", b"2")])
    assert m.matches([("range", b"1"), ("rr", b"2")])
    assert not m.matches([("rr", b"2"), ("range", b"1")])
    assert not m.matches([("range", b"1"), ("rr", b"3")])


def test_replacing_a_static_member_fences_its_parked_requests_and_keeps_leadership():
    answers = []
    g = Group("g")
    g.add(member("old", instance="i-1"), answers.append)
    g.members["old"].assignment = b"A"
    new = g.replace_static_member("i-1", "old", "new")
    assert answers == [{"error_code": 82, "member_id": "old"}]
    assert g.leader_id == "new" and g.static_members == {"i-1": "new"} and new.assignment == b"A"


def test_a_loaded_group_is_stable_with_its_members_or_empty():
    g = Group("g")
    g.add(member("a", [("range", b"r"), ("rr", b"x")]), None)
    g.transition(PREPARING_REBALANCE, 0.0)
    g.init_next_generation(0.0)
    g.transition(STABLE, 0.0)
    loaded = Group.load("g", g.snapshot(), coordinator=2, now=5.0)
    assert (loaded.state, loaded.generation_id, loaded.coordinator, loaded.leader_id) == (STABLE, 1, 2, "a")
    assert loaded.members["a"].protocols == [("range", b"r")]   # the record keeps the chosen protocol only
    assert Group.load("g", Group("g").snapshot(), 1, 0.0).state == EMPTY
