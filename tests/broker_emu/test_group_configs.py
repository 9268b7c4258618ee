"""Group configs (ConfigResource GROUP) in virtual time: a group's override of the KIP-848
session timeout, heartbeat interval and assignment interval takes effect at the member's next
heartbeat (GroupMetadataManager reads the group's config first), other groups keep the broker's;
the authorizer checks DESCRIBE_CONFIGS / ALTER_CONFIGS on the group. The answers themselves are
compared with Kafka 4.4's in tests/realkafka/test_group_configs_ab.py."""

import trio

from broker_emu.runtime import open_cluster
from broker_emu.trace import Kind
from tests.broker_emu.test_acls import ALL, GROUP, SECURED, acl, login
from tests.broker_emu.test_kip848 import FAST, Member

DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, CREATE_ACLS = 32, 44, 30


def set_group(group: str, **values: str) -> dict:
    return {"resources": [{"resource_type": 32, "resource_name": group, "configs": [
        {"name": name.replace("_", "."), "config_operation": 0, "value": v} for name, v in values.items()]}],
        "validate_only": False}


async def test_a_groups_session_timeout_and_heartbeat_interval_take_effect(autojump_clock):
    async with open_cluster(1, topics=[("t", 2, 1)], listen=False, config=FAST) as cluster:
        a, other = Member(cluster, group="slow"), Member(cluster, group="fast")
        r = await a.w.call(INCREMENTAL_ALTER_CONFIGS, 1, set_group("slow", consumer_session_timeout_ms="8000",
                                                                   consumer_heartbeat_interval_ms="2000"))
        assert r.responses[0].error_code == 0
        assert (await a.beat()).heartbeat_interval_ms == 2000
        assert (await other.beat()).heartbeat_interval_ms == 500     # the broker's group.consumer.heartbeat.interval.ms
        start = cluster.trace.now_ms()
        await trio.sleep(20)                                         # both fall silent
        fenced = {e.details["group"]: (e.t_ms - start, e.details["timeout_ms"])
                  for e in cluster.trace.query(kind=Kind.GROUP_MEMBER_FENCED)}
        assert fenced == {"slow": (8000, 8000), "fast": (3000, 3000)}


async def test_an_override_deleted_gives_the_broker_setting_back(autojump_clock):
    async with open_cluster(1, topics=[("t", 1, 1)], listen=False, config=FAST) as cluster:
        a = Member(cluster)
        await a.w.call(INCREMENTAL_ALTER_CONFIGS, 1, set_group("g", consumer_heartbeat_interval_ms="2000"))
        assert (await a.beat()).heartbeat_interval_ms == 2000
        delete = {"resources": [{"resource_type": 32, "resource_name": "g", "configs": [
            {"name": "consumer.heartbeat.interval.ms", "config_operation": 1, "value": None}]}], "validate_only": False}
        assert (await a.w.call(INCREMENTAL_ALTER_CONFIGS, 1, delete)).responses[0].error_code == 0
        assert (await a.beat()).heartbeat_interval_ms == 500
        changes = [e.details for e in cluster.trace.query(kind=Kind.CONFIG_CHANGE) if e.details["resource"] == "group"]
        assert [c["after"] for c in changes] == [{"consumer.heartbeat.interval.ms": "2000"}, {}]


async def test_group_configs_need_describe_configs_and_alter_configs_on_the_group(autojump_clock):
    async with open_cluster(1, listen=False, config=SECURED) as cluster:
        admin = await login(cluster, "admin", "a")
        await admin.call(CREATE_ACLS, 3, {"creations": [acl(GROUP, "team-", ALL, pattern=4)]})
        alice = await login(cluster, "alice", "b")
        d = await alice.call(DESCRIBE_CONFIGS, 4, {"resources": [
            {"resource_type": 32, "resource_name": name, "configuration_keys": ["consumer.session.timeout.ms"]}
            for name in ("team-a", "other")], "include_synonyms": False, "include_documentation": False})
        assert sorted((r.resource_name, r.error_code, len(r.configs)) for r in d.results) == [
            ("other", 30, 0), ("team-a", 0, 1)]
        for group, code in (("team-a", 0), ("other", 30)):
            r = await alice.call(INCREMENTAL_ALTER_CONFIGS, 1, set_group(group, consumer_session_timeout_ms="50000"))
            assert r.responses[0].error_code == code
        assert cluster.group_configs.overrides == {"team-a": {"consumer.session.timeout.ms": "50000"}}
