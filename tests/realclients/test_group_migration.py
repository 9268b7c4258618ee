"""Mixed groups with real clients: classic members inside a KIP-848 consumer group, and a group
changing kind while its members run (Kafka 4.x's default ``group.consumer.migration.policy`` =
bidirectional). On the emulator and, with ``--broker kafka``, on Apache Kafka 4.4."""

import time

import pytest

from tests.realclients.conftest import require_client
from tests.realclients.test_kip848 import PARTITIONS, PER_PARTITION, TOPIC, Member, _setup, _until

pytestmark = [pytest.mark.realclient, pytest.mark.any_broker]


class ClassicMember(Member):
    """confluent-kafka with the classic protocol (librdkafka's default eager range/roundrobin)."""

    def __init__(self, bootstrap: str, name: str, group: str):
        from confluent_kafka import Consumer

        self.name, self.events, self.seen = name, [], []
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "classic",
                           "client.id": name, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                           "session.timeout.ms": 10000, "heartbeat.interval.ms": 500, "log_level": 0})
        self.c.subscribe([TOPIC], on_assign=lambda c, ps: self.events.append(("assign", sorted(p.partition for p in ps))),
                         on_revoke=lambda c, ps: self.events.append(("revoke", sorted(p.partition for p in ps))))


def test_a_classic_confluent_member_joins_a_consumer_group_and_leaves_it(cluster):
    """A librdkafka member speaking KIP-848 owns the topic; a classic librdkafka member joins the
    same group: the broker's assignor splits the topic between the two protocols, and when the
    classic member leaves, the consumer member takes everything back."""
    require_client("confluent-kafka")
    _setup(cluster.bootstrap)
    modern = Member(cluster.bootstrap, "modern")   # group g848, group.protocol=consumer
    _until([modern], lambda: modern.owned() == list(range(PARTITIONS)))
    classic = ClassicMember(cluster.bootstrap, "classic", "g848")
    _until([modern, classic], lambda: len(modern.owned()) == len(classic.owned()) == PARTITIONS // 2, 90)
    assert sorted(modern.owned() + classic.owned()) == list(range(PARTITIONS))
    _until([modern, classic], lambda: len(set(modern.seen + classic.seen)) == PARTITIONS * PER_PARTITION)
    classic.c.close()
    _until([modern], lambda: modern.owned() == list(range(PARTITIONS)), 90)
    modern.c.close()


# Not alone any more: its recorded failures beside four test workers (no partition after 60 s, in CI
# and in a loaded run) were kafka-python's lost join answer, avoided below (0 of 100 under load).
def test_our_consumer_upgrades_a_kafka_python_group_and_leaving_downgrades_it(cluster):
    """kafka-python (classic, eager) owns a classic group; our consumer joins with
    group.protocol=consumer, which turns the group into a consumer group with kafka-python still
    in it; when ours leaves, the group turns classic again and kafka-python gets every partition."""
    require_client("kafka-python")
    require_client("confluent-kafka")
    from kafka import KafkaConsumer

    _setup(cluster.bootstrap)
    kp = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="gmig", client_id="kafka-python",
                       auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=10000,
                       heartbeat_interval_ms=500)
    try:
        _kafka_python_takes_the_group_then_gives_half_to_ours(kp, cluster.bootstrap)
    finally:
        kp.close()   # a consumer left open keeps reconnecting to the stopped cluster, leaking sockets


def _kafka_python_takes_the_group_then_gives_half_to_ours(kp, bootstrap: str) -> None:
    import client

    # The topic's metadata first: kafka-python 3.0.12 that joins before it knows the topic assigns
    # nothing, rejoins when the metadata arrives, and if poll's timeout ends that second join
    # while it is in flight, never applies its answer (its join loop asks need_rejoin(), which the
    # leader's own assignment has already made False; the Java client also waits while a join is
    # pending). Measured under load: 9 of 100 subscriptions held no partition after 20 s this way,
    # 0 of 100 with the metadata fetched first. docs/findings.md has the report.
    assert kp.partitions_for_topic(TOPIC) == set(range(PARTITIONS))
    kp.subscribe([TOPIC])

    def kp_owned() -> list[int]:
        kp.poll(timeout_ms=100)
        return sorted(tp.partition for tp in kp.assignment())

    end = time.monotonic() + 60
    while time.monotonic() < end and kp_owned() != list(range(PARTITIONS)):
        pass
    assert kp_owned() == list(range(PARTITIONS))
    ours = client.Consumer({"bootstrap.servers": bootstrap, "group.id": "gmig", "group.protocol": "consumer",
                            "client.id": "ours", "auto.offset.reset": "earliest"})
    try:
        ours.subscribe([TOPIC])
        end = time.monotonic() + 90
        split = False
        while time.monotonic() < end and not split:
            ours.poll(0.1)
            mine, theirs = sorted(tp.partition for tp in ours.assignment()), kp_owned()
            split = len(mine) == len(theirs) == PARTITIONS // 2 and sorted(mine + theirs) == list(range(PARTITIONS))
        assert split, (ours.assignment(), kp.assignment())
    finally:
        ours.close()
    end = time.monotonic() + 90
    while time.monotonic() < end and kp_owned() != list(range(PARTITIONS)):
        pass
    assert kp_owned() == list(range(PARTITIONS))
