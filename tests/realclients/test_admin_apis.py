"""Admin calls beyond listings, each by the clients that have it: the topic t
(3 partitions) grows, and a record produced to a new partition lands there."""

import time
import warnings

import pytest

from tests.realclients.conftest import require_client

pytestmark = [pytest.mark.realclient, pytest.mark.any_broker]


def _produce_to(bootstrap: str, partition: int) -> int:
    from confluent_kafka import Producer

    got: list = []
    p = Producer({"bootstrap.servers": bootstrap, "log_level": 0, "topic.metadata.refresh.interval.ms": 200})
    p.produce("t", b"new", partition=partition, on_delivery=lambda err, msg: got.append((err, msg.partition())))
    assert p.flush(20) == 0
    assert got and got[0][0] is None, got
    return got[0][1]


def test_confluent_kafka_create_partitions(cluster):
    require_client("confluent-kafka")
    from confluent_kafka.admin import AdminClient, NewPartitions

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    admin.create_partitions([NewPartitions("t", 5)], validate_only=True)["t"].result(20)
    assert len(admin.list_topics("t", timeout=10).topics["t"].partitions) == 3
    admin.create_partitions([NewPartitions("t", 5)])["t"].result(20)
    assert len(admin.list_topics("t", timeout=10).topics["t"].partitions) == 5
    with pytest.raises(Exception, match="INVALID_PARTITIONS|already has 5"):
        admin.create_partitions([NewPartitions("t", 5)])["t"].result(20)
    assert _produce_to(cluster.bootstrap, 4) == 4


def test_kafka_python_create_partitions(cluster):
    require_client("kafka-python")
    from kafka.admin import KafkaAdminClient, NewPartitions

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        admin.create_partitions({"t": NewPartitions(total_count=4)})
        assert len(admin.describe_topics(["t"])[0]["partitions"]) == 4
    finally:
        admin.close()
    assert _produce_to(cluster.bootstrap, 3) == 3


def _earliest(bootstrap: str, partition: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "earliest", "log_level": 0})
    try:
        return c.get_watermark_offsets(TopicPartition("t", partition), timeout=10)[0]
    finally:
        c.close()


def _fill(bootstrap: str, partition: int, n: int) -> None:
    for _ in range(n):
        _produce_to(bootstrap, partition)


def test_confluent_kafka_delete_records(cluster):
    require_client("confluent-kafka")
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    _fill(cluster.bootstrap, 0, 4)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    done = admin.delete_records([TopicPartition("t", 0, 3)])
    deleted = next(iter(done.values())).result(20)
    assert deleted.low_watermark == 3
    assert _earliest(cluster.bootstrap, 0) == 3


def test_kafka_python_delete_records(cluster):
    require_client("kafka-python")
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    _fill(cluster.bootstrap, 1, 3)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        got = admin.delete_records({TopicPartition("t", 1): 2})
    finally:
        admin.close()
    assert got[TopicPartition("t", 1)]["low_watermark"] == 2
    assert _earliest(cluster.bootstrap, 1) == 2


def _commit(bootstrap: str, group: str, offsets: dict[int, int]) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0})
    try:
        c.commit(offsets=[TopicPartition("t", p, o) for p, o in offsets.items()], asynchronous=False)
    finally:
        c.close()


def test_confluent_kafka_delete_consumer_groups(cluster):
    require_client("confluent-kafka")
    from confluent_kafka.admin import AdminClient

    _commit(cluster.bootstrap, "to-delete", {0: 1})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    admin.delete_consumer_groups(["to-delete"], request_timeout=20)["to-delete"].result(20)
    with pytest.raises(Exception, match="GROUP_ID_NOT_FOUND|does not exist"):
        admin.delete_consumer_groups(["to-delete"], request_timeout=20)["to-delete"].result(20)


def test_kafka_python_delete_group_offsets_and_groups(cluster):
    require_client("kafka-python")
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    _commit(cluster.bootstrap, "kp-delete", {0: 4, 1: 2})
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        admin.delete_group_offsets("kp-delete", [TopicPartition("t", 0)])
        left = admin.list_group_offsets("kp-delete")["kp-delete"]
        assert {tp.partition: om.offset for tp, om in left.items()} == {1: 2}
        assert admin.delete_groups(["kp-delete"]) == {"kp-delete": "OK"}
        assert admin.list_group_offsets("kp-delete")["kp-delete"] == {}
    finally:
        admin.close()


