"""Which record format each client writes when the broker does not advertise Fetch.

librdkafka decides whether the broker takes record batches v2 from the advertised Produce *and*
Fetch versions (its "MsgVer2" feature needs Produce v3 and Fetch v4): a producer-only listener
that advertises just ApiVersions, Metadata and Produce gets a magic-0 message set inside Produce
v7+, which a real broker refuses. The emulator must therefore advertise Fetch on every listener.
The other clients ignore it and keep writing v2.
"""

import pytest

from .clients import ALL_CLIENTS
from .sessions import session

PRODUCE = 0
MAGIC_AT = 16  # same byte in a v0/v1 message set (offset, size, crc, magic) and a v2 batch
LIBRDKAFKA = {"confluent-kafka", "kcat"}

pytestmark = pytest.mark.realclient


def magics(s):
    from client.protocol.codec import decode_request  # the codec: records stay raw bytes

    found = []
    for frame in s.frames:
        if frame.api_key == PRODUCE:
            _, body = decode_request(frame.data)
            found += [p.records[MAGIC_AT] for t in body.topic_data for p in t.partition_data]
    return found


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_record_format_without_fetch_advertised(client):
    s = session(client, "no-fetch")
    assert not s.harness_errors, s.describe()
    found = magics(s)
    assert found, s.describe()
    if client in LIBRDKAFKA:
        assert set(found) == {0}, s.describe()
        assert not s.run.delivered, s.describe()  # INVALID_RECORD, as from a real broker
    else:
        assert found == [2], s.describe()
        assert s.run.delivered, s.describe()


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_record_batch_v2_with_fetch_advertised(client):
    assert magics(session(client, "produce")) == [2]
