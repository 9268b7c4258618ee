"""Group configs (ConfigResource GROUP, KIP-848's per-group overrides) from real admin clients —
confluent-kafka and kafka-python set, describe and delete a group's consumer.heartbeat.interval.ms
(on the emulator and, with ``--broker kafka``, Apache Kafka 4.4) — and the override taking effect
on a real KIP-848 consumer: confluent-kafka with group.protocol=consumer heartbeats at the group's
interval, not the broker's."""

import time

import pytest

from tests.realclients.conftest import require_client

pytestmark = [pytest.mark.realclient, pytest.mark.any_broker]


def test_confluent_kafka_sets_describes_and_deletes_a_group_config(cluster):
    require_client("confluent-kafka")
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, ResourceType

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    group = ConfigResource(ResourceType.GROUP, "cfg-ck")

    def alter(op, value):
        entry = ConfigEntry("consumer.heartbeat.interval.ms", value, incremental_operation=op)
        resource = ConfigResource(ResourceType.GROUP, "cfg-ck", incremental_configs=[entry])
        [f.result(20) for f in admin.incremental_alter_configs([resource]).values()]

    def described(until: str):
        end = time.monotonic() + 15   # Kafka's brokers learn the controller's change a moment later
        while True:
            entry = admin.describe_configs([group])[group].result(20)["consumer.heartbeat.interval.ms"]
            if entry.value == until or time.monotonic() > end:
                return entry.value, entry.source
            time.sleep(0.1)

    alter(AlterConfigOpType.SET, "6000")
    assert described("6000") == ("6000", ConfigSource.GROUP_CONFIG.value)
    with pytest.raises(Exception, match="must be in the range 5000 to 15000 inclusive"):
        alter(AlterConfigOpType.SET, "60000")
    alter(AlterConfigOpType.DELETE, None)
    assert described("5000") == ("5000", ConfigSource.DEFAULT_CONFIG.value)


def test_kafka_python_sets_and_describes_a_group_config(cluster):
    require_client("kafka-python")
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        resource = ConfigResource(ConfigResourceType.GROUP, "cfg-kp", configs={"consumer.session.timeout.ms": "50000"})
        assert admin.alter_configs([resource]) == {"group": {"cfg-kp": "OK"}}
        end = time.monotonic() + 15
        while True:
            got = admin.describe_configs([ConfigResource(ConfigResourceType.GROUP, "cfg-kp")], config_filter="All")
            entry = got["group"]["cfg-kp"]["consumer.session.timeout.ms"]
            if entry["value"] == "50000" or time.monotonic() > end:
                break
            time.sleep(0.1)
        assert (entry["value"], entry["config_source"]) == ("50000", "DYNAMIC_GROUP_CONFIG")   # kafka-python's name for source 8
    finally:
        admin.close()


def test_a_kip848_consumer_heartbeats_at_its_groups_interval():
    """The emulator (its broker minimum lowered to 100 ms so the effect shows in seconds): a
    group's 300 ms consumer.heartbeat.interval.ms against the broker's 5 s, 4 s of membership each."""
    require_client("confluent-kafka")
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    from broker_emu.runtime import run_cluster_in_thread

    config = {"group.consumer.min.heartbeat.interval.ms": 100, "group.consumer.assignment.interval.ms": 0}
    with run_cluster_in_thread(brokers=1, topics=[("hb", 1, 1)], config=config) as tc:
        admin = AdminClient({"bootstrap.servers": tc.bootstrap, "log_level": 0})
        entry = ConfigEntry("consumer.heartbeat.interval.ms", "300", incremental_operation=AlterConfigOpType.SET)
        [f.result(20) for f in admin.incremental_alter_configs(
            [ConfigResource(ResourceType.GROUP, "quick", incremental_configs=[entry])]).values()]
        for group in ("quick", "default"):
            c = Consumer({"bootstrap.servers": tc.bootstrap, "group.id": group, "group.protocol": "consumer",
                          "client.id": group, "log_level": 0})
            c.subscribe(["hb"])
            end = time.monotonic() + 4
            while time.monotonic() < end:
                c.poll(0.1)
            c.close()
        beats = tc.call(lambda: [e.client_id for e in tc.cluster.trace.events
                                 if e.kind == "recv" and e.api == "ConsumerGroupHeartbeat"])
    counts = {g: beats.count(g) for g in ("quick", "default")}
    print("heartbeats in 4 s:", counts)
    assert counts["quick"] >= 8 and counts["default"] <= 4, counts
