"""The emulator and our codec against every request real clients sent (tests/client/protocol/corpus).

The corpus holds request frames kcat, confluent-kafka (with its AdminClient), kafka-python,
aiokafka, kafkajs and both faces of our own client sent to broker-emu during a rich session
each; ``tools/capture_corpus.py`` refreshes it (docs/codec.md). No client runs here: every
frame must be one the emulator reads (else it would close the connection on that client), must
re-encode to its own bytes, and may show only the anomalies ANOMALIES.json explains. The corpus
must still cover every category below, so a refresh that loses a category fails too.
"""

import functools
import json
import re

import pytest

from broker_emu.handler_catalog import register_all
from broker_emu.registry import REGISTRY
from client.protocol.codec import decode_request, encode_request
from tests.client.protocol.corpus_catalog import (
    CLIENTS,
    CORPUS,
    MANIFEST,
    Refused,
    categories,
    emulator_reads,
    expected_anomalies,
    load,
)

FRAMES = load()
ALL_CODECS = {"none", "gzip", "snappy", "lz4", "zstd"}
# What each client can write: kafka-python needs python-snappy / lz4 for those two and
# dev/install-clients does not install them; kafkajs needs a codec package for all but gzip.
PRODUCE_CODECS = {"kcat": ALL_CODECS, "confluent-kafka": ALL_CODECS, "aiokafka": ALL_CODECS,
                  "ours-blocking": ALL_CODECS, "ours-async": ALL_CODECS,
                  "kafka-python": {"none", "gzip", "zstd"}, "kafkajs": {"none", "gzip"}}
