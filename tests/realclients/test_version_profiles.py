"""A real client negotiating down under an old version profile (issue 19, item 4): confluent-kafka
produces and consumes against the emulator as Kafka 4.4 and as a Kafka 2.8 broker; under 2.8 it
uses only what 2.8 advertised, and the versions it picks differ from the ones it uses today."""

from __future__ import annotations

import pytest

from tests.realclients.conftest import require_client

pytestmark = [pytest.mark.realclient]


def versions_used(release: str) -> dict[str, int]:
    from confluent_kafka import Consumer, Producer, TopicPartition

    from broker_emu import run_cluster_in_thread

    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)], config={"emu.kafka.version": release}) as tc:
        p = Producer({"bootstrap.servers": tc.bootstrap, "log_level": 0})
        p.produce("t", b"v", partition=0)
        assert p.flush(20) == 0
        c = Consumer({"bootstrap.servers": tc.bootstrap, "group.id": "g", "log_level": 0})
        c.assign([TopicPartition("t", 0, 0)])
        got = None
        for _ in range(40):
            got = c.poll(0.5)
            if got is not None and not got.error():
                break
        c.close()
        assert got is not None and got.value() == b"v"
        events = tc.call(lambda: [(e.api, e.api_version) for e in tc.cluster.trace.events if e.kind == "recv"])
    used: dict[str, int] = {}
    for api, version in events:
        used[api] = max(used.get(api, -1), version)
    return used


def test_confluent_kafka_negotiates_down_to_kafka_2_8():
    require_client("confluent-kafka")
    today, old = versions_used(""), versions_used("2.8")
    assert old["Produce"] <= 9 and old["Fetch"] <= 12 and old["Metadata"] <= 11 and old["ApiVersions"] <= 3
    assert (today["Produce"], today["Fetch"]) != (old["Produce"], old["Fetch"]), (today, old)
