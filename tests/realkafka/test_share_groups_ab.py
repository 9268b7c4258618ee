"""Share groups (KIP-932) on the wire, emulator against Apache Kafka 4.4: one script of
ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch and ShareAcknowledge calls — joins and the
heartbeat's refusals, share session epochs, a renewing fetch's limits, acquisitions and their
delivery counts, acknowledgements refused and accepted, a 15 s lock left to run out and the record
redelivered to another member with delivery count 2 — run against both, the error codes and
messages and what was acquired compared (member ids and epochs differ by nature). About 40 s."""

from __future__ import annotations

import re
import uuid

import pytest
import trio

from broker_emu.runtime import run_cluster_in_thread
from tests.broker_emu.wire import WireClient, produce_body

# alone: in CI beside four workers on two cores Kafka once answered the ShareFetch waiting on the lock at its expiry
# with no records (its expired lock and its delayed fetch raced on a loaded JVM, the emulator redelivering at count
# 2 as the same script did on Kafka every other time); alone it passes (helper runs, and 2026-11-28 after that CI)
pytestmark = [pytest.mark.realkafka, pytest.mark.alone]
HB, DESCRIBE, FETCH, ACK = 76, 77, 78, 79
CREATE_TOPICS, METADATA, INCREMENTAL, FIND_COORDINATOR = 19, 3, 44, 10
RETRIABLE = {14, 15, 16}
LOCK_MS = 15_000   # the least a group may set under Kafka's default group.share.min.record.lock.duration.ms   # the coordinator loading, not available, not this one: ask again


def _fetch_body(group, member, epoch, topic_id, *, acks=(), max_wait_ms=0, renew=False, limits=True):
    return {"group_id": group, "member_id": member, "share_session_epoch": epoch, "max_wait_ms": max_wait_ms,
            "min_bytes": 1 if limits else 0, "max_bytes": (1 << 20) if limits else 0,
            "max_records": 500 if limits else 0, "batch_size": 500, "is_renew_ack": renew,
            "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                {"first_offset": f, "last_offset": la, "acknowledge_types": ts} for f, la, ts in acks]}]}],
            "forgotten_topics_data": []}


