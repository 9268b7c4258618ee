"""Mutual TLS (ssl.client.auth=required) on Apache Kafka 4.4 and on the emulator, with the same
certificate authority (broker_emu.security.tls.ListenerTls) and the same confluent-kafka script:
the principal each client certificate gives (Kafka's DefaultKafkaPrincipalBuilder: the subject,
``User:CN=alice,OU=client,O=broker-emu``) is what ACLs name — the admin's certificate is a super
user and grants alice WRITE on one topic; alice's record is written, bob's refused
(TOPIC_AUTHORIZATION_FAILED), and a client without a certificate never gets through."""

from __future__ import annotations

import time

from broker_emu.runtime import run_cluster_in_thread
from broker_emu.security.tls import ListenerTls

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
USERS = ("admin", "alice", "bob")


def dn(name: str) -> str:
    return f"User:CN={name},OU=client,O=broker-emu"


def script(bootstrap: str, tls: ListenerTls) -> dict:
    from confluent_kafka import Producer
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )

    def config(who: str | None) -> dict:
        c = {"bootstrap.servers": bootstrap, "security.protocol": "SSL", "ssl.ca.location": tls.ca_path, "log_level": 0}
        if who:
            c.update({"ssl.certificate.location": tls.client_paths[who][0], "ssl.key.location": tls.client_paths[who][1]})
        return c

    def produce(who: str | None) -> str:
        got: list = []
        p = Producer({**config(who), "message.timeout.ms": 4000, "retries": 0})
        p.produce("m", b"x", on_delivery=lambda err, msg: got.append(err))
        p.flush(8)
        return "ok" if got and got[0] is None else got[0].name() if got else "no answer"

    admin = AdminClient(config("admin"))
    admin.create_topics([NewTopic("m", 1, 1)])["m"].result(30)
    binding = AclBinding(ResourceType.TOPIC, "m", ResourcePatternType.LITERAL, dn("alice"), "*",
                         AclOperation.WRITE, AclPermissionType.ALLOW)
    admin.create_acls([binding])[binding].result(30)
    end, alice = time.monotonic() + 20, "not tried"
    while alice != "ok" and time.monotonic() < end:   # Kafka's brokers learn a new ACL a moment later
        alice = produce("alice")
    return {"alice": alice, "bob": produce("bob"), "no certificate": produce(None)}


def test_client_certificates_are_principals_as_on_kafka(kafka_factory, tmp_path):
    tls = ListenerTls("127.0.0.1", str(tmp_path), "required", USERS)
    kafka = kafka_factory(config={
        "listener.name.client.ssl.keystore.type": "PEM",
        "listener.name.client.ssl.keystore.location": tls.write_server_keystore(str(tmp_path / "server.pem")),
        "listener.name.client.ssl.truststore.type": "PEM",
        "listener.name.client.ssl.truststore.location": tls.ca_path,
        "listener.name.client.ssl.client.auth": "required",
        "authorizer.class.name": AUTHORIZER, "super.users": f"User:ANONYMOUS;{dn('admin')}"},
        client_protocol="SSL")
    theirs = script(kafka.client_bootstrap, tls)
    config = {"emu.security.protocol": "SSL", "ssl.client.auth": "required", "emu.tls.client.certs": ",".join(USERS),
              "authorizer.class.name": AUTHORIZER, "super.users": dn("admin")}
    with run_cluster_in_thread(brokers=1, config=config) as tc:
        ours = script(tc.bootstrap, tc.cluster.security.tls)
    assert theirs == {"alice": "ok", "bob": "TOPIC_AUTHORIZATION_FAILED", "no certificate": "_MSG_TIMED_OUT"}
    assert ours == theirs