def test_confluent_kafka_elect_leaders(cluster):
    """A preferred election where the preferred replica already leads is not needed (Kafka's
    ELECTION_NOT_NEEDED, reported per partition)."""
    require_client("confluent-kafka")
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("t", 0)]).result(20)
    [(tp, error)] = list(result.items())
    assert (tp.topic, tp.partition) == ("t", 0)
    assert error is not None and error.name() == "ELECTION_NOT_NEEDED"


def _described(admin, name: str) -> str:
    from confluent_kafka.admin import ConfigResource

    return admin.describe_configs([ConfigResource("topic", "t")])[ConfigResource("topic", "t")].result(20)[name].value


def _produce_size(bootstrap: str, size: int):
    from confluent_kafka import Producer

    got: list = []
    p = Producer({"bootstrap.servers": bootstrap, "log_level": 0, "retries": 0})
    p.produce("t", b"x" * size, partition=0, on_delivery=lambda err, msg: got.append(err))
    p.flush(20)
    return got[0]


def test_confluent_kafka_incremental_alter_configs_take_effect(cluster):
    """A topic's max.message.bytes set at run time refuses the next large produce
    (MSG_SIZE_TOO_LARGE from the broker); deleting the override lets it through again."""
    require_client("confluent-kafka")
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})

    def alter(op, value):
        entry = ConfigEntry("max.message.bytes", value, incremental_operation=op)
        fs = admin.incremental_alter_configs([ConfigResource("topic", "t", incremental_configs=[entry])])
        [f.result(20) for f in fs.values()]

    def settled(value: str) -> bool:   # Kafka's brokers learn the controller's change a moment later
        end = time.monotonic() + 15
        while _described(admin, "max.message.bytes") != value and time.monotonic() < end:
            time.sleep(0.1)
        return _described(admin, "max.message.bytes") == value

    assert _produce_size(cluster.bootstrap, 5000) is None
    alter(AlterConfigOpType.SET, "2000")
    assert settled("2000")
    end, error = time.monotonic() + 15, None
    while error is None and time.monotonic() < end:   # the leader may learn it after the described broker
        error = _produce_size(cluster.bootstrap, 5000)
    assert error is not None and error.name() == "MSG_SIZE_TOO_LARGE"
    alter(AlterConfigOpType.DELETE, None)
    assert settled("1048588")
    assert _produce_size(cluster.bootstrap, 5000) is None
    bad = ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)
    with pytest.raises(Exception, match="INVALID_CONFIG|Not a number"):
        [f.result(20) for f in admin.incremental_alter_configs([ConfigResource("topic", "t", incremental_configs=[bad])]).values()]


def test_confluent_kafka_legacy_alter_configs_replaces_the_overrides(cluster):
    """confluent-kafka's alter_configs (the legacy AlterConfigs): the topic's overrides become
    exactly the ones sent — a second call without retention.ms drops it."""
    require_client("confluent-kafka")
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})

    def alter(**configs):
        resource = ConfigResource("topic", "t", set_config={k.replace("_", "."): v for k, v in configs.items()})
        with warnings.catch_warnings():   # deprecated in confluent-kafka, still what many suites call
            warnings.simplefilter("ignore", DeprecationWarning)
            futures = admin.alter_configs([resource])
        [f.result(20) for f in futures.values()]

    def settled(name: str, value: str) -> str:   # Kafka's brokers learn the controller's change a moment later
        end = time.monotonic() + 15
        while _described(admin, name) != value and time.monotonic() < end:
            time.sleep(0.1)
        return _described(admin, name)

    alter(retention_ms="3600000", cleanup_policy="compact")
    assert (settled("retention.ms", "3600000"), settled("cleanup.policy", "compact")) == ("3600000", "compact")
    alter(cleanup_policy="delete")
    assert (settled("retention.ms", "604800000"), settled("cleanup.policy", "delete")) == ("604800000", "delete")


