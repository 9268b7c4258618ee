"""The Java client's Admin (kafka-clients 4.4, through conformance/adapters/java) calling every
method that maps to the emulator's admin APIs — create/describe partitions and configs, delete
records, group offsets and groups, elect leaders, log dirs, reassignments, client quotas, ACLs,
SCRAM credentials — in one script on a fresh topic, against Apache Kafka 4.4 and the emulator
(each with an authorizer whose super user is the anonymous principal): the answers must match.
Kafka's brokers apply a write's metadata a moment after acknowledging it (a describe at once once
saw no quota); the script's reads after writes wait up to 5 s for them, the emulator's are at once."""

from __future__ import annotations

import pytest

from broker_emu.runtime import run_cluster_in_thread
from conformance.adapters.base import RunEnv
from conformance.adapters.java_client import JavaAdapter
from conformance.model import Operation
from tests.realclients.clients import require_adapter

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS"}


@pytest.fixture(scope="module")
def java():
    adapter = JavaAdapter()
    require_adapter(adapter)
    yield adapter
    adapter.shutdown()


def admin_calls(java: JavaAdapter, bootstrap: str, broker: int) -> dict:
    (outcome,) = java.run_blocking([Operation("admin_calls", {"topic": "jadm", "group": "jadm-g", "broker": broker}, 120.0)],
                                   RunEnv(bootstrap, "java-admin", {}, 1.0))
    assert outcome.ok, f"{outcome.error_type}: {outcome.error_message}"
    return outcome.value


def test_every_admin_call_answers_as_kafka_does(java, kafka_factory):
    kafka = kafka_factory(config=AUTHORIZER)
    theirs = admin_calls(java, kafka.bootstrap, broker=1)
    with run_cluster_in_thread(brokers=1, config=AUTHORIZER) as tc:
        ours = admin_calls(java, tc.bootstrap, broker=0)
    assert ours == theirs
    assert theirs == {
        "createTopics": "ok", "produce": 5, "commitOffsets": 3, "createPartitions": 3,
        "incrementalAlterConfigs": "ok", "describeConfigs": "123456 DYNAMIC_TOPIC_CONFIG", "deleteRecords": 2,
        "listConsumerGroupOffsets": 3, "deleteConsumerGroupOffsets": 0, "deleteConsumerGroups": "ok",
        "electLeaders": "ElectionNotNeededException", "describeLogDirs": 3, "alterPartitionReassignments": "ok",
        "listPartitionReassignments": 0, "alterClientQuotas": "ok", "describeClientQuotas": {"producer_byte_rate": 1024.0},
        "createAcls": "ok", "describeAcls": 1, "deleteAcls": 1, "alterUserScramCredentials": "ok",
        "describeUserScramCredentials": 8192, "deleteTopics": "ok"}
