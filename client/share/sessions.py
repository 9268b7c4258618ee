"""A share session with one broker (Java's ``ShareSessionHandler``), sans-io.

The consumer keeps one session with each leader it fetches from. Its epoch starts at 0: the
first ShareFetch opens the session, naming every partition the consumer wants there; each answer
moves the epoch on (wrapping to 1), and later requests name only the partitions added, those
with acknowledgements, and (``forgotten_topics_data``) those dropped. A ShareAcknowledge cannot
open a session: acknowledgements for a broker whose session is at epoch 0 cannot be sent
("Cannot send acknowledgements on initial epoch"), and the broker will hand those records out
again when their locks run out. SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, a
disconnect or a timeout start over at epoch 0 (``nextCloseExistingAttemptNew``); closing
acknowledges with epoch -1, which ends the session on the broker.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from client.consumer.records import TopicPartition
from client.errors import ErrorCode
from client.share.acknowledgements import Acks, batches

INITIAL, FINAL = 0, -1
RESTART = frozenset({ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH})


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


def _topics(named: Mapping[TopicPartition, Any], acks: Acks) -> list[dict[str, Any]]:
    """The request's topics by id: each partition with its acknowledgement batches."""
    by_topic: dict[Any, list[dict[str, Any]]] = {}
    for tp, topic_id in named.items():
        by_topic.setdefault(topic_id, []).append({
            "partition_index": tp.partition, "partition_max_bytes": 0,
            "acknowledgement_batches": batches(acks.get(tp, {}))})
    return [{"topic_id": tid, "partitions": ps} for tid, ps in by_topic.items()]


class ShareSession:
    def __init__(self, node: int):
        self.node = node
        self.epoch = INITIAL
        self.partitions: dict[TopicPartition, Any] = {}   # in the session on the broker: tp -> topic id

    def fetch_body(self, group: str, member: str, wanted: Mapping[TopicPartition, Any], acks: Acks,
                   config: Mapping[str, Any], topic_ids: Mapping[str, Any]) -> tuple[dict[str, Any], Acks]:
        """The next ShareFetch and the acknowledgements it carries (none on an opening fetch)."""
        if self.epoch == INITIAL:
            self.partitions = dict(wanted)
            named, carried = dict(wanted), {}
            forgotten: dict[TopicPartition, Any] = {}
        else:
            forgotten = {tp: tid for tp, tid in self.partitions.items() if tp not in wanted}
            added = {tp: tid for tp, tid in wanted.items() if tp not in self.partitions}
            carried = {tp: offs for tp, offs in acks.items() if tp.topic in topic_ids}
            named = {**added, **{tp: topic_ids[tp.topic] for tp in carried}}
            # acknowledgements for a partition no longer wanted name it; forgotten in the same
            # request, the broker takes them and does not fetch it again
            forgotten.update({tp: topic_ids[tp.topic] for tp in carried if tp not in wanted})
            self.partitions = dict(wanted)
        by_topic: dict[Any, list[int]] = {}
        for tp, tid in forgotten.items():
            by_topic.setdefault(tid, []).append(tp.partition)
        body = {"group_id": group, "member_id": member, "share_session_epoch": self.epoch,
                "max_wait_ms": config["fetch.max.wait.ms"], "min_bytes": config["fetch.min.bytes"],
                "max_bytes": config["fetch.max.bytes"], "max_records": config["max.poll.records"],
                "batch_size": config["max.poll.records"], "share_acquire_mode": 0, "is_renew_ack": False,
                "topics": _topics(named, carried),
                "forgotten_topics_data": [{"topic_id": tid, "partitions": ps} for tid, ps in by_topic.items()]}
        return body, carried

    def acknowledge_body(self, group: str, member: str, acks: Acks, topic_ids: Mapping[str, Any], *,
                         final: bool = False, renew: bool = False) -> dict[str, Any] | None:
        """The next ShareAcknowledge (``final``: epoch -1, closing the session); None at epoch 0."""
        if self.epoch == INITIAL:
            return None
        named = {tp: topic_ids[tp.topic] for tp in acks if tp.topic in topic_ids}
        return {"group_id": group, "member_id": member, "share_session_epoch": FINAL if final else self.epoch,
                "is_renew_ack": renew, "topics": _topics(named, acks)}

    def answered(self, error_code: int) -> None:
        if error_code in RESTART:
            self.restart()
        else:   # a success, or another error: the broker moved the epoch on (handleResponse)
            self.epoch = next_epoch(self.epoch)

    def restart(self) -> None:
        """A failed request (disconnect, timeout) or a session the broker no longer knows."""
        self.epoch, self.partitions = INITIAL, {}
