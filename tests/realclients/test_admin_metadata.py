"""Requests a released client sends and Apache Kafka accepts are accepted here too.

librdkafka 2.16's admin client sends 3 bytes after its Metadata v12 body when it lists every
topic; Kafka's broker ignores them (client/protocol/codec.py, decode_request), so must we —
and the trace still says so, as a ``request_anomaly``."""

import pytest

from tests.realclients.conftest import require_client

pytestmark = pytest.mark.realclient


def _events(cluster, kind):
    return cluster.call(lambda: [e for e in cluster.cluster.trace.events if e.kind == kind])


def test_confluent_admin_lists_every_topic_without_losing_its_connection(cluster):
    require_client("confluent-kafka")
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for _ in range(3):  # three calls, one connection: nothing closes it
        md = admin.list_topics(timeout=10)
        assert "t" in md.topics and len(md.topics["t"].partitions) == 3
        assert sorted(md.brokers) == [0, 1, 2]
    closed_by_broker = [e for e in _events(cluster, "conn_close") if e.details.get("closed_by") == "broker"]
    assert closed_by_broker == []
    anomalies = [e for e in _events(cluster, "request_anomaly") if e.api == "Metadata"]
    assert anomalies and all("bytes after the body" in a for e in anomalies for a in e.details["anomalies"])
