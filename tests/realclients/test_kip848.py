"""KIP-848 with a real client: confluent-kafka (librdkafka 2.16) with ``group.protocol=consumer``.
Two members split a 6-partition topic — the broker's assignor, not the clients', decides — one
commits and leaves, the other takes every partition over and resumes from the committed offsets.
Runs on the emulator and, with ``--broker kafka``, on Apache Kafka 4.4 (its default timers: a 5 s
heartbeat interval, so a member learns of a change within about 5 s)."""

import time

import pytest

from tests.realclients.conftest import require_client

pytestmark = [pytest.mark.realclient, pytest.mark.any_broker]
TOPIC, PARTITIONS, PER_PARTITION = "k848", 6, 10


def _setup(bootstrap: str) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in range(PARTITIONS * PER_PARTITION):
        p.produce(TOPIC, str(i).encode(), partition=i % PARTITIONS)
    assert p.flush(30) == 0


class Member:
    def __init__(self, bootstrap: str, name: str):
        from confluent_kafka import Consumer

        self.name, self.events, self.seen = name, [], []
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g848", "group.protocol": "consumer",
                           "client.id": name, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                           "log_level": 0})
        self.c.subscribe([TOPIC], on_assign=lambda c, ps: self.events.append(("assign", _parts(ps))),
                         on_revoke=lambda c, ps: self.events.append(("revoke", _parts(ps))))

    def poll(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            m = self.c.poll(0.05)
            if m is not None and m.error() is None:
                self.seen.append((m.partition(), m.offset()))

    def owned(self) -> list[int]:
        return _parts(self.c.assignment())


def _parts(ps) -> list[int]:
    return sorted(p.partition for p in ps)


def _until(members, done, limit_s: float = 60) -> None:
    end = time.monotonic() + limit_s
    while time.monotonic() < end and not done():
        for m in members:
            m.poll(0.1)
    assert done(), [(m.name, m.owned(), m.events) for m in members]


def test_confluent_kafka_members_split_hand_over_and_resume_from_commits(cluster):
    require_client("confluent-kafka")
    _setup(cluster.bootstrap)
    a = Member(cluster.bootstrap, "a")
    _until([a], lambda: a.owned() == list(range(PARTITIONS)))
    b = Member(cluster.bootstrap, "b")
    _until([a, b], lambda: len(a.owned()) == len(b.owned()) == PARTITIONS // 2)
    assert sorted(a.owned() + b.owned()) == list(range(PARTITIONS))
    # a gave its partitions up before b got them: a's revoke is in its events before b's assign
    assert ("revoke", sorted(set(range(PARTITIONS)) - set(a.owned()))) in a.events
    last = PER_PARTITION - 1
    _until([a, b], lambda: len(set(a.seen + b.seen)) == PARTITIONS * PER_PARTITION
           and all((p, last) in b.seen for p in b.owned()))
    a.c.commit(asynchronous=False)
    mine = a.owned()
    a.c.close()
    before = len(b.seen)
    _until([b], lambda: b.owned() == list(range(PARTITIONS)))
    b.poll(3)
    # a committed the end of its partitions: b reads nothing again there
    assert not [x for x in b.seen[before:] if x[0] in mine], b.seen[before:]
    b.c.commit(asynchronous=False)
    committed = b.c.committed([_tp(p) for p in range(PARTITIONS)], timeout=20)
    assert [t.offset for t in committed] == [PER_PARTITION] * PARTITIONS
    b.c.close()


def _tp(p: int):
    from confluent_kafka import TopicPartition

    return TopicPartition(TOPIC, p)


def test_a_mixed_group_of_ours_and_confluent_kafka_splits_and_hands_over(cluster):
    """The broker assigns; neither client's assignor plays a part: ours (blocking face) and
    librdkafka in one KIP-848 group share the topic, and when librdkafka leaves ours takes all."""
    require_client("confluent-kafka")
    import client

    _setup(cluster.bootstrap)
    theirs = Member(cluster.bootstrap, "theirs")
    _until([theirs], lambda: theirs.owned() == list(range(PARTITIONS)))
    ours = client.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g848", "group.protocol": "consumer",
                            "client.id": "ours", "auto.offset.reset": "earliest"})
    try:
        ours.subscribe([TOPIC])
        end = time.monotonic() + 60
        mine: list = []
        while time.monotonic() < end and not (len(ours.assignment()) == len(theirs.owned()) == PARTITIONS // 2):
            mine += ours.poll(0.1)
            theirs.poll(0.1)
        assert len(ours.assignment()) == len(theirs.owned()) == PARTITIONS // 2, (ours.assignment(), theirs.owned())
        assert sorted([tp.partition for tp in ours.assignment()] + theirs.owned()) == list(range(PARTITIONS))
        theirs.c.close()
        while time.monotonic() < end and len(ours.assignment()) < PARTITIONS:
            mine += ours.poll(0.1)
        assert sorted(tp.partition for tp in ours.assignment()) == list(range(PARTITIONS))
        while time.monotonic() < end and len({(r.partition, r.offset) for r in mine}) < PARTITIONS * PER_PARTITION:
            mine += ours.poll(0.2)
        assert len({(r.partition, r.offset) for r in mine}) == PARTITIONS * PER_PARTITION
        ours.commit_sync()
    finally:
        ours.close()