def _ack_body(group, member, epoch, topic_id, acks):
    return {"group_id": group, "member_id": member, "share_session_epoch": epoch, "is_renew_ack": False,
            "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                {"first_offset": f, "last_offset": la, "acknowledge_types": ts} for f, la, ts in acks]}]}]}


def script(host: str, port: int, debug: list) -> list:
    async def main() -> list:
        out: list = []
        async with await trio.open_tcp_stream(host, port) as stream:
            w = WireClient(stream)
            created = await w.call(CREATE_TOPICS, 7, {"topics": [{"name": "sh", "num_partitions": 1,
                                                                  "replication_factor": 1, "assignments": [],
                                                                  "configs": []}], "timeout_ms": 30000})
            assert created.topics[0].error_code == 0
            await w.call(INCREMENTAL, 1, {"resources": [{"resource_type": 32, "resource_name": "sg", "configs": [
                {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"},
                {"name": "share.record.lock.duration.ms", "config_operation": 0, "value": str(LOCK_MS)}]}],
                "validate_only": False})
            meta = await w.call(METADATA, 12, {"topics": [{"name": "sh", "topic_id": uuid.UUID(int=0)}],
                                              "allow_auto_topic_creation": False,
                                              "include_topic_authorized_operations": False})
            tid = meta.topics[0].topic_id
            a = str(uuid.uuid4())
            for _ in range(100):   # as a client does first: Kafka makes __consumer_offsets on this call
                found = await w.call(FIND_COORDINATOR, 4, {"key": "", "key_type": 0, "coordinator_keys": ["sg"]})
                if found.coordinators[0].error_code == 0:
                    break
                await trio.sleep(0.2)

            async def beat(member, epoch, topics=("sh",), group="sg", note=""):
                body = {"group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": None,
                        "subscribed_topic_names": list(topics) if topics is not None else None}
                for _ in range(100):
                    r = await w.call(HB, 1, body)
                    if r.error_code not in RETRIABLE:
                        break
                    await trio.sleep(0.2)
                # epochs differ by nature (Kafka's group epoch also counts its share partitions' set-up)
                message = re.sub(r"\(\d+\)", "(N)", r.error_message) if r.error_message else None
                out.append(("heartbeat", note, r.error_code, message))
                return r

            await beat(a, 5, group="nope", note="an unknown group")
            await beat("", 0, note="no member id")
            await beat(a, 0, topics=None, note="no topics on joining")
            await beat(a, -2, note="epoch -2")
            joined = await beat(a, 0, note="join")
            first_answer = joined
            for _ in range(50):   # the assignment may come once the share partitions are initialized
                if joined.assignment is not None and joined.assignment.topic_partitions:
                    break
                await trio.sleep(0.2)
                joined = await w.call(HB, 1, {"group_id": "sg", "member_id": a, "member_epoch": joined.member_epoch,
                                              "rack_id": None, "subscribed_topic_names": None})
            out.append(("assignment", [list(tp.partitions) for tp in joined.assignment.topic_partitions]
                        if joined.assignment is not None else None, joined.heartbeat_interval_ms))
            # Kafka's first answer may carry an empty assignment (the share partitions are set up
            # a moment later); the emulator assigns at once: only the assignment reached is compared
            debug.append(first_answer)
            await beat(a, joined.member_epoch + 1, topics=None, note="a later epoch")
            d = await w.call(DESCRIBE, 1, {"group_ids": ["sg", "nope"], "include_authorized_operations": False})
            out.append(("describe", [(g.error_code, g.error_message if g.error_code else None, g.group_state,
                                      g.assignor_name, len(g.members)) for g in d.groups]))

            async def fetch(note, body):
                r = await w.call(FETCH, 2, body)
                parts = [p for t in r.responses for p in t.partitions]
                out.append(("fetch", note, r.error_code, r.error_message,
                            [(p.error_code, p.acknowledge_error_code, p.acknowledge_error_message,
                              [(x.first_offset, x.last_offset, x.delivery_count) for x in p.acquired_records])
                             for p in parts]))
                return r

            async def ack(note, epoch, acks):
                r = await w.call(ACK, 2, _ack_body("sg", a, epoch, tid, acks))
                out.append(("acknowledge", note, r.error_code, r.error_message,
                            [(p.error_code, p.error_message) for t in r.responses for p in t.partitions]))

            await fetch("no session", _fetch_body("sg", a, 3, tid))
            await fetch("no group id", _fetch_body("", a, 0, tid))
            await fetch("acknowledging in the opening fetch", _fetch_body("sg", a, 0, tid, acks=[(0, 0, [1])]))
            await ack("ShareAcknowledge with epoch 0", 0, [(0, 0, [1])])
            async with await trio.open_tcp_stream(host, port) as producer:
                await WireClient(producer).call(0, 9, produce_body("sh", 0, [b"a", b"b"]))
            epoch = 0
            for _ in range(20):    # Kafka initializes the share partition on its own time
                r = await w.call(FETCH, 2, _fetch_body("sg", a, epoch, tid, max_wait_ms=500))
                epoch += 1
                got = [x for t in r.responses for p in t.partitions for x in p.acquired_records]
                if got:
                    out.append(("acquired", [(x.first_offset, x.last_offset, x.delivery_count) for x in got],
                                r.acquisition_lock_timeout_ms))
                    break
            # once the share partition is set up (Kafka does it a moment after the join)
            await fetch("a member id that is not a uuid", _fetch_body("sg", "nobody", 0, tid))
            await fetch("a member id of 37 characters", _fetch_body("sg", "m" * 37, 0, tid))
            await fetch("the wrong epoch", _fetch_body("sg", a, epoch + 5, tid))
            await fetch("a renewing fetch with limits", _fetch_body("sg", a, epoch, tid, renew=True))
            await ack("the wrong epoch", epoch + 7, [(0, 0, [1])])
            await ack("past what was acquired", epoch, [(5, 9, [1])])
            epoch += 1
            await ack("first after last", epoch, [(1, 0, [1])])
            epoch += 1
            await ack("types not matching the range", epoch, [(0, 1, [1, 1, 1])])
            epoch += 1
            await ack("accept 0", epoch, [(0, 0, [1])])
            epoch += 1
            await ack("accept 0 again", epoch, [(0, 0, [1])])
            epoch += 1
            await ack("release 1", epoch, [(1, 1, [2])])
            epoch += 1
            r = await fetch("1 again", _fetch_body("sg", a, epoch, tid, max_wait_ms=5000))
            epoch += 1
            await fetch("closing", _fetch_body("sg", a, -1, tid, acks=[(1, 1, [1])]))
            await fetch("after closing", _fetch_body("sg", a, epoch, tid))
            # a lock left to run out: another member gets the record, delivery count 2, not before the lock
            async with await trio.open_tcp_stream(host, port) as producer:
                await WireClient(producer).call(0, 9, produce_body("sh", 0, [b"c"]))
            r = await w.call(FETCH, 2, _fetch_body("sg", a, 0, tid, max_wait_ms=5000))
            out.append(("acquired again", [(x.first_offset, x.last_offset, x.delivery_count)
                                           for t in r.responses for p in t.partitions for x in p.acquired_records]))
            started = trio.current_time()
            r = await w.call(FETCH, 2, _fetch_body("sg", str(uuid.uuid4()), 0, tid, max_wait_ms=LOCK_MS + 10_000))
            waited = trio.current_time() - started
            out.append(("after the lock", [(x.first_offset, x.last_offset, x.delivery_count)
                                           for t in r.responses for p in t.partitions for x in p.acquired_records],
                        LOCK_MS / 1000 - 0.5 <= waited <= LOCK_MS / 1000 + 5))
            await beat(a, -1, topics=None, note="leave")
        return out

    return trio.run(main)


def test_share_groups_answer_as_kafka(kafka1):
    host, port = kafka1.bootstrap.split(",")[0].split(":")
    debug_theirs: list = []
    debug_ours: list = []
    theirs = script(host, int(port), debug_theirs)
    with run_cluster_in_thread(brokers=1) as tc:
        emu_host, emu_port = tc.bootstrap.split(",")[0].split(":")
        ours = script(emu_host, int(emu_port), debug_ours)
    assert len(ours) == len(theirs)
    for mine, kafka in zip(ours, theirs):
        assert mine == kafka
    assert ("acquired", [(0, 1, 1)], LOCK_MS) in theirs
    assert ("after the lock", [(2, 2, 2)], True) in theirs
