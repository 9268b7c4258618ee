"""A real admin client's CreateTopics with a config Kafka refuses gets INVALID_CONFIG with Kafka's
message, naming the key and the reason, and no topic is created."""

import pytest

from tests.realclients.conftest import require_client

pytestmark = pytest.mark.realclient


def test_confluent_admin_create_topics_with_a_bad_config_gets_invalid_config(cluster):
    require_client("confluent-kafka")
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics([NewTopic("bad-size", 1, 1, config={"max.message.bytes": "abc"}),
                                   NewTopic("bad-name", 1, 1, config={"retention.msec": "1"}),
                                   NewTopic("good", 1, 1, config={"cleanup.policy": "compact"})], request_timeout=10)
    errors = {}
    for name, future in futures.items():
        try:
            future.result(timeout=15)
            errors[name] = None
        except KafkaException as exc:
            errors[name] = exc.args[0]
    assert errors["good"] is None
    for name, message in (("bad-size", "Invalid value abc for configuration max.message.bytes: Not a number of type INT"),
                          ("bad-name", "Unknown topic config name: retention.msec")):
        assert errors[name].code() == KafkaError.INVALID_CONFIG, errors[name]
        assert message in errors[name].str()
    topics = cluster.call(lambda: set(cluster.cluster.topics))
    assert "good" in topics and not {"bad-size", "bad-name"} & topics


def test_confluent_producer_sees_invalid_record_for_a_keyless_record_in_a_compacted_topic(cluster):
    """LogValidator's record-level refusal reaches librdkafka as INVALID_RECORD (not retried), and
    the keyed record in the same topic is stored."""
    require_client("confluent-kafka")
    from confluent_kafka import KafkaError, Producer

    cluster.call(lambda: cluster.cluster.create_topic("compacted", 1, 3, configs={"cleanup.policy": "compact"}))
    reports = {}
    p = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0, "message.timeout.ms": 10000})
    p.produce("compacted", b"no key", on_delivery=lambda err, msg: reports.__setitem__("keyless", err))
    p.flush(15)
    p.produce("compacted", b"keyed", key=b"k", on_delivery=lambda err, msg: reports.__setitem__("keyed", err))
    p.flush(15)
    assert reports["keyless"] is not None and reports["keyless"].code() == KafkaError.INVALID_RECORD, reports
    assert reports["keyed"] is None
    assert cluster.call(lambda: cluster.cluster.partition("compacted", 0).log_end_offset) == 1
