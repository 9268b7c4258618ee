"""Each real client produces one record (acks=1) to ``SingleBroker`` and sees it acknowledged.

The request sequences pin what the installed client versions do; docs/real-clients.md explains
them (which connection is the bootstrap one, why some clients open a second connection).
"""

import pytest

from .clients import ALL_CLIENTS
from .sessions import session

GET_TELEMETRY_SUBSCRIPTIONS = 71

# (api_key, version) per connection, in order; GetTelemetrySubscriptions left aside (librdkafka
# 2.5+ sends it when the broker advertises it, at a moment of its own choosing).
SEQUENCES = {
    "confluent-kafka": [[(18, 3), (3, 12)], [(18, 3), (0, 10)]],
    "kcat": [[(18, 3), (3, 4), (0, 7)]],
    "kafka-python": [[(18, 4), (3, 12)], [(18, 4), (3, 12), (0, 9)]],
    "aiokafka": [[(18, 0), (3, 5)], [(18, 0), (3, 5), (0, 7)]],
    "kafkajs": [[(18, 2), (3, 6), (0, 7)]],
}

pytestmark = pytest.mark.realclient


def sequences(s):
    conns = sorted({f.connection for f in s.frames})
    return [[(f.api_key, f.api_version) for f in s.on_connection(c) if f.api_key != GET_TELEMETRY_SUBSCRIPTIONS]
            for c in conns]


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_record_is_acknowledged(client):
    s = session(client, "produce")
    assert not s.harness_errors, s.describe()
    assert s.run.delivered, s.describe()
    assert s.run.result.get("error") is None, s.describe()


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_request_sequence(client):
    s = session(client, "produce")
    assert sequences(s) == SEQUENCES[client], s.describe()


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_only_telemetry_is_left_unanswered(client):
    s = session(client, "produce")
    assert {f.api_key for f in s.unhandled} <= {GET_TELEMETRY_SUBSCRIPTIONS}, s.describe()
