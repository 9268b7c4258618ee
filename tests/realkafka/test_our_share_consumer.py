"""Our share consumer (client.ShareConsumer) on Apache Kafka 4.4, in real time: it consumes with
the delivery count Kafka gives, sees the acquisition lock Kafka returns, a second member receives
the records again (delivery count 2) once the first member's 15 s locks have run out on the
broker, its acceptance is acknowledged, and the first member's late acknowledgement is refused
with INVALID_RECORD_STATE. RENEW (KIP-1222) keeps a record past its first lock. About 60 s."""

from __future__ import annotations

import time
import uuid

import pytest

import client
from client.admin import NewTopic
from client.errors import InvalidRecordStateError
from client.share.acknowledgements import AcknowledgeType

# alone, as the share groups A/B: a loaded JVM beside four workers may answer the fetch waiting on
# an expired lock late
pytestmark = [pytest.mark.realkafka, pytest.mark.alone]
LOCK_MS = 15_000   # the least a group may set under Kafka's default group.share.min.record.lock.duration.ms
GROUP_RESOURCE = 32


def _poll_until(c, seconds: float) -> list:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got = c.poll(1.0)
        if got:
            return got
    raise AssertionError(f"no records within {seconds} s (assignment {c.assignment()})")


def test_our_share_consumer_consumes_acknowledges_and_sees_a_redelivery(kafka1):
    topic, group = f"share-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    boot = {"bootstrap.servers": kafka1.bootstrap}
    with client.Admin(boot) as admin:
        assert admin.create_topics([NewTopic(topic, 1, 1)], timeout=30) == {topic: None}
        changed = admin.incremental_alter_configs({(GROUP_RESOURCE, group): [
            ("share.auto.offset.reset", 0, "earliest"), ("share.record.lock.duration.ms", 0, str(LOCK_MS))]}, timeout=30)
        assert list(changed.values()) == [None], changed
    with client.Producer(boot) as p:
        for i in range(3):
            p.send(topic, b"m%d" % i, partition=0).result(30)
    config = {**boot, "group.id": group, "share.acknowledgement.mode": "explicit"}
    with client.ShareConsumer({**config, "client.id": "first"}) as first, \
            client.ShareConsumer({**config, "client.id": "second"}) as second:
        first.subscribe([topic])
        held = _poll_until(first, 60)
        taken = time.monotonic()
        assert [(r.offset, r.value, r.delivery_count) for r in held] == [(i, b"m%d" % i, 1) for i in range(3)]
        assert first.acquisition_lock_timeout_ms() == LOCK_MS and held[0].acquisition_lock_timeout_ms == LOCK_MS
        second.subscribe([topic])           # first holds its records past the lock
        again = _poll_until(second, 60)
        waited = time.monotonic() - taken
        assert [(r.offset, r.value, r.delivery_count) for r in again] == [(i, b"m%d" % i, 2) for i in range(3)]
        # no sooner than the lock, and not long after it (generous: a JVM on a loaded machine)
        assert LOCK_MS / 1000 - 1.0 <= waited <= LOCK_MS / 1000 + 15, waited
        print(f"redelivered {waited:.2f} s after the first delivery (lock {LOCK_MS} ms)")
        # first's acknowledgement comes too late: the records are second's now (Kafka refuses it
        # while they are in flight; once second has settled them, they are behind the share
        # partition's start offset and Kafka lets an acknowledgement of them pass)
        for r in held:
            first.acknowledge(r, AcknowledgeType.ACCEPT)
        late = first.commit_sync(30)
        assert list(late) == [(topic, 0)] and isinstance(late[(topic, 0)], InvalidRecordStateError), late
        for r in again:
            second.acknowledge(r, AcknowledgeType.ACCEPT)
        assert second.commit_sync(30) == {(topic, 0): None}
    assert first.close_report == [] and second.close_report == []


def test_renew_keeps_a_record_past_its_first_lock_on_kafka(kafka1):
    """KIP-1222 on Kafka 4.4: RENEW 10 s into a 15 s lock; the record stays ours past the first
    lock's end (another member polling all along gets nothing), and our ACCEPT 20 s in is taken.
    About 25 s."""
    topic, group = f"renew-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    boot = {"bootstrap.servers": kafka1.bootstrap}
    with client.Admin(boot) as admin:
        assert admin.create_topics([NewTopic(topic, 1, 1)], timeout=30) == {topic: None}
        changed = admin.incremental_alter_configs({(GROUP_RESOURCE, group): [
            ("share.auto.offset.reset", 0, "earliest"), ("share.record.lock.duration.ms", 0, str(LOCK_MS))]}, timeout=30)
        assert list(changed.values()) == [None], changed
    with client.Producer(boot) as p:
        p.send(topic, b"slow", partition=0).result(30)
    config = {**boot, "group.id": group, "share.acknowledgement.mode": "explicit"}
    with client.ShareConsumer({**config, "client.id": "keeper"}) as keeper, \
            client.ShareConsumer({**config, "client.id": "other"}) as other:
        keeper.subscribe([topic])
        [record] = _poll_until(keeper, 60)
        taken = time.monotonic()
        other.subscribe([topic])
        seen = []
        while time.monotonic() < taken + 10:
            seen += other.poll(0.5)
        keeper.acknowledge(record, AcknowledgeType.RENEW)
        renewed = keeper.poll(10.0)
        assert [(r.offset, r.delivery_count) for r in renewed] == [(0, 1)], renewed
        while time.monotonic() < taken + 20:       # past the first lock's 15 s
            seen += other.poll(0.5)
        keeper.acknowledge(renewed[0], AcknowledgeType.ACCEPT)
        assert keeper.commit_sync(30) == {(topic, 0): None}
        seen += other.poll(2.0)
        assert seen == []