def test_kafka_python_alter_configs_incremental_and_legacy(cluster):
    """kafka-python 3's alter_configs: IncrementalAlterConfigs (SET, APPEND), then the legacy
    AlterConfigs, which replaces the topic's overrides whole — kafka-python knows, and sends the
    other modified keys along (its docstring), so cleanup.policy survives."""
    require_client("kafka-python")
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)

    def overrides(want: dict) -> dict:   # Kafka's brokers learn the controller's change a moment later
        end = time.monotonic() + 15
        while True:
            got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "t")], config_filter="All")["topic"]["t"]
            values = {k: v["value"] for k, v in got.items() if v["config_source"] == "DYNAMIC_TOPIC_CONFIG"}
            if values == want or time.monotonic() > end:
                return values
            time.sleep(0.1)

    try:
        topic = ConfigResource(ConfigResourceType.TOPIC, "t", configs={"retention.ms": "86400000",
                                                                       "cleanup.policy": ("APPEND", "compact")})
        assert admin.alter_configs([topic]) == {"topic": {"t": "OK"}}
        want = {"retention.ms": "86400000", "cleanup.policy": "delete,compact"}
        assert overrides(want) == want
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "t", configs={"retention.ms": "3600000"})],
                            incremental=False)
        want = {"retention.ms": "3600000", "cleanup.policy": "delete,compact"}
        assert overrides(want) == want
        # reset_configs: IncrementalAlterConfigs DELETE for each key named
        admin.reset_configs([ConfigResource(ConfigResourceType.TOPIC, "t", configs={"retention.ms": None})])
        assert overrides({"cleanup.policy": "delete,compact"}) == {"cleanup.policy": "delete,compact"}
    finally:
        admin.close()



def test_kafka_python_elect_leaders_and_scram_credentials(cluster):
    """kafka-python 3's elect_leaders (a preferred election where none is needed answers
    ELECTION_NOT_NEEDED per partition) and its SCRAM calls (a user added, described, deleted)."""
    require_client("kafka-python")
    from kafka.admin import KafkaAdminClient, ScramMechanism, UserScramCredentialDeletion, UserScramCredentialUpsertion

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        answer = admin.elect_leaders(0, {"t": [0]}, timeout_ms=10000, raise_errors=False)
        codes = [p[1] for t in answer.replica_election_results for p in t[1]]
        assert codes == [84]   # ELECTION_NOT_NEEDED: the preferred replica leads already
        upsert = UserScramCredentialUpsertion("kp-user", ScramMechanism.SCRAM_SHA_256, "kp-secret", iterations=4096)
        assert admin.alter_user_scram_credentials([upsert]) == {"kp-user": None}
        end = time.monotonic() + 15   # Kafka's brokers learn the controller's change a moment later
        while True:
            described = admin.describe_user_scram_credentials(["kp-user"])["kp-user"]
            if described["credential_infos"] or time.monotonic() > end:
                break
            time.sleep(0.1)
        assert [(str(c["mechanism"]), c["iterations"]) for c in described["credential_infos"]] == [
            (str(ScramMechanism.SCRAM_SHA_256), 4096)]
        deletion = UserScramCredentialDeletion("kp-user", ScramMechanism.SCRAM_SHA_256)
        assert admin.alter_user_scram_credentials([deletion]) == {"kp-user": None}
    finally:
        admin.close()


def test_kafka_python_describe_log_dirs(cluster):
    """Every broker answers with its log directory; the one leading t-0 holds the bytes produced."""
    require_client("kafka-python")
    from kafka.admin import KafkaAdminClient

    _produce_to(cluster.bootstrap, 0)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        answers = admin.describe_log_dirs()
        sizes = [p["partition_size"] for a in answers for d in a["log_dirs"] for t in d["topics"]
                 if t["name"] == "t" for p in t["partitions"] if p["partition_index"] == 0]
        assert answers and max(sizes) > 0, answers
    finally:
        admin.close()


def test_kafka_python_moves_a_partition_with_a_reassignment(cluster):
    """t-0 moves to the brokers that do not hold it; when the reassignment is done, the metadata
    shows the new replicas and a record produced before it is still there."""
    require_client("kafka-python")
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    _produce_to(cluster.bootstrap, 0)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        [topic] = admin.describe_topics(["t"])
        current = next(p["replica_nodes"] for p in topic["partitions"] if p["partition_index"] == 0)
        brokers = sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"])
        target = [b for b in brokers if b not in current] or list(reversed(current))
        assert admin.alter_partition_reassignments({TopicPartition("t", 0): target}) == {TopicPartition("t", 0): None}
        end = time.monotonic() + 30
        while admin.list_partition_reassignments() and time.monotonic() < end:
            time.sleep(0.2)
        assert admin.list_partition_reassignments() == {}
        end = time.monotonic() + 15
        while time.monotonic() < end:
            [topic] = admin.describe_topics(["t"])
            replicas = next(p["replica_nodes"] for p in topic["partitions"] if p["partition_index"] == 0)
            if replicas == target:
                break
            time.sleep(0.2)
        assert replicas == target
    finally:
        admin.close()
