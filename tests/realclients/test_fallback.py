"""ApiVersions fallback: the broker serves ApiVersions v0 only (scenario ``fallback``).

A request above v0 gets what a real broker sends for an ApiVersions version it does not know: a
v0-format UNSUPPORTED_VERSION listing ApiVersions 0-0 (KIP-511; Kafka's
RequestContext.parseRequest and ApiVersionsRequest.getErrorResponse). Each client must then
retry on the same connection and go on to produce.
"""

import pytest

from .clients import ALL_CLIENTS
from .sessions import session

API_VERSIONS = 18

# ApiVersions versions sent on the first connection, in order.
FALLBACK = {
    "confluent-kafka": [3, 0],  # librdkafka: straight to v0, whatever the broker listed
    "kcat": [3, 0],
    "kafka-python": [4, 0],  # the broker's advertised max for key 18
    "aiokafka": [0],  # never sends anything else
    "kafkajs": [2, 1, 0],  # one version down at a time
}
# ApiVersions versions sent first on the second connection, where there is one: kafka-python
# remembers the broker's version, librdkafka starts from the top again.
SECOND_CONNECTION = {"confluent-kafka": [3, 0], "kafka-python": [0], "aiokafka": [0]}

pytestmark = pytest.mark.realclient


def api_versions_on(s, connection):
    return [f.api_version for f in s.on_connection(connection) if f.api_key == API_VERSIONS]


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_fallback_on_the_same_connection_then_produce(client):
    s = session(client, "fallback")
    assert not s.harness_errors, s.describe()
    assert api_versions_on(s, 0) == FALLBACK[client], s.describe()
    assert s.run.delivered, s.describe()


@pytest.mark.parametrize("client", sorted(SECOND_CONNECTION))
def test_second_connection(client):
    s = session(client, "fallback")
    assert api_versions_on(s, 1) == SECOND_CONNECTION[client], s.describe()
