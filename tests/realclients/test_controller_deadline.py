"""KRaft's controller deadline with a real client: CreateTopics' timeout_ms bounds the controller's
write, and past it nothing is created (emulator only: it needs a slow controller,
``emu.controller.delay.ms``; Kafka 4.4's answer to timeout_ms 0 was compared on the wire,
docs/findings.md)."""

import time

import pytest

from tests.realclients.conftest import require_client

pytestmark = [pytest.mark.realclient]


def test_confluent_kafka_create_topics_past_the_controller_deadline_changes_nothing():
    """KRaft's timeout_ms is the controller's deadline: a controller 2 s behind (emu.controller.delay.ms)
    and an operation timeout of 0.5 s give REQUEST_TIMED_OUT at 0.5 s and no topic; 5 s, the topic."""
    require_client("confluent-kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    from broker_emu.runtime import run_cluster_in_thread

    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)], config={"emu.controller.delay.ms": 2000}) as tc:
        admin = AdminClient({"bootstrap.servers": tc.bootstrap, "log_level": 0})
        start = time.monotonic()
        with pytest.raises(Exception, match="REQUEST_TIMED_OUT|timed out"):
            admin.create_topics([NewTopic("late", 1, 1)], operation_timeout=0.5)["late"].result(20)
        assert 0.4 < time.monotonic() - start < 1.9
        assert "late" not in admin.list_topics(timeout=10).topics
        admin.create_topics([NewTopic("in-time", 1, 1)], operation_timeout=5)["in-time"].result(20)
        assert "in-time" in admin.list_topics(timeout=10).topics
