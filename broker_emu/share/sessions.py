"""Share sessions (KIP-932; Kafka's ``SharePartitionManager.newContext`` and
``acknowledgeSessionUpdate``, ``ShareSessionCache``): one per (broker, group, member), since each
broker keeps its own cache and a member fetching from several leaders runs a session with each,
holding the partitions the member fetches there and an epoch each request must match.

ShareFetch epoch 0 opens a session (replacing one the member had; acknowledgements in it are an
INVALID_REQUEST), -1 closes it after its acknowledgements (Kafka 4.4 no longer refuses partitions
named in it), any other must equal the session's epoch (INVALID_SHARE_SESSION_EPOCH), with SHARE_SESSION_NOT_FOUND
when there is none. ShareAcknowledge never opens one: epoch 0 is INVALID_SHARE_SESSION_EPOCH.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from client.errors import ErrorCode as E

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
MAX_EPOCH = 2**31 - 1

TopicPartitionId = tuple[Any, int]     # (topic id, partition index)


def next_epoch(epoch: int) -> int:
    """``ShareRequestMetadata.nextEpoch``: wraps to 1, never back to 0."""
    return 1 if epoch >= MAX_EPOCH else epoch + 1


@dataclass
class ShareSession:
    broker: int
    group: str
    member: str
    epoch: int = 1
    partitions: list[TopicPartitionId] = field(default_factory=list)
    conn: int | None = None      # the connection that opened it (ShareSessionCache.connectionIdToSessionMap)

    def update(self, added: list[TopicPartitionId], forgotten: list[TopicPartitionId]) -> None:
        for tp in added:
            if tp not in self.partitions:
                self.partitions.append(tp)
        self.partitions = [tp for tp in self.partitions if tp not in forgotten]


class ShareSessionError(Exception):
    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


class ShareSessions:
    def __init__(self) -> None:
        self.by_key: dict[tuple[int, str, str], ShareSession] = {}

    def for_fetch(self, broker: int, group: str, member: str, epoch: int, named: list[TopicPartitionId],
                  forgotten: list[TopicPartitionId], acknowledging: bool, conn: int | None = None) -> ShareSession | None:
        """The session this ShareFetch runs in, its epoch moved on; None for a final fetch (the
        session is closed after its acknowledgements). ShareSessionError otherwise."""
        key = (broker, group, member)
        if epoch == FINAL_EPOCH:
            if key not in self.by_key:
                raise ShareSessionError(E.SHARE_SESSION_NOT_FOUND)
            return None
        if epoch == INITIAL_EPOCH:
            if acknowledging:
                raise ShareSessionError(E.INVALID_REQUEST)
            opened = ShareSession(broker, group, member, conn=conn)
            opened.update(named, [])
            self.by_key[key] = opened
            return opened
        session = self.by_key.get(key)
        if session is None:
            raise ShareSessionError(E.SHARE_SESSION_NOT_FOUND)
        if session.epoch != epoch:
            raise ShareSessionError(E.INVALID_SHARE_SESSION_EPOCH)
        session.update(named, forgotten)
        session.epoch = next_epoch(session.epoch)
        return session

    def for_acknowledge(self, broker: int, group: str, member: str, epoch: int) -> None:
        if epoch == INITIAL_EPOCH:
            raise ShareSessionError(E.INVALID_SHARE_SESSION_EPOCH)
        session = self.by_key.get((broker, group, member))
        if session is None:
            raise ShareSessionError(E.SHARE_SESSION_NOT_FOUND)
        if epoch == FINAL_EPOCH:
            return
        if session.epoch != epoch:
            raise ShareSessionError(E.INVALID_SHARE_SESSION_EPOCH)
        session.epoch = next_epoch(session.epoch)

    def close(self, broker: int, group: str, member: str) -> None:
        self.by_key.pop((broker, group, member), None)

    def connection_closed(self, broker: int, conn: int) -> list[tuple[str, str]]:
        """The sessions ``conn`` opened on ``broker`` end with it, as Kafka's ShareSessionCache's
        ClientConnectionDisconnectListener ends them (a session opened again since on another
        connection is not this one's, the "stale" case): their (group, member)s."""
        gone = [key for key, session in self.by_key.items() if key[0] == broker and session.conn == conn]
        for key in gone:
            del self.by_key[key]
        return [(group, member) for _, group, member in gone]

    def describe(self) -> list[dict[str, Any]]:
        return [{"broker": s.broker, "group": s.group, "member": s.member, "epoch": s.epoch,
                 "partitions": [[str(t), i] for t, i in s.partitions]} for s in self.by_key.values()]
