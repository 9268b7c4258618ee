"""Our admin client's blocking face on loopback against the emulator and (``--broker kafka``)
Apache Kafka: the calls a test suite's set-up makes, with their answers as each broker gives them."""

from __future__ import annotations

import pytest

from client import Admin, NewTopic
from client.admin import SET, TOPIC
from client.errors import TopicAlreadyExistsError

pytestmark = [pytest.mark.realclient, pytest.mark.any_broker]


def test_our_admin_sets_up_and_tears_down(cluster):
    with Admin({"bootstrap.servers": cluster.bootstrap}) as admin:
        made = admin.create_topics([NewTopic("ours-admin", 2, 1, {"retention.ms": "60000"})], timeout=30)
        assert made == {"ours-admin": None}
        assert isinstance(admin.create_topics([NewTopic("ours-admin", 1, 1)], timeout=30)["ours-admin"], TopicAlreadyExistsError)
        assert admin.create_partitions({"ours-admin": 3}, timeout=30) == {"ours-admin": None}
        assert admin.incremental_alter_configs({(TOPIC, "ours-admin"): [("retention.ms", SET, "120000")]},
                                               timeout=30) == {(TOPIC, "ours-admin"): None}
        assert admin.describe_configs([(TOPIC, "ours-admin")], timeout=30)[(TOPIC, "ours-admin")]["retention.ms"] == "120000"
        # the topic's partitions may still be electing leaders on a real broker: the call retries them
        assert admin.delete_records({("ours-admin", 0): -1}, timeout=30) == {("ours-admin", 0): 0}
        assert admin.delete_topics(["ours-admin"], timeout=30) == {"ours-admin": None}
        assert len(admin.describe_cluster(timeout=30).brokers) >= 1
