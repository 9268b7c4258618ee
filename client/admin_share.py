"""Share-group offsets in our admin client (KIP-932): list, alter and delete them at the group's
coordinator, each under its KIP-266 deadline like every admin call (client/admin.py), with what
Java's ListShareGroupOffsetsHandler, AlterShareGroupOffsetsHandler and
DeleteShareGroupOffsetsHandler retry: a coordinator that moved, is loading or is not available
is found again and asked again until the deadline; any other group-level error ends the call.

    offsets = await admin.list_share_group_offsets("sg")            # {("t", 0): ShareOffset(...)}
    await admin.alter_share_group_offsets("sg", {("t", 0): 42})      # the group must have no members
    await admin.delete_share_group_offsets("sg", ["t"])
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from client.admin_cluster import PerItem, TopicPartition, _outcome
from client.errors import KafkaError, error_for_code
from client.network import NetworkClient
from client.protocol import ApiKey


@dataclass(frozen=True)
class ShareOffset:
    """A share partition's start offset (SharePartitionOffsetInfo): the leader epoch and the lag
    (KIP-1226) when the broker knows them."""
    start_offset: int
    leader_epoch: int | None = None
    lag: int | None = None


class ShareAdminCalls:
    """Mixed into AsyncAdmin, which provides the call loops and the coordinator lookup."""

    net: NetworkClient
    _per_item: PerItem
    _once: Callable[[str, float | None, Callable[[float], Awaitable[Any]]], Awaitable[Any]]
    _coordinator: Callable[[str, float], Awaitable[int]]

    async def list_share_group_offsets(self, group: str, partitions: Iterable[TopicPartition] | None = None, *,
                                       timeout: float | None = None
                                       ) -> dict[TopicPartition, ShareOffset | KafkaError | None]:
        """DescribeShareGroupOffsets: every share partition the group has state for (or those
        named); None for one without a start offset yet, a KafkaError for one the broker refused."""
        topics: dict[str, list[int]] | None = None
        if partitions is not None:
            topics = {}
            for t, p in partitions:
                topics.setdefault(t, []).append(p)

        async def send(request_timeout: float) -> Any:
            body = {"groups": [{"group_id": group, "topics": None if topics is None else [
                {"topic_name": t, "partitions": ps} for t, ps in topics.items()]}]}
            answer = await self.net.request(await self._coordinator(group, request_timeout),
                                            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, body, timeout=request_timeout)
            found = answer.groups[0]
            if found.error_code:   # retriable ones (a coordinator that moved) go round again
                raise error_for_code(found.error_code, found.error_message)
            return found

        found = await self._once("list_share_group_offsets", timeout, send)
        out: dict[TopicPartition, ShareOffset | KafkaError | None] = {}
        for t in found.topics:
            for p in t.partitions:
                out[(t.topic_name, p.partition_index)] = _offset(p)
        return out

    async def alter_share_group_offsets(self, group: str, offsets: Mapping[TopicPartition, int], *,
                                        timeout: float | None = None) -> dict[TopicPartition, KafkaError | None]:
        """AlterShareGroupOffsets: the new start offset of each partition (the group must have no
        members: NON_EMPTY_GROUP for every partition otherwise)."""
        async def send(pending: list[TopicPartition], request_timeout: float, deadline: float) -> dict:
            topics: dict[str, list[dict]] = {}
            for t, p in pending:
                topics.setdefault(t, []).append({"partition_index": p, "start_offset": offsets[(t, p)]})
            body = {"group_id": group, "topics": [{"topic_name": t, "partitions": ps} for t, ps in topics.items()]}
            answer = await self.net.request(await self._coordinator(group, request_timeout),
                                            ApiKey.ALTER_SHARE_GROUP_OFFSETS, body, timeout=request_timeout)
            if answer.error_code:
                return {tp: _outcome(answer.error_code, answer.error_message) for tp in pending}
            return {(t.topic_name, p.partition_index): _outcome(p.error_code, p.error_message)
                    for t in answer.responses for p in t.partitions}

        return await self._per_item("alter_share_group_offsets", offsets, timeout, send)

    async def delete_share_group_offsets(self, group: str, topics: Iterable[str], *,
                                         timeout: float | None = None) -> dict[str, KafkaError | None]:
        """DeleteShareGroupOffsets: the topics' share-partition state goes, so the group's next
        fetch starts again from ``share.auto.offset.reset`` (the group must have no members)."""
        async def send(pending: list[str], request_timeout: float, deadline: float) -> dict:
            body = {"group_id": group, "topics": [{"topic_name": t} for t in pending]}
            answer = await self.net.request(await self._coordinator(group, request_timeout),
                                            ApiKey.DELETE_SHARE_GROUP_OFFSETS, body, timeout=request_timeout)
            if answer.error_code:
                return {t: _outcome(answer.error_code, answer.error_message) for t in pending}
            return {t.topic_name: _outcome(t.error_code, t.error_message) for t in answer.responses}

        return await self._per_item("delete_share_group_offsets", topics, timeout, send)


def _offset(p: Any) -> ShareOffset | KafkaError | None:
    """ListShareGroupOffsetsHandler's reading: no start offset yet (-1) is None; a negative leader
    epoch or lag is unknown."""
    if p.error_code:
        return error_for_code(p.error_code, p.error_message)
    if p.start_offset < 0:
        return None
    return ShareOffset(p.start_offset, p.leader_epoch if p.leader_epoch >= 0 else None, p.lag if p.lag >= 0 else None)

