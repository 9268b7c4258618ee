"""Each real client produces one record (acks=1) to ``SingleBroker`` and sees it acknowledged.

The versions and connections pin what the installed client versions do; docs/real-clients.md
explains them (which connection is the bootstrap one, why some clients open a second one).
"""

import pytest

from .clients import ALL_CLIENTS
from .sessions import session

GET_TELEMETRY_SUBSCRIPTIONS = 71
API_VERSIONS, METADATA, PRODUCE = 18, 3, 0

# The version each client uses per API against a broker that advertises everything our codec
# knows (GetTelemetrySubscriptions aside: librdkafka 2.5+ sends it when advertised).
VERSIONS = {
    "confluent-kafka": {API_VERSIONS: 3, METADATA: 13, PRODUCE: 10},
    "kcat": {API_VERSIONS: 3, METADATA: 4, PRODUCE: 7},
    "kafka-python": {API_VERSIONS: 4, METADATA: 13, PRODUCE: 9},
    "aiokafka": {API_VERSIONS: 0, METADATA: 5, PRODUCE: 7},
    "kafkajs": {API_VERSIONS: 2, METADATA: 6, PRODUCE: 7},
}
# The connection the Produce goes out on: librdkafka 2.16 and the Python clients open a second
# connection to the broker Metadata named, although it is the bootstrap address again.
PRODUCE_CONNECTION = {"confluent-kafka": 1, "kcat": 0, "kafka-python": 1, "aiokafka": 1, "kafkajs": 0}

pytestmark = pytest.mark.realclient


def versions(s):
    used: dict[int, set[int]] = {}
    for f in s.frames:
        if f.api_key != GET_TELEMETRY_SUBSCRIPTIONS:
            used.setdefault(f.api_key, set()).add(f.api_version)
    return used


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_record_is_acknowledged(client):
    s = session(client, "produce")
    assert not s.harness_errors, s.describe()
    assert s.run.delivered, s.describe()
    assert s.run.result.get("error") is None, s.describe()


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_api_versions_used(client):
    s = session(client, "produce")
    assert versions(s) == {api: {v} for api, v in VERSIONS[client].items()}, s.describe()


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_every_connection_opens_with_api_versions(client):
    s = session(client, "produce")
    openers = [f.api_key for f in s.frames if f.position == 0]
    assert len(openers) == len({f.connection for f in s.frames}), s.describe()
    assert set(openers) == {API_VERSIONS}, s.describe()


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_one_produce_after_metadata_for_the_topic(client):
    # how many Metadata requests come first is up to the client's timing (librdkafka sometimes
    # refreshes the broker list first), so only the order is pinned
    s = session(client, "produce")
    produces = [f for f in s.frames if f.api_key == PRODUCE]
    assert [f.connection for f in produces] == [PRODUCE_CONNECTION[client]], s.describe()
    before = s.frames[:s.frames.index(produces[0])]
    assert any(f.api_key == METADATA for f in before), s.describe()


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_only_telemetry_is_left_unanswered(client):
    s = session(client, "produce")
    assert {f.api_key for f in s.unhandled} <= {GET_TELEMETRY_SUBSCRIPTIONS}, s.describe()
