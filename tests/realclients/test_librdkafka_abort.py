"""confluent-kafka's committed write lost after an abort (docs/chaos.md, "What it found", 5),
pinned on the emulator through the proxy (conformance/chaos/abort_repro.py; the same module
shows it on Apache Kafka 4.4 with ``--broker kafka``). A librdkafka that stops reusing the aborted
record's sequence makes this fail: then the finding in docs/chaos.md is to be updated."""

from __future__ import annotations

import pytest

from conformance.chaos.abort_repro import c_lost, run
from tests.realclients.clients import require_client

pytestmark = pytest.mark.realclient


def test_a_record_purged_by_an_abort_gives_its_sequence_and_offset_to_the_next_transaction():
    require_client("confluent-kafka")
    found = run("emulator")
    assert found["told"][b"B"][0] == "_PURGE_QUEUE", found      # B's answer was lost, the abort purged it
    offset = found["told"][b"C"][1]
    assert found["told"][b"C"][0] is None and found["log"].get(offset) == b"B", found   # C told B's offset
    assert c_lost(found) and b"C" not in [v for _, v in found["read_committed"]], found
