"""Shared pieces of the share consumer's virtual-time tests: the emulated cluster with a share
group reading from the start, records produced, and a consumer that polls until it has some."""

from __future__ import annotations

from broker_emu.trace import Kind
from tests.broker_emu.wire import WireClient, produce_body
from tests.client.test_consumer_groups import connect_to

BOOT = {"bootstrap.servers": "127.0.0.1:0", "group.id": "sg"}
# the members here heartbeat every 5 s; the broker's lock is 30 s unless a test scales it
BROKER = {"group.share.heartbeat.interval.ms": 5000}

__all__ = ["BOOT", "BROKER", "Kind", "connect_to", "earliest", "events", "poll_until_records", "produce"]


def earliest(cluster, group: str = "sg") -> None:
    """share.auto.offset.reset=earliest for the group (latest by default: records made before
    the group would not be seen)."""
    cluster.group_configs.overrides.setdefault(group, {}).update({"share.auto.offset.reset": "earliest"})


async def produce(cluster, values, topic: str = "t", partition: int = 0) -> None:
    w = WireClient(cluster.connect(cluster.partition(topic, partition).leader))
    r = await w.call(0, 9, produce_body(topic, partition, list(values)))
    assert r.responses[0].partition_responses[0].error_code == 0


async def poll_until_records(consumer, rounds: int = 40, each: float = 1.0):
    for _ in range(rounds):
        got = await consumer.poll(each)
        if got:
            return got
    raise AssertionError(f"no records after {rounds} polls (assignment {consumer.assignment()})")


def events(cluster, kind, **details):
    return [e for e in cluster.trace.query(kind=kind) if all(e.details.get(k) == v for k, v in details.items())]
