"""KIP-932's share-group offset calls with a real client: Apache Kafka's Admin (kafka-clients
4.4.0: listShareGroupOffsets, alterShareGroupOffsets, deleteShareGroupOffsets, through the Java
adapter program's ``share_admin`` step) against the emulator, in real time. A share member
reads and acknowledges; the admin sees the start offset and lag it left, cannot alter or delete
while the member is there, sets a new start offset once it has gone (the next member reads from
it), and deletes the state (the next member starts again from share.auto.offset.reset). The same
story runs on Apache Kafka 4.4 in tests/realkafka/test_share_admin_ab.py."""

from __future__ import annotations

import time

import pytest

from broker_emu.runtime import run_cluster_in_thread
from client import Admin, NewTopic, ShareConsumer
from tests.realclients.clients import require_adapter
from tests.realclients.test_java_client import one

pytestmark = [pytest.mark.realclient]
GROUP_RESOURCE, SET = 32, 0
EXPECTED = [
    ("before", [{}, {"t": "error: GroupIdNotFoundException"}]),
    ("read", [0, 1, 2, 3, 4]),
    # the member's five acknowledgements went in one write, with the start offset from before they
    # moved it: start 0, the five counted as delivered, lag 0 (as Kafka 4.4 answered)
    ("with a member", [{"t-0": [0, 0, 0]}, {"t-0": "error: GroupNotEmptyException"},
                       {"t": "error: GroupNotEmptyException"}]),
    ("empty", [{"t-0": "ok"}, {"t-0": [2, 0, 3]}, {"t-0": [2, 0, 3], "nope-0": None},
               {"nope-0": "error: UnknownTopicOrPartitionException"}]),
    ("read after alter", [2, 3, 4]),
    ("deleted", [{"t": "ok"}, {}, {"t": "error: UnknownTopicOrPartitionException"}]),
    ("read after delete", [0, 1, 2, 3, 4]),
]


@pytest.fixture(scope="module")
def java():
    from conformance.adapters.java_client import JavaAdapter

    adapter = JavaAdapter()
    require_adapter(adapter)
    yield adapter
    adapter.shutdown()


def _read(bootstrap: str, group: str, topic: str, want: int, within_s: float = 30.0) -> list[int]:
    with ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group}) as c:
        c.subscribe([topic])
        got: list = []
        deadline = time.monotonic() + within_s
        while len(got) < want and time.monotonic() < deadline:
            got += c.poll(0.5)
        assert c.commit_sync(10.0) in ({}, {(topic, 0): None})
        return [r.offset for r in got]


def story(java, bootstrap: str, group: str, topic: str) -> list:
    """The admin calls around three share members' lives, each answer in order (topic names as
    ``t`` whatever ``topic`` is, so two clusters' stories compare)."""
    def steps(*asked: dict) -> list:
        out = one(java, bootstrap, "share_admin", group=group, steps=list(asked)).value
        return [_named(s["value"], topic) for s in out]

    tp, nope = f"{topic}-0", f"{topic}-nope-0"
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        assert admin.create_topics([NewTopic(topic, 1, 1)], timeout=30) == {topic: None}
        assert admin.incremental_alter_configs({(GROUP_RESOURCE, group): [
            ("share.auto.offset.reset", SET, "earliest")]}, timeout=30) == {(GROUP_RESOURCE, group): None}
    one(java, bootstrap, "produce_batch", topic=topic, records=[{"value": f"m{i}", "partition": 0} for i in range(5)])
    out: list = [("before", steps({"op": "list"}, {"op": "delete", "group": group + "-never", "topics": [topic]}))]
    with ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group}) as c:
        c.subscribe([topic])
        got: list = []
        deadline = time.monotonic() + 30
        while len(got) < 5 and time.monotonic() < deadline:
            got += c.poll(0.5)
        c.commit_sync(10.0)
        out.append(("read", [r.offset for r in got]))
        out.append(("with a member", steps({"op": "list"}, {"op": "alter", "offsets": {tp: 2}},
                                           {"op": "delete", "topics": [topic]})))
    out.append(("empty", steps({"op": "alter", "offsets": {tp: 2}}, {"op": "list"},
                               {"op": "list", "partitions": [tp, nope]}, {"op": "alter", "offsets": {nope: 0}})))
    out.append(("read after alter", _read(bootstrap, group, topic, 3)))
    out.append(("deleted", steps({"op": "delete", "topics": [topic]}, {"op": "list"}, {"op": "delete", "topics": [topic]})))
    out.append(("read after delete", _read(bootstrap, group, topic, 5)))
    return out


def _named(value, topic: str):
    """The story's names: the topic as ``t``, the missing one as ``nope``."""
    if isinstance(value, dict):
        return {_named(k, topic): v for k, v in value.items()}
    if isinstance(value, str):
        return value.replace(f"{topic}-nope", "nope").replace(topic, "t")
    return value


def test_java_admin_lists_alters_and_deletes_share_group_offsets(java):
    with run_cluster_in_thread(brokers=1) as tc:
        assert story(java, tc.bootstrap, "sg", "shadm") == EXPECTED
