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


def test_our_admin_cluster_calls(cluster):
    """Elections, reassignments, log dirs, group offsets, client quotas and SCRAM credentials,
    answered alike by the emulator and (``--broker kafka``) Apache Kafka."""
    import time

    from client.admin_cluster import PREFERRED
    from client.errors import ElectionNotNeededError, GroupIdNotFoundError

    with Admin({"bootstrap.servers": cluster.bootstrap}) as admin:
        assert admin.create_topics([NewTopic("ours-cluster", 1, 1)], timeout=30) == {"ours-cluster": None}
        end = time.monotonic() + 15
        while True:   # a real broker elects the new partition's leader a moment later
            elected = admin.elect_leaders([("ours-cluster", 0)], PREFERRED, timeout=30)
            if isinstance(elected[("ours-cluster", 0)], ElectionNotNeededError) or time.monotonic() > end:
                break
            time.sleep(0.2)
        assert isinstance(elected[("ours-cluster", 0)], ElectionNotNeededError)
        assert admin.list_partition_reassignments([("ours-cluster", 0)], timeout=30) == {}
        brokers = [b.broker_id for b in admin.describe_cluster(timeout=30).brokers]
        dirs = admin.describe_log_dirs(brokers, timeout=30)
        assert sorted(dirs) == sorted(brokers) and all(isinstance(d, dict) and d for d in dirs.values())
        assert any(("ours-cluster", 0) in sizes for d in dirs.values() for sizes in d.values())
        gone = admin.delete_group_offsets("ours-nobody", [("ours-cluster", 0)], timeout=30)
        assert isinstance(gone[("ours-cluster", 0)], GroupIdNotFoundError)
        quota = (("client-id", "ours-app"),)
        assert admin.alter_client_quotas({quota: {"producer_byte_rate": 2048.0}}, timeout=30) == {quota: None}
        match = [{"entity_type": "client-id", "match_type": 0, "match": "ours-app"}]
        end = time.monotonic() + 15
        while admin.describe_client_quotas(match, timeout=30) != {quota: {"producer_byte_rate": 2048.0}} and time.monotonic() < end:
            time.sleep(0.2)
        assert admin.describe_client_quotas(match, timeout=30) == {quota: {"producer_byte_rate": 2048.0}}
        assert admin.alter_user_scram_credentials({("ours-user", "SCRAM-SHA-256"): ("pw", 4096)}, timeout=30) == {"ours-user": None}
        end = time.monotonic() + 15
        while not isinstance(admin.describe_user_scram_credentials(["ours-user"], timeout=30)["ours-user"], dict) and time.monotonic() < end:
            time.sleep(0.2)
        assert admin.describe_user_scram_credentials(["ours-user"], timeout=30) == {"ours-user": {"SCRAM-SHA-256": 4096}}
        admin.delete_topics(["ours-cluster"], timeout=30)
