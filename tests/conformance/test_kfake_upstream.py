"""The conformance scenarios on franz-go's kfake behind the proxy (conformance/kfake_upstream.py):
what kfake cannot play is N/A with the reason, what it can is judged on the proxy's trace.

The run needs kfake in the cache (adapters/go/kfake; bash dev/build-adapters/go): skipped without it,
failed under CI=true."""

from __future__ import annotations

import os

import pytest

from conformance.kfake_upstream import kfake_binary, kfake_support, run_on_kfake
from conformance.model import Status
from conformance.runner import select
from conformance.scenarios import CATALOGUE


def scenario(sid):
    (s,) = select(CATALOGUE, [sid])
    return s


def test_what_kfake_cannot_play_says_why():
    assert "kfake has no replication" in kfake_support(scenario("server.purgatory-request-timed-out"))
    assert "only from Go" in kfake_support(scenario("kip19.leader-move-during-black-hole"))
    assert "MoveTopicPartition" in kfake_support(scenario("kip19.connection-setup-timeout"))   # its leader placed at 0 ms
    assert kfake_support(scenario("kip91.max-block-missing-topic")) == ""   # kfake creates no topic by itself
    assert kfake_support(scenario("kip19.produce-black-hole")) == ""


@pytest.mark.realclient
def test_scenarios_run_on_kfake_behind_the_proxy():
    if not kfake_binary().is_file():
        why = f"{kfake_binary()} is not built (bash dev/build-adapters/go)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    from conformance.adapters.ours import OurBlockingAdapter

    ids = ["kip266.poll-zero", "kip19.produce-black-hole", "server.purgatory-request-timed-out"]
    results = {r.scenario: r for r in run_on_kfake(select(CATALOGUE, ids), [OurBlockingAdapter()], 30.0)}
    assert results["kip266.poll-zero"].status == Status.PASS, results["kip266.poll-zero"].message
    black_hole = results["kip19.produce-black-hole"]
    assert black_hole.status in (Status.PASS, Status.FAIL) and black_hole.evidence is not None
    assert any(e.api == "Produce" for e in black_hole.evidence.trace)   # the Produce went through the proxy
    na = results["server.purgatory-request-timed-out"]
    assert na.status == Status.NA and "kfake has no replication" in na.message


def test_what_cannot_play_on_kafka_behind_the_proxy_cannot_play_on_kfake():
    # their contracts read the emulator's own transaction coordinator trace
    for sid in ("txn.commit-endtxn-black-hole", "txn.zombie-fenced-after-restart", "txn.init-coordinator-unreachable"):
        assert kfake_support(scenario(sid)) == scenario(sid).not_on_kafka != ""
