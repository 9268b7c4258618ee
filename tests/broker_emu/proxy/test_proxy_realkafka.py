"""The proxy in front of a real 1-node Apache Kafka (conformance/realkafka; skipped when java or
the jars are missing: bash dev/install-kafka): confluent-kafka produces and consumes through it,
Metadata names the proxy, ApiVersions advertises only what the proxy can rewrite, and a black
hole on Produce is judged by the same contract as on the emulator."""

from __future__ import annotations

import time

import pytest

import client
from client.errors import KafkaError
from client.protocol import ProtocolError
from client.protocol.codec import decode_response, encode_request, supported_versions
from conformance.contracts import client_disconnects_after
from conformance.model import Evidence
from tests.broker_emu.proxy.conftest import add_fault, events, ports
from tests.broker_emu.proxy.wire import roundtrip

pytestmark = [pytest.mark.realclient, pytest.mark.slow]


@pytest.fixture(scope="module")
def kafka():
    from conformance.realkafka.cluster import apache_kafka_cluster
    from conformance.realkafka.install import KafkaNotInstalled, check_installed

    try:
        check_installed()
    except KafkaNotInstalled as exc:
        pytest.skip(str(exc))
    from conformance.realkafka.config import HARNESS

    with apache_kafka_cluster(brokers=1, config=HARNESS) as k:
        k.create_topic("pt", 1, 1)
        yield k


@pytest.fixture
def kproxy(kafka):
    from broker_emu.proxy.proxy import run_proxy_in_thread

    with run_proxy_in_thread(kafka.bootstrap) as tp:
        yield tp


def _versions(bootstrap: str) -> dict[int, tuple[int, int]]:
    body = {"client_software_name": "proxy-test", "client_software_version": "1"}
    answer = roundtrip(bootstrap, encode_request(18, 3, 3, "proxy-test", body))
    assert answer is not None
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in decode_response(18, 3, answer)[1]["api_keys"]}


def test_real_kafka_through_the_proxy(kafka, kproxy):
    ck = pytest.importorskip("confluent_kafka")
    answer = roundtrip(kproxy.bootstrap, encode_request(3, 12, 1, "proxy-test", {"topics": None}))
    assert answer is not None
    brokers = decode_response(3, 12, answer)[1]["brokers"]
    assert [(b["node_id"], b["port"]) for b in brokers] == [(b["node_id"], p) for b, p in zip(brokers, ports(kproxy.bootstrap))]
    direct, proxied = _versions(kafka.bootstrap), _versions(kproxy.bootstrap)
    assert set(proxied) == set(direct)
    for key, (lo, hi) in direct.items():   # capped to what the codec reads; APIs it does not know as Kafka has them
        try:
            codec_hi = supported_versions(key)[1]
        except ProtocolError:
            codec_hi = hi
        assert proxied[key] == (lo, min(hi, codec_hi)), key
    assert direct[0][1] > proxied[0][1]   # Kafka 4.4's Produce v13 (topic ids) is not offered through the proxy

    producer = ck.Producer({"bootstrap.servers": kproxy.bootstrap, "acks": "all", "linger.ms": 1})
    reports: list = []
    for i in range(20):
        producer.produce("pt", b"real-%d" % i, on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(30) == 0 and reports == [None] * 20
    consumer = ck.Consumer({"bootstrap.servers": kproxy.bootstrap, "group.id": f"g{time.time()}",
                            "auto.offset.reset": "earliest"})
    consumer.subscribe(["pt"])
    got: list[bytes] = []
    deadline = time.time() + 60
    while len(got) < 20 and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    assert sorted(got) == sorted(b"real-%d" % i for i in range(20))
    recvs = events(kproxy, "recv")
    assert {"Produce", "Fetch", "JoinGroup", "SyncGroup", "OffsetCommit"} <= {e.api for e in recvs}
    assert not [e for e in recvs if e.details.get("undecoded")]


def test_a_black_hole_in_front_of_real_kafka_is_judged_like_on_the_emulator(kproxy):
    add_fault(kproxy, {"match": {"api": "Produce"}, "action": "black_hole"})
    with client.Producer({"bootstrap.servers": kproxy.bootstrap, "acks": 1, "linger.ms": 0, "retries": 0,
                          "request.timeout.ms": 1000, "delivery.timeout.ms": 3000}) as producer:
        with pytest.raises(KafkaError):
            producer.send("pt", b"x", partition=0).result(10)
    time.sleep(0.3)
    evidence = Evidence(outcomes=[], trace=events(kproxy), config={"request.timeout.ms": 1000}, slack_ms=300)
    verdict = client_disconnects_after("Produce", "request.timeout.ms", 300).check(evidence)
    assert verdict.passed, (verdict.figure, verdict.message)
