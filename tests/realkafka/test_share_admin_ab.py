"""Share-group offsets (KIP-932's admin calls) on Apache Kafka 4.4 and on the emulator: the story
of tests/realclients/test_share_admin.py — Java's Admin listing, altering and deleting the
offsets around three members of our share consumer — told on both, every answer compared (the
start offsets and lags, the refusals while a member is there, the next member reading from the
altered start offset and, after the delete, from share.auto.offset.reset again)."""

from __future__ import annotations

import uuid

import pytest

from broker_emu.runtime import run_cluster_in_thread
from tests.realclients.test_share_admin import EXPECTED, story

# alone, as the other share A/Bs: a loaded JVM beside other workers is slow to set share partitions up
pytestmark = [pytest.mark.realkafka, pytest.mark.alone]


@pytest.fixture(scope="module")
def java():
    from conformance.adapters.java_client import JavaAdapter
    from tests.realclients.clients import require_adapter

    adapter = JavaAdapter()
    require_adapter(adapter)
    yield adapter
    adapter.shutdown()


def test_share_group_offsets_answer_as_kafka(java, kafka1):
    suffix = uuid.uuid4().hex[:8]
    theirs = story(java, kafka1.bootstrap, f"sg-{suffix}", f"shadm-{suffix}")
    with run_cluster_in_thread(brokers=1) as tc:
        ours = story(java, tc.bootstrap, "sg", "shadm")
    assert ours == theirs
    assert theirs == EXPECTED
