"""franz-go's share and join_group_held steps through its adapter program (conformance/adapters/go,
share.go and joingroup.go) against the emulator: each answer has the shape the share contracts read
(conformance/scenarios_share.py: who received what and when, each commit's per-partition result,
how long the timed calls took), a group config the broker refuses fails the step with the broker's
error, and a classic-protocol second member joins.

The program is skipped when not built, and fails the test under CI=true (dev/build-adapters/go)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.adapters.base import RunEnv
from conformance.adapters.go_clients import FranzGoAdapter
from conformance.model import Operation, Outcome

from .clients import require_adapter

pytestmark = [pytest.mark.realclient]
SCALE = 10.0   # the share stories' Kafka-time ms, divided by this (share_args), as in the matrix
LOCK_MS = 30_000


@pytest.fixture(scope="module")
def franz():
    adapter = FranzGoAdapter()
    require_adapter(adapter)
    yield adapter
    adapter.shutdown()


@pytest.fixture
def share_cluster():
    """One broker, topic t (1 partition) for the share stories and j (3 partitions: something for a second
    group member to own), the share lock's floor at Kafka's minimum (as the matrix sets it)."""
    from broker_emu.runtime import run_cluster_in_thread

    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1), ("j", 3, 1)],
                               config={"group.share.min.record.lock.duration.ms": 1000,
                                       "group.initial.rebalance.delay.ms": 0}) as tc:
        yield tc


def run(adapter: FranzGoAdapter, bootstrap: str, *steps: Operation) -> list[Outcome]:
    return adapter.run_blocking(steps, RunEnv(bootstrap, "fgo-share", {"request.timeout.ms": 3_000}, SCALE))


def produce(adapter: FranzGoAdapter, bootstrap: str, *values: bytes) -> None:
    for value in values:
        (sent,) = run(adapter, bootstrap, Operation("produce", {"topic": "t", "partition": 0, "value": value}))
        assert sent.ok, sent


def story(adapter: FranzGoAdapter, bootstrap: str, kind: str, timeout_s: float | None = None, **args: Any) -> dict:
    config = {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": LOCK_MS,
              **args.pop("group_config", {})}
    (outcome,) = run(adapter, bootstrap, Operation(kind, {"topic": "t", "group": "sg", "group_config": config,
                                                          "max_ms": 60_000, **args}, timeout_s))
    assert outcome.operation == kind and outcome.ok, outcome
    assert isinstance(outcome.value, dict)
    return outcome.value


def _received(r: dict, member: str, count: int) -> None:
    assert r["member"] == member and r["partition"] == 0 and r["delivery_count"] == count, r
    assert isinstance(r["value"], bytes) and isinstance(r["at_ms"], float)


def test_delivery_limit_releases_then_archives(franz, share_cluster):
    produce(franz, share_cluster.bootstrap, b"poison-0", b"ok-1")
    value = story(franz, share_cluster.bootstrap, "share_delivery_limit", watch_ms=10_000,
                  group_config={"share.delivery.count.limit": 3})
    poison = [d["delivery_count"] for d in value["deliveries"] if d["value"].startswith(b"poison")]
    good = [d["delivery_count"] for d in value["deliveries"] if not d["value"].startswith(b"poison")]
    assert poison == [1, 2, 3] and good == [1], value["deliveries"]
    for d in value["deliveries"]:
        _received(d, "a", d["delivery_count"])
    # every commit (FlushAcks) came back accepted for the one partition, timed
    assert value["commits"] and all(c["commit"] == {"t-0": ""} and c["commit_ms"] >= 0 for c in value["commits"])
    assert "poll_errors" not in value


def test_renew_keeps_the_record_and_the_final_accept_is_taken(franz, share_cluster):
    produce(franz, share_cluster.bootstrap, b"slow-0")
    value = story(franz, share_cluster.bootstrap, "share_renew", process_ms=40_000, renew_ms=10_000)
    (first,) = value["first"]
    assert first["offset"] == 0 and first["delivery_count"] == 1
    assert value["second"] == []            # the other member polled throughout and got nothing
    assert len(value["renewals"]) >= 3      # 4 s of processing, a renewal each second (scaled)
    for one in value["renewals"]:
        assert one["commit"] == {"t-0": ""} and one["returned"] == [], one
    assert value["first_commit"] == {"t-0": ""}


def test_close_sends_the_pending_accept(franz, share_cluster):
    produce(franz, share_cluster.bootstrap, b"pending-0")
    value = story(franz, share_cluster.bootstrap, "share_close_pending", timeout_s=5.0)
    (first,) = value["first"]
    _received(first, "a", 1)
    assert value["close"] == "" and 0 <= value["close_ms"] < 5_000
    assert value["close_report"] == {"t-0": ""}   # the final-epoch ShareAcknowledge's answer, through the callback
    events = share_cluster.call(lambda: [e.kind for e in share_cluster.cluster.trace.events
                                         if e.kind == "share_acknowledge"])
    assert len(events) == 1


def test_a_black_holed_commit_returns_at_its_deadline(franz, share_cluster):
    produce(franz, share_cluster.bootstrap, b"lost-0")
    share_cluster.call(lambda: share_cluster.cluster.faults.add(
        {"match": {"api": "ShareAcknowledge"}, "action": {"type": "black_hole"}}, share_cluster.cluster.now_ms()))
    value = story(franz, share_cluster.bootstrap, "share_ack_black_holed", timeout_s=1.0, close_ms=10_000)
    assert value["first_commit"] == "TimeoutException", value
    assert 950 <= value["first_commit_ms"] <= 2_500
    (again,) = value["second"]                  # back to the group, to the other member
    assert again["delivery_count"] == 2 and again["member"] != value["first"][0]["member"]


def test_a_refused_group_config_fails_the_step_with_the_brokers_error(franz, share_cluster):
    # a lock under the broker's floor (1 s here): IncrementalAlterConfigs answers INVALID_CONFIG
    (outcome,) = run(franz, share_cluster.bootstrap, Operation("share_close_pending", {
        "topic": "t", "group": "sg", "group_config": {"share.record.lock.duration.ms": 5}, "max_ms": 5_000}, 2.0))
    assert not outcome.ok and outcome.error_type == "kerr.INVALID_CONFIG", outcome
    assert "setting the group's configs" in (outcome.error_message or "")


def test_join_group_held_second_member_joins(franz, share_cluster):
    """Nothing silences the first member here: the second member's join completes, timed."""
    (outcome,) = run(franz, share_cluster.bootstrap, Operation("join_group_held", {"group": "held", "topic": "j"}, 30.0))
    assert outcome.ok and outcome.operation == "join_group_held" and 0 < outcome.elapsed_s < 30, outcome
    joins = share_cluster.call(lambda: {e.client_id for e in share_cluster.cluster.trace.events
                                        if e.kind == "recv" and e.api == "JoinGroup"})
    assert {"conformance-silent-member", "fgo-share"} <= joins
