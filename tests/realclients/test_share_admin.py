"""KIP-932's share-group offset calls with a real client: Apache Kafka's Admin (kafka-clients
4.4.0: listShareGroupOffsets, alterShareGroupOffsets, deleteShareGroupOffsets, through the Java
adapter program's ``share_admin`` step) against the emulator, in real time. A share member
reads and acknowledges; the admin sees the start offset and lag it left, cannot alter or delete
while the member is there, sets a new start offset once it has gone (the next member reads from
it), and deletes the state (the next member starts again from share.auto.offset.reset)."""

from __future__ import annotations

import time

import pytest

from broker_emu.runtime import run_cluster_in_thread
from client import ShareConsumer
from tests.realclients.test_java_client import _require_java, one

pytestmark = [pytest.mark.realclient]


@pytest.fixture(scope="module")
def java():
    from conformance.adapters.java_client import JavaAdapter

    adapter = JavaAdapter()
    _require_java(adapter)
    yield adapter
    adapter.shutdown()


def _steps(java, bootstrap: str, *steps: dict) -> list:
    out = one(java, bootstrap, "share_admin", group="sg", steps=list(steps)).value
    return [s["value"] for s in out]


def _poll_until(c, want: int, within_s: float = 20.0) -> list:
    got: list = []
    deadline = time.monotonic() + within_s
    while len(got) < want and time.monotonic() < deadline:
        got += c.poll(0.5)
    return got


def test_java_admin_lists_alters_and_deletes_share_group_offsets(java):
    with run_cluster_in_thread(brokers=1, topics=[("t", 1, 1)]) as tc:
        tc.call(lambda: tc.cluster.group_configs.overrides.setdefault("sg", {}).update(
            {"share.auto.offset.reset": "earliest"}))
        one(java, tc.bootstrap, "produce_batch", topic="t", records=[{"value": f"m{i}", "partition": 0} for i in range(5)])
        assert _steps(java, tc.bootstrap, {"op": "list"}, {"op": "delete", "group": "never", "topics": ["t"]}) == [
            {}, {"t": "error: GroupIdNotFoundException"}]
        with ShareConsumer({"bootstrap.servers": tc.bootstrap, "group.id": "sg"}) as c:
            c.subscribe(["t"])
            assert [r.offset for r in _poll_until(c, 5)] == [0, 1, 2, 3, 4]
            assert c.commit_sync(10.0) == {("t", 0): None}
            listed, altered, deleted = _steps(java, tc.bootstrap, {"op": "list"},
                                              {"op": "alter", "offsets": {"t-0": 2}}, {"op": "delete", "topics": ["t"]})
            assert listed == {"t-0": [5, 0, 0]}
            assert altered == {"t-0": "error: GroupNotEmptyException"}
            assert deleted == {"t": "error: GroupNotEmptyException"}
        # the member has left: the group is empty
        altered, listed, named, unknown = _steps(
            java, tc.bootstrap, {"op": "alter", "offsets": {"t-0": 2}}, {"op": "list"},
            {"op": "list", "partitions": ["t-0", "nope-0"]}, {"op": "alter", "offsets": {"nope-0": 0}})
        assert altered == {"t-0": "ok"}
        assert listed == {"t-0": [2, 0, 3]} and named == {"t-0": [2, 0, 3], "nope-0": None}
        assert unknown == {"nope-0": "error: UnknownTopicOrPartitionException"}
        with ShareConsumer({"bootstrap.servers": tc.bootstrap, "group.id": "sg"}) as c:
            c.subscribe(["t"])
            assert [r.offset for r in _poll_until(c, 3)] == [2, 3, 4]     # from the altered start offset
            c.commit_sync(10.0)
        deleted, listed, again = _steps(java, tc.bootstrap, {"op": "delete", "topics": ["t"]}, {"op": "list"},
                                        {"op": "delete", "topics": ["t"]})
        assert deleted == {"t": "ok"} and listed == {}
        assert again == {"t": "error: UnknownTopicOrPartitionException"}
        with ShareConsumer({"bootstrap.servers": tc.bootstrap, "group.id": "sg"}) as c:
            c.subscribe(["t"])
            assert [r.offset for r in _poll_until(c, 5)] == [0, 1, 2, 3, 4]   # earliest again: the state went
