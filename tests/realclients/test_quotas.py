"""Client quotas with a real client: AlterClientQuotas (sent on the wire: neither confluent-kafka
nor kafka-python has the admin call) caps a client id's producer_byte_rate, and librdkafka is told
of the throttle in its Produce answers (its throttle_cb) — on the emulator and on Kafka 4.4."""

import socket
import time

import pytest

from client.protocol import ApiKey
from client.protocol.codec import decode_response, encode_request
from tests.realclients.conftest import require_client

pytestmark = [pytest.mark.realclient, pytest.mark.any_broker]


def _alter_quota(bootstrap: str, client_id: str, key: str, value: float) -> int:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    body = {"entries": [{"entity": [{"entity_type": "client-id", "entity_name": client_id}],
                         "ops": [{"key": key, "value": value, "remove": False}]}], "validate_only": False}
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(encode_request(ApiKey.ALTER_CLIENT_QUOTAS, 1, 1, "admin", body))
        size = int.from_bytes(s.recv(4, socket.MSG_WAITALL), "big")
        _, answer = decode_response(ApiKey.ALTER_CLIENT_QUOTAS, 1, s.recv(size, socket.MSG_WAITALL))
    return answer.entries[0].error_code


def test_confluent_kafka_is_throttled_past_its_producer_byte_rate(cluster):
    require_client("confluent-kafka")
    from confluent_kafka import Producer

    assert _alter_quota(cluster.bootstrap, "capped", "producer_byte_rate", 100_000) == 0
    time.sleep(1)   # Kafka's brokers learn the controller's quota a moment later
    throttles: list[int] = []
    p = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": "capped", "log_level": 0, "linger.ms": 5,
                  "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    start = time.monotonic()
    for _ in range(20):
        p.produce("t", b"x" * 100_000, partition=0)
        p.poll(0)
    assert p.flush(60) == 0
    while not throttles and time.monotonic() - start < 30:
        p.poll(0.1)
    assert throttles and max(throttles) > 0, throttles   # 2 MB against 100 KB/s: told to back off
