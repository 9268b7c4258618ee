"""What each real client sends first, to a listener that never answers (scenario ``silent``).

The figures pin the client versions dev/install-clients installs; docs/real-clients.md explains
them. They matter to the emulator: ApiVersions must be served at every version a client opens
with, and nothing may be required before it (Kafka's NetworkClient.handleApiVersionsResponse, KIP-511).
"""

import pytest

from .clients import ALL_CLIENTS
from .sessions import session

API_VERSIONS = 18

# The ApiVersions version each client opens a connection with.
FIRST_API_VERSIONS = {"confluent-kafka": 3, "kcat": 3, "kafka-python": 4, "aiokafka": 0, "kafkajs": 2}
# kafkajs numbers its requests from 0, the others from 1.
FIRST_CORRELATION_ID = {"kafkajs": 0}
# kcat -P exits 1 when a record was not delivered; the others report it and exit 0.
EXIT_WHEN_UNDELIVERED = {"kcat": 1}

pytestmark = pytest.mark.realclient


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_client_opens_with_api_versions_and_nothing_behind_it(client):
    s = session(client, "silent")
    assert not s.harness_errors, s.describe()
    first = s.on_connection(0)
    assert [(f.api_key, f.api_version) for f in first] == [(API_VERSIONS, FIRST_API_VERSIONS[client])], s.describe()
    assert first[0].correlation_id == FIRST_CORRELATION_ID.get(client, 1)


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_client_gives_up_by_itself_against_a_silent_listener(client):
    s = session(client, "silent")
    assert not s.run.delivered, s.describe()
    assert s.run.returncode == EXIT_WHEN_UNDELIVERED.get(client, 0), s.describe()
    assert s.run.result.get("error"), s.describe()
