"""The KIP-848 steps of the corpus sessions (python_clients.py): confluent-kafka's consumer with
``group.protocol=consumer`` joins by topic name and by regex, reconciles, commits with its member
epoch (OffsetCommit v9), fetches committed offsets, leaves; its admin client describes the group
(ConsumerGroupDescribe)."""

from __future__ import annotations

import time

TOPIC, GROUP, WAIT_S = "t", "ck-848", 8


def confluent(ck, base: dict) -> None:
    for group, topics in ((GROUP, [TOPIC]), (GROUP + "-regex", ["^t$"])):
        c = ck.Consumer({**base, "group.id": group, "group.protocol": "consumer", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "group.remote.assignor": "range" if "regex" in group else "uniform"})
        try:
            c.subscribe(topics)
            deadline = time.time() + WAIT_S
            while len(c.assignment()) < 3 and time.time() < deadline:
                c.poll(0.2)
            if len(c.assignment()) < 3:
                raise RuntimeError(f"assigned {c.assignment()}")
            c.poll(0.5)
            c.commit(offsets=[ck.TopicPartition(TOPIC, 0, 1)], asynchronous=False)
            c.committed([ck.TopicPartition(TOPIC, p) for p in range(3)], timeout=WAIT_S)
        finally:
            c.close()   # ConsumerGroupHeartbeat with epoch -1


def confluent_admin(admin) -> None:
    admin.describe_consumer_groups([GROUP])[GROUP].result(WAIT_S)
