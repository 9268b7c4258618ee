"""Our codec against request frames captured during this test run from real clients.

The frames come from confluent-kafka, kafka-python, aiokafka, kcat and kafkajs talking to a
loopback listener (``tests/realclients``): no bytes are taken from other projects. Each frame
must decode, with the field values the client was configured with, and re-encode to the very
same bytes.
"""

import re

import pytest

from client.protocol import ApiKey, records
from client.protocol.codec import decode_request, encode_request
from tests.realclients.clients import ALL_CLIENTS
from tests.realclients.sessions import SCENARIOS, TOPIC, session

pytestmark = pytest.mark.realclient

CASES = [(client, scenario) for client in ALL_CLIENTS for scenario in SCENARIOS]

# client_software_name sent in ApiVersions v3+; kafkajs (v2) and aiokafka (v0) send none.
SOFTWARE_NAME = {"confluent-kafka": "confluent-kafka-python", "kcat": "librdkafka", "kafka-python": "kafka-python"}
# KIP-511: what a broker accepts as client software name and version.
SOFTWARE_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
# Produce timeout_ms: librdkafka and kafkajs send their 30 s default; the two Python clients send
# their request_timeout_ms, which the driver sets to 4 s.
PRODUCE_TIMEOUT_MS = {"confluent-kafka": 30000, "kcat": 30000, "kafkajs": 30000, "kafka-python": 4000, "aiokafka": 4000}

# (partition_leader_epoch, producer_epoch, base_sequence) a non-idempotent producer writes: not
# every client writes the -1s Kafka's own producer does, so a broker must not insist on them.
BATCH_FIELDS = {"confluent-kafka": (0, -1, -1), "kcat": (0, -1, -1), "kafka-python": (0, -1, -1),
                "aiokafka": (-1, -1, 0), "kafkajs": (0, 0, 0)}


def frames_of(client, scenario, api_key=None):
    s = session(client, scenario)
    frames = [f for f in s.frames if api_key is None or f.api_key == api_key]
    assert frames, s.describe()
    return s, frames


@pytest.mark.parametrize(("client", "scenario"), CASES)
def test_every_frame_decodes_with_the_configured_header(client, scenario):
    s, frames = frames_of(client, scenario)
    for frame in frames:
        header, _ = decode_request(frame.data)
        assert (header.api_key, header.api_version, header.correlation_id) == (
            frame.api_key, frame.api_version, frame.correlation_id)
        assert header.client_id == s.client_id


@pytest.mark.parametrize(("client", "scenario"), CASES)
def test_every_frame_reencodes_to_the_same_bytes(client, scenario):
    _, frames = frames_of(client, scenario)
    for frame in frames:
        header, body = decode_request(frame.data)
        again = encode_request(header.api_key, header.api_version, header.correlation_id, header.client_id, body)
        assert again[4:] == frame.data, f"{frame!r} re-encoded differently"


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_api_versions_names_the_client_software(client):
    s, frames = frames_of(client, "silent", ApiKey.API_VERSIONS)
    _, body = decode_request(frames[0].data)
    if frames[0].api_version < 3:
        assert client not in SOFTWARE_NAME
        return
    assert body.client_software_name == SOFTWARE_NAME[client]
    # confluent-kafka: "2.16.1-rdkafka-2.16.0"; kcat: librdkafka's own version
    installed = s.version.split()[-1].rstrip(")") if client == "kcat" else s.version
    assert body.client_software_version.startswith(installed)
    assert SOFTWARE_PATTERN.fullmatch(body.client_software_name)
    assert SOFTWARE_PATTERN.fullmatch(body.client_software_version)


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_metadata_asks_for_the_topic(client):
    _, frames = frames_of(client, "produce", ApiKey.METADATA)
    asked = set()
    for frame in frames:
        _, body = decode_request(frame.data)
        asked.update(t.name for t in body.topics or ())
    assert asked == {TOPIC}


@pytest.mark.parametrize("scenario", ["produce", "fallback"])
@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_produce_carries_the_record(client, scenario):
    s, frames = frames_of(client, scenario, ApiKey.PRODUCE)
    assert len(frames) == 1, s.describe()
    _, body = decode_request(frames[0].data)
    assert body.acks == 1
    assert body.transactional_id is None
    assert body.timeout_ms == PRODUCE_TIMEOUT_MS[client]
    assert [t.name for t in body.topic_data] == [TOPIC]
    [partition] = body.topic_data[0].partition_data
    assert partition.index == 0
    batch = partition.records
    assert [offset for offset, _ in records.iter_batches(batch)] == [0]  # exactly one batch
    header, recs = records.decode_batch(batch)
    assert (header.magic, header.records_count, header.last_offset_delta, header.compression) == (2, 1, 0, 0)
    assert header.producer_id == -1  # not idempotent
    assert (header.partition_leader_epoch, header.producer_epoch, header.base_sequence) == BATCH_FIELDS[client]
    assert [(r.key, r.value, list(r.headers)) for r in recs] == [(None, s.value.encode(), [])]
    assert recs[0].timestamp == header.base_timestamp == header.max_timestamp > 0
