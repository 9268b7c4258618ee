"""Our admin client (client/admin.py) against the emulator in virtual time: each call's
deadline, the time left sent as timeout_ms (the KRaft controller's deadline, the DeleteRecords
purgatory), per-item outcomes."""

import pytest
import trio

from broker_emu.runtime import open_cluster
from client.admin import BROKER, SET, TOPIC, NewTopic, open_admin
from client.errors import (
    ClusterAuthorizationFailedError,
    InvalidConfigError,
    RequestTimedOutError,
    TimeoutException,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from client.producer.async_producer import open_producer

BOOT = {"bootstrap.servers": "127.0.0.1:0"}


def connect_to(cluster):
    async def connect(node, host, port):
        return cluster.connect(max(node, 0))
    return connect


async def test_topics_partitions_and_configs(autojump_clock):
    async with open_cluster(3, listen=False) as cluster, open_admin(BOOT, connect_to(cluster)) as admin:
        made = await admin.create_topics([NewTopic("orders", 2, 3, {"retention.ms": "1000"}), NewTopic("bad", 1, 1, {"nope": "1"})])
        assert made["orders"] is None and isinstance(made["bad"], InvalidConfigError)
        assert isinstance((await admin.create_topics([NewTopic("orders", 1, 1)]))["orders"], TopicAlreadyExistsError)
        assert (await admin.create_partitions({"orders": 4}))["orders"] is None
        assert len(cluster.topics["orders"].partitions) == 4
        changed = await admin.incremental_alter_configs({(TOPIC, "orders"): [("retention.ms", SET, "2000")]})
        assert changed == {(TOPIC, "orders"): None}
        described = await admin.describe_configs([(TOPIC, "orders"), (BROKER, "0")])
        assert described[(TOPIC, "orders")]["retention.ms"] == "2000" and "message.max.bytes" in described[(BROKER, "0")]
        gone = await admin.delete_topics(["orders", "never"])
        assert gone["orders"] is None and isinstance(gone["never"], UnknownTopicOrPartitionError)
        assert len((await admin.describe_cluster()).brokers) == 3


async def test_create_topics_carries_the_time_left_as_the_controllers_deadline(autojump_clock):
    async with open_cluster(1, listen=False, config={"emu.controller.delay.ms": 2000}) as cluster, \
            open_admin(BOOT, connect_to(cluster)) as admin:
        start = trio.current_time()
        late = await admin.create_topics([NewTopic("late", 1, 1)], timeout=1.5)
        # timeout_ms is the time left less 100 ms: the controller's answer comes before our deadline
        assert isinstance(late["late"], RequestTimedOutError) and trio.current_time() - start == pytest.approx(1.4, abs=0.01)
        assert "late" not in cluster.topics                  # KRaft: an expired deadline changes nothing
        start = trio.current_time()
        assert (await admin.create_topics([NewTopic("late", 1, 1)], timeout=3))["late"] is None
        assert trio.current_time() - start == pytest.approx(2.0, abs=0.01)


async def test_the_margin_before_the_calls_deadline_is_a_parameter(autojump_clock):
    """A real-time harness that divides every time by a scale divides the 100 ms margin too
    (conformance's blocking face): timeout_ms is then the time left less the margin given."""
    async with open_cluster(1, listen=False, config={"emu.controller.delay.ms": 2000}) as cluster, \
            open_admin(BOOT, connect_to(cluster), broker_margin_s=0.02) as admin:
        start = trio.current_time()
        late = await admin.create_topics([NewTopic("late", 1, 1)], timeout=1.5)
        assert isinstance(late["late"], RequestTimedOutError) and trio.current_time() - start == pytest.approx(1.48, abs=0.005)
        sent = [e.details["timeout_ms"] for e in cluster.trace.events if e.kind == "recv" and e.api == "CreateTopics"]
        assert sent == [1480]


async def test_delete_records_waits_in_the_purgatory_at_most_the_time_left(autojump_clock):
    async with open_cluster(3, topics=[("t", 1, 3)], listen=False) as cluster:
        async with open_producer({**BOOT, "acks": "all"}, connect=connect_to(cluster)) as p:
            for i in range(5):
                await (await p.send("t", b"v%d" % i, partition=0)).get()
        async with open_admin(BOOT, connect_to(cluster)) as admin:
            assert await admin.delete_records({("t", 0): 2}) == {("t", 0): 2}
            follower = next(b for b in cluster.partition("t", 0).replicas if b != cluster.partition("t", 0).leader)
            cluster.set_replication("t", 0, follower, "stall")   # the low watermark cannot reach every replica
            start = trio.current_time()
            stuck = await admin.delete_records({("t", 0): 4}, timeout=2)
            assert isinstance(stuck[("t", 0)], RequestTimedOutError)
            assert trio.current_time() - start == pytest.approx(1.9, abs=0.05)   # DelayedDeleteRecords expired at timeout_ms


async def test_an_unreachable_cluster_fails_the_call_at_its_deadline(autojump_clock):
    async def nowhere(node, host, port):
        await trio.sleep_forever()

    async with open_admin({**BOOT, "socket.connection.setup.timeout.ms": 1000}, nowhere) as admin:
        start = trio.current_time()
        with pytest.raises(TimeoutException, match="create_topics gave up after"):
            await admin.create_topics([NewTopic("x")], timeout=5)
        assert trio.current_time() - start == pytest.approx(5.0, abs=0.01)   # mid-connect: the call still ends on time


async def test_acls_and_groups(autojump_clock):
    config = {"authorizer.class.name": "StandardAuthorizer", "allow.everyone.if.no.acl.found": True}
    async with open_cluster(1, listen=False, config=config) as cluster, open_admin(BOOT, connect_to(cluster)) as admin:
        acl = {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3, "principal": "User:bob",
               "host": "*", "operation": 3, "permission_type": 3}
        assert await admin.create_acls([acl]) == [None]
        every = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                 "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}
        assert [(a["resource_name"], a["principal"]) for a in await admin.describe_acls(every)] == [("t", "User:bob")]
        assert [len(m) for m in await admin.delete_acls([every])] == [1]
        # a DENY of ALTER on the cluster for ANONYMOUS: the next creation is refused
        deny = {**acl, "resource_type": 4, "resource_name": "kafka-cluster", "principal": "User:ANONYMOUS",
                "operation": 7, "permission_type": 2}
        assert await admin.create_acls([deny]) == [None]
        refused = await admin.create_acls([acl])
        assert isinstance(refused[0], ClusterAuthorizationFailedError)
        missing = await admin.delete_groups(["nobody"])
        assert missing["nobody"] is not None and missing["nobody"].code == 69   # GROUP_ID_NOT_FOUND