GROUP_APIS = {"FindCoordinator", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch"}
# Somewhere in the corpus, from some client.
REQUIRED = {
    "Metadata topics=null", "Metadata topics=empty", "Metadata topics=named", "Metadata topics=ids",
    *(f"Produce codec={c}" for c in ALL_CODECS), "Produce acks=0", "Produce acks=1", "Produce acks=-1",
    "Produce idempotent",
    "Fetch sessionless", "Fetch session requested", "Fetch topics by name", "Fetch topics by id",
    *GROUP_APIS,
    "CreateTopics", "DeleteTopics by name", "DeleteTopics by id", "DescribeConfigs", "DescribeCluster",
    "ListGroups", "DescribeGroups", "InitProducerId",
    "ListOffsets earliest", "ListOffsets latest", "ListOffsets by-time", "ListOffsets max-timestamp",
}
# APIs the emulator implements that no corpus frame shows, and why.
NOT_SENT = {
    "OffsetForLeaderEpoch": "clients send it only after a leader change (KIP-320), which no session provokes",
    "SaslAuthenticate": "the corpus cluster's listener is PLAINTEXT: SaslHandshake is answered ILLEGAL_SASL_STATE and "
                        "clients stop there (SASL listeners: tests/realclients/test_security.py)",
    "AlterClientQuotas": "no corpus client has the call (confluent-kafka, kafka-python, aiokafka, kafkajs, kcat); "
                         "the Go and Java clients do, outside the corpus tools",
    "DescribeClientQuotas": "the same",
    # share groups (KIP-932): no corpus client has a share consumer (ours has none yet, confluent-kafka's Python
    # binding does not expose librdkafka's preview); the Java client's KafkaShareConsumer sends them to the emulator
    # in tests/realclients/test_share_consumer.py, outside the corpus tools
    "ShareGroupHeartbeat": "no corpus client has a share consumer",
    "ShareGroupDescribe": "the same",
    "ShareFetch": "the same",
    "ShareAcknowledge": "the same",
    "DescribeShareGroupOffsets": "no corpus client has the share-group admin calls (the Java client's Admin does, "
                                 "tests/realclients/test_share_admin.py)",
    "AlterShareGroupOffsets": "the same",
    "DeleteShareGroupOffsets": "the same",
}


def _ids(frames):
    return [f"{f.client}/{f.path.name}" for f in frames]


def _read(frame):
    """(header, body, anomalies) as the emulator reads the frame; a refusal fails the test
    naming client, API, version and file."""
    try:
        return emulator_reads(frame.data)
    except Refused as exc:
        pytest.fail(f"the emulator would refuse {frame.name}: {exc}", pytrace=False)


@functools.cache
def _covered(client=None) -> set[str]:
    out: set[str] = set()
    for f in FRAMES:
        if client is None or f.client == client:
            try:
                header, body, _ = emulator_reads(f.data)
            except Refused:  # test_the_emulator_reads_every_frame names it
                continue
            out |= categories(header.api_key, header.api_version, body) if body is not None else {"ApiVersions"}
    return out


def test_the_corpus_is_there_and_small():
    assert {f.client for f in FRAMES} == set(CLIENTS), "a client has no frames: run tools/capture_corpus.py"
    assert sum(len(f.data) for f in FRAMES) < 2_000_000


@pytest.mark.parametrize("frame", FRAMES, ids=_ids(FRAMES))
def test_the_emulator_reads_every_frame(frame):
    header, _, _ = _read(frame)
    # corpus-X: tools/corpus_sessions; emu-rc-X: tests/realclients/sessions.py's scenarios
    assert header.client_id in (f"corpus-{frame.client}", f"emu-rc-{frame.client}"), \
        f"{frame.name}: sent by {header.client_id!r}"


@pytest.mark.parametrize("frame", FRAMES, ids=_ids(FRAMES))
def test_every_frame_reencodes_to_its_bytes(frame):
    header, body, anomalies = _read(frame)
    if body is None:
        pytest.skip("ApiVersions newer than the codec: answered in the v0 layout, not decoded")
    again = encode_request(header.api_key, header.api_version, header.correlation_id, header.client_id, body)[4:]
    if not anomalies:
        assert decode_request(frame.data)[1] == body, f"{frame.name}: strict and lenient reads differ"
        assert again == frame.data, f"{frame.name} re-encodes differently"
        return
    ignored = sum(int(m.group(1)) for a in anomalies if (m := re.match(r"(\d+) bytes after the body", a)))
    if ignored == 0 or len(again) != len(frame.data) - ignored:  # tags out of order: same message
        assert decode_request(again)[1] == body, f"{frame.name}: re-encoded does not read back the same"
    else:
        assert again == frame.data[:-ignored], f"{frame.name}: re-encoded is not the frame minus {ignored} bytes"


@pytest.mark.parametrize("frame", FRAMES, ids=_ids(FRAMES))
def test_anomalies_are_the_expected_ones(frame):
    _, _, anomalies = _read(frame)
    unexplained = set(anomalies) - set(expected_anomalies().get(frame.where, []))
    assert not unexplained, f"{frame.name}: new anomalies {sorted(unexplained)}: explain them in ANOMALIES.json"


def test_every_expected_anomaly_is_still_seen():
    seen = set()
    for f in FRAMES:
        try:
            seen |= {(f.where, a) for a in emulator_reads(f.data)[2]}
        except Refused:
            continue
    stale = {(w, a) for w, listed in expected_anomalies().items() for a in listed} - seen
    assert not stale, f"ANOMALIES.json lists what no frame shows any more: {sorted(stale)}"


def test_the_corpus_covers_the_required_categories():
    missing = REQUIRED - _covered()
    assert not missing, f"no frame shows {sorted(missing)}"


@pytest.mark.parametrize("client", CLIENTS)
def test_each_client_produces_with_every_codec_it_has_and_joins_a_group(client):
    covered = _covered(client)
    codecs = {c.split("=", 1)[1] for c in covered if c.startswith("Produce codec=")}
    assert codecs == PRODUCE_CODECS[client], f"{client}: Produce codecs"
    assert GROUP_APIS <= covered, f"{client}: missing group APIs {sorted(GROUP_APIS - covered)}"
    assert "Metadata topics=named" in covered and "Fetch" in covered


def test_every_api_the_emulator_implements_is_in_the_corpus():
    register_all()
    implemented = {api.api_name for api in REGISTRY}
    assert set(NOT_SENT) <= implemented, "NOT_SENT names an API the emulator no longer implements"
    missing = implemented - _covered() - set(NOT_SENT)
    assert not missing, f"no corpus frame for {sorted(missing)}: drive a client to it in tools/corpus_sessions"
    assert not set(NOT_SENT) & _covered(), "an API in NOT_SENT is in the corpus now: drop it from NOT_SENT"


def test_the_manifest_lists_the_files():
    manifest = json.loads(MANIFEST.read_text())
    listed = {(c, name) for c, entry in manifest["clients"].items() for name in entry["files"]}
    present = {(p.parent.name, p.name) for p in CORPUS.glob("*/*.bin")}
    assert listed == present, "MANIFEST.json and the files differ: refresh with tools/capture_corpus.py"
