"""kafkajs's admin client over the emulator's admin APIs (createTopics, createPartitions,
alterConfigs, describeConfigs, deleteTopicRecords, alterPartitionReassignments and
listPartitionReassignments, deleteGroups, ACLs, deleteTopics) — on the
emulator and (``--broker kafka``) Apache Kafka; the ACL calls where an authorizer runs."""

from __future__ import annotations

import json

import pytest

from tests.realclients.conftest import require_client, run_node

pytestmark = [pytest.mark.realclient]


def check(out: dict) -> None:
    assert (out["created"], out["again"], out["partitions"], out["retention"]) == (True, False, 3, "120000")
    assert (out["offsets"]["low"], out["offsets"]["high"]) == ("2", "3")
    assert out["deleteGroups"] == ["GROUP_ID_NOT_FOUND"]
    assert out["left"] is False


@pytest.mark.any_broker
def test_kafkajs_admin_calls(cluster):
    require_client("kafkajs")
    out = run_node("admin_kafkajs.js", cluster.bootstrap, "no-acls", timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    check(got)
    assert got["moved"] is True   # the 3-broker cluster: partition 1 moved to another broker


def test_kafkajs_acl_calls_under_an_authorizer():
    require_client("kafkajs")
    from broker_emu.runtime import run_cluster_in_thread

    config = {"authorizer.class.name": "StandardAuthorizer", "allow.everyone.if.no.acl.found": True}
    with run_cluster_in_thread(brokers=1, config=config) as tc:
        out = run_node("admin_kafkajs.js", tc.bootstrap, "acls", timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    check(got)
    assert (got["acls"], got["deletedAcls"]) == ([["kjs-elsewhere", ["User:bob"]]], 1)
