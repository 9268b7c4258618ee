"""The share family's contracts on hand-made evidence: each passes on the story it describes and
fails on the broken one (a lock expiring late, a record acquired again before its expiry, a
commit past its deadline, a poison record that keeps coming), and the broker-internal ones are
set aside through the proxy."""

from __future__ import annotations

from broker_emu.trace import Kind, TraceEvent
from conformance import scenarios_share as S
from conformance.model import Evidence, Outcome
from conformance.scenarios import BY_ID

LOCK = S.LOCK_MS / 10   # a real-time run at the family's scale


def _ev(value: dict, trace: list[TraceEvent] = (), kind: str = "share_lock_expires") -> Evidence:
    return Evidence([Outcome(kind, True, 1.0, value=value)], list(trace), {}, scale=10.0, slack_ms=150.0)


def _rec(member: str, count: int, at_ms: float) -> dict:
    return {"member": member, "offset": 0, "partition": 0, "delivery_count": count, "at_ms": at_ms, "value": b"x"}


def _share(kind: str, t_ms: float, **details) -> TraceEvent:
    return TraceEvent(t_ms, kind, details={"topic": "t", "partition": 0, "offsets": [[0, 0]], **details})


def test_redelivery_to_the_other_member_at_the_lock_or_the_second_lock():
    check = S.redelivered_to_other("share_lock_expires", counts=(2, 3)).check
    assert check(_ev({"first": [_rec("a", 1, 100)], "second": [_rec("b", 2, 100 + LOCK + 20)]})).passed
    assert check(_ev({"first": [_rec("a", 1, 100)], "second": [_rec("b", 3, 100 + 2 * LOCK + 20)]})).passed
    # too soon for a lock, the same member, or never
    assert not check(_ev({"first": [_rec("a", 1, 100)], "second": [_rec("b", 2, 100 + LOCK / 2)]})).passed
    assert not check(_ev({"first": [_rec("a", 1, 100)], "second": [_rec("a", 2, 100 + LOCK)]})).passed
    assert not check(_ev({"first": [_rec("a", 1, 100)], "second": []})).passed


def test_the_lock_expires_at_its_deadline_and_only_then_is_acquired_again():
    check = S.lock_expires_at_deadline().check
    acquire = _share(Kind.SHARE_ACQUIRE, 1000, member="m1", delivery_counts=[1], locked_at_ms=1000,
                     lock_deadline_ms=1000 + LOCK, lock_duration_ms=LOCK)
    expiry = _share(Kind.SHARE_LOCK_EXPIRED, 1000 + LOCK, lock_deadline_ms=1000 + LOCK)
    again = _share(Kind.SHARE_ACQUIRE, 1000 + LOCK + 1, member="m2", delivery_counts=[2], locked_at_ms=1000 + LOCK,
                   lock_deadline_ms=1000 + 2 * LOCK, lock_duration_ms=LOCK)
    assert check(_ev({}, [acquire, expiry, again])).passed
    late = _share(Kind.SHARE_LOCK_EXPIRED, 1000 + LOCK + 400, lock_deadline_ms=1000 + LOCK)
    assert not check(_ev({}, [acquire, late, again])).passed
    early = _share(Kind.SHARE_ACQUIRE, 1000 + LOCK / 2, member="m2", delivery_counts=[2], locked_at_ms=0,
                   lock_deadline_ms=0, lock_duration_ms=LOCK)
    assert not check(_ev({}, [acquire, early, expiry, again])).passed


def test_a_commit_past_its_deadline_fails():
    check = S.call_returns_at("share_ack_black_holed", "first_commit", 10_000, early_ms=100, late_ms=1000,
                              errors={"TimeoutException"}).check
    ok = {"first_commit": {"t-0": "TimeoutException"}, "first_commit_ms": 1010}
    assert check(_ev(ok, kind="share_ack_black_holed")).passed
    assert not check(_ev({**ok, "first_commit_ms": 3005}, kind="share_ack_black_holed")).passed
    assert not check(_ev({**ok, "first_commit": {"t-0": ""}}, kind="share_ack_black_holed")).passed


def test_the_poison_record_comes_limit_times_then_no_more():
    check = S.poison_archived("share_delivery_limit", 3).check

    def run(counts: list[int]) -> bool:
        deliveries = [{**_rec("a", n, 0), "value": b"poison-0"} for n in counts] + [{**_rec("a", 1, 0), "value": b"ok-1"}]
        return check(_ev({"deliveries": deliveries}, kind="share_delivery_limit")).passed

    assert run([1, 2, 3])
    assert not run([1, 2, 3, 4])
    assert not run([1, 2])


def test_the_family_has_both_sides_and_its_internal_contracts_are_marked():
    family = [s for s in BY_ID.values() if s.family == "share"]
    assert len(family) >= 5
    for scenario in family:
        sides = {c.side for c in scenario.contracts}
        assert sides == {"client", "server"}, scenario.id
        assert all(c.side == "server" for c in scenario.contracts if c.broker_internal)
