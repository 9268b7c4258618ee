"""ACLs with real clients: an admin (a super user) sets ACLs with
confluent-kafka's and kafka-python's admin clients over SASL; other users' clients then meet
Kafka's refusals — TOPIC_AUTHORIZATION_FAILED on a produce, GROUP_AUTHORIZATION_FAILED on a
group join — as those clients report them."""

from __future__ import annotations

import pytest

from tests.realclients.conftest import require_client

pytestmark = [pytest.mark.realclient]
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture
def secured():
    from broker_emu.runtime import run_cluster_in_thread

    config = {"emu.security.protocol": "SASL_PLAINTEXT", "emu.sasl.users": ",".join(f"{u}:{p}" for u, p in USERS.items()),
              "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:admin", "group.initial.rebalance.delay.ms": 0}
    with run_cluster_in_thread(brokers=3, topics=[("orders", 1, 3), ("payroll", 1, 3)], config=config) as tc:
        yield tc


def ck_config(tc, user: str) -> dict:
    return {"bootstrap.servers": tc.bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-256",
            "sasl.username": user, "sasl.password": USERS[user], "log_level": 0}


def test_confluent_kafka_admin_sets_acls_that_producers_and_groups_meet(secured):
    require_client("confluent-kafka")
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(ck_config(secured, "admin"))
    bindings = [AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                           AclOperation.WRITE, AclPermissionType.ALLOW),
                AclBinding(ResourceType.TOPIC, "payroll", ResourcePatternType.LITERAL, "User:bob", "*",
                           AclOperation.ALL, AclPermissionType.ALLOW)]
    for f in admin.create_acls(bindings).values():
        f.result(10)
    listed = admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                                  AclOperation.ANY, AclPermissionType.ANY)).result(10)
    assert sorted((b.name, b.principal) for b in listed) == [("orders", "User:alice"), ("payroll", "User:bob")]

    # alice may write orders, not payroll
    outcomes: dict[str, str] = {}

    def delivered(err, msg):
        outcomes[msg.topic()] = "ok" if err is None else err.name()

    p = Producer({**ck_config(secured, "alice"), "delivery.timeout.ms": 10000})
    p.produce("orders", b"o", partition=0, on_delivery=delivered)
    p.produce("payroll", b"p", partition=0, on_delivery=delivered)
    p.flush(20)
    assert outcomes == {"orders": "ok", "payroll": "TOPIC_AUTHORIZATION_FAILED"}

    # bob may read payroll, but no ACL lets him into group "hr"
    c = Consumer({**ck_config(secured, "bob"), "group.id": "hr", "auto.offset.reset": "earliest"})
    c.subscribe(["payroll"])
    error = None
    for _ in range(40):
        m = c.poll(0.5)
        if m is not None and m.error():
            error = m.error()
            break
    c.close()
    assert error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED, error

    # alice may not change ACLs
    alice_admin = AdminClient(ck_config(secured, "alice"))   # kept: a dropped handle cancels its calls
    refused = alice_admin.create_acls(bindings[:1])
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED|Cluster authorization failed"):
        next(iter(refused.values())).result(10)
    events = secured.call(lambda: [e.details for e in secured.cluster.trace.events if e.kind == "authorization"])
    assert {(e["principal"], e["resource"]) for e in events} >= {("User:alice", "payroll"), ("User:bob", "hr"),
                                                                 ("User:alice", "kafka-cluster")}


def test_kafka_python_admin_describes_and_deletes_acls(secured):
    require_client("kafka-python")
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )

    admin = KafkaAdminClient(bootstrap_servers=secured.bootstrap, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="admin", sasl_plain_password=USERS["admin"])
    prefixed = ResourcePattern(ResourceType.TOPIC, "ord", ACLResourcePatternType.PREFIXED)
    created = admin.create_acls([ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW, prefixed)])
    assert len(created["succeeded"]) == 1 and not created["failed"]
    match = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                      ResourcePatternFilter(ResourceType.TOPIC, "orders", ACLResourcePatternType.MATCH))
    found, error = admin.describe_acls(match)
    assert [(a.resource_pattern.resource_name, a.principal) for a in found] == [("ord", "User:alice")], error
    deleted = admin.delete_acls([match])
    assert [len(matches) for _, matches, _ in deleted] == [1]
    assert admin.describe_acls(match)[0] == []
    admin.close()


def test_confluent_kafka_admin_creates_a_scram_user_who_then_logs_in(secured):
    """KIP-554 through confluent-kafka's admin client: the new user's first login works, the
    deleted mechanism no longer does."""
    require_client("confluent-kafka")
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(ck_config(secured, "admin"))
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
    done = admin.alter_user_scram_credentials([UserScramCredentialUpsertion("carol", info, b"carol-secret"),
                                               UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_256)])
    for f in done.values():
        f.result(10)
    described = {u: f.result(10) for u, f in admin.describe_user_scram_credentials(["carol", "bob"]).items()}
    assert [(c.mechanism, c.iterations) for c in described["carol"].scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 8192)]
    assert [c.mechanism for c in described["bob"].scram_credential_infos] == [ScramMechanism.SCRAM_SHA_512]
    carol = AdminClient({**ck_config(secured, "admin"), "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "carol",
                         "sasl.password": "carol-secret"})
    listed = carol.list_topics(timeout=10)          # logged in; no ACL lets carol describe a topic
    assert len(listed.brokers) == 3 and not listed.topics
