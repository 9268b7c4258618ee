"""A hand-driven share consumer for emulator tests: heartbeats, share fetches and acknowledgements,
sent as KafkaShareConsumer sends them, with the share session epoch kept."""

from __future__ import annotations

import uuid

from client.protocol import ApiKey
from client.protocol.records import decode_batch, iter_batches
from tests.broker_emu.wire import WireClient, produce_body

HB, DESCRIBE, FETCH, ACK = (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.SHARE_FETCH,
                            ApiKey.SHARE_ACKNOWLEDGE)
ACCEPT, RELEASE, REJECT, RENEW = 1, 2, 3, 4


class ShareMember:
    def __init__(self, cluster, group: str = "sg", topics=("t",), member_id: str | None = None):
        self.cluster, self.group, self.topics = cluster, group, list(topics)
        self.member_id = member_id or str(uuid.uuid4())
        self.coordinator = WireClient(cluster.connect(cluster.coordinator_for(group)), client_id="share")
        self.leader = WireClient(cluster.connect(cluster.partition(self.topics[0], 0).leader), client_id="share")
        self.epoch, self.session_epoch = 0, 0
        self.assignment: dict = {}

    def topic_id(self, topic: str | None = None):
        return self.cluster.topics[topic or self.topics[0]].topic_id

    async def beat(self, epoch: int | None = None, **extra):
        joining = self.epoch == 0 if epoch is None else epoch == 0
        body = {"group_id": self.group, "member_id": self.member_id,
                "member_epoch": self.epoch if epoch is None else epoch, "rack_id": None,
                "subscribed_topic_names": self.topics if joining else None} | extra
        r = await self.coordinator.call(HB, 1, body)
        if r.error_code == 0:
            self.epoch = r.member_epoch
            if r.assignment is not None:
                self.assignment = {tp.topic_id: sorted(tp.partitions) for tp in r.assignment.topic_partitions}
        return r

    async def fetch(self, partitions=(0,), *, acks=None, max_wait_ms: int = 60000, min_bytes: int = 1,
                    max_records: int = 500, version: int = 2, epoch: int | None = None, renew: bool = False,
                    topic_id=None, keep_epoch: bool = False, max_bytes: int = 1 << 20):
        """ShareFetch; ``acks``: {partition: [(first, last, [types])]}. Names the partitions on the
        opening fetch, and those with acknowledgements after it."""
        tid = topic_id or self.topic_id()
        acks = acks or {}
        opening = self.session_epoch == 0
        named = sorted(set(partitions) | set(acks)) if opening else sorted(acks)
        body = {"group_id": self.group, "member_id": self.member_id,
                "share_session_epoch": self.session_epoch if epoch is None else epoch, "max_wait_ms": max_wait_ms,
                "min_bytes": min_bytes, "max_bytes": max_bytes, "max_records": max_records, "batch_size": max_records,
                "is_renew_ack": renew,
                "topics": [{"topic_id": tid, "partitions": [
                    {"partition_index": p, "acknowledgement_batches": [
                        {"first_offset": f, "last_offset": la, "acknowledge_types": ts} for f, la, ts in acks.get(p, [])]}
                    for p in named]}] if named else [],
                "forgotten_topics_data": []}
        r = await self.leader.call(FETCH, version, body)
        if r.error_code == 0 and epoch is None and not keep_epoch:
            self.session_epoch += 1
        return r

    async def acknowledge(self, acks, *, version: int = 2, epoch: int | None = None, renew: bool = False, topic_id=None):
        tid = topic_id or self.topic_id()
        body = {"group_id": self.group, "member_id": self.member_id,
                "share_session_epoch": self.session_epoch if epoch is None else epoch, "is_renew_ack": renew,
                "topics": [{"topic_id": tid, "partitions": [
                    {"partition_index": p, "acknowledgement_batches": [
                        {"first_offset": f, "last_offset": la, "acknowledge_types": ts} for f, la, ts in batches]}
                    for p, batches in acks.items()]}]}
        r = await self.leader.call(ACK, version, body)
        if r.error_code == 0 and epoch is None:
            self.session_epoch += 1
        return r


def acquired(response, partition: int = 0) -> list[tuple[int, int, int]]:
    """(first, last, delivery count) of what a ShareFetch answer acquired in ``partition``."""
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for t in response.responses for p in t.partitions if p.partition_index == partition
            for a in p.acquired_records]


def values(response, partition: int = 0) -> dict[int, bytes]:
    """Offset -> value of the records a ShareFetch answer carries for ``partition``, acquired ones only."""
    ranges = acquired(response, partition)
    out = {}
    for t in response.responses:
        for p in t.partitions:
            if p.partition_index != partition or not p.records:
                continue
            for at, _ in iter_batches(p.records):
                for rec in decode_batch(p.records, at)[1]:
                    if any(f <= rec.offset <= la for f, la, _ in ranges):
                        out[rec.offset] = rec.value
    return out


def partition_of(response, partition: int = 0):
    return next(p for t in response.responses for p in t.partitions if p.partition_index == partition)


async def produce(cluster, values_: list[bytes], topic: str = "t", partition: int = 0) -> None:
    w = WireClient(cluster.connect(cluster.partition(topic, partition).leader))
    r = await w.call(0, 9, produce_body(topic, partition, values_))
    assert r.responses[0].partition_responses[0].error_code == 0
